/*
 * boxdisk: the disk of a box is an ext4 filesystem in a sparse image file, loop-mounted. Its size and inode
 * count are the box's quota: the kernel refuses a write past them (ENOSPC) at the moment it is made, files
 * deleted but held open included, and statfs (`df`) inside the box reports them.
 *
 * usage: boxdisk attach [-t TEMPLATE] [-r] [-d] IMAGE DIR
 *          with -t, IMAGE is created (never overwritten) as a copy of the formatted TEMPLATE: only its
 *          allocated extents are copied (a few hundred KiB), holes stay holes. The image is bound to a free
 *          loop device that goes away with the last unmount (autoclear) and mounted on DIR, read-only with
 *          -r, with direct I/O to the image with -d (no second copy in the host's page cache).
 *          Prints the loop device's MAJOR:MINOR.
 *        boxdisk detach DIR
 *          unmounts DIR (lazily when busy); nothing mounted there is not an error.
 *
 * One process instead of mkfs + losetup + mount keeps the create path at about a millisecond.
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

static void die(const char *fmt, ...) {
  va_list ap;
  int e = errno;
  fputs("boxdisk: ", stderr);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  if (e) fprintf(stderr, ": %s", strerror(e));
  fputc('\n', stderr);
  exit(1);
}

/* Copies the data extents of `src` into the new file `dst` and gives it the same size. */
static void copy_sparse(const char *src, const char *dst) {
  int in = open(src, O_RDONLY | O_CLOEXEC);
  if (in < 0) die("open %s", src);
  struct stat st;
  if (fstat(in, &st) != 0) die("stat %s", src);
  int out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (out < 0) die("create %s", dst);
  off_t pos = 0;
  while (pos < st.st_size) {
    off_t data = lseek(in, pos, SEEK_DATA);
    if (data < 0) {
      if (errno == ENXIO) break; /* only a hole is left */
      die("seek %s", src);
    }
    off_t hole = lseek(in, data, SEEK_HOLE);
    if (hole < 0) die("seek %s", src);
    loff_t from = data, to = data;
    while (from < hole) {
      ssize_t n = copy_file_range(in, &from, out, &to, (size_t)(hole - from), 0);
      if (n <= 0) die("copy %s", src);
    }
    pos = hole;
  }
  if (ftruncate(out, st.st_size) != 0) die("size %s", dst);
  close(in);
  if (close(out) != 0) die("close %s", dst);
}

/* Binds `image` to a free loop device; returns its open fd and fills `dev`. */
static int attach_loop(const char *image, int readonly, int direct, char *dev, size_t devlen) {
  int img = open(image, (readonly ? O_RDONLY : O_RDWR) | O_CLOEXEC);
  if (img < 0) die("open %s", image);
  int ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
  if (ctl < 0) die("open /dev/loop-control");
  for (int attempt = 0; attempt < 64; attempt++) {
    int n = ioctl(ctl, LOOP_CTL_GET_FREE);
    if (n < 0) die("find a free loop device");
    snprintf(dev, devlen, "/dev/loop%d", n);
    int fd = open(dev, (readonly ? O_RDONLY : O_RDWR) | O_CLOEXEC);
    if (fd < 0) die("open %s", dev);
    struct loop_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.fd = (unsigned)img;
    cfg.block_size = 4096;
    cfg.info.lo_flags = LO_FLAGS_AUTOCLEAR | (readonly ? LO_FLAGS_READ_ONLY : 0) | (direct ? LO_FLAGS_DIRECT_IO : 0);
    snprintf((char *)cfg.info.lo_file_name, LO_NAME_SIZE, "%s", image);
    if (ioctl(fd, LOOP_CONFIGURE, &cfg) == 0) {
      close(ctl);
      close(img);
      return fd;
    }
    int e = errno;
    close(fd);
    /* Another process took this device between GET_FREE and CONFIGURE: ask again. */
    if (e != EBUSY) {
      errno = e;
      die("configure %s", dev);
    }
  }
  errno = EBUSY;
  die("no free loop device");
  return -1;
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
  if (argc - optind != 2) return 2;
  const char *image = argv[optind], *dir = argv[optind + 1];
  if (tpl) copy_sparse(tpl, image);
  char dev[64];
  int fd = attach_loop(image, readonly, direct, dev, sizeof dev);
  /* noinit_itable: the inode tables of a fresh image stay holes instead of being zeroed in the background;
   * discard: blocks the box frees are punched out of the image, so the host gets them back. */
  unsigned long flags = MS_NOSUID | MS_NODEV | (readonly ? MS_RDONLY : 0);
  const char *opts = readonly ? "noload" : "noinit_itable,discard";
  if (mount(dev, dir, "ext4", flags, opts) != 0) {
    int e = errno;
    if (tpl) unlink(image);
    errno = e;
    die("mount %s on %s", dev, dir);
  }
  struct stat st;
  if (fstat(fd, &st) != 0) die("stat %s", dev);
  /* The mount holds the device now; closing our fd lets autoclear free it at the last unmount. */
  close(fd);
  printf("%u:%u\n", major(st.st_rdev), minor(st.st_rdev));
  return 0;
}

static int detach(const char *dir) {
  if (umount2(dir, UMOUNT_NOFOLLOW) == 0) return 0;
  if (errno == EINVAL || errno == ENOENT) return 0; /* not a mount point (any more) */
  if (errno == EBUSY && umount2(dir, MNT_DETACH | UMOUNT_NOFOLLOW) == 0) return 0;
  die("unmount %s", dir);
  return 1;
}

int main(int argc, char **argv) {
  if (argc >= 2 && strcmp(argv[1], "attach") == 0) {
    int rc = attach(argc - 1, argv + 1);
    if (rc == 2) fputs("usage: boxdisk attach [-t TEMPLATE] [-r] [-d] IMAGE DIR\n", stderr);
    return rc;
  }
  if (argc == 3 && strcmp(argv[1], "detach") == 0) return detach(argv[2]);
  fputs("usage: boxdisk attach [-t TEMPLATE] [-r] [-d] IMAGE DIR | boxdisk detach DIR\n", stderr);
  return 2;
}
