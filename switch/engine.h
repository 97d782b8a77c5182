/*
 * engine.h — the INC switch's packet engine for one communicator: no I/O.
 *
 * Frames go in through sw_engine_rx(); every frame the switch sends goes out
 * through the caller's tx callback, tagged with the port it leaves on. The
 * daemon wires this to libpcap; tests wire it to simulated hosts, which makes
 * the whole switch logic runnable offline and deterministic.
 *
 * Protocol (switch/README.md): a collective's first packet is a
 * SEND_ONLY_WITH_IMM of at most one MTU whose immediate says primitive,
 * operator, dtype and destination rank; the rest are SEND_ONLY_WITH_IMMs or
 * messages (SEND_FIRST, SEND_MIDDLE*, SEND_LAST_WITH_IMM) whose FIRST and
 * MIDDLE packets belong to the connection's last immediate. Packet k of a
 * communicator has the same PSN on every child connection of one kind: hosts
 * start at one first PSN (rq_psn), switch links at another. Counted in child
 * 0's PSNs (each child's PSN - its rq_psn + child 0's), packet k lands in slot
 * (psn % nslots), whatever mix of hosts and switches the children are; its
 * results go out with its opcode. Ranks that contribute
 * no data (Broadcast non-roots, Barrier) send zero-length SEND_ONLY_WITH_IMMs,
 * so PSNs stay aligned. A root switch sends each completed slot's result down to the
 * children that want it; a leaf sends it up to its parent (UDP 4792, the
 * same RC framing) and fans out the parent's result when it comes back.
 * Results come back in slot order on every level (each child sends in PSN
 * order, so slots complete in PSN order), which lets a leaf match them with
 * a FIFO of slots awaiting a result.
 *
 * Order. A float SUM is folded per slot in child order, whatever order the
 * children's packets arrive in: acc = c0, acc = acc + c1, acc = acc + c2 ...
 * where ci is the contribution of child i, the i-th child of cfg.child[]
 * (hosts and switches alike, in the order of their ranks). A contribution
 * that comes before its turn waits in a hold buffer (cfg.holds) and is
 * folded as soon as every child before it was; so a float SUM is the same
 * bits in every run, loss pattern and arrival order (proto/inc_proto.h).
 * Integer SUMs and every MAX/MIN give the same result in any order: they
 * are folded in arrival order, as before.
 *
 * Reliability. Towards hosts (real rdma_rxe) the switch is a plain RC
 * requester and responder: go-back-N from the NAKed PSN at once, one NAK per
 * gap, duplicates re-ACKed. Switch<->switch links (UDP 4792) have this
 * engine on both ends and keep the RC framing and cumulative ACKs, but: at
 * most cfg.window frames in flight, the rest queued; the receiver holds
 * SENDs that arrive past a gap and takes them when it is filled; the sender
 * resends only the gap. On every connection a NAK for what was resent less
 * than an RTT ago is ignored, the retransmit timeout follows the measured RTT
 * (srtt + 4 rttvar, RFC 6298 without its 1 s floor), doubles on each timeout
 * without progress and never exceeds cfg.retransmit_ns, and a timeout or an
 * RNR NAK resends the oldest frame as a probe, not the whole window
 * (switch/README.md).
 */
#ifndef INCLAB_ENGINE_H
#define INCLAB_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "../proto/inc_proto.h"
#include "rc_conn.h"

#define SW_MAX_CHILDREN 64
#define SW_MTU 1024
/* Frames in flight on a switch<->switch link unless cfg.window says otherwise:
 * 64 KiB, several times the bandwidth-delay product of a lab link (a few MB/s
 * x a few ms, even with tens of ms of TCG stall it keeps ~3 MB/s going), yet
 * a burst the peer's UDP socket buffer takes (rmem_default 208 KiB holds ~90
 * such frames at ~2.3 KiB of truesize each). */
#define SW_WINDOW 256
#define SW_MAX_WINDOW (1u << 16) /* frames in flight per switch link (cfg.window) */
#define SW_MAX_SLOTS (1u << 22)
/* The most memory one engine may allocate (slots, send rings, frames held): half of a switch VM's
 * 512 MiB (topology/1-2-4.yaml). The controller's default of 8192 slots on three connections takes
 * about 20 MiB; rules asking for more than this are refused, not allocated (and touched later). */
