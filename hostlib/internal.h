/*
 * internal.h — what comm.c and group.c of libinccl share; not installed.
 */
#ifndef INCCL_INTERNAL_H
#define INCCL_INTERNAL_H

#include <stdint.h>

#include "inccl.h"

/** inccl__set_last_error() - record why a create/init call fails (inccl_last_error()). */
void inccl__set_last_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/** inccl__comm_local_ipv4() - the IPv4 address of the communicator's RDMA port (its GID). */
int inccl__comm_local_ipv4(inccl_comm_t *c, uint32_t *ip_be);

/** inccl__comm_attach() - remember the group and controller id of a communicator. */
void inccl__comm_attach(inccl_comm_t *c, inccl_group_t *g, unsigned comm_id);

/** inccl__group_release() - rank 0: tell the controller communicator @comm_id is gone. */
void inccl__group_release(inccl_group_t *g, unsigned comm_id);

#endif
