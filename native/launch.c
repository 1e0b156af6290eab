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
 * signals) and later its wait status to the relay (relay.c). A fork refused at pids.max ends the command
 * with status 125 and a line on its stderr. */
#define _GNU_SOURCE
#include "launch.h"
#include "common.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <termios.h>
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
  while ((opt = getopt(argc, argv, "+x:u:g:d:hRe:t:")) != -1) {
    switch (opt) {
      case 'x': l->sock = optarg; break;
      case 'u': l->uid = atol(optarg); break;
      case 'g': l->gid = atol(optarg); break;
      case 'd': l->cwd = optarg; break;
      case 'h': l->cwd_is_home = 1; break;
      case 'R': l->as_root = 1; break;
      case 'e': if (l->n_env < MAX_ENV) l->env[l->n_env++] = optarg; break;
      case 't':
        if (sscanf(optarg, "%dx%d", &l->tty_cols, &l->tty_rows) != 2 || l->tty_cols < 1 || l->tty_cols > 65535 ||
            l->tty_rows < 1 || l->tty_rows > 65535) {
          snprintf(err, errlen, "bad terminal size");
          return -1;
        }
        break;
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

char **launch_split(char *req, size_t len, const char *name, int *argc) {
  char **argv = malloc(sizeof(char *) * (len + 2));
  if (!argv) return NULL;
  int n = 0;
  argv[n++] = (char *)name;
  for (size_t i = 0; i < len; i += strlen(req + i) + 1) argv[n++] = req + i;
  argv[n] = NULL;
  *argc = n;
  return argv;
}

int launch_parse_request(struct launch *l, char *req, size_t len, char *err, size_t errlen) {
  int argc;
  char **argv = launch_split(req, len, "boxexec", &argc);
  if (!argv) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  return launch_parse(l, argc, argv, err, errlen);
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
  for (int i = 0; l->argv[i]; i++) l->argv[i] = copy(l->argv[i]);
  for (int i = 0; i < l->n_env; i++) l->env[i] = copy(l->env[i]);
  if (l->cwd) l->cwd = copy(l->cwd);
  if (l->sock) l->sock = copy(l->sock);
  launch_wipe_args();
}

void launch_wipe_args(void) {
  char *start, *end;
  if (args_area(&start, &end) != 0) die(125, "read /proc/self/stat");
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

/* A terminal for the command, opened as the box user inside the box: /dev/ptmx there is the box's own
 * devpts instance (boxinit mounts it with newinstance), so the slave is a /dev/pts/N of the box, owned by
 * the user, like a login's. The slave is opened from the master (TIOCGPTPEER), never by a path the box
 * could swap. The master goes to the relay (send_master): opening it here rather than in the relay through
 * the box's /dev means no host process ever resolves a path inside the box. */
static int open_terminal(const struct launch *l, int *slave) {
  int master = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (master < 0) die(125, "open /dev/ptmx");
  int unlock = 0;
  struct winsize ws = {.ws_row = (unsigned short)l->tty_rows, .ws_col = (unsigned short)l->tty_cols};
  if (ioctl(master, TIOCSPTLCK, &unlock) != 0 || ioctl(master, TIOCSWINSZ, &ws) != 0) die(125, "set up the terminal");
  *slave = ioctl(master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (*slave < 0) die(125, "open the terminal");
  return master;
}

/* Hands the terminal's master to the relay on the forker's connection ('M' with the descriptor), ahead of
 * the forker's 'P': the command's pid is reported only after this (see forkd.c). */
static void send_master(int conn, int master) {
  unsigned char buf[5] = {'M', 0, 0, 0, 0};
  char cbuf[CMSG_SPACE(sizeof(int))];
  memset(cbuf, 0, sizeof cbuf);
  struct iovec iov = {.iov_base = buf, .iov_len = sizeof buf};
  struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof cbuf};
  struct cmsghdr *c = CMSG_FIRSTHDR(&m);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  memcpy(CMSG_DATA(c), &master, sizeof master);
  ssize_t n;
  while ((n = sendmsg(conn, &m, MSG_NOSIGNAL)) < 0 && errno == EINTR) {
  }
  if (n != sizeof buf) _exit(125);
}

/* The forker's child: host pid namespace, box everything else; forks the command and reports its pid. */
static void __attribute__((noreturn)) child_main(struct launch *l, int pidfd, const int fds[3], int report, int conn) {
  for (int i = 0; i < 3; i++)
    if (fds[i] != i && dup2(fds[i], i) < 0) die(125, "stdio");
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  signal(SIGPIPE, SIG_DFL);
  /* The forker inherits the box init's umask 0 (it sets up mounts); a command starts with the usual 022. */
  umask(022);
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
  int slave = -1, master = l->tty_cols > 0 ? open_terminal(l, &slave) : -1;
  pid_t cmd = fork();
  if (cmd < 0 && errno == EAGAIN) no_slot();
  if (cmd < 0) die(125, "fork into the box");
  if (cmd == 0) {
    setsid(); /* own session and process group: a group signal reaches everything the command starts */
    if (slave >= 0) {
      /* the terminal becomes the session's controlling terminal and the command's stdio */
      if (ioctl(slave, TIOCSCTTY, 0) != 0) die(125, "set the controlling terminal");
      for (int i = 0; i < 3; i++)
        if (dup2(slave, i) < 0) _exit(125);
    }
    syscall(SYS_close_range, 3, ~0U, 0);
    environ = (char **)l->env;
    execvp(l->argv[0], l->argv);
    die(errno == ENOENT ? 127 : 126, "%s", l->argv[0]);
  }
  if (master >= 0) {
    send_master(conn, master);
    close(master);
    close(slave);
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
  if (!req || read_full(conn, req, len) != 0) _exit(125);
  req[len] = '\0';
  struct launch l;
  char err[300];
  for (int i = 0; i < 3; i++)
    if (dup2(fds[i], i) < 0) _exit(125);
  if (launch_parse_request(&l, req, len, err, sizeof err) != 0) {
    errno = 0;
    die(125, "%s", err);
  }
  const int stdio[3] = {0, 1, 2};
  child_main(&l, init_pidfd, stdio, report, conn);
}