#define SW_MEM_MAX (256u << 20)
/* Hold buffers of one communicator at most (cfg.holds), each a float SUM contribution of up to an MTU
 * that came before its turn (switch/README.md, "Order of a float SUM"): 16,384 of 1,032 bytes, 16 MiB,
 * so a switch VM of 512 MiB keeps room for 8 communicators' pools full at once (129 MiB). The default,
 * slots x (children - 1), reaches it at 8,192 slots and fan-in 3; past it a child that runs further
 * ahead is refused with an RNR NAK until the children before it came (holds_full). */
#define SW_HOLDS_MAX 16384u

/** One connection of the switch, as the controller configures it. */
struct sw_conn_cfg {
	int port;                    /* I/O port index the peer is reached on */
	uint32_t local_ip, peer_ip;  /* host order */
	uint8_t local_mac[6], peer_mac[6]; /* learnt from the peer's frames */
	uint32_t local_qpn, peer_qpn;
	uint32_t rq_psn;             /* first PSN the peer sends */
	uint32_t sq_psn;             /* first PSN we send */
	uint16_t udp_dst;            /* 4791 towards hosts, 4792 towards switches */
	uint16_t first_rank, nranks; /* ranks reached through this child */
};

struct sw_cfg {
	int nchildren;
	struct sw_conn_cfg child[SW_MAX_CHILDREN]; /* ranks contiguous, in child order */
	int has_parent;              /* a leaf: results come from the parent */
	struct sw_conn_cfg parent;   /* first_rank/nranks unused */
	uint16_t total_ranks;        /* ranks of the communicator; 0: the children's (a root) */
	uint32_t nslots;             /* aggregation slots (power of two not required) */
	uint64_t retransmit_ns;      /* first and longest retransmit timeout (adaptive in between) */
	uint8_t rnr_timer;           /* RNR NAK timer code sent when a slot is busy */
	uint32_t window;             /* frames in flight per switch<->switch link; 0: SW_WINDOW */
	uint64_t min_rto_ns;         /* the adaptive timeout's floor; 0: 2 ms (the tick) */
	uint32_t holds;              /* hold buffers for float SUM contributions ahead of their turn;
	                              * 0: nslots x (nchildren - 1), at most SW_HOLDS_MAX */
};

/*
 * Every frame sw_engine_rx() does not take moves exactly one of the drop_
 * counters, or one of duplicates, acks_stale, rnr_naks_tx (consumed or
 * refused, not lost); a SEND held past a gap moves ooo_held, and its fate
 * is counted when the gap fills (switch/README.md, "Counters").
 */
struct sw_counters {
	uint64_t rx_frames, tx_frames;
	uint64_t drop_parse;         /* not a RoCEv2 RC frame the switch handles (roce_parse(): short, not
	                              * IPv4/UDP to 4791/4792, IP options or fragment, other opcode, pad) */
	uint64_t drop_icrc;          /* ICRC does not match */
	uint64_t drop_unknown_qp;    /* no connection of this peer IP, our IP and QPN */
	uint64_t drop_bad_imm;       /* an immediate that names no collective of this communicator */
	uint64_t drop_mismatch;      /* data that does not fit its slot's (collective, length, place in a
	                              * message), or a result from the parent that no slot awaits */
	uint64_t mismatch_count;     /* of drop_mismatch from children: data whose call differs from the
	                              * slot's in count alone (the slot's immediate but for INC_IMM_LAST:
	                              * one call ends where the other goes on; or the same immediate and
	                              * another length); a subset, not a fate of its own */
	uint64_t drop_seq;           /* a SEND ahead of the expected PSN, not held (NAKed once per gap) */
	uint64_t drop_bad_op;        /* a SEND opcode the protocol has no place for, or out of its message */
	uint64_t drop_oversize;      /* a SEND of more than SW_MTU bytes of payload */
	uint64_t drop_bad_ack;       /* an ACK/NAK of a PSN never sent, or of an AETH type that does not exist */
	uint64_t acks_tx, naks_tx;
	uint64_t rnr_naks_tx;        /* one per SEND refused because its slot is busy (the peer resends it) */
	uint64_t duplicates;         /* SENDs taken or held already: not taken again (a taken one re-ACKed) */
	uint64_t aggregations, results_tx, retransmits;
	uint64_t acks_rx, naks_rx, rnr_naks_rx, fatal_naks_rx;
	uint64_t acks_stale;         /* ACKs/NAKs of PSNs acknowledged already (late or duplicated): ignored */
	uint64_t naks_ignored;       /* sequence NAKs for PSNs resent less than an RTT ago */
	uint64_t timeouts;           /* retransmit timer expiries (each resends from una: a probe) */
	uint64_t tail_probes;        /* a host's newest result frame resent asking for an ACK: its stream
	                              * stopped on a frame that did not ask (engine.c TAIL_IDLE_NS) */
	uint64_t ooo_held;           /* SENDs kept on a switch link until the gap before them filled */
	uint64_t acks_held;          /* times a child's ACKs stopped short of what it sent: it ran ahead of
	                              * the others by nearly the slot table (engine.c ACK_AHEAD_RESERVE) */
	uint64_t slots_completed, sent_up, results_from_parent;
	uint64_t faults_injected;    /* results made wrong on purpose (sw_engine_inject(); tests only) */
	uint64_t held_for_turn;      /* float SUM contributions kept in a hold buffer: a child before them had not come */
	uint64_t holds_full;         /* ... refused instead (an RNR NAK, in rnr_naks_tx): every hold buffer was taken */
	uint64_t holds_peak;         /* the most hold buffers in use at once (a high-water mark, not a count) */
};

