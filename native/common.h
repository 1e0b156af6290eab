/* Shared helpers of the devboxd native tools (boxinit, boxexec). */
#ifndef DEVBOXD_COMMON_H
#define DEVBOXD_COMMON_H

#include <stddef.h>

/* Host uid/gid that uid/gid 0 inside a box maps to; a box owns 65536 ids from here. */
#define BOX_ID_BASE 1000000
#define BOX_ID_COUNT 65536

/* Prints "<tool>: <msg>: <strerror(errno)>" to stderr and exits with `code`. */
void die(int code, const char *fmt, ...) __attribute__((noreturn, format(printf, 2, 3)));

/* Writes a whole string to a file (cgroup and /proc control files); returns -1 with errno on failure. */
int write_file(const char *path, const char *text);

/* Installs the box seccomp filter: the calls that administer the kernel or escape the sandbox fail with
 * EPERM (ENOSYS for clone3, so libc falls back to clone, whose flags the filter can inspect). */
void install_seccomp(void);

/* Drops capabilities for a box process: everything for the box user; a container-like default set for
 * box root (caps inside the box's user namespace only). Must run before setresuid. */
void limit_bounding_set(int as_root);

/* Sets no_new_privs so no exec can gain privileges (setuid binaries, file capabilities). */
void set_no_new_privs(void);

extern const char *progname;

#endif
