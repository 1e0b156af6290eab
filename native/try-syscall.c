/* try-syscall: a probe the containment tests run inside a box (in the style of bubblewrap's
 * tests/try-syscall.c). Each probe makes one call and prints "NAME RESULT": "ok", or the errno name.
 * Refusal probes pass deliberately wrong pointers where the kernel checks them first, so that an allowed
 * call fails with EFAULT/EBADF/EINVAL and only the seccomp filter answers EPERM (or ENOSYS, EAFNOSUPPORT).
 *
 * usage: try-syscall [NAME...]     (no name: every probe)
 *        try-syscall --watch MS    scans /proc for MS milliseconds and prints "leak PID CapEff ..." for
 *                                  any process that holds capabilities or shows a host command line
 *        try-syscall --loop N [--filter]   times N getppid (decided by number alone, so the kernel's seccomp
 *                                  cache can skip the filter) and N ioctl(FIONREAD) (checked by argument)
 *                                  calls; --filter installs the box filter first (bench/seccomp.ts)
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

#define WRONG ((long)1) /* an address the kernel refuses with EFAULT */
#define R(expr) ((expr) < 0 ? errno : 0)

static long sc(long nr, long a, long b, long c, long d, long e) { return syscall(nr, a, b, c, d, e); }

static int sock(int family, int type, int proto) {
  int fd = socket(family, type | SOCK_CLOEXEC, proto);
  if (fd < 0) return errno;
  close(fd);
  return 0;
}

/* Runs `fn` in a child made by clone with `flags`: 0 when the child ran. */
static int child_fn(void *arg) { (void)arg; return 0; }
static int clone_with(int flags) {
  static char stack[65536] __attribute__((aligned(16)));
  pid_t pid = clone(child_fn, stack + sizeof stack, flags | SIGCHLD, NULL);
  if (pid < 0) return errno;
  waitpid(pid, NULL, 0);
  return 0;
}

static void *thread_fn(void *arg) { return arg; }
static int threads(void) {
  pthread_t t[4];
  for (int i = 0; i < 4; i++)
    if ((errno = pthread_create(&t[i], NULL, thread_fn, NULL)) != 0) return errno;
  for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
  return 0;
}

static int forked(void) {
  pid_t pid = fork();
  if (pid < 0) return errno;
  if (pid == 0) _exit(7);
  int st;
  return waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 7 ? 0 : ECHILD;
}

/* A debugger attaching to its own child: what gdb and strace do. */
static int ptrace_child(void) {
  pid_t pid = fork();
  if (pid < 0) return errno;
  if (pid == 0) {
    pause();
    _exit(0);
  }
  int err = R(ptrace(PTRACE_ATTACH, pid, 0, 0));
  if (!err) waitpid(pid, NULL, 0);
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
  return err;
}

static int loopback_listen(void) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  int err = fd < 0 ? errno : R(bind(fd, (struct sockaddr *)&a, sizeof a));
  if (!err) err = R(listen(fd, 1));
  if (fd >= 0) close(fd);
  return err;
}

static int fd_call(long r) {
  if (r < 0) return errno;
  close((int)r);
  return 0;
}

static int vm_read_self(void) {
  char src[8] = "probe", dst[8];
  struct iovec l = {dst, sizeof dst}, r = {src, sizeof src};
  return R(process_vm_readv(getpid(), &l, 1, &r, 1, 0));
}

#ifdef __x86_64__
/* getpid through the i386 entry point: the filter refuses foreign ABIs. */
/* Kernels built or booted without IA-32 emulation (ia32_emulation=0) answer `int $0x80` with SIGSEGV before
 * any filter sees it: the call runs in a child, and that answer is reported as ABSENT (no such entry point). */
#define ABSENT 100000
static int int80(void) {
  pid_t pid = fork();
  if (pid < 0) return errno;
  if (pid == 0) {
    long r;
    __asm__ volatile("int $0x80" : "=a"(r) : "a"(20L) : "memory");
    _exit(r < 0 ? (int)(-r & 0xff) : 0);
  }
  int status;
  if (waitpid(pid, &status, 0) < 0) return errno;
  if (WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV) return ABSENT;
  return WIFEXITED(status) ? WEXITSTATUS(status) : EIO;
}
#endif

struct probe {
  const char *name;
  int (*fn)(void);
};

