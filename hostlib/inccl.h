/*
 * inccl.h — libinccl: collectives aggregated inside the network.
 *
 * A communicator is one RC queue pair from this rank to its leaf switch. The
 * switches aggregate what every rank sends and return the result, so a rank
 * sends and receives each byte once whatever the number of ranks.
 *
 * Bootstrap (the usual way): every rank calls inccl_group_create() with the
 * same nranks; the ranks meet at rank 0 (TCP 52223), which registers the
 * group with the controller (TCP 52200). inccl_comm_init() then makes each
 * rank's queue pair; rank 0 gathers the queue pair numbers and addresses,
 * asks the controller for the communicator (the controller computes the
 * aggregation tree and pushes the rules to the switches), hands every rank
 * its switch's address, queue pair number and PSN, and releases all ranks
 * together once every queue pair is connected.
 *
 *   inccl_group_t *g;  inccl_comm_t *c;
 *   if (inccl_group_create(NULL, rank, nranks, &g) ||
 *       inccl_comm_init(g, NULL, &c))
 *           fprintf(stderr, "%s\n", inccl_last_error());
 *   inccl_allreduce(c, in, out, n, INCCL_FLOAT32, INCCL_SUM);
 *   inccl_comm_destroy(c);  inccl_group_destroy(g);
 *
 * The low-level pair inccl_comm_create() / inccl_comm_connect() builds a
 * communicator by hand when something else configures the switches.
 *
 * Every call returns INCCL_OK or a negative inccl_status; inccl_errmsg()
 * says what went wrong. A bad argument is INCCL_EINVAL with a message that
 * names it (a NULL communicator's in inccl_last_error(): there is no
 * communicator to hold it). Nothing calls exit() or hangs. A communicator made
 * with inccl_comm_init() fails its collective with INCCL_ECONN within
 * seconds when one of its switches, rank 0 or another rank goes away (the
 * controller tells rank 0, rank 0 tells every rank; a process that dies
 * closes its connections at once, a machine that vanishes is noticed by TCP
 * keepalive within about 20 s, CTL_DEAD_MS), naming what went away. Anything else that
 * stops progress gives INCCL_ETIMEDOUT after the communicator's timeout.
 * After INCCL_ECONN, INCCL_ETIMEDOUT or INCCL_EIO the communicator is broken
 * (packets of the failed call may still arrive): every later collective
 * returns INCCL_EIO at once with the original reason; destroy it and create
 * a new one. The ring baseline (INCCL_ALGO_RING) has only the timeout.
 *
 * Threads. libinccl starts no thread and takes no lock; what it shares is
 * named here (the man pages say the same):
 * - Groups are independent of each other, and so are communicators of
 *   different groups and those made by inccl_comm_create(): calls on them
 *   may run at the same time in different threads.
 * - A group and every communicator made from it are one unit: their calls
 *   (inccl_comm_init(), the collectives, inccl_comm_destroy(),
 *   inccl_group_destroy()) use the group's connections and fault state, so
 *   at most one thread at a time may be inside a call on any of them.
 * - A communicator is used by one thread at a time; collectives on it must
 *   be called in the same order on every rank (they are collective).
 * - inccl_comm_rank(), inccl_comm_size(), inccl_group_id() and
 *   inccl_version() only read what does not change after creation;
 *   inccl_last_error() is per thread. inccl_errmsg()'s text belongs to the
 *   communicator: it may change at the communicator's next call.
 * - inccl_group_create() reads the environment (getenv()): no other thread
 *   may change it (setenv(), putenv()) meanwhile. The library never touches
 *   signal dispositions (its socket writes use MSG_NOSIGNAL).
 */
#ifndef INCCL_H
#define INCCL_H

#include <stddef.h>
#include <stdint.h>

/*
 * The version of this header; inccl_version() returns the library's.
 * The Makefile reads these three lines: the only place the number is kept.
 * MAJOR changes when a program built against an older header may no longer
 * work (the shared library's SONAME is libinccl.so.MAJOR), MINOR when calls
 * are added, PATCH for fixes. Each is 0..99.
 */
