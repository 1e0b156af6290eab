/* nftsetd [TABLE]: adds and removes elements of the sets of the nftables table `inet devboxd` over netlink.
 *
 * The server changes a box's egress (create, policy update, every DNS answer it pins) by set elements
 * keyed by the box's host interface. The `nft` tool reads the whole ruleset, every set element included,
 * before each change, which costs milliseconds per box on the host; this daemon sends the element messages
 * alone. One command per line on stdin, one answer line per command on stdout ("ok" or "err REASON"):
 *
 *   add SET IFNAME [ADDR] [TIMEOUT_MS]   element IFNAME (or IFNAME . ADDR); an existing one is replaced
 *   range SET IFNAME CIDR [PROTO PORT[-END]]   interval element IFNAME . CIDR [. PROTO . PORTS] (a set of
 *                                        concatenated ranges: `flags interval`)
 *   jump MAP IFNAME CHAIN                map element IFNAME : jump CHAIN (one that jumps there already stays)
 *   del SET IFNAME [ADDR]                removes the element (absent is fine)
 *   flush SET IFNAME                     removes every element whose key starts with IFNAME
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netlink.h>
#include <net/if.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_KEYS 4096
/* Longest key: an interface (16 bytes), an address, a protocol and a port (4-byte registers each). */
#define KEY_MAX (IFNAMSIZ + 12)
/* Linux 6.3+: a delete that is not an error when the element is absent (a failed batch costs an abort). */
#ifndef NFT_MSG_DESTROYSETELEM
#define NFT_MSG_DESTROYSETELEM 30
#endif
static int have_destroy = 1;

static int nl;
/* The table (family inet), argv[1]: `devboxd`. */
static const char *table = "devboxd";
static uint32_t seq;
static char buf[1 << 16];
static size_t len;

static void *put(const void *data, size_t n) {
  void *at = buf + len;
  if (data) memcpy(at, data, n);
  else memset(at, 0, n);
  len += NLMSG_ALIGN(n);
  return at;
}

static struct nlattr *attr(uint16_t type, const void *data, size_t n) {
  struct nlattr *a = put(NULL, NLA_HDRLEN);
  a->nla_type = type;
  a->nla_len = (uint16_t)(NLA_HDRLEN + n);
  if (n) put(data, n);
  return a;
}

static struct nlattr *nest(uint16_t type) { return attr(type | NLA_F_NESTED, NULL, 0); }
static void end(struct nlattr *a) { a->nla_len = (uint16_t)(buf + len - (char *)a); }

static struct nlmsghdr *msg(uint16_t type, uint16_t flags, uint16_t res_id) {
  struct nlmsghdr *h = put(NULL, NLMSG_HDRLEN);
  h->nlmsg_type = type;
  h->nlmsg_flags = NLM_F_REQUEST | flags;
  h->nlmsg_seq = ++seq;
  struct nfgenmsg *g = put(NULL, sizeof *g);
  g->nfgen_family = NFPROTO_INET;
  g->version = NFNETLINK_V0;
  g->res_id = htons(res_id);
  return h;
}

static void done(struct nlmsghdr *h) { h->nlmsg_len = (uint32_t)(buf + len - (char *)h); }

/* Sends the buffer; waits for the acknowledgement of message `want`. Returns 0 or an errno. */
static int talk(uint32_t want) {
  if (send(nl, buf, len, 0) < 0) return errno;
  char in[8192];
  for (;;) {
    ssize_t n = recv(nl, in, sizeof in, 0);
    if (n < 0) return errno;
    for (struct nlmsghdr *h = (struct nlmsghdr *)in; NLMSG_OK(h, (unsigned)n); h = NLMSG_NEXT(h, n)) {
      if (h->nlmsg_type != NLMSG_ERROR) continue;
      struct nlmsgerr *e = NLMSG_DATA(h);
      if (e->error != 0) return -e->error;
      if (h->nlmsg_seq == want) return 0;
    }
  }
}

