/* boxexecd: the server's fast path for running commands in boxes.
 *
 * Forking the server (a large Node process) costs milliseconds per command; this small daemon forks
 * instead. It listens on a unix socket (mode 0600, so only root connects) and serves each connection
 * in a forked relay process: one request frame carries boxexec's arguments, the relay starts the
 * command (launch.c) with pipes for its stdio and moves bytes between the pipes and the connection.
 * It dies with the server (parent-death signal); running relays finish their commands.
 *
 * Frames, both directions: 1 type byte, 4-byte little-endian length, payload.
 *   server -> relay: 'R' NUL-separated boxexec arguments (first frame) or 'B' boxinit arguments
 *                    (creates a box: the server does not fork for that either), 'I' stdin bytes,
 *                    'E' stdin end, 'K' {signal, group flag}
 *   relay -> server: '1' stdout bytes, '2' stderr bytes, 'X' {int32 exit code or -1, int32 signal}
 * A pipe is read only once the previous output frame is flushed: a slow reader slows the command.
 *
 * usage: boxexecd SOCKET_PATH      (prints "ready" once listening)
 */
#define _GNU_SOURCE
#include "common.h"
#include "launch.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHUNK 65536
#define IN_CAP (4 * CHUNK)
#define MAX_REQUEST (4 << 20)

static unsigned char obuf[CHUNK + 5], ibuf[IN_CAP];
static char boxinit_path[4096];
static size_t olen, ooff, ilen;

static void put_header(unsigned char *p, char type, uint32_t len) {
  p[0] = (unsigned char)type;
  memcpy(p + 1, &len, 4); /* little-endian hosts only (x86_64, aarch64) */
}

static int read_full(int fd, void *buf, size_t len) {
  for (size_t got = 0; got < len;) {
    ssize_t n = read(fd, (char *)buf + got, len - got);
    if (n <= 0) return -1;
    got += (size_t)n;
  }
  return 0;
}

static void __attribute__((noreturn)) fail(int c, const char *msg) {
  unsigned char out[512];
  size_t len = strnlen(msg, 400);
  put_header(out, '2', (uint32_t)len + 1);
  memcpy(out + 5, msg, len);
  out[5 + len] = '\n';
  int32_t status[2] = {125, 0};
  put_header(out + 6 + len, 'X', 8);
  memcpy(out + 11 + len, status, 8);
  if (write(c, out, 19 + len) < 0) _exit(1);
  _exit(0);
}

/* Applies the complete frames at the head of ibuf. Returns 1 when it stopped at stdin bytes the
 * command has not taken yet (wait for its pipe to drain), else 0. */
static int apply_frames(pid_t child, int *in_w) {
  while (ilen >= 5) {
    uint32_t len;
    memcpy(&len, ibuf + 1, 4);
    if (len > IN_CAP - 5) _exit(1); /* the server never sends more than CHUNK at once */
    if (ilen < 5 + len) return 0;
    char type = (char)ibuf[0];
    if (type == 'I' && *in_w >= 0 && len > 0) {
      ssize_t n = write(*in_w, ibuf + 5, len);
      if (n < 0 && errno == EAGAIN) return 1;
      if (n < 0) { close(*in_w); *in_w = -1; } /* the command closed its stdin: drop the rest */
      else if ((uint32_t)n < len) {
        memmove(ibuf + 5, ibuf + 5 + n, ilen - 5 - (size_t)n);
        ilen -= (size_t)n;
        len -= (uint32_t)n;
        memcpy(ibuf + 1, &len, 4);
        return 1;
      }
    } else if (type == 'E' && *in_w >= 0) {
      close(*in_w);
      *in_w = -1;
    } else if (type == 'K' && len >= 2) {
      if (!ibuf[6] || kill(-child, ibuf[5]) != 0) kill(child, ibuf[5]);
    }
    memmove(ibuf, ibuf + 5 + len, ilen - 5 - len);
    ilen -= 5 + len;
  }
  return 0;
}

