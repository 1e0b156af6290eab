/* Starting one command inside a box: the relay side (boxexec, boxexecd) asks the box's forker
 * (boxforkd, forkd.c), whose first child (launch_child) becomes the command. */
#ifndef DEVBOXD_LAUNCH_H
#define DEVBOXD_LAUNCH_H

#include <stddef.h>
#include <sys/types.h>

#define MAX_ENV 4096
/* Largest request (NUL-separated arguments) a relay sends to a box. */
#define MAX_LAUNCH_REQUEST (4 << 20)

struct launch {
  const char *sock;              /* the box's forker socket */
  long uid, gid;
  const char *cwd;
  int cwd_is_home, as_root;
  int tty_cols, tty_rows;        /* -t COLSxROWS: the command runs on a terminal of the box (0: pipes) */
  char *env[MAX_ENV + 1];
  int n_env;
  char **argv;
  char **args;                   /* every argument after the program name: what the box receives */
  int nargs;
};

/* A command the forker started: its host pid and a pidfd (signals), the connection that brings its wait
 * status, and with -t the master side of its terminal (else -1). */
struct started {
  pid_t pid;
  int pidfd, conn, master;
};

/* Parses boxexec's options (see boxexec.c) from argv; 0 on success, -1 with a message in err. */
int launch_parse(struct launch *l, int argc, char **argv, char *err, size_t errlen);
/* The same from a request: NUL-separated arguments (what follows the program name), req[len] == '\0'. The
 * launch points into req, which must outlive it. */
int launch_parse_request(struct launch *l, char *req, size_t len, char *err, size_t errlen);
/* An argv over a request's arguments, `name` first; NULL when out of memory. */
char **launch_split(char *req, size_t len, const char *name, int *argc);
/* Wipes this process's command line from /proc/PID/cmdline (readable by every host user): "boxexec" is left. */
void launch_wipe_args(void);

/* Asks the box's forker to start the command with stdio on fds[0..2]. Returns 0 once it runs, 1 when it
 * ended before it ran (*status holds the wait status; the reason is on its stderr), -1 with a message
 * in err when the box cannot start it (no process slot left, too many commands, box gone). */
int launch_start(const struct launch *l, const int fds[3], struct started *s, int *status, char *err, size_t errlen);

/* Reads the command's wait status once s->conn is readable: 1 with *status, 0 when not yet there. A
 * forker that goes away (the box stopped) counts as SIGKILL. */
int launch_wait(struct started *s, int *status);

/* Signals the command, or its process group. */
void launch_signal(const struct started *s, int sig, int group);

/* Signals the foreground process group of the command's terminal (s->master), if the command still runs. */
void launch_signal_foreground(const struct started *s, int sig);

/* In the forker's child: reads a request from conn, enters the box, forks the command there and writes
 * its pid to `report`. Never returns. */
void launch_child(int conn, int report, int init_pidfd) __attribute__((noreturn));

/* Ends the calling process the way the command ended: same exit code, or death by the same signal. */
void mirror_status(int status) __attribute__((noreturn));

/* Opens a unix socket path of any length (through its directory's fd); the socket's fd or -1. */
int unix_socket_at(const char *path, int listen_backlog);

#endif
