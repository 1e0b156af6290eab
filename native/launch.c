/* Starting one command inside a running box, fast enough for interactive exec.
 *
 * The launcher pins the box init with a pidfd (a recycled pid is never joined) and checks its start time.
 * A first child, still in the host's PID namespace and so invisible to the box, joins the box cgroups and
 * every namespace of the init, hides the launcher's command line, becomes the box user with no
 * capabilities (or box root with a container-like set), sets no_new_privs and the seccomp filter; only
 * then does it fork the command, the first process the box can see, and exit. The launcher is a child
 * subreaper, so the command comes back to it as its own child. The launcher stays outside the box and its
 * cgroup. */
#define _GNU_SOURCE
#include "launch.h"
#include "common.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

int launch_parse(struct launch *l, int argc, char **argv, char *err, size_t errlen) {
  memset(l, 0, sizeof *l);
  l->uid = l->gid = -1;
  int opt;
  optind = 1;
  while ((opt = getopt(argc, argv, "+p:s:u:g:d:hRc:e:")) != -1) {
    switch (opt) {
      case 'p': l->pid = (pid_t)atol(optarg); break;
      case 's': l->start = strtoull(optarg, NULL, 10); break;
      case 'u': l->uid = atol(optarg); break;
      case 'g': l->gid = atol(optarg); break;
      case 'd': l->cwd = optarg; break;
      case 'h': l->cwd_is_home = 1; break;
      case 'R': l->as_root = 1; break;
      case 'c': if (l->n_cgroups < MAX_CGROUPS) l->cgroups[l->n_cgroups++] = optarg; break;
      case 'e': if (l->n_env < MAX_ENV) l->env[l->n_env++] = optarg; break;
      default: snprintf(err, errlen, "bad arguments"); return -1;
    }
  }
  l->env[l->n_env] = NULL;
  if (l->pid <= 1 || optind >= argc || l->uid < 0 || l->uid >= BOX_ID_COUNT || l->gid < 0 || l->gid >= BOX_ID_COUNT) {
    snprintf(err, errlen, "-p, -u, -g and a command are required");
    return -1;
  }
  l->argv = argv + optind;
  return 0;
}

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
  unsigned long long v = 0;
  /* after ")": state is field 3, start time field 22 */
  if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu", &v) != 1)
    return 0;
  return v;
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
  for (int i = 0; i < l->n_cgroups; i++) l->cgroups[i] = copy(l->cgroups[i]);
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

/* The first child: host pid namespace, box everything else; forks the command and reports its pid. */
static void __attribute__((noreturn)) child_main(struct launch *l, int pidfd, const int fds[3], int report) {
  for (int i = 0; i < 3; i++)
    if (fds[i] != i && dup2(fds[i], i) < 0) die(125, "stdio");
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  signal(SIGPIPE, SIG_DFL);
  hide_args(l);
  for (int i = 0; i < l->n_cgroups; i++)
    if (write_file(l->cgroups[i], "0") != 0) die(125, "join cgroup %s", l->cgroups[i]);
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

pid_t launch_start(const struct launch *l, const int fds[3], char *err, size_t errlen) {
  int pidfd = (int)syscall(SYS_pidfd_open, l->pid, 0);
  if (pidfd < 0 || start_time(l->pid) != l->start) {
    snprintf(err, errlen, "the box is not running (init %d)", l->pid);
    if (pidfd >= 0) close(pidfd);
    return -1;
  }
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0 || prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) {
    snprintf(err, errlen, "launcher set-up: %s", strerror(errno));
    close(pidfd);
    return -1;
  }
  fflush(NULL);
  pid_t child = fork();
  if (child == 0) {
    close(report[0]);
    child_main((struct launch *)l, pidfd, fds, report[1]); /* its own copy of *l */
  }
  int fork_err = errno;
  close(pidfd);
  close(report[1]);
  if (child < 0) {
    close(report[0]);
    snprintf(err, errlen, "fork: %s", strerror(fork_err));
    return -1;
  }
  pid_t cmd;
  ssize_t n;
  while ((n = read(report[0], &cmd, sizeof cmd)) < 0 && errno == EINTR) {
  }
  close(report[0]);
  /* Without a pid the first child failed and exits 125 with the reason on the command's stderr: the
   * caller waits for it as it would for the command. */
  if (n != sizeof cmd) return child;
  while (waitpid(child, NULL, 0) < 0 && errno == EINTR) {
  }
  return cmd;
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