static void __attribute__((noreturn)) serve(int c) {
  signal(SIGCHLD, SIG_DFL);
  unsigned char hdr[5];
  uint32_t len;
  if (read_full(c, hdr, 5) != 0 || (hdr[0] != 'R' && hdr[0] != 'B')) _exit(1);
  memcpy(&len, hdr + 1, 4);
  if (len == 0 || len > MAX_REQUEST) fail(c, "boxexecd: bad request");
  char *req = malloc(len + 1);
  char **argv = malloc(sizeof(char *) * (len + 2));
  if (!req || !argv || read_full(c, req, len) != 0) _exit(1);
  req[len] = '\0';
  int argc = 0;
  argv[argc++] = "boxexecd";
  for (size_t i = 0; i < len; i += strlen(req + i) + 1) argv[argc++] = req + i;
  argv[argc] = NULL;

  struct launch l;
  char err[300], msg[400];
  if (hdr[0] == 'R' && launch_parse(&l, argc, argv, err, sizeof err) != 0) {
    snprintf(msg, sizeof msg, "boxexecd: %s", err);
    fail(c, msg);
  }
  int in[2], out[2], er[2];
  if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC) || pipe2(er, O_CLOEXEC)) fail(c, "boxexecd: pipe");
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  sigprocmask(SIG_BLOCK, &chld, NULL);
  int sfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
  const int stdio[3] = {in[0], out[1], er[1]};
  pid_t child;
  if (hdr[0] == 'R') {
    child = launch_start(&l, stdio, err, sizeof err);
  } else if ((child = fork()) == 0) {
    /* boxinit in a session of its own, like the server's detached spawn */
    for (int i = 0; i < 3; i++) dup2(stdio[i], i);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGPIPE, SIG_DFL);
    setsid();
    argv[0] = boxinit_path;
    execv(boxinit_path, argv);
    _exit(127);
  } else if (child < 0) {
    snprintf(err, sizeof err, "fork: %s", strerror(errno));
  }
  if (child < 0 || sfd < 0) {
    snprintf(msg, sizeof msg, "boxexec: %s", err);
    fail(c, msg);
  }
  close(in[0]);
  close(out[1]);
  close(er[1]);
  int in_w = in[1], pipes[2] = {out[0], er[0]}, exited = 0, sent_exit = 0, status = 0, stdin_full = 0;
  fcntl(c, F_SETFL, O_NONBLOCK);
  fcntl(in_w, F_SETFL, O_NONBLOCK);
  for (;;) {
    if (olen == 0 && exited && !sent_exit) {
      int32_t st[2] = {WIFEXITED(status) ? WEXITSTATUS(status) : -1, WIFSIGNALED(status) ? WTERMSIG(status) : 0};
      put_header(obuf, 'X', 8);
      memcpy(obuf + 5, st, 8);
      olen = 13;
      ooff = 0;
      sent_exit = 1;
    }
    if (olen == 0 && sent_exit && pipes[0] < 0 && pipes[1] < 0) _exit(0);
    struct pollfd p[5] = {
        {.fd = c, .events = (short)((ilen < IN_CAP ? POLLIN : 0) | (olen ? POLLOUT : 0))},
        {.fd = stdin_full && in_w >= 0 ? in_w : -1, .events = POLLOUT},
        {.fd = olen == 0 ? pipes[0] : -1, .events = POLLIN},
        {.fd = olen == 0 ? pipes[1] : -1, .events = POLLIN},
        {.fd = sfd, .events = POLLIN},
    };
    if (poll(p, 5, -1) < 0 && errno != EINTR) _exit(1);
    if (p[0].revents & (POLLERR | POLLHUP)) _exit(0); /* the server hung up: nobody reads any more */
    if (p[0].revents & POLLIN) {
      ssize_t n = read(c, ibuf + ilen, IN_CAP - ilen);
      if (n == 0) _exit(0);
      if (n > 0) ilen += (size_t)n;
    }
    stdin_full = apply_frames(child, &in_w);
    if (p[0].revents & POLLOUT) {
      ssize_t n = write(c, obuf + ooff, olen - ooff);
      if (n < 0 && errno != EAGAIN) _exit(0);
      if (n > 0 && (ooff += (size_t)n) == olen) olen = ooff = 0;
    }
    for (int i = 0; i < 2; i++) {
      if (!(p[2 + i].revents & (POLLIN | POLLHUP)) || olen) continue;
      ssize_t n = read(pipes[i], obuf + 5, CHUNK);
      if (n <= 0) {
        close(pipes[i]);
        pipes[i] = -1;
        continue;
      }
      put_header(obuf, i == 0 ? '1' : '2', (uint32_t)n);
      olen = 5 + (size_t)n;
      ooff = 0;
    }
    if (p[4].revents) {
      struct signalfd_siginfo si;
      while (read(sfd, &si, sizeof si) > 0) {
      }
    }
    if (!exited && waitpid(child, &status, WNOHANG) == child) exited = 1;
  }
}

int main(int argc, char **argv) {
  progname = "boxexecd";
  errno = 0;
  if (argc != 2) die(2, "usage: boxexecd SOCKET_PATH");
  /* boxinit lives next to this binary */
  ssize_t n = readlink("/proc/self/exe", boxinit_path, sizeof boxinit_path - 16);
  if (n <= 0) die(1, "readlink /proc/self/exe");
  boxinit_path[n] = '\0';
  strcpy(strrchr(boxinit_path, '/') + 1, "boxinit");
  pid_t parent = getppid();
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != parent) return 0;
  signal(SIGPIPE, SIG_IGN);
  signal(SIGCHLD, SIG_IGN); /* relays are reaped by the kernel */
  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  if (strlen(argv[1]) >= sizeof addr.sun_path) die(2, "socket path too long");
  strcpy(addr.sun_path, argv[1]);
  unlink(argv[1]);
  int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  mode_t old = umask(077);
  if (s < 0 || bind(s, (struct sockaddr *)&addr, sizeof addr) != 0 || listen(s, 512) != 0) die(1, "listen on %s", argv[1]);
  umask(old);
  printf("ready\n");
  fflush(stdout);
  for (;;) {
    int c = accept4(s, NULL, NULL, SOCK_CLOEXEC);
    if (c < 0) continue;
    pid_t pid = fork();
    if (pid == 0) {
      close(s);
      serve(c);
    }
    close(c);
  }
}
