/*
 * coll.c — AllGather, ReduceScatter and AllToAll (inccl.h), built from the
 * switches' primitives one block at a time, or handed to the ring baseline.
 *
 * Through the switches (comm.c's data path, one call per block, in the same
 * order on every rank so every rank's PSNs stay aligned):
 * - AllGather: block b is a Broadcast from rank b (rank b sends it, every
 *   other rank receives it into its block b);
 * - ReduceScatter: block b is a Reduce to rank b (every rank sends its block
 *   b, the switches aggregate, only rank b receives);
 * - AllToAll: the block from rank a to rank b is a Route (INC_ROUTE) to b,
 *   which only rank a carries data for; the pairs go (a→b, b→a) for a < b,
 *   so in place a receiver keeps its own block for the sender, which it is
 *   about to overwrite, in one block of scratch until it sends it back.
 * Each call waits for its block's results before the next: a block costs
 * one round trip through the tree on top of its bytes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../proto/inc_proto.h"
#include "inccl.h"
#include "internal.h"

/* overlap() - whether byte ranges [a, a + alen) and [b, b + blen) share a byte. */
static int overlap(const void *a, size_t alen, const void *b, size_t blen)
{
	uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;

	return x < y + blen && y < x + alen;
}

/*
 * check_blocks() - the checks every block collective shares: @c, @count,
 * @dtype, @op as every collective's, both buffers non-NULL and aligned to
 * an element, and
 * nranks * @count elements addressable (no size_t overflow). Sets *@blk to
 * a block's bytes. INCCL_OK or INCCL_EINVAL naming the argument.
 */
static int check_blocks(inccl_comm_t *c, const char *what, const void *send, const void *recv, size_t count,
			enum inccl_dtype dtype, enum inccl_op op, size_t *blk)
{
	int rc = inccl__check(c, what, count, dtype, op, 0);
	size_t esz, n;

	if (rc)
		return rc;
	if (!send)
		return inccl__fail(c, INCCL_EINVAL, "%s: the send buffer is NULL", what);
	if (!recv)
		return inccl__fail(c, INCCL_EINVAL, "%s: the receive buffer is NULL", what);
	esz = inccl__dtype_size(dtype);
	if ((uintptr_t)send % esz || (uintptr_t)recv % esz)
		return inccl__fail(c, INCCL_EINVAL, "%s: the %s buffer %p is not aligned to the %zu bytes of an element", what,
				   (uintptr_t)send % esz ? "send" : "receive", (uintptr_t)send % esz ? send : recv, esz);
	n = (size_t)inccl_comm_size(c);
	if (count > SIZE_MAX / esz / n)
		return inccl__fail(c, INCCL_EINVAL, "%s: count %zu elements of %zu bytes times %zu ranks overflows size_t",
				   what, count, esz, n);
	*blk = count * esz;
	return INCCL_OK;
}

int inccl_allgather(inccl_comm_t *c, const void *send, void *recv, size_t sendcount, enum inccl_dtype dtype)
{
	size_t blk;
	int rc = check_blocks(c, "inccl_allgather", send, recv, sendcount, dtype, INCCL_SUM, &blk);

	if (rc)
		return rc;
	int rank = inccl_comm_rank(c), n = inccl_comm_size(c);
	uint8_t *out = recv, *mine = out + (size_t)rank * blk;
	if ((const uint8_t *)send != mine && overlap(send, blk, recv, blk * (size_t)n))
		return inccl__fail(c, INCCL_EINVAL,
				   "inccl_allgather: the send buffer overlaps the receive buffer but is not this rank's "
				   "block of it (in place: send = recv + rank * sendcount)");
	if (inccl__comm_has_ring(c))
		return inccl__comm_ring_coll(c, INCCL__ALLGATHER, send, recv, sendcount, dtype, INCCL_SUM);
	if ((const uint8_t *)send != mine)
		memcpy(mine, send, blk);
	for (int b = 0; b < n && rc == INCCL_OK; b++)
		rc = inccl__comm_xfer(c, INC_BROADCAST, dtype, INCCL_SUM, b, rank == b, rank != b, out + (size_t)b * blk,
				      out + (size_t)b * blk, sendcount);
	return rc;
}

int inccl_reducescatter(inccl_comm_t *c, const void *send, void *recv, size_t recvcount, enum inccl_dtype dtype,
			enum inccl_op op)
{
	size_t blk;
	int rc = check_blocks(c, "inccl_reducescatter", send, recv, recvcount, dtype, op, &blk);

	if (rc)
		return rc;
	int rank = inccl_comm_rank(c), n = inccl_comm_size(c);
	const uint8_t *in = send;
	if ((const uint8_t *)recv != in + (size_t)rank * blk && overlap(send, blk * (size_t)n, recv, blk))
		return inccl__fail(c, INCCL_EINVAL,
				   "inccl_reducescatter: the receive buffer overlaps the send buffer but is not this "
				   "rank's block of it (in place: recv = send + rank * recvcount)");
	if (inccl__comm_has_ring(c))
		return inccl__comm_ring_coll(c, INCCL__REDUCESCATTER, send, recv, recvcount, dtype, op);
	/* in place, this rank's block is sent before its sum comes back: each result
	 * packet needs every rank's packet of it, this rank's copied out when posted */
	for (int b = 0; b < n && rc == INCCL_OK; b++)
		rc = inccl__comm_xfer(c, INC_REDUCE, dtype, op, b, 1, rank == b, in + (size_t)b * blk, recv, recvcount);
	return rc;
}

int inccl_alltoall(inccl_comm_t *c, const void *send, void *recv, size_t count, enum inccl_dtype dtype)
{
	size_t blk;
	int rc = check_blocks(c, "inccl_alltoall", send, recv, count, dtype, INCCL_SUM, &blk);

	if (rc)
		return rc;
	int rank = inccl_comm_rank(c), n = inccl_comm_size(c), inplace = send == recv;
	const uint8_t *in = send;
	uint8_t *out = recv, *keep = NULL;
	if (!inplace && overlap(send, blk * (size_t)n, recv, blk * (size_t)n))
		return inccl__fail(c, INCCL_EINVAL, "inccl_alltoall: the send and receive buffers overlap but are not the "
						    "same (in place: send = recv)");
	if (inccl__comm_has_ring(c))
		return inccl__comm_ring_coll(c, INCCL__ALLTOALL, send, recv, count, dtype, INCCL_SUM);
	if (inplace && n > 1 && !(keep = malloc(blk)))
		return inccl__fail(c, INCCL_ENOMEM, "inccl_alltoall: no memory for one block of %zu bytes", blk);
	if (!inplace)
		memcpy(out + (size_t)rank * blk, in + (size_t)rank * blk, blk);
	for (int a = 0; a < n && rc == INCCL_OK; a++)
		for (int b = a + 1; b < n && rc == INCCL_OK; b++) {
			/* a→b: in place, b's block for a is where a's block lands: keep it for b→a */
			if (inplace && rank == b)
				memcpy(keep, in + (size_t)a * blk, blk);
			rc = inccl__comm_xfer(c, INC_ROUTE, dtype, INCCL_SUM, b, rank == a, rank == b, in + (size_t)b * blk,
					      out + (size_t)a * blk, count);
			if (rc == INCCL_OK)
				rc = inccl__comm_xfer(c, INC_ROUTE, dtype, INCCL_SUM, a, rank == b, rank == a,
						      inplace && rank == b ? keep : in + (size_t)a * blk,
						      out + (size_t)b * blk, count);
		}
	free(keep);
	return rc;
}
