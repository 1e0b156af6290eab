/* The box's veth link (boxnet.c), made by boxinit's launcher. */
#ifndef DEVBOXD_BOXNET_H
#define DEVBOXD_BOXNET_H

#include <sys/types.h>

/* spec "HOSTIF,HOST_ADDR,BOX_ADDR": a veth pair, HOSTIF with HOST_ADDR/31 on the host, eth0 with BOX_ADDR/31
 * and a default route in the network namespace of `init`. Dies on failure. */
void boxnet_setup(pid_t init, const char *spec);

#endif