typedef void (*sw_tx_fn)(void *ctx, int port, const uint8_t *frame, size_t len);

struct sw_engine;

/** sw_engine_new() - engine for @cfg; NULL (with a message on stderr) if @cfg is invalid. */
struct sw_engine *sw_engine_new(const struct sw_cfg *cfg, sw_tx_fn tx, void *ctx);
void sw_engine_free(struct sw_engine *e);

/** sw_engine_rx() - process one received frame (any port) at time @now_ns. */
void sw_engine_rx(struct sw_engine *e, const uint8_t *frame, size_t len, uint64_t now_ns);

/**
 * sw_engine_tick() - the end of a round of input, and time-driven sending at
 * @now_ns: ACKs still owed (to a switch at once, to a host once a round went
 * by without a new SEND from it), a probe after an expired retransmit timer,
 * the retry after an RNR NAK's delay. Call after every batch of frames and
 * every millisecond or so; the timer cannot be finer than the calls.
 */
void sw_engine_tick(struct sw_engine *e, uint64_t now_ns);

const struct sw_counters *sw_engine_counters(const struct sw_engine *e);

/*
 * Fault injection: a switch that computes a wrong result on purpose, so a
 * test can show that the hosts' checks (inccl_check, inccl_perf) catch it.
 * For test labs only: incswitch arms a fault only when it was started with
 * -F, which the lab sets on a test lab's switches alone. Each armed fault is
 * counted in faults_injected when it fires.
 */
enum sw_fault {
	SW_FAULT_NONE = 0,
	SW_FAULT_CORRUPT,       /* once: flip bit 23 of the middle element of the next result with data
	                         * (an int32 changes; a float32's exponent changes, so even a NaN, an Inf
	                         * or a zero becomes a different, non-NaN value) */
	SW_FAULT_DROP,          /* once: leave the last child's contribution out of the next reduced
	                         * result (AllReduce/Reduce with data; needs two children or more) */
	SW_FAULT_EARLY_BARRIER, /* every barrier: release it when its first child arrives, or when the
	                         * slots before it completed if that is later (results stay in order);
	                         * only where every child is a host; the others are taken and ACKed */
};

/** sw_fault_parse() - "corrupt", "drop", "early-barrier" or "off" as @*f; -1 for anything else. */
int sw_fault_parse(const char *s, enum sw_fault *f);
const char *sw_fault_name(enum sw_fault f);

/**
 * sw_engine_inject() - arm fault @f on @e (SW_FAULT_NONE disarms).
 * Return: 0, or -1 when @e's configuration cannot show it (DROP with one
 * child, EARLY_BARRIER with a switch among the children).
 */
int sw_engine_inject(struct sw_engine *e, enum sw_fault f);

/** sw_engine_busy_slots() - slots holding data not yet delivered and acknowledged. */
uint32_t sw_engine_busy_slots(const struct sw_engine *e);

#endif
