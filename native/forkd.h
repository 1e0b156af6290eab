/* The box's forker (forkd.c), started by boxinit. */
#ifndef DEVBOXD_FORKD_H
#define DEVBOXD_FORKD_H

/* Serves the socket `listen_fd` until the init behind `init_pidfd` dies; at most `max_commands` run at
 * once. Never returns. */
void forkd_run(int listen_fd, int init_pidfd, int max_commands) __attribute__((noreturn));

#endif
