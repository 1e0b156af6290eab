/* layertar: a layer as a tar stream and back, to move it between nodes (src/runtime/linux/layer-archive.ts).
 *
 * usage: layertar marks DIR
 *          prints, each ended by a NUL, the directories under DIR (relative to it, `.` for DIR itself) that
 *          overlayfs marks opaque (trusted.overlay.opaque=y). A mark that cannot be carried fails: a redirect
 *          or metacopy (overlayfs's redirect_dir and metacopy features, which devboxd does not turn on).
 *          Other trusted.overlay.* marks (origin, impure, nlink) name this host's inodes and are left out.
 *        layertar pack DIR STAGE
 *          writes DIR as a POSIX tar stream to stdout: owners as box ids, modes, times, user and security
 *          xattrs, ACLs, hard links, the holes of sparse files, whiteouts as the 0/0 character devices they are.
 *          tar reads DIR read-only and confined (confine.c, root mounted on STAGE), so it sees the canonical
 *          owners as box ids and file capabilities as the box's own (a host-root reader would see neither).
 *        layertar unpack DIR MARKS MAX_BYTES MIN_FREE
 *          DIR: an empty directory. Unpacks a stream made by `pack`, a hostile one for all it knows, from stdin
 *          into DIR, confined (DIR.stage holds the mount root), passing tar at most MAX_BYTES of it and failing
 *          once DIR's filesystem has less than MIN_FREE bytes free; then as host root, over a tree nothing runs
 *          in any more, never following a symlink: refuses a tree with a device other than a whiteout or an
 *          owner outside the box range, and marks opaque the directories the file MARKS lists (as `marks`
 *          prints).
 * exit: 0 done; 1 failed (stderr says why); 2 usage.
 */
#define _GNU_SOURCE
#include "common.h"
#include "confine.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#define OPAQUE "trusted.overlay.opaque"
/* The largest MARKS file read (the caller bounds what it writes the same way). */
#define MAX_MARKS (16 << 20)

static size_t root_len;

static int list_mark(const char *path, const struct stat *st, int type, struct FTW *ftw) {
  (void)type;
  (void)ftw;
  static char names[XATTR_LIST_MAX];
  ssize_t n = llistxattr(path, names, sizeof names);
  if (n < 0) {
    if (errno == ENOTSUP) return 0;
    die(1, "list the xattrs of %s", path);
  }
  for (char *name = names; name < names + n; name += strlen(name) + 1) {
    if (strcmp(name, "trusted.overlay.redirect") == 0 || strcmp(name, "trusted.overlay.metacopy") == 0) {
      errno = 0;
      die(1, "%s has %s, which a layer archive does not carry", path, name);
    }
  }
  if (!S_ISDIR(st->st_mode)) return 0;
  char value[8];
  ssize_t v = lgetxattr(path, OPAQUE, value, sizeof value);
  if (v < 0) {
    if (errno == ENODATA || errno == ENOTSUP) return 0;
    die(1, "read %s of %s", OPAQUE, path);
  }
  if (v != 1 || value[0] != 'y') {
    errno = 0;
    die(1, "%s has %s of a kind a layer archive does not carry", path, OPAQUE);
  }
  const char *rel = path[root_len] ? path + root_len + 1 : ".";
  if (fwrite(rel, 1, strlen(rel) + 1, stdout) != strlen(rel) + 1) die(1, "write");
  return 0;
}

static int check_entry(const char *path, const struct stat *st, int type, struct FTW *ftw) {
  (void)type;
  (void)ftw;
  errno = 0;
  if (S_ISBLK(st->st_mode) || (S_ISCHR(st->st_mode) && st->st_rdev != makedev(0, 0))) die(1, "%s is a device", path);
  if (st->st_uid < BOX_ID_BASE || st->st_uid >= BOX_ID_BASE + BOX_ID_COUNT || st->st_gid < BOX_ID_BASE ||
      st->st_gid >= BOX_ID_BASE + BOX_ID_COUNT)
    die(1, "%s has an owner outside the box range", path);
  return 0;
}

