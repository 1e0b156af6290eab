/* Shared helpers of the devboxd native tools: errors, control-file writes, and the privilege limits
 * (capabilities, no_new_privs; the seccomp filter is in seccomp.c) that every process inside a box runs under. */
#define _GNU_SOURCE
#include "common.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef PR_CAP_AMBIENT
#define PR_CAP_AMBIENT 47
#define PR_CAP_AMBIENT_CLEAR_ALL 4
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
