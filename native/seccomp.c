/* The seccomp filter every box process runs under: an allow-list.
 *
 * The calls of seccomp-allow.txt (Docker's default profile) are allowed; a few more are allowed with their
 * arguments checked (socket families, clone flags, ioctl requests, personality values); every other call
 * known when this list was written fails with EPERM, as for an unprivileged user, and numbers past it fail
 * with ENOSYS, so libc falls back to an older call when a new kernel adds one (what runc does too).
 *
 * The program is a binary search over intervals of syscall numbers that share one verdict: about eight
 * comparisons per call, and the kernel's seccomp cache (5.11+) skips the filter entirely for calls whose
 * verdict depends on the number alone, which is every allowed call but the four checked by argument. */
#define _GNU_SOURCE
#include "common.h"

#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/netlink.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define AUDIT_ARCH_SELF AUDIT_ARCH_X86_64
#ifndef __NR_uretprobe
#define __NR_uretprobe 335
#endif
#elif defined(__aarch64__)
#define AUDIT_ARCH_SELF AUDIT_ARCH_AARCH64
#else
#error "unsupported architecture"
#endif

/* Calls newer than Debian 12's kernel headers; since 424 both architectures share one numbering. */
#ifndef __NR_cachestat
#define __NR_cachestat 451
#endif
#ifndef __NR_fchmodat2
#define __NR_fchmodat2 452
#endif
#ifndef __NR_map_shadow_stack
#define __NR_map_shadow_stack 453
#endif
#ifndef __NR_futex_wake
#define __NR_futex_wake 454
#endif
#ifndef __NR_futex_wait
#define __NR_futex_wait 455
#endif
#ifndef __NR_futex_requeue
#define __NR_futex_requeue 456
#endif
#ifndef __NR_statmount
#define __NR_statmount 457
#endif
#ifndef __NR_listmount
#define __NR_listmount 458
#endif
#ifndef __NR_mseal
#define __NR_mseal 462
#endif
#ifndef __NR_setxattrat
#define __NR_setxattrat 463
#endif
#ifndef __NR_getxattrat
#define __NR_getxattrat 464
#endif
#ifndef __NR_listxattrat
#define __NR_listxattrat 465
#endif
#ifndef __NR_removexattrat
#define __NR_removexattrat 466
#endif
#ifndef __NR_file_getattr
#define __NR_file_getattr 468
#endif
#ifndef __NR_file_setattr
#define __NR_file_setattr 469
#endif
/* The newest call this list was reviewed against (file_setattr, Linux 6.17): later ones get ENOSYS. */
#define LAST_KNOWN 469

static const int allowed[] = {
#include "seccomp-allow.h" /* generated from seccomp-allow.txt into the build dir */
};

#define ERRNO(e) (SECCOMP_RET_ERRNO | ((e) & SECCOMP_RET_DATA))
/* Offset of the low 32 bits of a syscall argument (little-endian layout); every argument checked here is an
 * int or unsigned int for the kernel, so the high half does not matter. */
#define ARG_LO(i) (offsetof(struct seccomp_data, args) + 8 * (i))

/* Verdicts of an interval; the CHECK_* ones look at arguments. */
enum verdict { ALLOW, DENY, NOSYS, CHECK_IOCTL, CHECK_CLONE, CHECK_SOCKET, CHECK_PERSONALITY };

struct interval {
  uint32_t start; /* first number; the interval ends where the next one starts */
  enum verdict v;
};

static struct sock_filter f[1024];
static unsigned n;
static struct interval iv[2 * (LAST_KNOWN + 2)];
static size_t n_iv;

static void emit(struct sock_filter ins) {
  if (n >= sizeof f / sizeof f[0]) die(125, "seccomp program too long");
  f[n++] = ins;
}
static void load(unsigned offset) { emit((struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offset)); }
static void ret(unsigned val) { emit((struct sock_filter)BPF_STMT(BPF_RET | BPF_K, val)); }
/* if A == k: return `val`, else go on */
static void ret_if(unsigned k, unsigned val) {
  emit((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, k, 0, 1));
  ret(val);
}

static enum verdict verdict_of(long nr, const unsigned char *listed) {
  switch (nr) {
    case __NR_ioctl: return CHECK_IOCTL;
    case __NR_clone: return CHECK_CLONE;
    case __NR_socket: return CHECK_SOCKET;
    case __NR_personality: return CHECK_PERSONALITY;
    case __NR_clone3: return NOSYS; /* its flags sit in memory the filter cannot read: libc falls back to clone */
  }
  return listed[nr] ? ALLOW : DENY;
}

