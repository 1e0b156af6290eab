/*
 * boxdisk: the disk of a box is an ext4 filesystem in a sparse image file, loop-mounted. Its size and inode
 * count are the box's quota: the kernel refuses a write past them (ENOSPC) at the moment it is made, files
 * deleted but held open included, and statfs (`df`) inside the box reports them.
 *
 * usage: boxdisk attach [-t TEMPLATE] [-r] [-d] IMAGE DIR [IMAGE DIR]...
 *          with -t, each IMAGE is created (never overwritten) as a copy of the formatted TEMPLATE: only its
 *          allocated extents are copied (a few hundred KiB), holes stay holes. The image is bound to a free
 *          loop device that goes away with the last unmount (autoclear) and mounted on DIR, read-only with
 *          -r, with direct I/O to the image with -d (no second copy in the host's page cache).
 *          Prints one line per pair, in order: the loop device's MAJOR:MINOR, or `error: REASON` (the
 *          other pairs are still attached). Exits 1 when any pair failed.
 *        boxdisk detach DIR [DIR]...
 *          unmounts each DIR (lazily when busy); nothing mounted there is not an error. Exits 1 when any
 *          failed (the others are still unmounted).
 *
 * One process instead of mkfs + losetup + mount per disk, and many disks per process when they are
 * wanted at once (diskpool.ts batches them).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/loop.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

static char failure[512];

/* Records why the current pair failed; the caller skips to the next pair. */
static int fail(const char *fmt, ...) {
  va_list ap;
  int e = errno;
  va_start(ap, fmt);
  int n = vsnprintf(failure, sizeof failure, fmt, ap);
  va_end(ap);
  if (e && n > 0 && (size_t)n < sizeof failure) snprintf(failure + n, sizeof failure - (size_t)n, ": %s", strerror(e));
  return -1;
}

/* Copies the data extents of `src` into the new file `dst` and gives it the same size. */
static int copy_sparse(int in, const char *dst) {
  struct stat st;
  if (fstat(in, &st) != 0) return fail("stat the template");
  int out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (out < 0) return fail("create %s", dst);
  off_t pos = 0;
  int rc = 0;
  while (rc == 0 && pos < st.st_size) {
    off_t data = lseek(in, pos, SEEK_DATA);
    if (data < 0) {
      if (errno != ENXIO) rc = fail("seek the template"); /* ENXIO: only a hole is left */
      break;
    }
    off_t hole = lseek(in, data, SEEK_HOLE);
    if (hole < 0) {
      rc = fail("seek the template");
      break;
    }
    loff_t from = data, to = data;
    while (rc == 0 && from < hole) {
      if (copy_file_range(in, &from, out, &to, (size_t)(hole - from), 0) <= 0) rc = fail("copy the template");
    }
    pos = hole;
  }
  if (rc == 0 && ftruncate(out, st.st_size) != 0) rc = fail("size %s", dst);
  if (close(out) != 0 && rc == 0) rc = fail("close %s", dst);
  if (rc != 0) unlink(dst);
  return rc;
}

/* Binds `image` to a free loop device; returns its open fd and fills `dev`, or -1. */
static int attach_loop(int ctl, const char *image, int readonly, int direct, char *dev, size_t devlen) {
  int img = open(image, (readonly ? O_RDONLY : O_RDWR) | O_CLOEXEC);
  if (img < 0) return fail("open %s", image);
  for (int attempt = 0; attempt < 64; attempt++) {
    int n = ioctl(ctl, LOOP_CTL_GET_FREE);
    if (n < 0) break;
    snprintf(dev, devlen, "/dev/loop%d", n);
    int fd = open(dev, (readonly ? O_RDONLY : O_RDWR) | O_CLOEXEC);
    if (fd < 0) break;
    struct loop_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.fd = (unsigned)img;
    cfg.block_size = 4096;
    cfg.info.lo_flags = LO_FLAGS_AUTOCLEAR | (readonly ? LO_FLAGS_READ_ONLY : 0) | (direct ? LO_FLAGS_DIRECT_IO : 0);
    snprintf((char *)cfg.info.lo_file_name, LO_NAME_SIZE, "%s", image);
    if (ioctl(fd, LOOP_CONFIGURE, &cfg) == 0) {
      close(img);
      return fd;
    }
    int e = errno;
    close(fd);
    /* Another process took this device between GET_FREE and CONFIGURE: ask again. */
    if (e != EBUSY) {
      errno = e;
      break;
    }
  }
  int e = errno;
  close(img);
  errno = e;
  return fail("attach %s to a loop device", image);
}

