/* Shared helpers of the devboxd native tools: errors, control-file writes, and the privilege limits
 * (capabilities, no_new_privs, seccomp) that every process inside a box runs under. */
#define _GNU_SOURCE
#include "common.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef PR_CAP_AMBIENT
#define PR_CAP_AMBIENT 47
#define PR_CAP_AMBIENT_CLEAR_ALL 4
#endif

#if defined(__x86_64__)
#define AUDIT_ARCH_SELF AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define AUDIT_ARCH_SELF AUDIT_ARCH_AARCH64
#else
#error "unsupported architecture"
#endif

const char *progname = "devboxd-native";

void die(int code, const char *fmt, ...) {
  int err = errno;
  va_list ap;
  fprintf(stderr, "%s: ", progname);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  if (err) fprintf(stderr, ": %s", strerror(err));
  fputc('\n', stderr);
  _exit(code);
}

int write_file(const char *path, const char *text) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  size_t len = strlen(text);
  ssize_t n = write(fd, text, len);
  int err = errno;
  close(fd);
  if (n != (ssize_t)len) {
    errno = n < 0 ? err : EIO;
    return -1;
  }
  return 0;
}

/* Calls that a box process never needs and that widen the kernel's attack surface or administer the
 * host. Every one answers EPERM, as it would for an unprivileged user. */
static const int denied[] = {
    __NR_mount, __NR_umount2, __NR_pivot_root, __NR_kexec_load, __NR_kexec_file_load,
    __NR_init_module, __NR_finit_module, __NR_delete_module, __NR_bpf, __NR_perf_event_open,
    __NR_keyctl, __NR_add_key, __NR_request_key, __NR_setns, __NR_open_by_handle_at,
    __NR_name_to_handle_at, __NR_reboot, __NR_swapon, __NR_swapoff, __NR_acct, __NR_userfaultfd,
    __NR_syslog, __NR_quotactl, __NR_settimeofday, __NR_clock_settime, __NR_clock_adjtime,
    __NR_adjtimex, __NR_fsopen, __NR_fsconfig, __NR_fsmount, __NR_fspick, __NR_move_mount,
    __NR_open_tree, __NR_mount_setattr, __NR_vhangup, __NR_io_uring_setup, __NR_io_uring_enter,
    __NR_io_uring_register, __NR_lookup_dcookie, __NR_sethostname, __NR_setdomainname,
#ifdef __NR_iopl
    __NR_iopl, __NR_ioperm,
#endif
#ifdef __NR_uselib
    __NR_uselib,
#endif
#ifdef __NR_umount
    __NR_umount,
#endif
#ifdef __NR_sysfs
    __NR_sysfs,
#endif
#ifdef __NR__sysctl
    __NR__sysctl,
#endif
#ifdef __NR_nfsservctl
    __NR_nfsservctl,
#endif
};

#define ERRNO(e) (SECCOMP_RET_ERRNO | ((e) & SECCOMP_RET_DATA))
/* Offset of the low 32 bits of a syscall argument (little-endian layout). */
#define ARG_LO(i) (offsetof(struct seccomp_data, args) + 8 * (i))

static struct sock_filter f[160];
static unsigned n;

static void load(unsigned offset) { f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offset); }
static void ret(unsigned val) { f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, val); }
static void jump(unsigned op, unsigned k, unsigned char jt, unsigned char jf) {
  f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | op | BPF_K, k, jt, jf);
}

void install_seccomp(void) {
  n = 0;
  load(offsetof(struct seccomp_data, arch));
  jump(BPF_JEQ, AUDIT_ARCH_SELF, 1, 0);
  ret(ERRNO(ENOSYS)); /* foreign-ABI calls (int 0x80) have other numbers: refuse them all */
  load(offsetof(struct seccomp_data, nr));
#ifdef __x86_64__
  jump(BPF_JGE, 0x40000000, 0, 1); /* x32 ABI */
  ret(ERRNO(ENOSYS));
#endif
  for (size_t i = 0; i < sizeof denied / sizeof denied[0]; i++) {
    jump(BPF_JEQ, (unsigned)denied[i], 0, 1);
    ret(ERRNO(EPERM));
  }
  /* clone3 passes its flags in memory the filter cannot read; ENOSYS makes libc fall back to clone. */
  jump(BPF_JEQ, __NR_clone3, 0, 1);
  ret(ERRNO(ENOSYS));
  /* TIOCSTI/TIOCLINUX push input into a terminal another process reads. */
  jump(BPF_JEQ, __NR_ioctl, 0, 5);
  load(ARG_LO(1));
  jump(BPF_JEQ, TIOCSTI, 2, 0);
  jump(BPF_JEQ, TIOCLINUX, 1, 0);
  ret(SECCOMP_RET_ALLOW);
  ret(ERRNO(EPERM));
  /* A new user namespace would hand the box a full capability set over fresh namespaces: refuse it. */
  jump(BPF_JEQ, __NR_clone, 1, 0);
  jump(BPF_JEQ, __NR_unshare, 0, 3);
  load(ARG_LO(0));
  jump(BPF_JSET, CLONE_NEWUSER, 0, 1);
  ret(ERRNO(EPERM));
  ret(SECCOMP_RET_ALLOW);

  struct sock_fprog prog = {.len = (unsigned short)n, .filter = f};
  if (syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0) die(125, "seccomp");
}

/* The capabilities box root keeps (inside its user namespace only): what package managers and
 * ordinary administration need, the same set container runtimes grant by default. */
static const int root_caps[] = {0 /*CHOWN*/,  1 /*DAC_OVERRIDE*/, 3 /*FOWNER*/,  4 /*FSETID*/,
                                5 /*KILL*/,   6 /*SETGID*/,       7 /*SETUID*/,  8 /*SETPCAP*/,
                                10 /*NET_BIND_SERVICE*/, 13 /*NET_RAW*/, 18 /*SYS_CHROOT*/,
                                27 /*MKNOD*/, 29 /*AUDIT_WRITE*/, 31 /*SETFCAP*/};

void limit_bounding_set(int as_root) {
  for (int cap = 0; cap < 64; cap++) {
    int keep = 0;
    for (size_t i = 0; as_root && i < sizeof root_caps / sizeof root_caps[0]; i++)
      if (root_caps[i] == cap) keep = 1;
    if (keep) continue;
    if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0) {
      if (errno == EINVAL) break; /* past the kernel's last capability */
      die(125, "drop capability %d", cap);
    }
  }
  prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
}

void set_no_new_privs(void) {
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) die(125, "no_new_privs");
}
