/* dirlock LOCKFILE SERVER_PID: holds an exclusive flock on LOCKFILE for the devboxd server SERVER_PID, which
 * is its parent (Node has no flock of its own).
 *
 * Prints "locked\n" once it holds the lock (and has written SERVER_PID into the file), or "busy <pid>\n" and
 * exits 75 when another process holds it. It then holds the lock until its standard input ends (the server
 * releases it) or the server dies (PR_SET_PDEATHSIG): the kernel drops a flock with its last holder, so a
 * server killed with SIGKILL never leaves a stale lock behind. INT, TERM and HUP are ignored: a Ctrl-C sent
 * to the whole process group must not release the lock while the server still drains. */
#define _GNU_SOURCE
#include "common.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

/* A holder that is already dead (pid gone) is still being torn down by the kernel: wait this long at most. */
#define EXIT_WAIT_TRIES 40
#define EXIT_WAIT_NS (50 * 1000 * 1000L)

static pid_t holder_pid(int fd) {
  char buf[32] = {0};
  ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
  return n > 0 ? (pid_t)strtol(buf, NULL, 10) : 0;
}

int main(int argc, char **argv) {
  progname = "dirlock";
  if (argc != 3) die(2, "usage: dirlock LOCKFILE SERVER_PID");
  pid_t server = (pid_t)strtol(argv[2], NULL, 10);

  signal(SIGINT, SIG_IGN);
  signal(SIGTERM, SIG_IGN);
  signal(SIGHUP, SIG_IGN);
  signal(SIGPIPE, SIG_IGN);
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) die(1, "prctl(PR_SET_PDEATHSIG)");
  if (getppid() != server) return 0; /* the server is already gone */

  int fd = open(argv[1], O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) die(1, "open %s", argv[1]);
  for (int tries = 0;; tries++) {
    if (flock(fd, LOCK_EX | LOCK_NB) == 0) break;
    if (errno != EWOULDBLOCK) die(1, "flock %s", argv[1]);
    pid_t holder = holder_pid(fd);
    int exiting = holder > 0 && kill(holder, 0) != 0 && errno == ESRCH;
    if (!exiting || tries >= EXIT_WAIT_TRIES) {
      printf("busy %d\n", (int)holder);
      fflush(stdout);
      return 75;
    }
    struct timespec pause = {0, EXIT_WAIT_NS};
    nanosleep(&pause, NULL);
  }

  char pid[32];
  int len = snprintf(pid, sizeof pid, "%d\n", (int)server);
  if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)len, 0) != len) die(1, "write %s", argv[1]);
  printf("locked\n");
  fflush(stdout);

  char buf[64];
  for (;;) {
    ssize_t n = read(STDIN_FILENO, buf, sizeof buf);
    if (n == 0 || (n < 0 && errno != EINTR)) return 0;
  }
}
