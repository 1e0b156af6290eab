/* boxexec: runs one command inside a running devboxd box, fast enough for interactive exec.
 *
 * The server spawns it (as host root) with the box init's pid and start time. The launcher pins the
 * init with a pidfd (so a recycled pid is never joined), enters the box's PID namespace and forks.
 * The child joins the box cgroups, enters every other namespace of the init with one setns(pidfd),
 * becomes the box user with no capabilities (or box root with a container-like set), sets no_new_privs
 * and the seccomp filter, and execs the command in its own session. The launcher stays outside the box
 * and its cgroup, relays signal requests from the server (fd 3: byte pairs {signal, group}), and exits
 * with the command's status, or dies of the command's signal, so the server sees the command's end.
 *
 * usage: boxexec -p PID -s STARTTIME -u UID -g GID [-d CWD] [-h] [-R] [-c CGROUP_PROCS]... [-e K=V]...
 *                -- ARGV...
 *   -h: CWD is the default home (fall back to / when it is missing); -R: run as box root.
 * Exit codes of its own: 125 box setup failed, 126 command not executable, 127 command not found.
 */
#define _GNU_SOURCE
#include "common.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_CGROUPS 16
#define MAX_ENV 4096

extern char **environ;

static const char *cgroups[MAX_CGROUPS];
static int n_cgroups;
static char *envp[MAX_ENV + 1];
static int n_env;

/* Field 22 of /proc/PID/stat: the start time that, with the pid, names a process uniquely. */
static unsigned long long start_time(pid_t pid) {
  char path[64], buf[1024];
  snprintf(path, sizeof path, "/proc/%d/stat", pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return 0;
  buf[n] = '\0';
  char *p = strrchr(buf, ')');
  if (!p) return 0;
  unsigned long long v = 0;
  /* after ")": state is field 3, start time field 22 */
  if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
             &v) != 1)
    return 0;
  return v;
}

static void __attribute__((noreturn))
child_main(int pidfd, uid_t uid, gid_t gid, const char *cwd, int cwd_is_home, int as_root, char **argv) {
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  for (int i = 0; i < n_cgroups; i++)
    if (write_file(cgroups[i], "0") != 0) die(125, "join cgroup %s", cgroups[i]);
  if (setns(pidfd, CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS |
                       CLONE_NEWCGROUP) != 0)
    die(125, "enter the box");
  close(pidfd);
  setsid(); /* own session and process group: a group signal reaches everything the command starts */
  limit_bounding_set(as_root);
  if (setgroups(0, NULL) || setresgid(gid, gid, gid) || setresuid(uid, uid, uid))
    die(125, "become uid %u", (unsigned)uid);
  if (cwd && chdir(cwd) != 0) {
    if (!cwd_is_home || chdir("/") != 0) die(125, "working directory %s", cwd);
  }
  set_no_new_privs();
  install_seccomp();
  syscall(SYS_close_range, 3, ~0U, 0);
  environ = envp;
  execvp(argv[0], argv);
  die(errno == ENOENT ? 127 : 126, "%s", argv[0]);
}

/* Ends this launcher the way the command ended: same exit code, or death by the same signal. */
static void __attribute__((noreturn)) mirror_status(int status) {
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
  pid_t pid = 0;
  unsigned long long start = 0;
  long uid = -1, gid = -1;
  const char *cwd = NULL;
  int cwd_is_home = 0, as_root = 0, opt;
  while ((opt = getopt(argc, argv, "+p:s:u:g:d:hRc:e:")) != -1) {
    switch (opt) {
      case 'p': pid = (pid_t)atol(optarg); break;
      case 's': start = strtoull(optarg, NULL, 10); break;
      case 'u': uid = atol(optarg); break;
      case 'g': gid = atol(optarg); break;
      case 'd': cwd = optarg; break;
      case 'h': cwd_is_home = 1; break;
      case 'R': as_root = 1; break;
      case 'c': if (n_cgroups < MAX_CGROUPS) cgroups[n_cgroups++] = optarg; break;
      case 'e': if (n_env < MAX_ENV) envp[n_env++] = optarg; break;
      default: errno = 0; die(125, "bad arguments");
    }
  }
  errno = 0;
  if (pid <= 1 || optind >= argc || uid < 0 || uid >= BOX_ID_COUNT || gid < 0 || gid >= BOX_ID_COUNT)
    die(125, "-p, -u, -g and a command are required");

  int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
  if (pidfd < 0) die(125, "box init %d", pid);
  if (start_time(pid) != start) { errno = ESRCH; die(125, "box init %d", pid); }
  if (setns(pidfd, CLONE_NEWPID) != 0) die(125, "enter the box's pid namespace");

  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  sigprocmask(SIG_BLOCK, &chld, NULL);
  int sfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sfd < 0) die(125, "signalfd");
  fflush(NULL);
  pid_t child = fork();
  if (child < 0) die(125, "fork");
  if (child == 0) child_main(pidfd, (uid_t)uid, (gid_t)gid, cwd, cwd_is_home, as_root, argv + optind);
  close(pidfd);
  relay(child, sfd);
}