#define P(name, expr) static int p_##name(void) { return (expr); }
/* must be refused */
P(mount, R(sc(__NR_mount, WRONG, WRONG, WRONG, 0, WRONG)))
P(umount2, R(sc(__NR_umount2, WRONG, 0, 0, 0, 0)))
P(pivot_root, R(sc(__NR_pivot_root, WRONG, WRONG, 0, 0, 0)))
P(unshare, R(sc(__NR_unshare, 0, 0, 0, 0, 0)))
P(unshare_user, R(sc(__NR_unshare, CLONE_NEWUSER, 0, 0, 0, 0)))
P(clone_newuser, clone_with(CLONE_NEWUSER))
P(clone_newns, clone_with(CLONE_NEWNS))
P(clone_newnet, clone_with(CLONE_NEWNET))
P(clone3, R(sc(__NR_clone3, WRONG, 88, 0, 0, 0)))
P(setns, R(sc(__NR_setns, -1, 0, 0, 0, 0)))
P(bpf, R(sc(__NR_bpf, 0, WRONG, 72, 0, 0)))
P(perf_event_open, R(sc(__NR_perf_event_open, WRONG, 0, -1, -1, 0)))
P(keyctl, R(sc(__NR_keyctl, 0 /*GET_KEYRING_ID*/, -3 /*session*/, 0, 0, 0)))
P(add_key, R(sc(__NR_add_key, (long)"user", (long)"probe", (long)"x", 1, -2 /*process*/)))
P(request_key, R(sc(__NR_request_key, WRONG, WRONG, 0, 0, 0)))
P(init_module, R(sc(__NR_init_module, WRONG, 0, WRONG, 0, 0)))
P(finit_module, R(sc(__NR_finit_module, -1, WRONG, 0, 0, 0)))
P(delete_module, R(sc(__NR_delete_module, WRONG, 0, 0, 0, 0)))
P(kexec_load, R(sc(__NR_kexec_load, 0, 0, WRONG, 0, 0)))
P(kexec_file_load, R(sc(__NR_kexec_file_load, -1, -1, 0, WRONG, 0)))
P(open_by_handle_at, R(sc(__NR_open_by_handle_at, -1, WRONG, 0, 0, 0)))
P(userfaultfd, fd_call(sc(__NR_userfaultfd, 1 /*UFFD_USER_MODE_ONLY*/, 0, 0, 0, 0)))
P(io_uring_setup, R(sc(__NR_io_uring_setup, 1, WRONG, 0, 0, 0)))
P(ptrace_init, R(ptrace(PTRACE_ATTACH, 1, 0, 0)))
P(syslog, R(sc(__NR_syslog, 10 /*SIZE_BUFFER*/, 0, 0, 0, 0)))
P(acct, R(sc(__NR_acct, WRONG, 0, 0, 0, 0)))
P(swapon, R(sc(__NR_swapon, WRONG, 0, 0, 0, 0)))
P(reboot, R(sc(__NR_reboot, 0, 0, 0, 0, 0)))
P(sethostname, R(sc(__NR_sethostname, WRONG, 1, 0, 0, 0)))
P(quotactl, R(sc(__NR_quotactl, 0, WRONG, 0, WRONG, 0)))
P(fsopen, R(sc(__NR_fsopen, WRONG, 0, 0, 0, 0)))
P(open_tree, R(sc(__NR_open_tree, -1, WRONG, 0, 0, 0)))
P(move_mount, R(sc(__NR_move_mount, -1, WRONG, -1, WRONG, 0)))
P(mount_setattr, R(sc(__NR_mount_setattr, -1, WRONG, 0, WRONG, 0)))
P(fanotify_init, fd_call(sc(__NR_fanotify_init, 0, 0, 0, 0, 0)))
P(kcmp, R(sc(__NR_kcmp, getpid(), getpid(), 0 /*KCMP_FILE*/, 0, 0)))
P(pidfd_getfd, R(sc(__NR_pidfd_getfd, -1, 0, 0, 0, 0)))
P(process_madvise, R(sc(__NR_process_madvise, -1, WRONG, 1, 0, 0)))
P(personality_noaslr, R(personality(ADDR_NO_RANDOMIZE)))
P(tiocsti, R(ioctl(0, TIOCSTI, "x")))
P(unknown_470, R(sc(470, 0, 0, 0, 0, 0)))
P(unknown_1000, R(sc(1000, 0, 0, 0, 0, 0)))
P(af_vsock, sock(40 /*AF_VSOCK*/, SOCK_STREAM, 0))
P(af_packet, sock(AF_PACKET, SOCK_RAW, 0))
P(af_alg, sock(38 /*AF_ALG*/, SOCK_SEQPACKET, 0))
P(af_bluetooth, sock(31 /*AF_BLUETOOTH*/, SOCK_STREAM, 0))
P(af_key, sock(15 /*AF_KEY*/, SOCK_RAW, 2))
P(af_xdp, sock(44 /*AF_XDP*/, SOCK_RAW, 0))
P(af_tipc, sock(30 /*AF_TIPC*/, SOCK_RDM, 0))
P(netlink_audit, sock(AF_NETLINK, SOCK_RAW, NETLINK_AUDIT))
P(netlink_uevent, sock(AF_NETLINK, SOCK_RAW, NETLINK_KOBJECT_UEVENT))
P(netlink_sock_diag, sock(AF_NETLINK, SOCK_RAW, NETLINK_SOCK_DIAG))
#ifdef __x86_64__
P(x32_getpid, R(sc(0x40000000 | __NR_getpid, 0, 0, 0, 0, 0)))
P(i386_getpid, int80())
#endif
/* must work */
P(getppid, (syscall(__NR_getppid), 0))
P(fork, forked())
P(threads, threads())
P(ptrace_child, ptrace_child())
P(process_vm_readv, vm_read_self())
P(socket_unix, sock(AF_UNIX, SOCK_STREAM, 0))
P(socket_inet, sock(AF_INET, SOCK_DGRAM, 0))
P(socket_inet6, sock(AF_INET6, SOCK_STREAM, 0))
P(netlink_route, sock(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE))
P(loopback_listen, loopback_listen())
P(eventfd, fd_call(eventfd(0, EFD_CLOEXEC)))
P(memfd_create, fd_call(memfd_create("probe", MFD_CLOEXEC)))
P(pidfd_open, fd_call(sc(__NR_pidfd_open, getpid(), 0, 0, 0, 0)))
P(io_setup, ({ unsigned long ctx = 0; R(sc(__NR_io_setup, 1, (long)&ctx, 0, 0, 0)) ?: R(sc(__NR_io_destroy, (long)ctx, 0, 0, 0, 0)); }))
P(membarrier, R(sc(__NR_membarrier, 0 /*QUERY*/, 0, 0, 0, 0)))
P(personality_query, R(personality(0xffffffff)))
P(seccomp_nested, R(prctl(PR_GET_SECCOMP)) ?: (prctl(PR_GET_SECCOMP) == 2 ? 0 : EINVAL))
P(landlock, ({ long v = sc(__NR_landlock_create_ruleset, 0, 0, 1, 0, 0); v < 0 && errno == EOPNOTSUPP ? 0 : R(v); }))
P(getrandom, ({ char b[8]; R(getrandom(b, sizeof b, 0)); }))
P(close_range, R(sc(__NR_close_range, 1000, 1001, 0, 0, 0)))
P(mlock, ({ static char page[4096]; R(mlock(page, sizeof page)) ?: R(munlock(page, sizeof page)); }))
#undef P

