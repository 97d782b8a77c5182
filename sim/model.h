/*
 * model.h — inclab's trees and collectives as an ns-3 simulation (incsim).
 *
 * What is modelled (README.md says why and what is not):
 *   - the tree: a node per switch and host, an ns-3 point-to-point link per
 *     tree edge (bandwidth, one-way latency, a drop-tail device queue);
 *   - an RC-like reliable transport per connection: PSNs, a window of frames
 *     in flight, an ACK per message (the AckReq of its last frame), a NAK once
 *     per gap and go-back-N from it, an RNR NAK and a wait when a switch's
 *     slot is busy, a retransmission timer;
 *   - a host's CPU: one server that takes o + n·G for each message it sends
 *     and for each it receives (LogGP, seeds/004, with analysis/loggp.h's
 *     terms: o_su plus an ACK's share per libinccl send, o_s per ring send,
 *     o_r per receive, o_c per completion asked, G per byte and the host's
 *     own loops), one after another;
 *   - a switch's CPU: one server that takes c_sw for every frame in and out;
 *   - the lab machine's cores: every node's CPU work shares p.cores cores
 *     (processor sharing: n nodes with work each run at min(1, cores / n));
 *   - in-network aggregation: a switch sums packet k of every child in slot
 *     k % slots, sends the sum up (or, at the root, the result down), frees
 *     the slot once every child and the parent acknowledged it;
 *   - Reduce and Broadcast in the network as the lab's switches do them:
 *     every rank sends every packet (a Broadcast's non-roots each empty and
 *     alone), a switch sends the result only to the children due it (a
 *     Reduce's towards the root, a Broadcast's to all but the root host);
 *   - AllGather, ReduceScatter and AllToAll in the network as libinccl does
 *     them (hostlib/coll.c): one Broadcast, Reduce or Route (a Broadcast's
 *     data delivered as a Reduce's) per block, in order on every rank, each
 *     rank starting a block once it is done with the one before; Barrier as
 *     an AllReduce of one empty packet per rank (hostlib/comm.c);
 *   - the host ring baseline: reduce-scatter then allgather, 2(p-1) steps of
 *     n/p bytes over end-to-end connections that the switches only forward;
 *     a step's send starts on the completion of the step before's receive
 *     (the receive-side completion of seeds/001); for Broadcast libinccl's
 *     pipelined chain along the ring, for Reduce its mirror; for AllGather,
 *     ReduceScatter, AllToAll and Barrier libinccl's ring plans
 *     (hostlib/ring.c: pieces of 16 KiB, a window of 64 messages).
 * Every packet carries a 32-bit stand-in of its elements; results are checked
 * against sums computed apart from the simulation (Result.wrong_pkts).
 */
#ifndef INCSIM_MODEL_H
#define INCSIM_MODEL_H

#include <cstdint>
#include <string>
#include <vector>

