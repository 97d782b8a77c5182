/*
 * allreduce.c — the smallest complete libinccl program: join a group, make
 * a communicator, sum a vector over every rank, check the sum, clean up.
 *
 *   cc -o allreduce allreduce.c $(pkg-config --cflags --libs inccl)
 *   ./allreduce RANK NRANKS [COUNT]        (on every host of the lab, one rank each)
 *
 * Rank 0 is found through $INCCL_MASTER and the controller through
 * $INCCL_CONTROLLER (else /etc/inclab/node.conf on a lab node). Each rank r
 * contributes element i = r + i (small integers: the float sum is exact in
 * any order: each stays at most 2^24), so every rank knows the right result, sum over r of (r + i) =
 * n(n-1)/2 + n*i, without asking anyone.
 *
 * Exit status: 0 the sum was right, 1 a call failed (its reason on stderr:
 * e.g. no RDMA device "rxe0" on this machine) or the sum was wrong, 2 bad
 * arguments.
 */
#include <stdio.h>
#include <stdlib.h>

#include <inccl.h>

int main(int argc, char **argv)
{
	inccl_group_t *g = NULL;
	inccl_comm_t *c = NULL;
	char *end;
	long rank = argc > 2 ? strtol(argv[1], &end, 10) : -1, nranks = 0, count = 1024;
	int rc, wrong = 0;

	if (argc > 2 && !*end)
		nranks = strtol(argv[2], &end, 10);
	if (argc > 3 && !*end)
		count = strtol(argv[3], &end, 10);
	/* every sum at most 2^24, where float32 still holds each integer exactly */
	if (argc < 3 || argc > 4 || *end || rank < 0 || nranks < 1 || rank >= nranks || nranks > 1000 || count < 1 ||
	    count > (1 << 24) || nranks * (nranks - 1) / 2 + nranks * (count - 1) > (1 << 24)) {
		fprintf(stderr, "usage: allreduce RANK NRANKS [COUNT]   (0 <= RANK < NRANKS <= 1000, COUNT >= 1,\n"
				"       NRANKS * (NRANKS - 1) / 2 + NRANKS * (COUNT - 1) <= 2^24: sums exact in float32)\n");
		return 2;
	}
	float *v = malloc((size_t)count * sizeof(*v));
	if (!v) {
		fprintf(stderr, "allreduce: out of memory\n");
		return 1;
	}
	for (long i = 0; i < count; i++)
		v[i] = (float)(rank + i);

	/* NULL options: every default (inccl.h); inccl_last_error() says why a create/init call failed */
	if ((rc = inccl_group_create(NULL, (int)rank, (int)nranks, &g)) != INCCL_OK ||
	    (rc = inccl_comm_init(g, NULL, &c)) != INCCL_OK) {
		fprintf(stderr, "allreduce: %s (status %d)\n", inccl_last_error(), rc);
		inccl_group_destroy(g);
		free(v);
		return 1;
	}
	/* in place: send and receive buffer are the same */
	if ((rc = inccl_allreduce(c, v, v, (size_t)count, INCCL_FLOAT32, INCCL_SUM)) != INCCL_OK) {
		fprintf(stderr, "allreduce: rank %ld: %s (status %d)\n", rank, inccl_errmsg(c), rc);
		wrong = 1;
	}
	for (long i = 0; !wrong && i < count; i++)
		if (v[i] != (float)(nranks * (nranks - 1) / 2 + nranks * i)) {
			fprintf(stderr, "allreduce: rank %ld: element %ld is %g, want %ld\n", rank, i, v[i],
				nranks * (nranks - 1) / 2 + nranks * i);
			wrong = 1;
		}
	if (!wrong)
		printf("rank %ld: allreduce of %ld floats over %ld ranks: right\n", rank, count, nranks);
	inccl_comm_destroy(c); /* communicators before their group */
	inccl_group_destroy(g);
	free(v);
	return wrong;
}
