/* boxforkd: the box's forker. Every command of a box is forked by this process, which lives in the
 * box's cgroups (so pids.max counts and bounds every fork) but in the host's PID namespace (so the box
 * never sees it). boxinit starts it once the init is up; it ends with the init.
 *
 * Per connection on its socket (root only, in the box's directory): a fork, whose child reads the
 * request and the command's stdio and becomes the command (launch_child). Then, to the relay:
 *   'P' + command pid (with a pidfd)  once it runs,
 *   'X' + wait status                 when it ended (or when the first child failed before the command),
 *   'E' + errno                       when it cannot start: EAGAIN at pids.max, EBUSY past the cap
 *                                     on concurrent commands.
 * Each message is a type byte and an int32. The forker is a child subreaper, so the command (the first
 * child's child) is reaped here and its status reaches the relay that started it. */
#define _GNU_SOURCE
#include "forkd.h"
#include "common.h"
#include "launch.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* A command: starting (its first child `first` reports on `report`) or running (`pid`). */
struct kid {
  pid_t pid, first;
  int report, conn;
};

static struct kid *kids;
static int n_kids, max_kids;

static void send_msg(int conn, char type, int32_t val, int fd) {
  unsigned char buf[5] = {(unsigned char)type};
  memcpy(buf + 1, &val, 4);
  char cbuf[CMSG_SPACE(sizeof(int))];
  memset(cbuf, 0, sizeof cbuf);
  struct iovec iov = {.iov_base = buf, .iov_len = sizeof buf};
  struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
  if (fd >= 0) {
    m.msg_control = cbuf;
    m.msg_controllen = sizeof cbuf;
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof fd);
  }
  /* Never blocks the forker: a relay that went away misses its message. */
  while (sendmsg(conn, &m, MSG_NOSIGNAL | MSG_DONTWAIT) < 0 && errno == EINTR) {
  }
}

/* Refuses a request: the reply, then the request is read and dropped (closing a unix socket with unread
 * bytes would reset the connection before the relay reads the reply). */
static void refuse(int conn, int32_t err) {
  send_msg(conn, 'E', err, -1);
  char buf[4096];
  while (recv(conn, buf, sizeof buf, MSG_DONTWAIT) > 0) {
  }
  close(conn);
}

/* Starts one command for the relay on `conn`: forks the first child, which reports the command's pid on
 * a pipe the loop watches (first children enter boxes in parallel). */
static void start(int conn, int init_pidfd, int listen_fd, int sfd) {
  if (n_kids >= max_kids) {
    refuse(conn, EBUSY);
    return;
  }
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) {
    refuse(conn, errno);
    return;
  }
  pid_t first = fork();
  if (first == 0) {
    close(listen_fd);
    close(sfd);
    close(report[0]);
    launch_child(conn, report[1], init_pidfd);
  }
  int fork_err = errno;
  close(report[1]);
  if (first < 0) {
    close(report[0]);
    refuse(conn, fork_err);
    return;
  }
  kids[n_kids++] = (struct kid){.pid = -1, .first = first, .report = report[0], .conn = conn};
}

/* A first child reported (or died): the command runs, or the first child's status is the answer. */
static void started(struct kid *k) {
  pid_t cmd = -1;
  if (read(k->report, &cmd, sizeof cmd) != sizeof cmd) cmd = -1;
  close(k->report);
  k->report = -1;
  int st = 0;
  if (cmd <= 0) kill(k->first, SIGKILL);
  while (waitpid(k->first, &st, 0) < 0 && errno == EINTR) {
  }
  if (cmd <= 0) {
    send_msg(k->conn, 'X', st, -1);
    close(k->conn);
    *k = kids[--n_kids];
    return;
  }
  int pidfd = (int)syscall(SYS_pidfd_open, cmd, 0);
  send_msg(k->conn, 'P', cmd, pidfd);
  if (pidfd >= 0) close(pidfd);
  k->pid = cmd;
}

/* Only the commands' own pids are waited for: a first child's status belongs to started(). */
static void reap(void) {
  for (int i = n_kids - 1; i >= 0; i--) {
    int st;
    if (kids[i].pid <= 0 || waitpid(kids[i].pid, &st, WNOHANG) != kids[i].pid) continue;
    send_msg(kids[i].conn, 'X', st, -1);
    close(kids[i].conn);
    kids[i] = kids[--n_kids];
  }
}

void forkd_run(int listen_fd, int init_pidfd, int max_commands) {
  max_kids = max_commands > 0 ? max_commands : 1;
  kids = calloc((size_t)max_kids, sizeof *kids);
  if (!kids) _exit(1);
  /* A connection per command, and a report pipe while it starts. */
  struct rlimit nofile = {(rlim_t)max_kids * 2 + 64, (rlim_t)max_kids * 2 + 64};
  struct rlimit have;
  if (getrlimit(RLIMIT_NOFILE, &have) == 0 && have.rlim_cur < nofile.rlim_cur) setrlimit(RLIMIT_NOFILE, &nofile);
  prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
  prctl(PR_SET_NAME, "boxforkd", 0, 0, 0);
  /* The box's own memory pressure must not take away the way to run commands in it. */
  write_file("/proc/self/oom_score_adj", "-1000");
  signal(SIGPIPE, SIG_IGN);
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  sigprocmask(SIG_BLOCK, &chld, NULL);
  int sfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sfd < 0) _exit(1);
  fcntl(listen_fd, F_SETFL, O_NONBLOCK);
  struct pollfd *p = calloc((size_t)max_kids + 3, sizeof *p);
  struct kid **who = calloc((size_t)max_kids, sizeof *who);
  if (!p || !who) _exit(1);
  for (;;) {
    p[0] = (struct pollfd){.fd = listen_fd, .events = POLLIN};
    p[1] = (struct pollfd){.fd = sfd, .events = POLLIN};
    p[2] = (struct pollfd){.fd = init_pidfd, .events = POLLIN};
    int np = 3;
    for (int i = 0; i < n_kids; i++) {
      if (kids[i].report < 0) continue;
      who[np - 3] = &kids[i];
      p[np++] = (struct pollfd){.fd = kids[i].report, .events = POLLIN};
    }
    if (poll(p, (nfds_t)np, -1) < 0 && errno != EINTR) _exit(1);
    if (p[2].revents) _exit(0); /* the init died: the box is gone */
    /* Reports first (a command's pid is known before its exit is reaped); from the last, since started()
     * may move the last kid into a finished one's place. */
    for (int i = np - 1; i >= 3; i--)
      if (p[i].revents) started(who[i - 3]);
    if (p[1].revents) {
      struct signalfd_siginfo si;
      while (read(sfd, &si, sizeof si) > 0) {
      }
      reap();
    }
    if (p[0].revents) {
      int conn;
      while ((conn = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC)) >= 0) start(conn, init_pidfd, listen_fd, sfd);
    }
  }
}
