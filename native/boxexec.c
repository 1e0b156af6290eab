/* boxexec: runs one command inside a running devboxd box (see launch.c), with this process's stdio.
 *
 * It stays outside the box, relays signal requests from the server (fd 3: byte pairs {signal, group}),
 * and exits with the command's status, or dies of the command's signal. boxexecd is the faster
 * path the server uses; this is the plain one (fallback, debugging).
 *
 * usage: boxexec -r FD
 *        boxexec -x FORKER_SOCKET -u UID -g GID [-d CWD] [-h] [-R] [-e K=V]... -- ARGV...
 *   -r FD: the request (the options below, NUL-separated) is read from FD until its end; the server's way,
 *          so the environment (secret values among it) never shows in /proc/PID/cmdline, which every host
 *          user can read. The second form (debugging) moves its arguments to the heap and wipes the
 *          command line before it does anything else.
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
#include <stdlib.h>
#include <string.h>
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

/* The request from fd `fd`, read until its end (at most MAX_LAUNCH_REQUEST bytes); *len gets its length. */
static char *read_request(int fd, size_t *len) {
  size_t cap = 64 * 1024, n = 0;
  char *req = malloc(cap + 1);
  for (;;) {
    if (!req) die(125, "out of memory");
    ssize_t r = read(fd, req + n, cap - n);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) die(125, "read the request");
    if (r == 0) break;
    n += (size_t)r;
    if (n == cap) {
      if (cap >= MAX_LAUNCH_REQUEST) die(125, "the request is over %d bytes", MAX_LAUNCH_REQUEST);
      cap *= 2;
      req = realloc(req, cap + 1);
    }
  }
  close(fd);
  req[n] = '\0';
  *len = n;
  return req;
}

/* The request from the command line: copied to the heap, then the command line is wiped. */
static char *args_request(int argc, char **argv, size_t *len) {
  size_t n = 0;
  for (int i = 1; i < argc; i++) n += strlen(argv[i]) + 1;
  char *req = malloc(n + 1);
  if (!req) die(125, "out of memory");
  for (int i = 1, off = 0; i < argc; i++) off += (int)(stpcpy(req + off, argv[i]) - (req + off)) + 1;
  launch_wipe_args();
  *len = n ? n - 1 : 0;
  req[*len] = '\0';
  return req;
}

int main(int argc, char **argv) {
  progname = "boxexec";
  char err[256];
  errno = 0;
  size_t len;
  char *req = argc == 3 && strcmp(argv[1], "-r") == 0 ? read_request(atoi(argv[2]), &len) : args_request(argc, argv, &len);
  if (len == 0 || launch_parse_request(&l, req, len, err, sizeof err) != 0) die(125, "%s", len ? err : "an empty request");
  if (l.tty_cols > 0) die(125, "a command on a terminal runs through boxexecd only"); /* no relay for it here */
  signal(SIGPIPE, SIG_IGN);
  const int stdio[3] = {0, 1, 2};
  struct started s;
  int status = 0;
  int r = launch_start(&l, stdio, &s, &status, err, sizeof err);
  if (r < 0) die(125, "%s", err);
  if (r == 1) mirror_status(status);
  relay(&s);
}
