/* ociunpack: unpacks one image layer, a tar stream on stdin, into DIR, confined; then turns the layer's
 * whiteouts into overlayfs's.
 *
 * The archive is hostile input: GNU tar unpacks it confined to DIR (confine.c), owners canonical (box id +
 * BOX_ID_BASE), set-id bits kept.
 *
 * Then, as host root, over a tree in which nothing runs any more (no path in it changes under the walk),
 * never following a symlink: `.wh.NAME` becomes a character device 0/0 NAME (overlayfs's whiteout; an opaque
 * mark when the layer has a directory NAME of its own),
 * `.wh..wh..opq` the `trusted.overlay.opaque` mark of its directory, other `.wh..wh.` files are dropped.
 *
 * usage: ociunpack DIR     (DIR: an empty directory; DIR.stage is made for the mount root and removed)
 * exit: 0 unpacked; 1 tar or the conversion failed (stderr says why); 2 usage.
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
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

static char **found;
static size_t n_found, cap_found;

static int collect(const char *path, const struct stat *st, int type, struct FTW *ftw) {
  (void)st;
  (void)type;
  if (strncmp(path + ftw->base, ".wh.", 4) != 0) return 0;
  if (n_found == cap_found) {
    cap_found = cap_found ? cap_found * 2 : 64;
    found = realloc(found, cap_found * sizeof *found);
    if (!found) die(1, "out of memory");
  }
  found[n_found++] = strdup(path);
  return 0;
}

/* Converts one `.wh.` entry; the path is physical (nftw without following symlinks). */
static void convert(char *path) {
  char *slash = strrchr(path, '/');
  const char *base = slash + 1;
  struct stat st;
  if (lstat(path, &st) != 0) die(1, "lstat %s", path);
  if (S_ISDIR(st.st_mode)) {
    errno = EINVAL;
    die(1, "whiteout %s is a directory", base);
  }
  if (unlink(path) != 0) die(1, "unlink %s", path);
  *slash = '\0'; /* path is now the entry's directory */
  if (strcmp(base, ".wh..wh..opq") == 0) {
    if (lsetxattr(path, "trusted.overlay.opaque", "y", 1, 0) != 0) die(1, "mark %s opaque", path);
    return;
  }
  if (strncmp(base, ".wh..wh.", 8) == 0) return; /* aufs bookkeeping, meaningless to overlayfs */
  const char *name = base + 4;
  if (!*name || strcmp(name, ".") == 0 || strcmp(name, "..") == 0) return;
  char target[PATH_MAX];
  if ((size_t)snprintf(target, sizeof target, "%s/%s", path, name) >= sizeof target) die(1, "path too long");
  /* The layer deletes NAME below and makes it anew (whiteouts hide only what lies below): a new file hides
   * the old entry by itself; a new directory must be opaque, or the old one's entries would show through. */
  if (lstat(target, &st) == 0) {
    if (S_ISDIR(st.st_mode) && lsetxattr(target, "trusted.overlay.opaque", "y", 1, 0) != 0) die(1, "mark %s opaque", target);
    return;
  }
  if (mknod(target, S_IFCHR | 0600, makedev(0, 0)) != 0) die(1, "whiteout %s", target);
  if (lchown(target, BOX_ID_BASE, BOX_ID_BASE) != 0) die(1, "chown %s", target);
}

int main(int argc, char **argv) {
  progname = "ociunpack";
  if (argc != 2) die(2, "usage: ociunpack DIR");
  char dir[PATH_MAX], stage[PATH_MAX];
  if (!realpath(argv[1], dir)) die(1, "%s", argv[1]);
  if ((size_t)snprintf(stage, sizeof stage, "%s.stage", dir) >= sizeof stage) die(2, "path too long");
  int dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dir_fd < 0) die(1, "open %s", dir);
  /* Box root owns the layer's root until the archive's `./` entry says otherwise. */
  if (fchown(dir_fd, BOX_ID_BASE, BOX_ID_BASE) != 0 || fchmod(dir_fd, 0755) != 0) die(1, "chown %s", dir);
  /* --ignore-zeros reads the stream to its end, so the caller hashes every byte of the blob. */
  char *tar[] = {"tar", "-x", "-f", "-", "-C", "/x", "--numeric-owner", "--same-owner", "--same-permissions",
                 "--ignore-zeros", "--delay-directory-restore", "--warning=no-timestamp", "--warning=no-unknown-keyword", NULL};
  int status = confined_tar(dir, stage, 0, tar);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fprintf(stderr, "ociunpack: tar failed (%s %d)\n", WIFEXITED(status) ? "exit" : "signal",
            WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    return 1;
  }
  if (nftw(dir, collect, 32, FTW_PHYS | FTW_MOUNT) != 0) die(1, "walk %s", dir);
  for (size_t i = 0; i < n_found; i++) convert(found[i]);
  if (syncfs(dir_fd) != 0) die(1, "syncfs");
  return 0;
}
