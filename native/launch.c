/* Starting one command inside a running box, fast enough for interactive exec.
 *
 * Every process of a command is forked by a process already inside the box's cgroups, so the box's
 * pids.max bounds commands too (a process that joins a cgroup by writing cgroup.procs is never refused).
 * That process is the box's forker (forkd.c): the relay (boxexec, boxexecd's per-command process, on
 * the host and outside the box's cgroups) connects to the forker's socket and hands it the request and
 * the command's stdio. The forker forks a first child, still in the host's PID namespace and so invisible
 * to the box, which enters every namespace of the init, hides the forker's command line, becomes the box
 * user with no capabilities (or box root with a container-like set), sets no_new_privs and the seccomp
 * filter; only then does it fork the command, the first process the box can see, and exit. The forker
 * is a child subreaper: the command comes back to it, and it sends the command's pid (with a pidfd for
 * signals) and later its wait status to the relay. A fork refused at pids.max ends the command with
 * status 125 and a line on its stderr. */
#define _GNU_SOURCE
#include "launch.h"
#include "common.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define NO_SLOT_MSG "devboxd: the box is at its process limit (pids.max): the command cannot start\n"

int launch_parse(struct launch *l, int argc, char **argv, char *err, size_t errlen) {
  memset(l, 0, sizeof *l);
  l->uid = l->gid = -1;
  l->args = argv + 1;
  l->nargs = argc - 1;
  int opt;
  optind = 1;
  while ((opt = getopt(argc, argv, "+x:u:g:d:hRe:")) != -1) {
    switch (opt) {
      case 'x': l->sock = optarg; break;
      case 'u': l->uid = atol(optarg); break;
      case 'g': l->gid = atol(optarg); break;
      case 'd': l->cwd = optarg; break;
      case 'h': l->cwd_is_home = 1; break;
      case 'R': l->as_root = 1; break;
      case 'e': if (l->n_env < MAX_ENV) l->env[l->n_env++] = optarg; break;
      default: snprintf(err, errlen, "bad arguments"); return -1;
    }
  }
  l->env[l->n_env] = NULL;
  if (!l->sock || optind >= argc || l->uid < 0 || l->uid >= BOX_ID_COUNT || l->gid < 0 || l->gid >= BOX_ID_COUNT) {
    snprintf(err, errlen, "-x, -u, -g and a command are required");
    return -1;
  }
  l->argv = argv + optind;
  return 0;
}

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

static void __attribute__((noreturn)) no_slot(void) {
  if (write(2, NO_SLOT_MSG, sizeof NO_SLOT_MSG - 1) < 0) _exit(125);
  _exit(125);
}