/* The key of an element: the interface name padded to IFNAMSIZ, then the address if any. */
static size_t key_of(const char *ifname, const char *addr, unsigned char *key) {
  memset(key, 0, KEY_MAX);
  strncpy((char *)key, ifname, IFNAMSIZ - 1);
  if (!addr) return IFNAMSIZ;
  struct in_addr a;
  if (inet_pton(AF_INET, addr, &a) != 1) return 0;
  memcpy(key + IFNAMSIZ, &a, 4);
  return IFNAMSIZ + 4;
}

/* One element change in its own batch: add (with optional timeout or jump verdict) or delete. An add with
 * KEEP succeeds when the same element is there (same key and verdict), and fails with EEXIST only when its
 * verdict differs. */
#define KEEP 2
static int element(int add, const char *set, const unsigned char *key, size_t klen, const unsigned char *key_end, uint64_t timeout_ms, const char *chain) {
  len = 0;
  struct nlmsghdr *b = msg(NFNL_MSG_BATCH_BEGIN, 0, NFNL_SUBSYS_NFTABLES);
  done(b);
  uint16_t type = add ? NFT_MSG_NEWSETELEM : (have_destroy ? NFT_MSG_DESTROYSETELEM : NFT_MSG_DELSETELEM);
  struct nlmsghdr *h = msg((NFNL_SUBSYS_NFTABLES << 8) | type, NLM_F_ACK | (add ? NLM_F_CREATE | (add == KEEP ? 0 : NLM_F_EXCL) : 0), 0);
  attr(NFTA_SET_ELEM_LIST_TABLE, table, strlen(table) + 1);
  attr(NFTA_SET_ELEM_LIST_SET, set, strlen(set) + 1);
  struct nlattr *list = nest(NFTA_SET_ELEM_LIST_ELEMENTS);
  struct nlattr *el = nest(NFTA_LIST_ELEM);
  struct nlattr *k = nest(NFTA_SET_ELEM_KEY);
  attr(NFTA_DATA_VALUE, key, klen);
  end(k);
  if (key_end) {
    struct nlattr *ke = nest(NFTA_SET_ELEM_KEY_END);
    attr(NFTA_DATA_VALUE, key_end, klen);
    end(ke);
  }
  if (add && timeout_ms) {
    uint64_t t = htobe64(timeout_ms);
    attr(NFTA_SET_ELEM_TIMEOUT, &t, sizeof t);
  }
  if (add && chain) {
    struct nlattr *d = nest(NFTA_SET_ELEM_DATA);
    struct nlattr *v = nest(NFTA_DATA_VERDICT);
    uint32_t code = htonl((uint32_t)NFT_JUMP);
    attr(NFTA_VERDICT_CODE, &code, sizeof code);
    attr(NFTA_VERDICT_CHAIN, chain, strlen(chain) + 1);
    end(v);
    end(d);
  }
  end(el);
  end(list);
  done(h);
  uint32_t want = h->nlmsg_seq;
  struct nlmsghdr *e = msg(NFNL_MSG_BATCH_END, 0, NFNL_SUBSYS_NFTABLES);
  done(e);
  int err = talk(want);
  if (!add && have_destroy && (err == EOPNOTSUPP || err == EINVAL)) {
    have_destroy = 0;
    return element(add, set, key, klen, key_end, timeout_ms, chain);
  }
  return err;
}

struct found {
  unsigned char key[KEY_MAX], end[KEY_MAX];
  size_t len;
  int has_end;
};

/* Reads a key attribute's value into `out`; returns its length or 0. */
static size_t value_of(struct nlattr *f, unsigned char *out) {
  struct nlattr *v = (struct nlattr *)((char *)f + NLA_HDRLEN);
  size_t vl = v->nla_len - NLA_HDRLEN;
  if ((v->nla_type & NLA_TYPE_MASK) != NFTA_DATA_VALUE || vl < IFNAMSIZ || vl > KEY_MAX) return 0;
  memcpy(out, (unsigned char *)v + NLA_HDRLEN, vl);
  return vl;
}