namespace incsim {

constexpr uint32_t kMtu = 1024;         /* payload bytes per frame: the lab's RoCE MTU, one switch slot */
constexpr uint32_t kFrameOverhead = 58; /* Ethernet 14 + IPv4 20 + UDP 8 + BTH 12 + ICRC 4 around a RoCE v2 payload */
constexpr uint32_t kAckBytes = 62;      /* an ACK or NAK: the same headers and an AETH of 4 */
constexpr uint32_t kPppBytes = 2;       /* ns-3's point-to-point device adds its 2-byte PPP header */
constexpr int kMaxHosts = 65536;        /* generated trees: a bound on what a run is asked to hold */
constexpr uint64_t kMaxBytes = 1ull << 31; /* 2 GiB per rank, as the lab's experiments */

struct TreeNode {
	std::string name;
	bool host = false;
	int rank = -1;              /* hosts: 0..nhosts-1 */
	int parent = -1;            /* -1: the root */
	std::vector<int> children;
	int tin = 0, tout = 0;      /* subtree interval (DFS order), for routing */
};

struct Tree {
	std::string name;           /* "1-2-4" */
	std::vector<TreeNode> nodes;
	int root = -1;
	int levels = 0;             /* switch levels (1-2-4: 2) */
	std::vector<int> host_of_rank;
};

/**
 * TreeFromShape() - the tree @shape names: node counts per level joined by
 * '-' ("1-32-1024"), the first 1 (the root switch), each a multiple of the one
 * before, hosts last, at least two levels and two hosts. Switch i of level l
 * is "s<l>-<i>", host r is "h<r>". Returns true, or false with the reason in @err.
 */
bool TreeFromShape(const std::string &shape, Tree *t, std::string *err);

/**
 * TreeFromTopology() - the tree of an inclab topology file (topology/topo.c
 * reads and validates it; the controller is not part of the tree). Returns
 * true, or false with the parser's messages or the reason in @err.
 */
bool TreeFromTopology(const char *path, Tree *t, std::string *err);

/** The model's parameters; every measured one has to be given (params.h). */
struct Params {
	double link_bw = 0;          /* bytes/s of every link */
	double link_lat = 0;         /* s, one way, every link */
	/* a host's CPU, as analysis/loggp.h measures it (seconds; per byte s/B): */
	double o_su = 0;             /* a libinccl send posted in a batch, without its ACK (o_su; o_sb when UC not measured) */
	double o_ack = 0;            /* one ACK to its sender, a = o_sb - o_su: a send of k packets pays a·min(k, 32)/32 */
	double o_e = -1;             /* an empty packet's send in a receiving host, without its ACK (o_e); < 0: o_su */
	double o_s = 0;              /* a ring send (a work request per post, an ACK each) */
	double o_r = 0;              /* a message received (its completion and repost) */
	double o_c = 0;              /* a completion asked beyond perftest's one in 100 sends (0: not measured) */
	double o_w = 0;              /* a ring message received by a host that waits for it, beyond o_r (0: not
	                              * measured): AllReduce, AllGather, ReduceScatter (analysis/loggp.c ring_waits()) */
	double G_s = 0, G_r = 0;     /* per byte sent, received */
	double G_swap = 0;           /* libinccl's byte-order swap of every byte it sends and receives (INC) */
	double G_copy = 0, G_sum = 0;/* the ring's copy into a message and out of it, its float32 sum on receive */
	double sw_frame = 0;         /* s of switch CPU per frame in or out (c_sw) */
	double call_inc = 0;         /* s a libinccl call (INC) takes beyond its path: every rank waits it before it
	                              * posts a call (the run's Barrier less half a ping-pong, params.h); 0: none */
	double call_ring = 0;        /* the same per step of the ring (its Barrier over its 2(P-1) steps), waited
	                              * once per step of the collective before the ring's first post */
	double cores = 0;            /* the machine's cores every node shares (processor sharing); 0: a core per node */
	double loss = 0;             /* probability that a link drops a frame */
	double rto = 0.050;          /* s: retransmission timeout (the switch daemon's min_rto of 50 ms) */
	double rnr = 0.001;          /* s: a sender's wait after an RNR NAK */
	uint32_t window_host = 512;  /* frames in flight to a host, and from one up to rxe's 129 (libinccl's WINDOW default) */
	uint32_t window_switch = 256;/* frames in flight on a switch's connection (SW_WINDOW) */
	uint32_t message = 16;       /* frames per message (libinccl's MESSAGE default) */
	uint32_t slots = 8192;       /* aggregation slots per switch (the controller's) */
	uint32_t queue = 1000;       /* frames a device queue holds (Linux's txqueuelen) */
	uint32_t seed = 1;           /* of the loss draws */
	uint32_t unit = 1;           /* packets per model frame (coarsening, README.md): 1 is the lab's frame */
	int64_t drop_psn = -1;       /* tests: the first copy of data frame PSN drop_psn on connection 0 is lost */
};

struct Result {
	double time_s = 0;           /* the last host's completion */
	uint64_t wrong_pkts = 0;     /* result model frames unlike the expected sums, every host */
	uint64_t wrong_elems = 0;    /* the elements of those (a Barrier: the ranks whose result was early or wrong) */
	uint64_t events = 0;         /* ns-3 events executed */
	uint64_t frames = 0;         /* frames put on links */
	uint64_t lost = 0;           /* frames dropped by a link's loss or a full queue */
	uint64_t retransmits = 0, naks = 0, rnr_naks = 0, timeouts = 0;
	std::vector<double> host_done; /* per rank, s */
	double cpu_host_max = 0;     /* s of CPU work: the busiest host's, */
	double cpu_hosts = 0;        /* every host's, */
	double cpu_switches = 0;     /* every switch's (to set against the lab's cpu.csv per call) */
};

enum class Algo { Inc, Ring };

/** The collectives simulated: who sends data and who takes results is the lab's (README.md). */
enum class Coll { AllReduce, Reduce, Broadcast, AllGather, ReduceScatter, AllToAll, Barrier };

constexpr uint32_t kRingPiece = 16; /* packets per message of libinccl's ring baseline (RING_PIECE, 16 KiB) */
constexpr uint32_t kRingWindow = 64; /* messages in flight to the right on libinccl's ring (RING_WINDOW) */
constexpr uint32_t kRingRecvs = 2 * kRingWindow; /* receives libinccl's ring keeps posted (RING_RECVS) */
constexpr uint32_t kElem = 4;       /* bytes per element: results.csv says float32 */

/** CollName() - "allreduce", "reduce", "broadcast", "allgather", "reducescatter", "alltoall" or "barrier", as results.csv names them. */
const char *CollName(Coll c);

/** CollBlocks() - whether @c moves one block per rank (AllGather, ReduceScatter, AllToAll): its size is the whole buffer. */
bool CollBlocks(Coll c);

/** CollHasRoot() - whether @c has a root rank (Reduce, Broadcast). */
bool CollHasRoot(Coll c);

/** CollParse() - the collective @name names (CollName()); false when none. */
bool CollParse(const std::string &name, Coll *c);

/**
 * RunCpuJobs() - the CPU scheduling of the model alone: node i of a tree of
 * @jobs.size() hosts queues the work items @jobs[i] (seconds, done in order)
 * at time 0, on p.cores shared cores (0: one each). Returns when each node
 * finished its last (s).
 */
std::vector<double> RunCpuJobs(const Params &p, const std::vector<std::vector<double>> &jobs);

/**
 * ValidateParams() - whether @p can be simulated (positive bandwidth, no
 * negative times, loss in [0, 1), windows, message and slots in range);
 * false with the reason in @err.
 */
bool ValidateParams(const Params &p, std::string *err);

/**
 * RunAllReduce() - one AllReduce of @bytes per rank over @t with @a, every
 * rank starting at time 0. Returns what happened (time, checks, counters).
 * @bytes: 1..kMaxBytes; @p valid (ValidateParams()).
 */
Result RunAllReduce(const Tree &t, const Params &p, uint64_t bytes, Algo a);

/**
 * RunCollective() - one collective @c of @bytes per rank over @t with @a,
 * rooted at rank @root (Reduce, Broadcast; 0..ranks-1), every rank starting
 * at time 0. INC as the lab's switches and libinccl do it; the host baseline
 * (Algo::Ring) is the ring AllReduce, a pipelined chain along the ring for
 * Broadcast (libinccl's) and Reduce (its mirror), libinccl's ring plans for
 * AllGather, ReduceScatter, AllToAll and Barrier. @bytes of AllGather,
 * ReduceScatter and AllToAll is the whole buffer (nccl-tests' size), a
 * multiple of ranks · kElem; of Barrier 0 (it moves no data). Returns what
 * happened. @p valid; with Algo::Ring and any collective but AllReduce,
 * p.unit divides kRingPiece.
 */
Result RunCollective(const Tree &t, const Params &p, uint64_t bytes, Coll c, Algo a, int root);

/**
 * RunTransfer() - one message stream of @bytes from rank @src to rank @dst
 * (messages of p.message frames), the switches only forwarding; done when
 * @dst has received and processed the last message and @src has its ACK.
 */
Result RunTransfer(const Tree &t, const Params &p, int src, int dst, uint64_t bytes);

} // namespace incsim

#endif
