/* Idmapped layers: each box has host ids of its own (base..base+65535), while every layer on disk keeps
 * the canonical ids (BOX_ID_BASE + box id). The box's mount namespace sees each layer directory through
 * an idmapped mount that shows canonical ids as the box's own, and stores the box's writes canonically,
 * so one image and one snapshot layer serve every box and no id range is ever written to disk. */
#define _GNU_SOURCE
#include "idmap.h"
#include "common.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

int idmap_userns(long base) {
  int ready[2];
  if (pipe2(ready, O_CLOEXEC) != 0) die(1, "pipe");
  pid_t child = fork();
  if (child < 0) die(1, "fork");
  if (child == 0) {
    char c = unshare(CLONE_NEWUSER) == 0 ? 'u' : 'x';
    if (write(ready[1], &c, 1) != 1) _exit(1);
    for (;;) pause();
  }
  close(ready[1]);
  char c = 0, path[64], map[96];
  if (read(ready[0], &c, 1) != 1 || c != 'u') die(1, "user namespace for the idmap");
  close(ready[0]);
  /* Root stays root (overlay's own work files are written with the mounter's ids). */
  snprintf(map, sizeof map, "0 0 1\n%d %ld %d\n", BOX_ID_BASE, base, BOX_ID_COUNT);
  const char *files[] = {"uid_map", "gid_map"};
  for (int i = 0; i < 2; i++) {
    snprintf(path, sizeof path, "/proc/%d/%s", child, files[i]);
    if (write_file(path, map) != 0) die(1, "write %s", path);
  }
  snprintf(path, sizeof path, "/proc/%d/ns/user", child);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) die(1, "open %s", path);
  kill(child, SIGKILL);
  waitpid(child, NULL, 0);
  return fd;
}

void idmap_dir(const char *dir, int userns_fd) {
  int tree = (int)syscall(SYS_open_tree, AT_FDCWD, dir, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
  if (tree < 0) die(1, "open_tree %s", dir);
  struct mount_attr attr = {.attr_set = MOUNT_ATTR_IDMAP, .userns_fd = (unsigned long long)userns_fd};
  if (syscall(SYS_mount_setattr, tree, "", AT_EMPTY_PATH, &attr, sizeof attr) != 0) die(1, "idmap %s", dir);
  if (syscall(SYS_move_mount, tree, "", AT_FDCWD, dir, MOVE_MOUNT_F_EMPTY_PATH) != 0) die(1, "mount idmapped %s", dir);
  close(tree);
}