#define EACH_ATTR(a, start, stop) \
  for (struct nlattr *a = (struct nlattr *)(start); (char *)a + NLA_HDRLEN <= (char *)(stop) && a->nla_len >= NLA_HDRLEN; \
       a = (struct nlattr *)((char *)a + NLA_ALIGN(a->nla_len)))

/* The set's elements whose key starts with the interface name (a dump of the set). */
static int keys_of(const char *set, const unsigned char *prefix, struct found *out, int *n) {
  len = 0;
  struct nlmsghdr *h = msg((NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_GETSETELEM, NLM_F_DUMP | NLM_F_ACK, 0);
  attr(NFTA_SET_ELEM_LIST_TABLE, table, strlen(table) + 1);
  attr(NFTA_SET_ELEM_LIST_SET, set, strlen(set) + 1);
  done(h);
  if (send(nl, buf, len, 0) < 0) return errno;
  *n = 0;
  static char in[1 << 16];
  for (;;) {
    ssize_t r = recv(nl, in, sizeof in, 0);
    if (r < 0) return errno;
    for (struct nlmsghdr *m = (struct nlmsghdr *)in; NLMSG_OK(m, (unsigned)r); m = NLMSG_NEXT(m, r)) {
      if (m->nlmsg_type == NLMSG_DONE) return 0;
      if (m->nlmsg_type == NLMSG_ERROR) {
        int err = ((struct nlmsgerr *)NLMSG_DATA(m))->error;
        if (err) return -err;
        continue;
      }
      char *stop = (char *)m + m->nlmsg_len;
      EACH_ATTR(a, (char *)NLMSG_DATA(m) + sizeof(struct nfgenmsg), stop) {
        if ((a->nla_type & NLA_TYPE_MASK) != NFTA_SET_ELEM_LIST_ELEMENTS) continue;
        EACH_ATTR(e, (char *)a + NLA_HDRLEN, (char *)a + a->nla_len) {
          struct found f = {.len = 0, .has_end = 0};
          EACH_ATTR(x, (char *)e + NLA_HDRLEN, (char *)e + e->nla_len) {
            int type = x->nla_type & NLA_TYPE_MASK;
            if (type == NFTA_SET_ELEM_KEY) f.len = value_of(x, f.key);
            else if (type == NFTA_SET_ELEM_KEY_END) f.has_end = value_of(x, f.end) > 0;
          }
          if (f.len && memcmp(f.key, prefix, IFNAMSIZ) == 0 && *n < MAX_KEYS) out[(*n)++] = f;
        }
      }
    }
  }
}

/* Start and end of `CIDR [PROTO PORT[-END]]` after the interface, as register values. */
static size_t range_of(char **argv, int argc, unsigned char *key, unsigned char *end) {
  char addr[16];
  unsigned prefix;
  struct in_addr a;
  if (sscanf(argv[0], "%15[0-9.]/%u", addr, &prefix) != 2 || prefix > 32 || inet_pton(AF_INET, addr, &a) != 1) return 0;
  uint32_t base = ntohl(a.s_addr), mask = prefix ? 0xffffffffu << (32 - prefix) : 0;
  uint32_t lo = htonl(base & mask), hi = htonl((base & mask) | ~mask);
  memcpy(key + IFNAMSIZ, &lo, 4);
  memcpy(end + IFNAMSIZ, &hi, 4);
  if (argc == 1) return IFNAMSIZ + 4;
  unsigned p1, p2;
  int proto = !strcmp(argv[1], "tcp") ? 6 : !strcmp(argv[1], "udp") ? 17 : -1;
  if (argc != 3 || proto < 0) return 0;
  int got = sscanf(argv[2], "%u-%u", &p1, &p2);
  if (got < 1 || p1 < 1 || p1 > 65535) return 0;
  if (got == 1) p2 = p1;
  if (p2 < p1 || p2 > 65535) return 0;
  key[IFNAMSIZ + 4] = end[IFNAMSIZ + 4] = (unsigned char)proto;
  uint16_t s1 = htons((uint16_t)p1), s2 = htons((uint16_t)p2);
  memcpy(key + IFNAMSIZ + 8, &s1, 2);
  memcpy(end + IFNAMSIZ + 8, &s2, 2);
  return IFNAMSIZ + 12;
}

static int run(char *line) {
  char *argv[6];
  int argc = 0;
  for (char *t = strtok(line, " \t"); t && argc < 6; t = strtok(NULL, " \t")) argv[argc++] = t;
  if (argc < 3) return EINVAL;
  unsigned char key[KEY_MAX], key_end[KEY_MAX];
  const char *op = argv[0], *set = argv[1];
  if (strlen(argv[2]) >= IFNAMSIZ) return EINVAL;
  if (!strcmp(op, "jump") && argc == 4) {
    size_t kl = key_of(argv[2], NULL, key);
    /* A box's policy is written again at every update and after every restart: an element that jumps to
     * the same chain is left as it is, so the box has no moment without it (it would reach nothing). */
    int err = element(KEEP, set, key, kl, NULL, 0, argv[3]);
    if (err != EEXIST) return err;
    element(0, set, key, kl, NULL, 0, NULL);
    return element(1, set, key, kl, NULL, 0, argv[3]);
  }
  if (!strcmp(op, "range") && argc >= 4) {
    key_of(argv[2], NULL, key);
    memset(key + IFNAMSIZ, 0, KEY_MAX - IFNAMSIZ);
    memcpy(key_end, key, KEY_MAX);
    size_t kl = range_of(argv + 3, argc - 3, key, key_end);
    if (!kl) return EINVAL;
    int err = element(1, set, key, kl, key_end, 0, NULL);
    return err == EEXIST ? 0 : err;
  }
  if (!strcmp(op, "flush") && argc == 3) {
    static struct found found[MAX_KEYS];
    int n = 0;
    key_of(argv[2], NULL, key);
    /* One dump holds at most MAX_KEYS of the box's elements, and a dump the kernel cut short (the set
     * changed under it: NLM_F_DUMP_INTR, or a busy host) holds fewer than there are: dump again until one
     * finds none of the box's (bounded, so a set that keeps refilling cannot hold the daemon). */
    int rounds = 0;
    do {
      int err = keys_of(set, key, found, &n);
      if (err) return err;
      for (int i = 0; i < n; i++) element(0, set, found[i].key, found[i].len, found[i].has_end ? found[i].end : NULL, 0, NULL);
    } while (n > 0 && ++rounds < 64);
    return n > 0 ? EAGAIN : 0;
  }
  const char *addr = argc >= 4 && strchr(argv[3], '.') ? argv[3] : NULL;
  size_t kl = key_of(argv[2], addr, key);
  if (!kl) return EINVAL;
  if (!strcmp(op, "del")) {
    int err = element(0, set, key, kl, NULL, 0, NULL);
    return err == ENOENT ? 0 : err;
  }
  if (!strcmp(op, "add")) {
    const char *t = argc >= 5 ? argv[4] : (argc == 4 && !addr ? argv[3] : NULL);
    uint64_t timeout = t ? strtoull(t, NULL, 10) : 0;
    /* An existing one is replaced, so that a pinned address gets the new answer's time to live. A batch
     * that fails costs the kernel an abort (milliseconds), so the common case (absent) is tried first. */
    int err = element(1, set, key, kl, NULL, timeout, NULL);
    if (err != EEXIST) return err;
    element(0, set, key, kl, NULL, 0, NULL);
    return element(1, set, key, kl, NULL, timeout, NULL);
  }
  return EINVAL;
}

int main(int argc, char **argv) {
  if (argc > 1) table = argv[1];
  nl = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_NETFILTER);
  struct sockaddr_nl sa = {.nl_family = AF_NETLINK};
  if (nl < 0 || bind(nl, (struct sockaddr *)&sa, sizeof sa) != 0) {
    perror("nftsetd: netlink");
    return 1;
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  printf("ready\n");
  char line[512];
  while (fgets(line, sizeof line, stdin)) {
    line[strcspn(line, "\n")] = '\0';
    int err = run(line);
    if (err) printf("err %s\n", strerror(err));
    else printf("ok\n");
  }
  return 0;
}