#define INCCL_VERSION_MAJOR 1
#define INCCL_VERSION_MINOR 1
#define INCCL_VERSION_PATCH 0
/** INCCL_VERSION_CODE() - one number of a version, comparable with < and >. */
#define INCCL_VERSION_CODE(major, minor, patch) ((major) * 10000 + (minor) * 100 + (patch))
#define INCCL_VERSION INCCL_VERSION_CODE(INCCL_VERSION_MAJOR, INCCL_VERSION_MINOR, INCCL_VERSION_PATCH)

#ifdef __cplusplus
extern "C" {
#endif

/* The shared library exports these calls only. */
#if defined(INCCL_BUILD) && defined(__GNUC__)
#define INCCL_API __attribute__((visibility("default")))
#else
#define INCCL_API
#endif

typedef struct inccl_comm inccl_comm_t;

/*
 * Element types (1.1 added all but the first two). Integer SUM wraps modulo
 * 2^width (two's complement); MAX/MIN compare signed for INT*, unsigned for
 * UINT*. FLOAT16 (IEEE binary16) and BFLOAT16 (top 16 bits of a binary32)
 * SUM: each combine adds in float32 and rounds back to the type, to
 * nearest-even; FLOAT32/FLOAT64 add natively. Float MAX/MIN: a NaN loses to
 * a number, -0 < +0. Buffers must be aligned to the element's size.
 */
enum inccl_dtype {
	INCCL_INT32 = 0,
	INCCL_FLOAT32 = 1,
	INCCL_UINT32 = 2,
	INCCL_INT64 = 3,
	INCCL_UINT64 = 4,
	INCCL_FLOAT16 = 5,
	INCCL_BFLOAT16 = 6,
	INCCL_FLOAT64 = 7,
};
enum inccl_op { INCCL_SUM = 1, INCCL_MAX = 2, INCCL_MIN = 3 };

enum inccl_status {
	INCCL_OK = 0,
	INCCL_EINVAL = -1,    /* bad argument (count 0, root out of range, ...) */
	INCCL_ENODEV = -2,    /* no such RDMA device or GID */
	INCCL_ENOMEM = -3,    /* allocation or memory registration failed */
	INCCL_EIO = -4,       /* a work completion failed: the connection is broken */
	INCCL_ETIMEDOUT = -5, /* no progress within the communicator's timeout */
	INCCL_ECONN = -6,     /* a peer rank, rank 0 or the controller cannot be reached or went away */
	INCCL_EREFUSED = -7,  /* the controller or rank 0 refused the request (the message says why) */
	INCCL_EBUSY = -8,     /* no room now: a switch of the tree serves as many communicators, or holds as
	                       * many aggregation slots, as it can (the message says which); the running
	                       * communicators are untouched: retry when one ends, or use a ring */
};

typedef struct inccl_group inccl_group_t;

/** Options of inccl_group_create(); zero fields take the defaults shown. */
struct inccl_group_opts {
	const char *master;     /* rank 0 as "host[:port]", port 52223 by default; default:
				 * $INCCL_MASTER, else MASTER= in /etc/inclab/node.conf */
	const char *controller; /* used by rank 0: "host[:port]", port 52200 by default;
				 * default: $INCCL_CONTROLLER, else CONTROLLER= in node.conf */
	int timeout_ms;         /* every rank must join (and each bootstrap step finish)
				 * within this, default 120000 */
};

/**
 * inccl_group_create() - join the group of @nranks ranks as rank @rank.
 * Rank 0 listens on the master port until every rank has joined, then
 * registers the group with the controller; the others connect to rank 0
 * (retrying until the timeout). Every rank must pass the same @nranks.
 * Keys (proto/ctlauth.h): with a job key ($INCCL_JOB_KEY, 64 hex digits, or
 * the 0600 file $INCCL_JOB_KEY_FILE) on every rank, rank 0 takes only ranks
 * that prove they hold it, and every message between ranks is sealed. Rank
 * 0 proves to the controller which lab node it runs on with that node's key
 * ($INCCL_NODE_KEY, a key file, else /etc/inclab/node.key when it exists;
 * the node's name: $INCCL_NODE, else NODE= in node.conf).
 * Return: INCCL_OK and *@out, or an error (*@out NULL; inccl_last_error()
 * says why: rank 0 unreachable, a duplicate rank, the controller down, a
 * refused key (INCCL_EREFUSED), ...).
 */
INCCL_API int inccl_group_create(const struct inccl_group_opts *opts, int rank, int nranks, inccl_group_t **out);

/** inccl_group_id() - the id the controller gave the group. */
INCCL_API int inccl_group_id(const inccl_group_t *g);

/** inccl_group_destroy() - leave the group; the controller forgets it. NULL is allowed. */
INCCL_API void inccl_group_destroy(inccl_group_t *g);

/**
 * inccl_version() - the version of the library that runs, as INCCL_VERSION
 * (INCCL_VERSION_CODE(major, minor, patch)): a program compares it with the
 * INCCL_VERSION of the header it was built with. Never fails.
 */
INCCL_API int inccl_version(void);

/** inccl_last_error() - why the calling thread's last failed create/init call failed. */
INCCL_API const char *inccl_last_error(void);

/** Options of inccl_comm_create(); zero fields take the defaults shown. */
struct inccl_comm_opts {
	const char *device;   /* RDMA device, default "rxe0" */
	int gid_index;        /* -1 (default): the IPv4-mapped GID of the port */
	int window;           /* packets (1 KiB each) in flight, default 512 */
	int timeout_ms;       /* give up after this long without progress, default 60000:
			       * a collective waits for the slowest rank */
	int algorithm;        /* enum inccl_algo, default INCCL_ALGO_INC (inccl_comm_init() only) */
	int message;          /* packets per RDMA message (1..64; at most the window), default 16: one
			       * work request, completion and receive per message, not per packet */
};

/**
 * enum inccl_algo - how a communicator made by inccl_comm_init() computes.
 * @INCCL_ALGO_INC: the switches aggregate (the point of this library).
 * @INCCL_ALGO_RING: the baseline without in-network aggregation: a pipelined
 *	ring of RC queue pairs between the hosts (reduce-scatter + all-gather
 *	for AllReduce, a chain from the root for Broadcast, its halves for
 *	AllGather and ReduceScatter, AllToAll forwarded along the ring); the
 *	switches only route, the controller is not asked. Reduce returns
 *	INCCL_EINVAL.
 */
enum inccl_algo { INCCL_ALGO_INC = 0, INCCL_ALGO_RING = 1 };

/**
 * inccl_comm_init() - create a communicator over every rank of group @g
 * (collective: every rank calls it). Each rank's queue pair is connected to
 * its leaf switch as the controller decided; all ranks return together.
 * Return: INCCL_OK and *@out, or an error on every rank (*@out NULL;
 * inccl_last_error() says why, e.g. "controller: switch sw2 is not
 * registered"). Destroy the communicators before their group.
 */
INCCL_API int inccl_comm_init(inccl_group_t *g, const struct inccl_comm_opts *opts, inccl_comm_t **out);

/** inccl_comm_rank(), inccl_comm_size() - this rank, and the number of ranks. */
INCCL_API int inccl_comm_rank(const inccl_comm_t *comm);
INCCL_API int inccl_comm_size(const inccl_comm_t *comm);

/**
 * inccl_comm_create() - open the device, register the window, create the
 * queue pair of rank @rank of @nranks, and post the receives.
 * @qpn: the queue pair number the switch must be told.
 * Return: INCCL_OK and *@out, or an error (then *@out is NULL).
 */
INCCL_API int inccl_comm_create(const struct inccl_comm_opts *opts, int rank, int nranks, inccl_comm_t **out,
		      uint32_t *qpn);

/**
 * inccl_comm_connect() - connect to the leaf switch at @switch_ip (dotted
 * quad) whose end of this connection is queue pair @switch_qpn. Both
 * directions start at PSN @psn, the same on every rank of the communicator.
 */
INCCL_API int inccl_comm_connect(inccl_comm_t *comm, const char *switch_ip, uint32_t switch_qpn, uint32_t psn);

/** inccl_allreduce() - @recv = op over all ranks of @send (@count elements). @send may equal @recv;
 * a NULL buffer is INCCL_EINVAL (as are a zero count, a count whose bytes overflow size_t, an unknown
 * dtype or operator, a buffer not aligned to the dtype's size), before anything is sent. */
INCCL_API int inccl_allreduce(inccl_comm_t *comm, const void *send, void *recv, size_t count, enum inccl_dtype dtype,
		    enum inccl_op op);

/** inccl_reduce() - like allreduce, but only rank @root receives; @recv is unused elsewhere (may be NULL there). */
INCCL_API int inccl_reduce(inccl_comm_t *comm, const void *send, void *recv, size_t count, enum inccl_dtype dtype,
		 enum inccl_op op, int root);

/** inccl_broadcast() - every rank's @buf becomes rank @root's @buf (NULL: INCCL_EINVAL). */
INCCL_API int inccl_broadcast(inccl_comm_t *comm, void *buf, size_t count, enum inccl_dtype dtype, int root);

/*
 * The collectives that move blocks, with nccl's argument convention (counts
 * are elements per block; the buffers of different ranks' blocks are laid
 * end to end in rank order). Each refuses bad arguments with INCCL_EINVAL
 * before anything is sent: a NULL communicator or buffer, one not aligned
 * to an element, a zero count, one whose bytes times the number of ranks
 * overflow size_t, an unknown dtype or operator, and buffers that overlap
 * other than in the in-place way shown.
 * Every rank must pass the same count, dtype (and op).
 *
 * Through the switches (INCCL_ALGO_INC) each is a sequence of the switches'
 * primitives, one per block (hostlib/coll.c): AllGather a Broadcast of each
 * rank's block (a host sends its N/n bytes and receives the other N - N/n),
 * ReduceScatter a Reduce of each block to its owner (the switches aggregate;
 * a host sends N and receives only its N/n), AllToAll a Route of each block
 * to its destination (INC_ROUTE: every host sends every pair's packets,
 * empty when not its own, n(n-1) blocks' frames where a pairwise exchange
 * sends n-1). On the ring baseline: the ring's all-gather and reduce-scatter
 * halves, and AllToAll forwarded hop by hop along the ring.
 */

/**
 * inccl_allgather() - @recv (nranks * @sendcount elements) = every rank's
 * @send (@sendcount elements) in rank order. In place: @send ==
 * @recv + rank * @sendcount elements (this rank's block of @recv).
 */
INCCL_API int inccl_allgather(inccl_comm_t *comm, const void *send, void *recv, size_t sendcount,
			      enum inccl_dtype dtype);

/**
 * inccl_reducescatter() - @recv (@recvcount elements) = block `rank` of op
 * over every rank's @send (nranks * @recvcount elements). In place: @recv ==
 * @send + rank * @recvcount elements.
 */
INCCL_API int inccl_reducescatter(inccl_comm_t *comm, const void *send, void *recv, size_t recvcount,
				  enum inccl_dtype dtype, enum inccl_op op);

/**
 * inccl_alltoall() - block j of @recv = block `rank` of rank j's @send; both
 * hold nranks blocks of @count elements. In place: @send == @recv.
 */
INCCL_API int inccl_alltoall(inccl_comm_t *comm, const void *send, void *recv, size_t count, enum inccl_dtype dtype);

/** inccl_barrier() - return once every rank has entered the barrier. */
INCCL_API int inccl_barrier(inccl_comm_t *comm);

/** inccl_errmsg() - what the last failing call on @comm said ("" if none). */
INCCL_API const char *inccl_errmsg(const inccl_comm_t *comm);

/** inccl_comm_destroy() - release everything; NULL is allowed. Collective for an
 * in-network communicator: a rank tells rank 0 it is done with it, and rank 0
 * waits until every rank did (or went away, or the group's timeout passed)
 * before the controller removes the switches' rules, so no rank can lose a
 * result still on its way to it. */
INCCL_API void inccl_comm_destroy(inccl_comm_t *comm);

#ifdef __cplusplus
}
#endif
#endif