static int read_full(int fd, void *buf, size_t len) {
  for (size_t got = 0; got < len;) {
    ssize_t n = read(fd, (char *)buf + got, len - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return -1;
    got += (size_t)n;
  }
  return 0;
}

/* Fields 48 and 49 of /proc/PID/stat: where the command line lies in memory. */
static int args_area(char **start, char **end) {
  char buf[2048];
  int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return -1;
  buf[n] = '\0';
  char *p = strrchr(buf, ')');
  for (int field = 2; p && field < 48; field++) p = strchr(p + 1, ' ');
  unsigned long a, b;
  if (!p || sscanf(p + 1, "%lu %lu", &a, &b) != 2 || b <= a) return -1;
  *start = (char *)a;
  *end = (char *)b;
  return 0;
}

static char *copy(const char *s) {
  char *c = strdup(s);
  if (!c) die(125, "out of memory");
  return c;
}

/* Until the command execs, the box sees the launcher's command line, whose arguments name host paths
 * (and, for boxexec, hold the whole request): what the command needs moves to the heap, the area is
 * wiped. Runs in the first child, whose memory is its own copy. */
static void hide_args(struct launch *l) {
  char *start, *end;
  if (args_area(&start, &end) != 0) die(125, "read /proc/self/stat");
  for (int i = 0; l->argv[i]; i++) l->argv[i] = copy(l->argv[i]);
  for (int i = 0; i < l->n_env; i++) l->env[i] = copy(l->env[i]);
  if (l->cwd) l->cwd = copy(l->cwd);
  memset(start, 0, (size_t)(end - start));
  if (end - start > 8) memcpy(start, "boxexec", 8);
}

/* setresuid from host root to a box uid keeps every capability in the box's user namespace (host root is
 * not the namespace's root, so the kernel's root-to-user rule does not apply): drop them by hand. Box root
 * keeps its bounding set, which exec would hand it anyway. */
static void set_caps(int as_root) {
  unsigned long long keep = 0;
  for (int cap = 0; as_root && cap < 64; cap++)
    if (prctl(PR_CAPBSET_READ, cap, 0, 0, 0) == 1) keep |= 1ULL << cap;
  struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct data[2];
  memset(data, 0, sizeof data);
  data[0].effective = data[0].permitted = (unsigned)keep;
  data[1].effective = data[1].permitted = (unsigned)(keep >> 32);
  if (syscall(SYS_capset, &hdr, data) != 0) die(125, "capset");
}

/* The forker's child: host pid namespace, box everything else; forks the command and reports its pid. */
static void __attribute__((noreturn)) child_main(struct launch *l, int pidfd, const int fds[3], int report) {
  for (int i = 0; i < 3; i++)
    if (fds[i] != i && dup2(fds[i], i) < 0) die(125, "stdio");
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  signal(SIGPIPE, SIG_DFL);
  hide_args(l);
  /* The PID namespace applies to children only: the command forked below. */
  if (setns(pidfd, CLONE_NEWPID) != 0) die(125, "enter the box's pid namespace");
  if (setns(pidfd, CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP) != 0)
    die(125, "enter the box");
  limit_bounding_set(l->as_root);
  if (setgroups(0, NULL) || setresgid(l->gid, l->gid, l->gid) || setresuid(l->uid, l->uid, l->uid))
    die(125, "become uid %ld", l->uid);
  set_caps(l->as_root);
  if (l->cwd && chdir(l->cwd) != 0) {
    if (!l->cwd_is_home || chdir("/") != 0) die(125, "working directory %s", l->cwd);
  }
  set_no_new_privs();
  install_seccomp();
  pid_t cmd = fork();
  if (cmd < 0 && errno == EAGAIN) no_slot();
  if (cmd < 0) die(125, "fork into the box");
  if (cmd == 0) {
    setsid(); /* own session and process group: a group signal reaches everything the command starts */
    syscall(SYS_close_range, 3, ~0U, 0);
    environ = (char **)l->env;
    execvp(l->argv[0], l->argv);
    die(errno == ENOENT ? 127 : 126, "%s", l->argv[0]);
  }
  if (write(report, &cmd, sizeof cmd) != sizeof cmd) _exit(125);
  _exit(0);
}

void launch_child(int conn, int report, int init_pidfd) {
  uint32_t len = 0;
  int fds[3];
  char cbuf[CMSG_SPACE(sizeof fds)];
  struct iovec iov = {.iov_base = &len, .iov_len = sizeof len};
  struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof cbuf};
  ssize_t n;
  while ((n = recvmsg(conn, &m, MSG_WAITALL | MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR) {
  }
  struct cmsghdr *c = CMSG_FIRSTHDR(&m);
  if (n != sizeof len || !c || c->cmsg_type != SCM_RIGHTS || c->cmsg_len != CMSG_LEN(sizeof fds)) _exit(125);
  memcpy(fds, CMSG_DATA(c), sizeof fds);
  if (len == 0 || len > MAX_LAUNCH_REQUEST) _exit(125);
  char *req = malloc(len + 1);
  char **argv = malloc(sizeof(char *) * (len + 2));
  if (!req || !argv || read_full(conn, req, len) != 0) _exit(125);
  req[len] = '\0';
  int argc = 0;
  argv[argc++] = "boxforkd";
  for (size_t i = 0; i < len; i += strlen(req + i) + 1) argv[argc++] = req + i;
  argv[argc] = NULL;
  struct launch l;
  char err[300];
  for (int i = 0; i < 3; i++)
    if (dup2(fds[i], i) < 0) _exit(125);
  if (launch_parse(&l, argc, argv, err, sizeof err) != 0) {
    errno = 0;
    die(125, "%s", err);
  }
  const int stdio[3] = {0, 1, 2};
  child_main(&l, init_pidfd, stdio, report);
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

int launch_start(const struct launch *l, const int fds[3], struct started *s, int *status, char *err, size_t errlen) {
  s->pid = -1;
  s->pidfd = s->conn = -1;
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
  /* A refusal may come before the whole request went out: the reply is read either way. */
  if (recv_msg(conn, &type, &val, &pidfd) != 0) {
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
