/* The relay's side of starting a command (boxexec, boxexecd): hands the request and the command's stdio
 * to the box's forker (forkd.c) and relays its answers: the command's pid (with a pidfd for signals), then
 * its wait status. See launch.c for what happens inside the box. */
#define _GNU_SOURCE
#include "launch.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

int unix_socket_at(const char *path, int listen_backlog) {
  /* sun_path holds 107 bytes; /proc/self/fd/N/NAME reaches a socket in any directory. */
  const char *slash = strrchr(path, '/');
  char dir[4096];
  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  if (!slash || (size_t)(slash - path) >= sizeof dir) {
    errno = ENAMETOOLONG;
    return -1;
  }
  memcpy(dir, path, (size_t)(slash - path));
  dir[slash - path] = '\0';
  int dfd = open(dir[0] ? dir : "/", O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return -1;
  snprintf(addr.sun_path, sizeof addr.sun_path, "/proc/self/fd/%d/%s", dfd, slash + 1);
  int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int ok = s >= 0;
  if (ok && listen_backlog > 0) {
    unlink(addr.sun_path);
    mode_t old = umask(077);
    ok = bind(s, (struct sockaddr *)&addr, sizeof addr) == 0 && listen(s, listen_backlog) == 0;
    umask(old);
  } else if (ok) {
    while (!(ok = connect(s, (struct sockaddr *)&addr, sizeof addr) == 0) && errno == EINTR) {
    }
  }
  int e = errno;
  close(dfd);
  if (!ok && s >= 0) close(s);
  errno = e;
  return ok ? s : -1;
}

/* Messages from the forker: a type byte and an int32. */
static int recv_msg(int conn, char *type, int32_t *val, int *fd) {
  unsigned char buf[5];
  char cbuf[CMSG_SPACE(sizeof(int))];
  struct iovec iov = {.iov_base = buf, .iov_len = sizeof buf};
  struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof cbuf};
  ssize_t n;
  while ((n = recvmsg(conn, &m, MSG_WAITALL | MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR) {
  }
  if (n != sizeof buf) return -1;
  struct cmsghdr *c = CMSG_FIRSTHDR(&m);
  if (fd) *fd = -1;
  if (c && c->cmsg_type == SCM_RIGHTS) {
    int got;
    memcpy(&got, CMSG_DATA(c), sizeof got);
    if (fd) *fd = got;
    else close(got);
  }
  *type = (char)buf[0];
  memcpy(val, buf + 1, 4);
  return 0;
}

/* The master a box sent: kept only if it is what open_terminal (launch.c) opens, a pty master (the ptmx
 * device, 5:2); anything else a box could have put at its /dev/ptmx is closed. */
static int checked_master(int fd) {
  struct stat st;
  if (fd >= 0 && fstat(fd, &st) == 0 && S_ISCHR(st.st_mode) && major(st.st_rdev) == 5 && minor(st.st_rdev) == 2) return fd;
  if (fd >= 0) close(fd);
  return -1;
}

int launch_start(const struct launch *l, const int fds[3], struct started *s, int *status, char *err, size_t errlen) {
  s->pid = -1;
  s->pidfd = s->conn = s->master = -1;
  int conn = unix_socket_at(l->sock, 0);
  if (conn < 0) {
    snprintf(err, errlen, "the box is not running (%s)", strerror(errno));
    return -1;
  }
  size_t len = 0;
  for (int i = 0; i < l->nargs; i++) len += strlen(l->args[i]) + 1;
  char *req = malloc(len + 4);
  if (!req) {
    close(conn);
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  uint32_t len32 = (uint32_t)len;
  memcpy(req, &len32, 4);
  for (int i = 0, off = 4; i < l->nargs; i++) {
    size_t k = strlen(l->args[i]) + 1;
    memcpy(req + off, l->args[i], k);
    off += (int)k;
  }
  char cbuf[CMSG_SPACE(3 * sizeof(int))];
  memset(cbuf, 0, sizeof cbuf);
  struct iovec iov = {.iov_base = req, .iov_len = len + 4};
  struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof cbuf};
  struct cmsghdr *c = CMSG_FIRSTHDR(&m);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(3 * sizeof(int));
  memcpy(CMSG_DATA(c), fds, 3 * sizeof(int));
  ssize_t n;
  while ((n = sendmsg(conn, &m, MSG_NOSIGNAL)) < 0 && errno == EINTR) {
  }
  /* The rest of a large request follows without descriptors. */
  for (size_t off = n > 0 ? (size_t)n : 0; n > 0 && off < len + 4;) {
    n = send(conn, req + off, len + 4 - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) n = 1;
    else if (n > 0) off += (size_t)n;
  }
  free(req);
  char type = 0;
  int32_t val = 0;
  int pidfd = -1;
  /* A refusal may come before the whole request went out: the reply is read either way. With a terminal,
   * its master comes first ('M'), then the pid. */
  int got = recv_msg(conn, &type, &val, &pidfd);
  if (got == 0 && type == 'M') {
    s->master = checked_master(pidfd);
    got = recv_msg(conn, &type, &val, &pidfd);
  }
  if (got == 0 && type == 'P' && l->tty_cols > 0 && s->master < 0) {
    /* the command runs, but without the terminal it asked for: end it rather than relay nothing */
    if (pidfd >= 0) syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
    type = 'E';
    val = ENOTTY;
  }
  if (got != 0) {
    close(conn);
    snprintf(err, errlen, "the box is not running");
    return -1;
  }
  if (type == 'P') {
    s->pid = val;
    s->pidfd = pidfd;
    s->conn = conn;
    return 0;
  }
  close(conn);
  if (pidfd >= 0) close(pidfd);
  if (s->master >= 0) close(s->master);
  s->master = -1;
  if (type == 'X') {
    *status = val;
    return 1;
  }
  if (val == EAGAIN) snprintf(err, errlen, "the box is at its process limit (pids.max): the command cannot start");
  else if (val == EBUSY) snprintf(err, errlen, "the box runs as many commands as it takes at once: the command cannot start");
  else snprintf(err, errlen, "the box cannot start the command: %s", strerror(val));
  return -1;
}

int launch_wait(struct started *s, int *status) {
  struct pollfd p = {.fd = s->conn, .events = POLLIN};
  if (poll(&p, 1, 0) <= 0) return 0;
  char type;
  int32_t val;
  if (recv_msg(s->conn, &type, &val, NULL) != 0 || type != 'X') val = SIGKILL; /* the forker is gone */
  *status = val;
  return 1;
}

void launch_signal(const struct started *s, int sig, int group) {
  struct pollfd p = {.fd = s->pidfd, .events = POLLIN};
  if (s->pidfd < 0 || poll(&p, 1, 0) != 0) return; /* exited: its pid may belong to another process */
  /* A group signal before the command's setsid() finds no group yet: signal the command itself. */
  if (group && kill(-s->pid, sig) == 0) return;
  syscall(SYS_pidfd_send_signal, s->pidfd, sig, NULL, 0);
}

#ifndef PIDFD_SIGNAL_PROCESS_GROUP
#define PIDFD_SIGNAL_PROCESS_GROUP (1U << 2)
#endif

void launch_signal_foreground(const struct started *s, int sig) {
  struct pollfd p = {.fd = s->pidfd, .events = POLLIN};
  if (s->master < 0 || s->pidfd < 0 || poll(&p, 1, 0) != 0) return; /* no terminal, or the command ended */
  /* The terminal's own way for the signals a keyboard sends: the kernel signals the foreground group it
   * holds, with no pid number involved. */
  if ((sig == SIGINT || sig == SIGQUIT || sig == SIGTSTP) && ioctl(s->master, TIOCSIG, sig) == 0) return;
  pid_t pg = 0;
  if (ioctl(s->master, TIOCGPGRP, &pg) != 0 || pg <= 0) return;
  /* A pid number may be reused once its group is gone: the group's leader is pinned with a pidfd and must
   * lead a group of the command's session (alive, so its number is its own) while it is still alive. The
   * box decides which of its groups is in the foreground, never a process outside its session. */
  int pfd = (int)syscall(SYS_pidfd_open, pg, 0);
  if (pfd < 0) return; /* the leader is gone: nothing safe to aim at */
  struct pollfd q = {.fd = pfd, .events = POLLIN};
  if (getsid(pg) == s->pid && getpgid(pg) == pg && poll(&q, 1, 0) == 0 && poll(&p, 1, 0) == 0) {
    if (syscall(SYS_pidfd_send_signal, pfd, sig, NULL, PIDFD_SIGNAL_PROCESS_GROUP) != 0 && errno == EINVAL)
      kill(-pg, sig); /* before Linux 6.9 */
  }
  close(pfd);
}

void mirror_status(int status) {
  if (WIFEXITED(status)) _exit(WEXITSTATUS(status));
  int sig = WTERMSIG(status);
  struct rlimit no_core = {0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
  signal(sig, SIG_DFL);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, sig);
  sigprocmask(SIG_UNBLOCK, &set, NULL);
  kill(getpid(), sig);
  _exit(128 + sig);
}
