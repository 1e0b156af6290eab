/* shiftids: moves a freshly built root filesystem into the id range boxes see as their own.
 *
 * Boxes run in a user namespace mapping box ids 0..65535 to host BOX_ID_BASE..; a base image built as
 * host root would show up inside as owned by "nobody". This adds BOX_ID_BASE to every owner and group
 * (ids >= 65536 are left alone) and restores the setuid/setgid bits that chown clears.
 *
 * usage: shiftids DIR
 */
#define _GNU_SOURCE
#include "common.h"

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

static int shift(const char *path, const struct stat *st, int type, struct FTW *ftw) {
  (void)type;
  (void)ftw;
  if (st->st_uid >= BOX_ID_COUNT || st->st_gid >= BOX_ID_COUNT) return 0;
  if (lchown(path, st->st_uid + BOX_ID_BASE, st->st_gid + BOX_ID_BASE) != 0) die(1, "chown %s", path);
  if (!S_ISLNK(st->st_mode) && (st->st_mode & (S_ISUID | S_ISGID)) && chmod(path, st->st_mode & 07777) != 0)
    die(1, "chmod %s", path);
  return 0;
}

int main(int argc, char **argv) {
  progname = "shiftids";
  errno = 0;
  if (argc != 2) die(2, "usage: shiftids DIR");
  if (nftw(argv[1], shift, 64, FTW_PHYS | FTW_MOUNT) != 0) die(1, "walk %s", argv[1]);
  return 0;
}