static int attach_one(int ctl, int tpl, const char *image, const char *dir, int readonly, int direct) {
  if (tpl >= 0 && copy_sparse(tpl, image) != 0) return -1;
  char dev[64];
  int fd = attach_loop(ctl, image, readonly, direct, dev, sizeof dev);
  if (fd < 0) {
    if (tpl >= 0) unlink(image);
    return -1;
  }
  /* noinit_itable: the inode tables of a fresh image stay holes instead of being zeroed in the background;
   * discard: blocks the box frees are punched out of the image, so the host gets them back. */
  unsigned long flags = MS_NOSUID | MS_NODEV | (readonly ? MS_RDONLY : 0);
  const char *opts = readonly ? "noload" : "noinit_itable,discard";
  if (mount(dev, dir, "ext4", flags, opts) != 0) {
    fail("mount %s on %s", dev, dir);
    close(fd); /* autoclear cannot apply to a device that was never mounted: clear it */
    int again = open(dev, O_RDONLY | O_CLOEXEC);
    if (again >= 0) {
      ioctl(again, LOOP_CLR_FD, 0);
      close(again);
    }
    if (tpl >= 0) unlink(image);
    return -1;
  }
  struct stat st;
  int ok = fstat(fd, &st) == 0;
  /* The mount holds the device now; closing our fd lets autoclear free it at the last unmount. */
  close(fd);
  if (!ok) return fail("stat %s", dev);
  printf("%u:%u\n", major(st.st_rdev), minor(st.st_rdev));
  return 0;
}

static int attach(int argc, char **argv) {
  const char *tpl = NULL;
  int readonly = 0, direct = 0, opt;
  while ((opt = getopt(argc, argv, "t:rd")) != -1) {
    if (opt == 't') tpl = optarg;
    else if (opt == 'r') readonly = 1;
    else if (opt == 'd') direct = 1;
    else return 2;
  }
  if (argc - optind < 2 || (argc - optind) % 2 != 0) return 2;
  int tfd = -1;
  if (tpl && (tfd = open(tpl, O_RDONLY | O_CLOEXEC)) < 0) {
    perror("boxdisk: open the template");
    return 1;
  }
  int ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
  if (ctl < 0) {
    perror("boxdisk: open /dev/loop-control");
    return 1;
  }
  int rc = 0;
  for (int i = optind; i + 1 < argc; i += 2) {
    if (attach_one(ctl, tfd, argv[i], argv[i + 1], readonly, direct) != 0) {
      printf("error: %s\n", failure);
      rc = 1;
    }
    fflush(stdout);
  }
  return rc;
}

static int detach(const char *dir) {
  if (umount2(dir, UMOUNT_NOFOLLOW) == 0) return 0;
  if (errno == EINVAL || errno == ENOENT) return 0; /* not a mount point (any more) */
  if (errno == EBUSY && umount2(dir, MNT_DETACH | UMOUNT_NOFOLLOW) == 0) return 0;
  fprintf(stderr, "boxdisk: unmount %s: %s\n", dir, strerror(errno));
  return 1;
}

int main(int argc, char **argv) {
  if (argc >= 2 && strcmp(argv[1], "attach") == 0) {
    int rc = attach(argc - 1, argv + 1);
    if (rc == 2) fputs("usage: boxdisk attach [-t TEMPLATE] [-r] [-d] IMAGE DIR [IMAGE DIR]...\n", stderr);
    return rc;
  }
  if (argc >= 3 && strcmp(argv[1], "detach") == 0) {
    int rc = 0;
    for (int i = 2; i < argc; i++) rc |= detach(argv[i]);
    return rc;
  }
  fputs("usage: boxdisk attach [-t TEMPLATE] [-r] [-d] IMAGE DIR [IMAGE DIR]... | boxdisk detach DIR [DIR]...\n", stderr);
  return 2;
}
