/* boxexec: runs one command inside a running devboxd box (see launch.c), with this process's stdio.
 *
 * It stays outside the box, relays signal requests from the server (fd 3: byte pairs {signal, group}),
 * and exits with the command's status, or dies of the command's signal. boxexecd is the faster
 * path the server uses; this is the plain one (fallback, debugging).
 *
 * usage: boxexec -p PID -s STARTTIME -u UID -g GID [-d CWD] [-h] [-R] [-c CGROUP_PROCS]... [-e K=V]...
 *                -- ARGV...
 *   -h: CWD is the default home (fall back to / when it is missing); -R: run as box root.
 * Exit codes of its own: 125 box setup failed, 126 command not executable, 127 command not found.
 */
#define _GNU_SOURCE
#include "common.h"
#include "launch.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

static struct launch l;

static void __attribute__((noreturn)) relay(pid_t child, int sfd) {
  struct pollfd fds[2] = {{.fd = sfd, .events = POLLIN}, {.fd = 3, .events = POLLIN}};
  if (fcntl(3, F_GETFD) < 0) fds[1].fd = -1; /* started without a control channel */
  for (;;) {
    if (poll(fds, 2, -1) < 0 && errno != EINTR) die(1, "poll");
    if (fds[1].revents) {
      unsigned char buf[64];
      ssize_t n = read(3, buf, sizeof buf);
      if (n <= 0) fds[1].fd = -1; /* the server went away; the command keeps running */
      for (ssize_t i = 0; i + 1 < n; i += 2) {
        /* A group signal before the child's setsid() finds no group yet: signal the child itself. */
        if (!buf[i + 1] || kill(-child, buf[i]) != 0) kill(child, buf[i]);
      }
    }
    if (fds[0].revents) {
      struct signalfd_siginfo si;
      if (read(sfd, &si, sizeof si) < 0 && errno != EAGAIN) die(1, "signalfd");
    }
    int status;
    if (waitpid(child, &status, WNOHANG) == child) mirror_status(status);
  }
}

int main(int argc, char **argv) {
  progname = "boxexec";
  char err[256];
  errno = 0;
  if (launch_parse(&l, argc, argv, err, sizeof err) != 0) die(125, "%s", err);
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  sigprocmask(SIG_BLOCK, &chld, NULL);
  int sfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sfd < 0) die(125, "signalfd");
  const int stdio[3] = {0, 1, 2};
  pid_t child = launch_start(&l, stdio, err, sizeof err);
  if (child < 0) die(125, "%s", err);
  relay(child, sfd);
}
