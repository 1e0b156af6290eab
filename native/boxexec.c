/* boxexec: runs one command inside a running devboxd box (see launch.c), with this process's stdio.
 *
 * It stays outside the box, relays signal requests from the server (fd 3: byte pairs {signal, group}),
 * and exits with the command's status, or dies of the command's signal. boxexecd is the faster
 * path the server uses; this is the plain one (fallback, debugging).
 *
 * usage: boxexec -x FORKER_SOCKET -u UID -g GID [-d CWD] [-h] [-R] [-e K=V]...
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

static void __attribute__((noreturn)) relay(struct started *s) {
  struct pollfd fds[2] = {{.fd = s->conn, .events = POLLIN}, {.fd = 3, .events = POLLIN}};
  if (fcntl(3, F_GETFD) < 0) fds[1].fd = -1; /* started without a control channel */
  for (;;) {
    if (poll(fds, 2, -1) < 0 && errno != EINTR) die(1, "poll");
    if (fds[1].revents) {
      unsigned char buf[64];
      ssize_t n = read(3, buf, sizeof buf);
      if (n <= 0) fds[1].fd = -1; /* the server went away; the command keeps running */
      for (ssize_t i = 0; i + 1 < n; i += 2) launch_signal(s, buf[i], buf[i + 1]);
    }
    int status;
    if (fds[0].revents && launch_wait(s, &status)) mirror_status(status);
  }
}

int main(int argc, char **argv) {
  progname = "boxexec";
  char err[256];
  errno = 0;
  if (launch_parse(&l, argc, argv, err, sizeof err) != 0) die(125, "%s", err);
  signal(SIGPIPE, SIG_IGN);
  const int stdio[3] = {0, 1, 2};
  struct started s;
  int status = 0;
  int r = launch_start(&l, stdio, &s, &status, err, sizeof err);
  if (r < 0) die(125, "%s", err);
  /* The environment (secret values among it) came as arguments, which are the request the forker just read:
   * off the world-readable command line for the command's lifetime. The exec daemon's path (boxexecd) never
   * puts it there; this is the fallback while the daemon restarts. */
  launch_hide_args(&l);
  if (r == 1) mirror_status(status);
  relay(&s);
}