/* The directory `rel` under `root`, each component opened without following a symlink; `.` is root. */
static int open_under(int root, char *rel) {
  int fd = dup(root);
  if (fd < 0) die(1, "dup");
  if (strcmp(rel, ".") == 0) return fd;
  for (char *save, *part = strtok_r(rel, "/", &save); part; part = strtok_r(NULL, "/", &save)) {
    if (strcmp(part, ".") == 0 || strcmp(part, "..") == 0) {
      errno = EINVAL;
      die(1, "mark path component %s", part);
    }
    int next = openat(fd, part, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (next < 0) die(1, "open the marked directory %s", part);
    close(fd);
    fd = next;
  }
  return fd;
}

static void apply_marks(int root, const char *file) {
  int fd = open(file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) die(1, "open %s", file);
  char *buf = malloc(MAX_MARKS + 1);
  if (!buf) die(1, "out of memory");
  size_t len = 0;
  for (ssize_t n; (n = read(fd, buf + len, MAX_MARKS + 1 - len)) != 0; len += (size_t)n) {
    if (n < 0) die(1, "read %s", file);
    if (len + (size_t)n > MAX_MARKS) {
      errno = EFBIG;
      die(1, "%s", file);
    }
  }
  close(fd);
  if (len && buf[len - 1] != '\0') {
    errno = EINVAL;
    die(1, "%s does not end in a NUL", file);
  }
  for (char *rel = buf; rel < buf + len; rel += strlen(rel) + 1) {
    if (!*rel || *rel == '/') {
      errno = EINVAL;
      die(1, "mark path %s", rel);
    }
    char copy[PATH_MAX];
    if (strlen(rel) >= sizeof copy) die(1, "mark path too long");
    strcpy(copy, rel);
    int dir = open_under(root, copy);
    if (fsetxattr(dir, OPAQUE, "y", 1, 0) != 0) die(1, "mark %s opaque", rel);
    close(dir);
  }
  free(buf);
}

/* Moves stdin (`in`) into tar's pipe, at most `max` bytes, checking the free room every 64 MiB; false when
 * tar stopped reading first (its status then says why). */
static int pump(int in, int out, int dir, unsigned long long max, unsigned long long min_free, pid_t tar) {
  static char buf[1 << 16];
  unsigned long long n = 0, check_at = 0;
  int spliced = 1;
  for (;;) {
    ssize_t got = spliced ? splice(in, NULL, out, NULL, 1 << 20, SPLICE_F_MOVE) : read(in, buf, sizeof buf);
    if (got < 0 && errno == EINVAL && spliced) {
      spliced = 0; /* stdin is no pipe: copy */
      continue;
    }
    if (got < 0 && errno == EINTR) continue;
    if (got < 0 && errno == EPIPE) return 0;
    if (got < 0) die(1, "read the archive");
    if (got == 0) return 1;
    for (ssize_t off = 0; !spliced && off < got;) {
      ssize_t w = write(out, buf + off, (size_t)(got - off));
      if (w < 0 && errno == EINTR) continue;
      if (w < 0 && errno == EPIPE) return 0;
      if (w < 0) die(1, "write to tar");
      off += w;
    }
    n += (unsigned long long)got;
    errno = 0;
    if (n > max) {
      kill(tar, SIGKILL);
      die(1, "the archive unpacks to more than %llu bytes", max);
    }
    if (n < check_at) continue;
    check_at = n + (64ULL << 20);
    struct statvfs sv;
    if (fstatvfs(dir, &sv) == 0 && (unsigned long long)sv.f_bavail * sv.f_frsize < min_free) {
      kill(tar, SIGKILL);
      errno = 0;
      die(1, "the data dir has too little room for the layer (it keeps %llu bytes free)", min_free);
    }
  }
}

static unsigned long long number(const char *s) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || !*s || *end) die(2, "not a number: %s", s);
  return v;
}

static int tar_failed(int status) {
  fprintf(stderr, "layertar: tar failed (%s %d)\n", WIFEXITED(status) ? "exit" : "signal",
          WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
  return 1;
}

int main(int argc, char **argv) {
  progname = "layertar";
  const char *cmd = argc > 1 ? argv[1] : "";
  char dir[PATH_MAX];
  if (argc < 3 || !realpath(argv[2], dir)) {
    if (argc >= 3) die(1, "%s", argv[2]);
    die(2, "usage: layertar marks DIR | pack DIR STAGE | unpack DIR MARKS MAX_BYTES MIN_FREE");
  }
  if (strcmp(cmd, "marks") == 0 && argc == 3) {
    root_len = strlen(dir);
    if (nftw(dir, list_mark, 32, FTW_PHYS | FTW_MOUNT) != 0) die(1, "walk %s", dir);
    if (fflush(stdout) != 0) die(1, "write");
    return 0;
  }
  if (strcmp(cmd, "pack") == 0 && argc == 4) {
    char *tar[] = {"tar", "-c", "-f", "-", "-C", "/x", "--numeric-owner", "--format=posix",
                   "--pax-option=delete=atime,delete=ctime", "--xattrs", "--xattrs-include=*", "--acls", "--sparse", ".", NULL};
    int status = confined_tar(dir, argv[3], 1, tar);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : tar_failed(status);
  }
  if (strcmp(cmd, "unpack") != 0 || argc != 6) die(2, "usage: layertar marks DIR | pack DIR STAGE | unpack DIR MARKS MAX_BYTES MIN_FREE");
  unsigned long long max = number(argv[4]), min_free = number(argv[5]);
  char stage[PATH_MAX];
  if ((size_t)snprintf(stage, sizeof stage, "%s.stage", dir) >= sizeof stage) die(2, "path too long");
  int root = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (root < 0) die(1, "open %s", dir);
  /* Box root owns the layer's root until the archive's `./` entry says otherwise. */
  if (fchown(root, BOX_ID_BASE, BOX_ID_BASE) != 0 || fchmod(root, 0755) != 0) die(1, "chown %s", dir);
  /* --ignore-zeros reads the stream to its end: the caller writes it whole before it checks the exit. */
  char *tar[] = {"tar", "-x", "-f", "-", "-C", "/x", "--numeric-owner", "--same-owner", "--same-permissions", "--xattrs",
                 "--xattrs-include=*", "--acls", "--ignore-zeros", "--delay-directory-restore", "--warning=no-timestamp",
                 "--warning=no-unknown-keyword", NULL};
  /* tar reads a pipe this process fills (counting) from its own stdin; neither end of that leaks into tar. */
  signal(SIGPIPE, SIG_IGN);
  int in = fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3), feed[2];
  if (in < 0 || pipe2(feed, O_CLOEXEC) != 0 || dup2(feed[0], STDIN_FILENO) != STDIN_FILENO) die(1, "pipe");
  close(feed[0]);
  fcntl(feed[1], F_SETPIPE_SZ, 1 << 20);
  pid_t pid = confined_tar_start(dir, stage, 0, tar);
  int whole = pump(in, feed[1], root, max, min_free, pid);
  close(feed[1]);
  close(in);
  int status = confined_tar_wait(pid, stage);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return tar_failed(status);
  errno = 0;
  if (!whole) die(1, "tar ended before the archive did");
  if (nftw(dir, check_entry, 32, FTW_PHYS | FTW_MOUNT) != 0) die(1, "walk %s", dir);
  apply_marks(root, argv[3]);
  if (syncfs(root) != 0) die(1, "syncfs");
  return 0;
}
