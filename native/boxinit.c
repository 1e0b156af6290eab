/* boxinit: creates a devboxd sandbox and becomes its PID 1.
 *
 * Started by the server (as host root, in its own session) with the box's overlay options, hostname and
 * cgroups. The launcher process joins the box cgroups, unshares mount/UTS/IPC/net/cgroup/PID namespaces and
 * forks the init. The init builds the root filesystem (overlay + /proc, /sys, /dev) while it still holds
 * host privileges, pivots into it, then moves into a fresh user namespace whose id map the launcher
 * writes (box 0..65535 = host BOX_ID_BASE..), drops every privilege and reaps zombies forever.
 * The launcher prints the init's host pid and exits, so the box outlives the server.
 *
 * usage: boxinit -r ROOTDIR -o OVERLAY_OPTS -n HOSTNAME [-d LAYERDIR] [-c CGROUP_PROCS_FILE]... [-b HOSTDIR:SUBDIR]...
 *   -d: the directory OVERLAY_OPTS's relative paths start from. The box reads the options back in
 *       /proc/self/mountinfo, so relative names there keep the host's paths out of its sight.
 *   -b bind-mounts a host cgroup directory read-only at /sys/fs/cgroup/SUBDIR ("" = /sys/fs/cgroup).
 *   -V HOSTIF,HOST_ADDR,BOX_ADDR gives the box eth0, a veth to the host (boxnet.c); without it, only lo.
 *   -J PID:STARTTIME joins the network namespace of that running box init instead of making one (a service
 *       sidecar: the box reaches it on localhost); the start time (/proc/PID/stat field 22) guards against a
 *       reused pid. Every other namespace, the user namespace included, stays the sidecar's own.
 */
#define _GNU_SOURCE
#include "common.h"
#include "forkd.h"
#include "boxnet.h"
#include "idmap.h"
#include "launch.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_LIST 16
/* Idmapped directories: every lower layer and the disk. An image from a registry may bring up to 127
 * layers, and snapshots go on top of them. */
#define MAX_LAYERS 256

static const char *root_dir, *overlay_opts, *hostname, *layer_dir, *forkd_sock, *net_spec;
static const char *cgroup_procs[MAX_LIST], *idmapped[MAX_LAYERS];
static int n_idmapped, max_commands = 256, idmap_fd = -1, join_net_fd = -1;
/* Host uid/gid that box id 0 maps to: the box's own range (BOX_ID_BASE, the canonical range, without -i). */
static long id_base = BOX_ID_BASE;
static char *cgroup_binds[MAX_LIST];
static int n_procs, n_binds;

static void must_mount(const char *src, const char *dst, const char *type, unsigned long flags,
                       const char *data) {
  if (mount(src, dst, type, flags, data) != 0) die(1, "mount %s on %s", type ? type : (src ? src : "(remount)"), dst);
}