#define E(name) {#name, p_##name}
static const struct probe probes[] = {
    E(mount), E(umount2), E(pivot_root), E(unshare), E(unshare_user), E(clone_newuser), E(clone_newns),
    E(clone_newnet), E(clone3), E(setns), E(bpf), E(perf_event_open), E(keyctl), E(add_key), E(request_key),
    E(init_module), E(finit_module), E(delete_module), E(kexec_load), E(kexec_file_load), E(open_by_handle_at),
    E(userfaultfd), E(io_uring_setup), E(ptrace_init), E(syslog), E(acct), E(swapon), E(reboot), E(sethostname),
    E(quotactl), E(fsopen), E(open_tree), E(move_mount), E(mount_setattr), E(fanotify_init), E(kcmp),
    E(pidfd_getfd), E(process_madvise), E(personality_noaslr), E(tiocsti), E(unknown_470), E(unknown_1000),
    E(af_vsock), E(af_packet), E(af_alg), E(af_bluetooth), E(af_key), E(af_xdp), E(af_tipc), E(netlink_audit),
    E(netlink_uevent), E(netlink_sock_diag),
#ifdef __x86_64__
    E(x32_getpid), E(i386_getpid),
#endif
    E(getppid), E(fork), E(threads), E(ptrace_child), E(process_vm_readv), E(socket_unix), E(socket_inet),
    E(socket_inet6), E(netlink_route), E(loopback_listen), E(eventfd), E(memfd_create), E(pidfd_open),
    E(io_setup), E(membarrier), E(personality_query), E(seccomp_nested), E(landlock), E(getrandom),
    E(close_range), E(mlock),
};

