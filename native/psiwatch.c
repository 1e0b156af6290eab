/* psiwatch FILE TRIGGER: registers a PSI trigger (e.g. "some 150000 1000000") on a pressure file
 * (/proc/pressure/memory, or a cgroup v2 group's memory.pressure) and prints one line per event, the file's
 * current "some" line, e.g. "some avg10=4.11 avg60=1.00 avg300=0.22 total=2324470".
 *
 * The kernel fires a trigger at most once per window while the stall stays above the threshold, so the reader
 * sees one line a window for as long as the pressure lasts and none once it clears: event-driven, nothing
 * polls on a timer. Node cannot poll a descriptor for POLLPRI, hence this helper.
 *
 * Prints "ready\n" once the trigger is registered; exits when its standard input ends or its parent dies
 * (PR_SET_PDEATHSIG), so it never outlives the server. Exit 2: bad usage; 1: the kernel refused the trigger
 * (no PSI; a window that is not a multiple of 2 s without CAP_SYS_RESOURCE, which this kernel may ask even of
 * root) with the reason on stderr. */
#define _GNU_SOURCE
#include "common.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

/* Re-reads the pressure file's first line ("some ...") through a second descriptor: reading the trigger's
 * own descriptor is allowed but would move its position under the kernel's trigger bookkeeping. */
static void print_some(const char *path) {
  char buf[256];
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
  if (fd >= 0) close(fd);
  if (n <= 0) {
    printf("some\n");
  } else {
    buf[n] = 0;
    buf[strcspn(buf, "\n")] = 0;
    printf("%s\n", buf);
  }
  fflush(stdout);
}

int main(int argc, char **argv) {
  progname = "psiwatch";
  if (argc != 3) die(2, "usage: psiwatch FILE TRIGGER");
  if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0) die(1, "prctl");
  if (getppid() == 1) return 0;
  signal(SIGPIPE, SIG_DFL);

  int fd = open(argv[1], O_RDWR | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) die(1, "open %s", argv[1]);
  /* The trigger string includes its terminating NUL, as the kernel documentation writes it. */
  if (write(fd, argv[2], strlen(argv[2]) + 1) < 0) die(1, "trigger \"%s\" on %s (windows of 2 s multiples are taken also without CAP_SYS_RESOURCE)", argv[2], argv[1]);
  printf("ready\n");
  fflush(stdout);

  struct pollfd fds[2] = {{.fd = fd, .events = POLLPRI}, {.fd = STDIN_FILENO, .events = POLLIN}};
  for (;;) {
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      die(1, "poll");
    }
    if (fds[0].revents & POLLERR) {
      errno = 0;
      die(1, "%s: the trigger is gone (its cgroup was removed)", argv[1]);
    }
    if (fds[0].revents & POLLPRI) print_some(argv[1]);
    if (fds[1].revents & (POLLIN | POLLHUP | POLLERR)) {
      char c;
      if (read(STDIN_FILENO, &c, 1) <= 0) return 0;
    }
  }
}
