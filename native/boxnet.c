/* boxnet: the box's network link, made by boxinit's launcher with rtnetlink (no `ip` spawns).
 *
 * A veth pair: the host end (named by the server from the box id) keeps HOST_ADDR/31 in the host's network
 * namespace; the other end moves into the box's namespace as eth0 with BOX_ADDR/31 and a default route
 * through the host end. What the box may reach through it is the host's nftables table (`inet devboxd`),
 * which the server writes; without its rules the host drops everything the box sends.
 */
#define _GNU_SOURCE
#include "boxnet.h"
#include "common.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/veth.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct req {
  struct nlmsghdr nh;
  union {
    struct ifinfomsg ifi;
    struct ifaddrmsg ifa;
    struct rtmsg rt;
  };
  char buf[512];
};

static struct rtattr *attr(struct req *r, unsigned short type, const void *data, size_t len) {
  struct rtattr *a = (struct rtattr *)((char *)r + NLMSG_ALIGN(r->nh.nlmsg_len));
  a->rta_type = type;
  a->rta_len = (unsigned short)RTA_LENGTH(len);
  if (len) memcpy(RTA_DATA(a), data, len);
  r->nh.nlmsg_len = NLMSG_ALIGN(r->nh.nlmsg_len) + RTA_ALIGN(a->rta_len);
  return a;
}

static void attr_end(struct req *r, struct rtattr *nest) {
  nest->rta_len = (unsigned short)((char *)r + r->nh.nlmsg_len - (char *)nest);
}

/* Sends one request and waits for its acknowledgement; returns 0 or -1 with errno. */
static int talk(int fd, struct req *r) {
  static unsigned seq;
  r->nh.nlmsg_flags |= NLM_F_REQUEST | NLM_F_ACK;
  r->nh.nlmsg_seq = ++seq;
  if (send(fd, r, r->nh.nlmsg_len, 0) < 0) return -1;
  char buf[4096];
  for (;;) {
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n < 0) return -1;
    for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, (unsigned)n); h = NLMSG_NEXT(h, n)) {
      if (h->nlmsg_seq != seq || h->nlmsg_type != NLMSG_ERROR) continue;
      int err = ((struct nlmsgerr *)NLMSG_DATA(h))->error;
      if (err == 0) return 0;
      errno = -err;
      return -1;
    }
  }
}

static void init_req(struct req *r, unsigned short type, unsigned short flags, size_t body) {
  memset(r, 0, sizeof *r);
  r->nh.nlmsg_len = (unsigned)NLMSG_LENGTH(body);
  r->nh.nlmsg_type = type;
  r->nh.nlmsg_flags = flags;
}

static int up_with_addr(int fd, int ifindex, struct in_addr a) {
  struct req r;
  init_req(&r, RTM_NEWADDR, NLM_F_CREATE | NLM_F_EXCL, sizeof r.ifa);
  r.ifa.ifa_family = AF_INET;
  r.ifa.ifa_prefixlen = 31;
  r.ifa.ifa_index = (unsigned)ifindex;
  attr(&r, IFA_LOCAL, &a, sizeof a);
  attr(&r, IFA_ADDRESS, &a, sizeof a);
  if (talk(fd, &r) != 0) return -1;
  init_req(&r, RTM_NEWLINK, 0, sizeof r.ifi);
  r.ifi.ifi_index = ifindex;
  r.ifi.ifi_flags = IFF_UP;
  r.ifi.ifi_change = IFF_UP;
  return talk(fd, &r);
}

static int nl_open(void) {
  int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
  struct sockaddr_nl sa = {.nl_family = AF_NETLINK};
  if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0) return -1;
  return fd;
}

void boxnet_setup(pid_t init, const char *spec) {
  char host_if[IFNAMSIZ], host_s[16], box_s[16];
  struct in_addr host_a, box_a;
  if (sscanf(spec, "%15[^,],%15[^,],%15s", host_if, host_s, box_s) != 3 || !inet_aton(host_s, &host_a) ||
      !inet_aton(box_s, &box_a)) {
    errno = EINVAL;
    die(2, "bad -V %s", spec);
  }
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/ns/net", init);
  int box_ns = open(path, O_RDONLY | O_CLOEXEC);
  int host_ns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
  int fd = nl_open();
  if (box_ns < 0 || host_ns < 0 || fd < 0) die(1, "open the network namespaces");

  struct req r;
  init_req(&r, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, sizeof r.ifi);
  attr(&r, IFLA_IFNAME, host_if, strlen(host_if) + 1);
  struct rtattr *info = attr(&r, IFLA_LINKINFO, NULL, 0);
  attr(&r, IFLA_INFO_KIND, "veth", 4);
  struct rtattr *data = attr(&r, IFLA_INFO_DATA, NULL, 0);
  struct rtattr *peer = attr(&r, VETH_INFO_PEER, NULL, 0);
  r.nh.nlmsg_len += sizeof(struct ifinfomsg); /* the peer's own ifinfomsg, zeroed */
  attr(&r, IFLA_IFNAME, "eth0", 5);
  attr(&r, IFLA_NET_NS_FD, &box_ns, sizeof box_ns);
  attr_end(&r, peer);
  attr_end(&r, data);
  attr_end(&r, info);
  if (talk(fd, &r) != 0) die(1, "create veth %s", host_if);
  /* The host end never speaks IPv6: boxes have IPv4 only, and a link-local address would be a way in. */
  char sysctl[96];
  snprintf(sysctl, sizeof sysctl, "/proc/sys/net/ipv6/conf/%s/disable_ipv6", host_if);
  write_file(sysctl, "1");
  int host_idx = (int)if_nametoindex(host_if);
  if (!host_idx || up_with_addr(fd, host_idx, host_a) != 0) die(1, "configure %s", host_if);
  close(fd);

  if (setns(box_ns, CLONE_NEWNET) != 0) die(1, "enter the box network namespace");
  fd = nl_open();
  write_file("/proc/sys/net/ipv6/conf/eth0/disable_ipv6", "1");
  int eth0 = (int)if_nametoindex("eth0");
  if (fd < 0 || !eth0 || up_with_addr(fd, eth0, box_a) != 0) die(1, "configure eth0");
  init_req(&r, RTM_NEWROUTE, NLM_F_CREATE | NLM_F_EXCL, sizeof r.rt);
  r.rt.rtm_family = AF_INET;
  r.rt.rtm_table = RT_TABLE_MAIN;
  r.rt.rtm_protocol = RTPROT_BOOT;
  r.rt.rtm_scope = RT_SCOPE_UNIVERSE;
  r.rt.rtm_type = RTN_UNICAST;
  attr(&r, RTA_GATEWAY, &host_a, sizeof host_a);
  attr(&r, RTA_OIF, &eth0, sizeof eth0);
  if (talk(fd, &r) != 0) die(1, "default route");
  close(fd);
  if (setns(host_ns, CLONE_NEWNET) != 0) die(1, "back to the host network namespace");
  close(box_ns);
  close(host_ns);
}
