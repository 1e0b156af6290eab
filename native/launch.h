/* Starting one command inside a box (shared by boxexec and boxexecd). */
#ifndef DEVBOXD_LAUNCH_H
#define DEVBOXD_LAUNCH_H

#include <stddef.h>
#include <sys/types.h>

#define MAX_CGROUPS 16
#define MAX_ENV 4096

struct launch {
  pid_t pid;                     /* host pid of the box init */
  unsigned long long start;      /* its start time, /proc/PID/stat field 22 */
  long uid, gid;
  const char *cwd;
  int cwd_is_home, as_root;
  const char *cgroups[MAX_CGROUPS];
  int n_cgroups;
  char *env[MAX_ENV + 1];
  int n_env;
  char **argv;
};

/* Parses boxexec's options (see boxexec.c) from argv; 0 on success, -1 with a message in err. */
int launch_parse(struct launch *l, int argc, char **argv, char *err, size_t errlen);

/* Forks the command into the box with stdio on fds[0..2]; the caller blocks SIGCHLD beforehand.
 * Returns the child's host pid, or -1 with a message in err when the box cannot be entered. */
pid_t launch_start(const struct launch *l, const int fds[3], char *err, size_t errlen);

/* Ends the calling process the way the command ended: same exit code, or death by the same signal. */
void mirror_status(int status) __attribute__((noreturn));

#endif
