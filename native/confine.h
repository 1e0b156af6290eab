/* GNU tar confined to one directory, as root of a user namespace over the canonical box id range
 * (see confine.c): how ociunpack and layertar read archives they must not trust and write the ones they send. */
#ifndef DEVBOXD_CONFINE_H
#define DEVBOXD_CONFINE_H

#include <sys/types.h>

/* Runs /usr/bin/tar with `argv` confined, `dir` being /x in its root (read-only with `readonly`), and waits
 * for it. `stage` (made here, removed after) is where its root is mounted: a path that does not exist, on a
 * writable filesystem (a killed caller leaves it behind, empty). Its stdin and stdout are the caller's, which
 * this process closes once tar has them (so the caller's pipes end with tar). Returns tar's wait status;
 * exits through die() when the confinement cannot be made. */
int confined_tar(const char *dir, const char *stage, int readonly, char *const argv[]);

/* confined_tar in two halves: start (tar has the caller's stdin and stdout, closed here) and wait. */
pid_t confined_tar_start(const char *dir, const char *stage, int readonly, char *const argv[]);
int confined_tar_wait(pid_t pid, const char *stage);

#endif