/* Device nodes a shell and common tools expect; owned by box root so `ls -l /dev` looks normal. */
static void make_dev(void) {
  static const struct { const char *name; unsigned maj, min; } nodes[] = {
      {"dev/null", 1, 3}, {"dev/zero", 1, 5}, {"dev/full", 1, 7},
      {"dev/random", 1, 8}, {"dev/urandom", 1, 9}, {"dev/tty", 5, 0}};
  char opts[96];
  snprintf(opts, sizeof opts, "mode=755,size=1m,uid=%d,gid=%d", (int)id_base, (int)id_base);
  must_mount("tmpfs", "dev", "tmpfs", MS_NOSUID | MS_NOEXEC, opts);
  for (size_t i = 0; i < sizeof nodes / sizeof nodes[0]; i++) {
    if (mknod(nodes[i].name, S_IFCHR | 0666, makedev(nodes[i].maj, nodes[i].min)) != 0)
      die(1, "mknod %s", nodes[i].name);
    if (lchown(nodes[i].name, (int)id_base, (int)id_base) != 0) die(1, "chown %s", nodes[i].name);
  }
  if (mkdir("dev/pts", 0755) || mkdir("dev/shm", 01777) || mkdir("dev/mqueue", 01777))
    die(1, "mkdir /dev/*");
  /* The tty group (5) as the box sees it; the mount resolves ids in the host's namespace. */
  snprintf(opts, sizeof opts, "newinstance,ptmxmode=0666,mode=0620,gid=%d", (int)id_base + 5);
  must_mount("devpts", "dev/pts", "devpts", MS_NOSUID | MS_NOEXEC, opts);
  snprintf(opts, sizeof opts, "mode=1777,uid=%d,gid=%d", (int)id_base, (int)id_base);
  must_mount("tmpfs", "dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, opts);
  must_mount("mqueue", "dev/mqueue", "mqueue", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
  if (symlink("pts/ptmx", "dev/ptmx") || symlink("/proc/self/fd", "dev/fd") ||
      symlink("/proc/self/fd/0", "dev/stdin") || symlink("/proc/self/fd/1", "dev/stdout") ||
      symlink("/proc/self/fd/2", "dev/stderr"))
    die(1, "symlink /dev/*");
  static const char *owned[] = {"dev/pts", "dev/shm", "dev/mqueue", "dev/ptmx", "dev/fd",
                                "dev/stdin", "dev/stdout", "dev/stderr"};
  for (size_t i = 0; i < sizeof owned / sizeof owned[0]; i++)
    if (lchown(owned[i], (int)id_base, (int)id_base) != 0) die(1, "chown %s", owned[i]);
}

/* Shows the box its own cgroup (read-only) at /sys/fs/cgroup, the way a container sees it. */
static void bind_cgroups(void) {
  const unsigned long ro = MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC;
  int need_tmpfs = n_binds > 1 || (n_binds == 1 && strchr(cgroup_binds[0], ':')[1] != '\0');
  if (need_tmpfs) must_mount("tmpfs", "sys/fs/cgroup", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=755");
  for (int i = 0; i < n_binds; i++) {
    char *sep = strchr(cgroup_binds[i], ':');
    *sep = '\0';
    char dst[256];
    snprintf(dst, sizeof dst, "sys/fs/cgroup/%s", sep + 1);
    if (sep[1] && mkdir(dst, 0755) != 0) die(1, "mkdir %s", dst);
    must_mount(cgroup_binds[i], dst, NULL, MS_BIND, NULL);
    must_mount(NULL, dst, NULL, ro, NULL);
  }
  if (need_tmpfs) must_mount(NULL, "sys/fs/cgroup", NULL, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=755");
}

/* What the box must not read of the host: runc's masked paths, and the kernel's boot arguments. Files are
 * covered with /dev/null, directories with an empty read-only tmpfs; absent ones are skipped. */
static void mask_paths(void) {
  static const char *masked[] = {"proc/cmdline", "proc/kcore", "proc/keys", "proc/key-users", "proc/latency_stats",
                                 "proc/timer_list", "proc/timer_stats", "proc/sched_debug", "proc/acpi",
                                 "proc/asound", "proc/scsi", "sys/firmware", "sys/devices/virtual/powercap"};
  for (size_t i = 0; i < sizeof masked / sizeof masked[0]; i++) {
    struct stat st;
    if (lstat(masked[i], &st) != 0) continue;
    if (S_ISDIR(st.st_mode)) must_mount("tmpfs", masked[i], "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=0");
    else must_mount("dev/null", masked[i], NULL, MS_BIND, NULL);
  }
}

/* Runs as host root inside the new mount namespace: assembles the root filesystem and pivots into it,
 * so nothing of the host's tree stays reachable. */
static void setup_root(void) {
  const unsigned long kernfs = MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY;
  must_mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL);
  for (int i = 0; i < n_idmapped; i++) idmap_dir(idmapped[i], idmap_fd);
  if (layer_dir && chdir(layer_dir) != 0) die(1, "chdir %s", layer_dir);
  must_mount("overlay", root_dir, "overlay", 0, overlay_opts);
  if (chdir(root_dir) != 0) die(1, "chdir %s", root_dir);
  must_mount("proc", "proc", "proc", kernfs, NULL);
  must_mount("sysfs", "sys", "sysfs", kernfs, NULL);
  bind_cgroups();
  make_dev();
  mask_paths();
  if (syscall(SYS_pivot_root, ".", ".") != 0) die(1, "pivot_root");
  if (umount2(".", MNT_DETACH) != 0) die(1, "detach the host root");
  if (chdir("/") != 0) die(1, "chdir /");
}

static void loopback_up(void) {
  int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  struct ifreq ifr;
  memset(&ifr, 0, sizeof ifr);
  strcpy(ifr.ifr_name, "lo");
  if (s < 0 || ioctl(s, SIOCGIFFLAGS, &ifr) != 0) die(1, "lo flags");
  ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
  if (ioctl(s, SIOCSIFFLAGS, &ifr) != 0) die(1, "lo up");
  close(s);
}

static void drop_all_caps(void) {
  struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct data[2];
  memset(data, 0, sizeof data);
  if (syscall(SYS_capset, &hdr, data) != 0) die(1, "capset");
}

/* PID 1 of the box: with every signal blocked it only wakes on SIGCHLD to reap orphans. Only SIGKILL
 * from the host ends it, and the kernel then kills every process of the box's PID namespace. */
static void __attribute__((noreturn)) reap_forever(void) {
  sigset_t all, chld;
  sigfillset(&all);
  sigprocmask(SIG_BLOCK, &all, NULL);
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  for (;;) {
    while (waitpid(-1, NULL, WNOHANG) > 0) {
    }
    sigwaitinfo(&chld, NULL);
  }
}

/* Opens the network namespace of box init PID, checking that PID is still the process started at STARTTIME:
 * checked after the open, so the namespace is the one of that process (a pid is never reused while its
 * process lives). */
static int open_box_netns(const char *spec) {
  long pid;
  unsigned long long want;
  if (sscanf(spec, "%ld:%llu", &pid, &want) != 2 || pid <= 1) {
    errno = EINVAL;
    die(2, "bad -J %s", spec);
  }
  char path[64], buf[2048];
  snprintf(path, sizeof path, "/proc/%ld/ns/net", pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) die(1, "open %s", path);
  snprintf(path, sizeof path, "/proc/%ld/stat", pid);
  int sfd = open(path, O_RDONLY | O_CLOEXEC);
  ssize_t n = sfd >= 0 ? read(sfd, buf, sizeof buf - 1) : -1;
  if (sfd >= 0) close(sfd);
  if (n <= 0) die(1, "read %s", path);
  buf[n] = '\0';
  char *p = strrchr(buf, ')');
  for (int field = 2; p && field < 22; field++) p = strchr(p + 1, ' ');
  unsigned long long start;
  if (!p || sscanf(p + 1, "%llu", &start) != 1 || start != want) {
    errno = ESRCH;
    die(1, "box init %ld is gone", pid);
  }
  return fd;
}

static char *args_end; /* end of the argument strings, recorded before any is modified */

/* The box sees its init's command line; host paths in it are none of its business. Runs while the
 * init still has host privileges (PR_SET_MM needs CAP_SYS_RESOURCE). */
static void hide_args(char **argv) {
  memset(argv[0], 0, (size_t)(args_end - argv[0]));
  size_t room = strlen("boxinit") + 1;
  if ((size_t)(args_end - argv[0]) < room) return;
  memcpy(argv[0], "boxinit", room);
  prctl(PR_SET_MM, PR_SET_MM_ARG_END, (unsigned long)(argv[0] + room), 0, 0);
}

static void __attribute__((noreturn)) init_main(int ready_fd, int go_fd, char **argv) {
  progname = "boxinit(init)";
  /* The cgroup namespace is rooted at the box cgroup the launcher joined before the fork. */
  /* A sidecar enters its box's network namespace while it is still host root (which may join any). */
  if (join_net_fd >= 0 && setns(join_net_fd, CLONE_NEWNET) != 0) die(1, "join the box's network namespace");
  if (join_net_fd >= 0) close(join_net_fd);
  int netflag = join_net_fd >= 0 ? 0 : CLONE_NEWNET;
  if (unshare(CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | netflag | CLONE_NEWCGROUP) != 0)
    die(1, "unshare");
  /* The launcher links the new network namespace while this builds the root filesystem. */
  if (net_spec && write(ready_fd, "n", 1) != 1) die(1, "launcher gone");
  setup_root();
  if (sethostname(hostname, strlen(hostname)) != 0) die(1, "sethostname");
  if (netflag) loopback_up(); /* a joined namespace is the box's: its loopback is up already */
  hide_args(argv); /* the options are used up: everything above read them */
  /* The user namespace belongs to the box's own host root uid, not to host root: per-user kernel counts
   * (inotify instances, mqueue bytes, processes) of everything in the box are charged to that uid. */
  if (setgroups(0, NULL) || setresgid(id_base, id_base, id_base) || setresuid(id_base, id_base, id_base))
    die(1, "become the box's host uid");
  if (unshare(CLONE_NEWUSER) != 0) die(1, "unshare user namespace");
  char c = 'u';
  if (write(ready_fd, &c, 1) != 1 || read(go_fd, &c, 1) != 1) die(1, "launcher gone");
  if (setgroups(0, NULL) || setresgid(0, 0, 0) || setresuid(0, 0, 0)) die(1, "become box root");
  limit_bounding_set(0);
  drop_all_caps();
  set_no_new_privs();
  install_seccomp();
  int null = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(null, 2) < 0) _exit(1);
  setsid();
  prctl(PR_SET_NAME, "boxinit", 0, 0, 0);
  c = 'r';
  if (write(ready_fd, &c, 1) != 1) _exit(1);
  close(ready_fd);
  close(go_fd);
  reap_forever();
}

static void write_id_maps(pid_t pid) {
  char path[64], map[64];
  snprintf(map, sizeof map, "0 %ld %d\n", id_base, BOX_ID_COUNT);
  snprintf(path, sizeof path, "/proc/%d/uid_map", pid);
  if (write_file(path, map) != 0) die(1, "write %s", path);
  snprintf(path, sizeof path, "/proc/%d/gid_map", pid);
  if (write_file(path, map) != 0) die(1, "write %s", path);
}

/* The box's forker (forkd.c): forked from this launcher, which sits in the box's cgroups, back in the
 * host's PID namespace; it listens before the box is reported ready. */
static void start_forkd(pid_t init, int host_pidns, char **argv) {
  int pidfd = (int)syscall(SYS_pidfd_open, init, 0);
  int lfd = unix_socket_at(forkd_sock, 512);
  if (pidfd < 0 || lfd < 0) die(1, "forker socket %s", forkd_sock);
  if (setns(host_pidns, CLONE_NEWPID) != 0) die(1, "back to the host pid namespace");
  pid_t f = fork();
  if (f < 0) die(1, "fork the forker");
  if (f > 0) return;
  setsid();
  int null = open("/dev/null", O_RDWR);
  if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(null, 2) < 0 || dup2(lfd, 3) < 0 || dup2(pidfd, 4) < 0)
    _exit(1);
  syscall(SYS_close_range, 5, ~0U, 0);
  hide_args(argv);
  forkd_run(3, 4, max_commands);
}

int main(int argc, char **argv) {
  progname = "boxinit";
  args_end = argv[argc - 1] + strlen(argv[argc - 1]) + 1;
  int opt;
  while ((opt = getopt(argc, argv, "r:o:n:d:c:b:i:m:x:N:V:J:")) != -1) {
    switch (opt) {
      case 'r': root_dir = optarg; break;
      case 'o': overlay_opts = optarg; break;
      case 'n': hostname = optarg; break;
      case 'd': layer_dir = optarg; break;
      case 'i': id_base = atol(optarg); break;
      case 'm':
        /* Never dropped silently: a layer left unmapped would show its files as owned by nobody. */
        if (n_idmapped >= MAX_LAYERS) { errno = E2BIG; die(2, "more than %d layers", MAX_LAYERS - 1); }
        idmapped[n_idmapped++] = optarg;
        break;
      case 'x': forkd_sock = optarg; break;
      case 'N': max_commands = atoi(optarg); break;
      case 'V': net_spec = optarg; break;
      case 'J': join_net_fd = open_box_netns(optarg); break;
      case 'c': if (n_procs < MAX_LIST) cgroup_procs[n_procs++] = optarg; break;
      case 'b':
        if (n_binds < MAX_LIST && strchr(optarg, ':')) cgroup_binds[n_binds++] = optarg;
        break;
      default: errno = 0; die(2, "bad arguments");
    }
  }
  errno = 0;
  if (!root_dir || !overlay_opts || !hostname) die(2, "-r, -o and -n are required");
  if (net_spec && join_net_fd >= 0) die(2, "-V and -J exclude each other");
  if (id_base < BOX_ID_BASE || id_base > 0x7fff0000L || (n_idmapped && id_base == BOX_ID_BASE)) die(2, "bad -i");
  umask(0);
  int host_pidns = open("/proc/self/ns/pid", O_RDONLY | O_CLOEXEC);
  if (host_pidns < 0) die(1, "open /proc/self/ns/pid");

  char self[16];
  snprintf(self, sizeof self, "%d", getpid());
  for (int i = 0; i < n_procs; i++)
    if (write_file(cgroup_procs[i], self) != 0) die(1, "join cgroup %s", cgroup_procs[i]);
  /* After joining: a fork and kill before a cgroup migration makes the migration wait for an RCU grace
   * period (about 10 ms); the helper's one transient slot is the box's, which holds nothing yet. */
  if (n_idmapped) idmap_fd = idmap_userns(id_base);
  /* Only the PID namespace here (it applies to the next child); the init unshares the rest itself,
   * so that its pivot_root leaves this launcher in the host's tree, where it writes the id maps. */
  if (unshare(CLONE_NEWPID) != 0) die(1, "unshare pid namespace");

  int ready[2], go[2];
  if (pipe2(ready, O_CLOEXEC) != 0 || pipe2(go, O_CLOEXEC) != 0) die(1, "pipe");
  pid_t pid = fork();
  if (pid < 0) die(1, "fork");
  if (pid == 0) {
    close(ready[0]);
    close(go[1]);
    init_main(ready[1], go[0], argv);
  }
  close(ready[1]);
  close(go[0]);
  char c;
  /* With a link, the init reports "n" once it has its network namespace: eth0 is made while it mounts. */
  if (net_spec) {
    if (read(ready[0], &c, 1) != 1) {
      kill(pid, SIGKILL);
      return 1;
    }
    boxnet_setup(pid, net_spec);
  }
  /* The init reports "u" once it sits in its new user namespace; an early EOF means it failed and
   * already said why on the shared stderr. */
  if (read(ready[0], &c, 1) != 1) {
    kill(pid, SIGKILL);
    return 1;
  }
  write_id_maps(pid);
  if (write(go[1], "g", 1) != 1 || read(ready[0], &c, 1) != 1) {
    kill(pid, SIGKILL);
    errno = 0;
    die(1, "init failed after the id maps");
  }
  if (forkd_sock) start_forkd(pid, host_pidns, argv);
  printf("%d\n", pid);
  return 0;
}