static void run(const struct probe *p) {
  errno = 0;
  int err = p->fn();
#ifdef __x86_64__
  if (err == ABSENT) {
    printf("%s absent\n", p->name);
    fflush(stdout);
    return;
  }
#endif
  const char *name = err ? strerrorname_np(err) : NULL;
  if (err && !name) printf("%s errno%d\n", p->name, err);
  else printf("%s %s\n", p->name, err ? name : "ok");
  fflush(stdout);
}

static int read_text(const char *path, char *buf, size_t len) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = read(fd, buf, len - 1);
  close(fd);
  if (n < 0) return -1;
  for (ssize_t i = 0; i < n; i++)
    if (buf[i] == '\0') buf[i] = ' ';
  buf[n] = '\0';
  return (int)n;
}

/* Every process the box can see, over and over: one that holds capabilities or whose command line names
 * a host helper would be a host process showing through. */
static int watch(long ms) {
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  long scans = 0, leaks = 0;
  char path[64], status[4096], cmd[4096];
  do {
    DIR *d = opendir("/proc");
    if (!d) return 1;
    for (struct dirent *e; (e = readdir(d));) {
      int pid = atoi(e->d_name);
      if (pid <= 0 || pid == getpid()) continue;
      snprintf(path, sizeof path, "/proc/%d/status", pid);
      if (read_text(path, status, sizeof status) < 0) continue;
      snprintf(path, sizeof path, "/proc/%d/cmdline", pid);
      if (read_text(path, cmd, sizeof cmd) < 0) cmd[0] = '\0';
      char *caps = strstr(status, "CapEff:");
      unsigned long long eff = caps ? strtoull(caps + 7, NULL, 16) : 0;
      if (eff != 0 || strstr(cmd, "boxexecd") || strstr(cmd, "devboxd") || strstr(cmd, "execd-") || strstr(cmd, "/sys/fs/cgroup")) {
        char *state = strstr(status, "State:"), *ppid = strstr(status, "PPid:");
        printf("leak %d %llx %.12s %.12s %s\n", pid, eff, state ? state + 7 : "", ppid ? ppid + 6 : "", cmd);
        if (++leaks > 20) break;
      }
    }
    closedir(d);
    scans++;
    clock_gettime(CLOCK_MONOTONIC, &t);
  } while (leaks <= 20 && (t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 < ms);
  printf("scans %ld\n", scans);
  return 0;
}

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

static int loop(long n) {
  int p[2], avail;
  if (pipe(p) != 0) return 1;
  double t0 = now_ns();
  for (long i = 0; i < n; i++) syscall(__NR_getppid);
  double t1 = now_ns();
  for (long i = 0; i < n; i++) ioctl(p[0], FIONREAD, &avail);
  double t2 = now_ns();
  printf("getppid %.1f\nioctl %.1f\n", (t1 - t0) / n, (t2 - t1) / n);
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "--watch") == 0) return watch(atol(argv[2]));
  if (argc >= 3 && strcmp(argv[1], "--loop") == 0) {
    if (argc == 4 && strcmp(argv[3], "--filter") == 0) {
      set_no_new_privs();
      install_seccomp();
    }
    return loop(atol(argv[2]));
  }
  size_t count = sizeof probes / sizeof probes[0];
  if (argc == 1)
    for (size_t i = 0; i < count; i++) run(&probes[i]);
  for (int a = 1; a < argc; a++) {
    size_t i = 0;
    while (i < count && strcmp(probes[i].name, argv[a]) != 0) i++;
    if (i == count) {
      printf("%s unknown\n", argv[a]);
      continue;
    }
    run(&probes[i]);
  }
  return 0;
}