static void add_interval(uint32_t start, enum verdict v) {
  if (n_iv > 0 && iv[n_iv - 1].v == v) return;
  iv[n_iv++] = (struct interval){start, v};
}

static void emit_verdict(enum verdict v) {
  switch (v) {
    case ALLOW: ret(SECCOMP_RET_ALLOW); break;
    case DENY: ret(ERRNO(EPERM)); break;
    case NOSYS: ret(ERRNO(ENOSYS)); break;
    case CHECK_IOCTL:
      /* TIOCSTI/TIOCLINUX push input into a terminal another process reads; TIOCSETD swaps a terminal's line
       * discipline (N_HDLC, N_GSM, SLIP...: rarely used kernel code, loaded on demand, with a history of
       * holes), which nothing in a box needs: its terminals keep N_TTY. */
      load(ARG_LO(1));
      ret_if(TIOCSTI, ERRNO(EPERM));
      ret_if(TIOCLINUX, ERRNO(EPERM));
      ret_if(TIOCSETD, ERRNO(EPERM));
      ret(SECCOMP_RET_ALLOW);
      break;
    case CHECK_CLONE: /* threads and processes, never new namespaces */
      load(ARG_LO(0));
      emit((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K,
                                        CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID |
                                            CLONE_NEWNET | CLONE_NEWCGROUP,
                                        0, 1));
      ret(ERRNO(EPERM));
      ret(SECCOMP_RET_ALLOW);
      break;
    case CHECK_SOCKET:
      /* unix, IPv4, IPv6 and routing netlink (what `ip` and getaddrinfo use). Other families (vsock, packet,
       * alg, bluetooth, audit netlink...) answer as a kernel without them would, so programs fall back. */
      load(ARG_LO(0));
      ret_if(AF_UNIX, SECCOMP_RET_ALLOW);
      ret_if(AF_INET, SECCOMP_RET_ALLOW);
      ret_if(AF_INET6, SECCOMP_RET_ALLOW);
      emit((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_NETLINK, 1, 0));
      ret(ERRNO(EAFNOSUPPORT));
      load(ARG_LO(2));
      ret_if(NETLINK_ROUTE, SECCOMP_RET_ALLOW);
      ret(ERRNO(EPROTONOSUPPORT));
      break;
    case CHECK_PERSONALITY: /* queries and the values Docker allows; no ASLR switch-off */
      load(ARG_LO(0));
      ret_if(0, SECCOMP_RET_ALLOW);
      ret_if(0x0008, SECCOMP_RET_ALLOW);
      ret_if(0x20000, SECCOMP_RET_ALLOW);
      ret_if(0x20008, SECCOMP_RET_ALLOW);
      ret_if(0xffffffff, SECCOMP_RET_ALLOW);
      ret(ERRNO(EPERM));
      break;
  }
}

/* Intervals [lo, hi) of iv: a node compares the number with the middle interval's start; the left half
 * follows the comparison, the right half is jumped to. */
static void emit_tree(size_t lo, size_t hi) {
  if (hi - lo == 1) {
    emit_verdict(iv[lo].v);
    return;
  }
  size_t mid = lo + (hi - lo) / 2;
  unsigned at = n;
  emit((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, iv[mid].start, 0, 0));
  emit_tree(lo, mid);
  unsigned skip = n - at - 1;
  if (skip > 255) die(125, "seccomp tree too deep");
  f[at].jt = (unsigned char)skip;
  emit_tree(mid, hi);
}

static void build(void) {
  unsigned char listed[LAST_KNOWN + 1] = {0};
  for (size_t i = 0; i < sizeof allowed / sizeof allowed[0]; i++)
    if (allowed[i] >= 0 && allowed[i] <= LAST_KNOWN) listed[allowed[i]] = 1;
  for (long nr = 0; nr <= LAST_KNOWN; nr++) add_interval((uint32_t)nr, verdict_of(nr, listed));
  /* Past the known calls, and the x32 ABI's numbers (bit 30) on x86_64. */
  add_interval(LAST_KNOWN + 1, NOSYS);
  load(offsetof(struct seccomp_data, arch));
  emit((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_SELF, 1, 0));
  ret(ERRNO(ENOSYS)); /* foreign-ABI calls (int 0x80, compat) have other numbers: refuse them all */
  load(offsetof(struct seccomp_data, nr));
  emit_tree(0, n_iv);
}

void install_seccomp(void) {
  if (n == 0) build(); /* once per process: forked relays reuse their parent's program */
  struct sock_fprog prog = {.len = (unsigned short)n, .filter = f};
  if (syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0) die(125, "seccomp");
}
