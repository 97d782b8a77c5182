/*
 * cq.c — libinccl's completion queues that can be slept on (internal.h):
 * under TCG every VM of the lab shares the machine's cores, and a rank
 * spinning on ibv_poll_cq() would take them from the switches and the other
 * ranks. Used by comm.c (the switch queue pair) and ring.c (the ring's).
 */
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <poll.h>

#include "internal.h"

int inccl__cq_create(struct ibv_context *ctx, int depth, struct inccl_cq *q)
{
	*q = (struct inccl_cq){ 0 };
	if (!(q->ch = ibv_create_comp_channel(ctx)) || fcntl(q->ch->fd, F_SETFL, O_NONBLOCK) < 0 ||
	    !(q->cq = ibv_create_cq(ctx, depth, NULL, q->ch, 0))) {
		inccl__cq_destroy(q);
		return -1;
	}
	return 0;
}

void inccl__cq_destroy(struct inccl_cq *q)
{
	if (q->cq)
		ibv_destroy_cq(q->cq);
	if (q->ch)
		ibv_destroy_comp_channel(q->ch);
	*q = (struct inccl_cq){ 0 };
}

int inccl__cq_poll(struct inccl_cq *q, int n, struct ibv_wc *wc, int wait_ms)
{
	int got = ibv_poll_cq(q->cq, n, wc);

	if (got != 0)
		return got;
	if (!q->armed) {
		if (ibv_req_notify_cq(q->cq, 0))
			return -1;
		q->armed = 1;
		if ((got = ibv_poll_cq(q->cq, n, wc)) != 0) /* came before the notification was armed */
			return got;
	}
	struct pollfd p = { .fd = q->ch->fd, .events = POLLIN };
	if (poll(&p, 1, wait_ms) > 0) {
		struct ibv_cq *evcq;
		void *evctx;
		if (ibv_get_cq_event(q->ch, &evcq, &evctx) == 0) {
			ibv_ack_cq_events(evcq, 1);
			q->armed = 0;
		}
	}
	return ibv_poll_cq(q->cq, n, wc);
}
