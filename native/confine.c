/* GNU tar, confined. The archive it reads or the tree it walks is a tenant's. tar runs as root of a fresh user
 * namespace that maps ids 0..65535 to the canonical box range (BOX_ID_BASE..), so it holds no privilege over
 * anything of the host, in a mount namespace whose root is a read-only tmpfs holding a read-only /usr (tar,
 * zstd and their libraries) and DIR at /x, the only writable place (none with `readonly`). Whatever an archive
 * holds (absolute names, `..`, a symlink then a file through it, hard links to elsewhere), tar writes nowhere
 * but DIR: a path that leaves /x lands on a read-only mount, a hard link across mounts is EXDEV, and a device
 * node needs a capability of the host's namespace (mknod fails; the kernel lets anyone make a 0/0 character
 * device, overlayfs's whiteout). tar's own checks (it strips leading `/` and `..`, and defers symlinks) come on
 * top. Owners come out canonical (box id + BOX_ID_BASE), and a tree read this way shows them as box ids. */
#define _GNU_SOURCE
#include "confine.h"
#include "common.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static void must_mount(const char *src, const char *dst, const char *type, unsigned long flags, const char *data) {
  if (mount(src, dst, type, flags, data) != 0) die(1, "mount %s on %s", src ? src : "(remount)", dst);
}

/* The flags a read-only remount of a bind of `path` must keep (a user namespace may not clear them). */
static unsigned long kept_flags(const char *path) {
  struct statvfs sv;
  unsigned long f = 0;
  if (statvfs(path, &sv) != 0) die(1, "statvfs %s", path);
  if (sv.f_flag & ST_NOSUID) f |= MS_NOSUID;
  if (sv.f_flag & ST_NODEV) f |= MS_NODEV;
  if (sv.f_flag & ST_NOEXEC) f |= MS_NOEXEC;
  if (sv.f_flag & ST_NOATIME) f |= MS_NOATIME;
  if (sv.f_flag & ST_NODIRATIME) f |= MS_NODIRATIME;
  if (sv.f_flag & ST_RELATIME) f |= MS_RELATIME;
  return f;
}

/* /bin, /lib... of the host in the stage: the same symlink into usr (merged /usr), or a read-only bind. */
static void stage_top(const char *name) {
  char host[64], target[PATH_MAX];
  snprintf(host, sizeof host, "/%s", name);
  ssize_t n = readlink(host, target, sizeof target - 1);
  if (n > 0) {
    target[n] = '\0';
    if (symlink(target, name) != 0) die(1, "symlink %s", name);
    return;
  }
  struct stat st;
  if (stat(host, &st) != 0 || !S_ISDIR(st.st_mode)) return;
  if (mkdir(name, 0755) != 0) die(1, "mkdir %s", name);
  must_mount(host, name, NULL, MS_BIND | MS_REC, NULL);
  must_mount(NULL, name, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | kept_flags(host), NULL);
}

/* The tar process: confined as the header says, then exec'd with the caller's stdin and stdout. */
static void __attribute__((noreturn))
run_tar(const char *dir, int readonly, const char *stage, char *const argv[], int ready_fd, int go_fd, pid_t parent) {
  progname = "confined tar";
  /* Killed with its parent (whose caller kills it to give up), also when that happened before this line. */
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) die(1, "pdeathsig");
  if (getppid() != parent) die(1, "the parent is gone");
  /* The mount namespace is made and assembled as host root (the data dir is searchable by it alone) and
   * stays owned by the host's user namespace: tar, in a user namespace of its own, can change no mount. */
  if (unshare(CLONE_NEWNS) != 0) die(1, "unshare mount namespace");
  must_mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL);
  must_mount("tmpfs", stage, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=64k");
  if (chdir(stage) != 0) die(1, "chdir stage");
  stage_top("usr");
  static const char *tops[] = {"bin", "sbin", "lib", "lib64", "lib32", "libx32"};
  for (size_t i = 0; i < sizeof tops / sizeof tops[0]; i++) stage_top(tops[i]);
  if (mkdir("x", 0755) != 0) die(1, "mkdir x");
  must_mount(dir, "x", NULL, MS_BIND, NULL);
  if (readonly) must_mount(NULL, "x", NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | kept_flags(dir), NULL);
  if (syscall(SYS_pivot_root, ".", ".") != 0) die(1, "pivot_root");
  if (umount2(".", MNT_DETACH) != 0) die(1, "detach the host root");
  if (chdir("/") != 0) die(1, "chdir /");
  must_mount(NULL, "/", NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL);
  /* Pivoted, not chrooted: a process whose root is its namespace's root may make a user namespace. */
  if (unshare(CLONE_NEWUSER) != 0) die(1, "unshare user namespace");
  char c = 'u';
  if (write(ready_fd, &c, 1) != 1 || read(go_fd, &c, 1) != 1) die(1, "sync with the parent");
  if (setresgid(0, 0, 0) != 0 || setgroups(0, NULL) != 0 || setresuid(0, 0, 0) != 0) die(1, "become the namespace's root");
  /* Again: a change of uid clears the parent-death signal. A killed parent takes tar with it. */
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) die(1, "pdeathsig");
  if (getppid() != parent) die(1, "the parent is gone");
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) die(1, "no_new_privs");
  umask(0);
  char *envp[] = {"PATH=/usr/bin:/bin", "LC_ALL=C", NULL};
  execve("/usr/bin/tar", argv, envp);
  die(1, "exec tar");
}

pid_t confined_tar_start(const char *dir, const char *stage, int readonly, char *const argv[]) {
  if (mkdir(stage, 0700) != 0) die(1, "mkdir %s", stage);
  int ready[2], go[2];
  if (pipe2(ready, O_CLOEXEC) != 0 || pipe2(go, O_CLOEXEC) != 0) die(1, "pipe");
  pid_t self = getpid();
  pid_t pid = fork();
  if (pid < 0) die(1, "fork");
  if (pid == 0) run_tar(dir, readonly, stage, argv, ready[1], go[0], self);
  /* Only the tar process holds these ends: its early death reads as end of file here, never a hang. */
  close(ready[1]);
  close(go[0]);
  close(STDIN_FILENO);
  close(STDOUT_FILENO);
  char c;
  if (read(ready[0], &c, 1) != 1) die(1, "the tar process died early");
  char path[64], map[64];
  snprintf(map, sizeof map, "0 %d %d\n", BOX_ID_BASE, BOX_ID_COUNT);
  snprintf(path, sizeof path, "/proc/%d/uid_map", (int)pid);
  if (write_file(path, map) != 0) die(1, "uid_map");
  snprintf(path, sizeof path, "/proc/%d/gid_map", (int)pid);
  if (write_file(path, map) != 0) die(1, "gid_map");
  if (write(go[1], "g", 1) != 1) die(1, "start tar");
  close(ready[0]);
  close(go[1]);
  return pid;
}

int confined_tar_wait(pid_t pid, const char *stage) {
  int status;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) die(1, "wait");
  rmdir(stage);
  return status;
}

int confined_tar(const char *dir, const char *stage, int readonly, char *const argv[]) {
  return confined_tar_wait(confined_tar_start(dir, stage, readonly, argv), stage);
}
