/*
 * fake_comm.c — see fake_comm.h.
 */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdlib.h>

#include "../../hostlib/inccl.h"
#include "../../hostlib/internal.h"
#include "fake_comm.h"

int fake_comm_algo;

int inccl_comm_create(const struct inccl_comm_opts *o, int rank, int nranks, inccl_comm_t **out, uint32_t *qpn)
{
	if (!(*out = calloc(1, sizeof(**out))))
		return INCCL_ENOMEM;
	(*out)->algo = fake_comm_algo;
	*qpn = 0x11 + (uint32_t)rank;
	return INCCL_OK;
}

int inccl__comm_local_ipv4(inccl_comm_t *c, uint32_t *ip_be)
{
	*ip_be = htonl(0x0a010115); /* 10.1.1.21 */
	return 0;
}

int inccl__comm_algorithm(const inccl_comm_t *c)
{
	return c->algo;
}

int inccl_comm_connect(inccl_comm_t *c, const char *switch_ip, uint32_t switch_qpn, uint32_t psn)
{
	struct in_addr ip;

	return inet_pton(AF_INET, switch_ip, &ip) != 1 || !switch_qpn ? INCCL_EINVAL : INCCL_OK;
}

int inccl__comm_ring_create(inccl_comm_t *c, uint32_t qpn[2])
{
	qpn[0] = 0x21, qpn[1] = 0x22;
	return INCCL_OK;
}

int inccl__comm_ring_connect(inccl_comm_t *c, uint32_t left_ip, uint32_t left_qpn, uint32_t right_ip, uint32_t right_qpn,
			     uint32_t psn)
{
	return INCCL_OK;
}

void inccl__comm_attach(inccl_comm_t *c, void (*release)(void *ctx, unsigned comm_id),
			int (*watch)(void *ctx, unsigned comm_id, char *why, size_t len), void *ctx, unsigned comm_id)
{
	c->release = release, c->watch = watch, c->ctx = ctx, c->comm_id = comm_id;
}

const char *inccl_errmsg(const inccl_comm_t *c)
{
	return "fake queue pair";
}

void inccl_comm_destroy(inccl_comm_t *c)
{
	if (c && c->release)
		c->release(c->ctx, c->comm_id);
	free(c);
}
