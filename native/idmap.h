/* Idmapped layer directories (idmap.c). */
#ifndef DEVBOXD_IDMAP_H
#define DEVBOXD_IDMAP_H

/* A user namespace (fd) whose map shows canonical ids (BOX_ID_BASE..) as host ids base.. (and 0 as 0). */
int idmap_userns(long base);

/* Covers `dir`, in the caller's mount namespace, with an idmapped mount of itself. */
void idmap_dir(const char *dir, int userns_fd);

#endif
