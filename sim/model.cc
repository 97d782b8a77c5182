/*
 * model.cc — the simulation of model.h on ns-3 (core, network, point-to-point).
 *
 * One Sim per run: it makes the nodes and links, the connections and the
 * applications of one collective, runs ns-3's simulator to the end and
 * destroys it. No per-packet logging: counters in Result.
 */
#include "model.h"

#include <ns3/double.h>
#include <ns3/drop-tail-queue.h>
#include <ns3/error-model.h>
#include <ns3/header.h>
#include <ns3/node-container.h>
#include <ns3/node.h>
#include <ns3/packet.h>
#include <ns3/point-to-point-helper.h>
#include <ns3/point-to-point-net-device.h>
#include <ns3/pointer.h>
#include <ns3/ppp-header.h>
#include <ns3/queue-size.h>
#include <ns3/rng-seed-manager.h>
#include <ns3/simulator.h>
#include <ns3/string.h>

extern "C" {
#include "../analysis/loggp.h" /* libinccl's batching, signalling and ACK constants, as the analytic model has them */
}

#include <algorithm>
#include <cmath>
#include <deque>
#include <functional>
#include <memory>
#include <numeric>
#include <queue>

using namespace ns3;

namespace incsim {

namespace {

constexpr uint16_t kProto = 0x0800; /* ns-3's point-to-point device carries IPv4 and IPv6 only; no IP stack is installed, so the simulator owns 0x0800 */
constexpr uint32_t kNone = UINT32_MAX;
constexpr uint32_t kRxeUnacked = 129; /* rxe sends at most this many PSNs past the last ACK (RXE_MAX_UNACKED_PSNS) */
constexpr uint32_t kAckReserve = 256; /* the switch's ACK_AHEAD_RESERVE: slots kept from a child that runs ahead */
constexpr uint32_t kSwitchAck = 2;    /* a switch acknowledges another's frames once per 2 (switch/engine.c SWITCH_ACK_EVERY) */

enum : uint8_t { T_DATA = 1, T_ACK = 2, T_NAK = 3, T_RNR = 4 };
enum : uint8_t { F_ACKREQ = 1, F_LAST = 2, F_FIRST = 4 }; /* an ACK requested; a message's last frame; its first */

/* The frame header: a RoCE BTH/AETH stand-in plus the message size of seeds/001. */
class SimHeader : public Header {
      public:
	uint8_t type = 0, flags = 0;
	uint16_t bytes = 0;       /* payload bytes of this frame */
	uint32_t conn = 0, psn = 0;
	uint32_t msg_bytes = 0;   /* bytes of the message the frame belongs to */
	uint32_t dst = 0;         /* node the frame is for (switches forward others) */
	uint32_t value = 0;       /* stand-in of the frame's elements */
	uint16_t pkts = 1;        /* the lab's packets this model frame stands for (data; Params.unit when full) */

	/* GetTypeId() - ns-3's type of the header. */
	static TypeId GetTypeId()
	{
		static TypeId tid = TypeId("incsim::SimHeader").SetParent<Header>().AddConstructor<SimHeader>();
		return tid;
	}
	TypeId GetInstanceTypeId() const override { return GetTypeId(); }
	/* GetSerializedSize() - the 26 bytes Serialize() writes. */
	uint32_t GetSerializedSize() const override { return 26; }
	/* Serialize() - every field, network order. */
	void Serialize(Buffer::Iterator i) const override
	{
		i.WriteU8(type);
		i.WriteU8(flags);
		i.WriteHtonU16(bytes);
		i.WriteHtonU32(conn);
		i.WriteHtonU32(psn);
		i.WriteHtonU32(msg_bytes);
		i.WriteHtonU32(dst);
		i.WriteHtonU32(value);
		i.WriteHtonU16(pkts);
	}
	/* Deserialize() - the fields Serialize() wrote; returns the bytes read. */
	uint32_t Deserialize(Buffer::Iterator i) override
	{
		type = i.ReadU8();
		flags = i.ReadU8();
		bytes = i.ReadNtohU16();
		conn = i.ReadNtohU32();
		psn = i.ReadNtohU32();
		msg_bytes = i.ReadNtohU32();
		dst = i.ReadNtohU32();
		value = i.ReadNtohU32();
		pkts = i.ReadNtohU16();
		return 26;
	}
	/* Print() - the fields, for ns-3's packet printing. */
	void Print(std::ostream &os) const override
	{
		os << "type=" << unsigned(type) << " conn=" << conn << " psn=" << psn << " bytes=" << bytes;
	}
};

/* DropOnce — the tests' loss: the first copy of data frame Params.drop_psn on connection 0. */
class DropOnce : public ErrorModel {
      public:
	int64_t psn = -1;
	bool done = false;

      private:
	/* DoCorrupt() - true for the one frame to drop (the packet still has its PPP header). */
	bool DoCorrupt(Ptr<Packet> p) override
	{
		if (done)
			return false;
		Ptr<Packet> c = p->Copy();
		PppHeader ppp;
		SimHeader h;
		c->RemoveHeader(ppp);
		c->PeekHeader(h);
		if (h.type == T_DATA && h.conn == 0 && h.psn == psn)
			return done = true;
		return false;
	}
	void DoReset() override {}
};

/* F() - the stand-in value of packet @k of rank @r: a hash, so that sums of wrong packets differ. */
uint32_t F(uint32_t r, uint32_t k)
{
	uint64_t x = (uint64_t(r) << 32 | k) * 0x9E3779B97F4A7C15ull;
	x ^= x >> 29;
	x *= 0xBF58476D1CE4E5B9ull;
	return uint32_t(x >> 32);
}

/* LabFrames() - the lab's frames a model frame with header @h stands for (Params.unit per full one; an ACK
 * between switches the lab's ACKs of its frames, SendCtl()). */
uint32_t LabFrames(const SimHeader &h)
{
	return h.pkts > 1 ? h.pkts : 1;
}

/* Pkts() - the lab's packets that carry @bytes of payload (a packet each up to kMtu; at least one). */
uint32_t Pkts(uint32_t bytes)
{
	return bytes > kMtu ? (bytes + kMtu - 1) / kMtu : 1;
}

/* CountLost() - a frame a link dropped (its loss, or the tests' DropOnce). */
void CountLost(uint64_t *lost, Ptr<const Packet>)
{
	++*lost;
}

struct Frame {
	uint32_t bytes, msg_bytes, value;
	bool last;     /* a message's last frame: its receiver's completion; it asks for an ACK unless quiet */
	uint32_t pkts; /* the lab's packets it stands for: Pkts(bytes), or as many empty ones (EmptyFrame()) */
	bool quiet = false; /* the last of a message that asks for no ACK (EmptyFrame()) */
	bool first = false; /* a message's first frame: it takes the receiver's receive (rxe's RNR check) */
};

/*
 * One call of libinccl's data path (hostlib/comm.c run_xfer()): packets
 * pk0 .. pk0 + npk - 1 of every rank's stream to the switches, of the
 * primitive @prim. A collective is one call (AllReduce, Reduce, Broadcast,
 * Barrier) or one per block (hostlib/coll.c).
 */
enum class Prim { AllReduce, Reduce, Broadcast, Route, Barrier };

struct Call {
	Prim prim;
	int src = -1, dst = -1; /* the rank with the data (Broadcast, Route), the rank due the result (Reduce, Route) */
	uint64_t bytes = 0;     /* per rank; 0: one empty packet (Barrier) */
	uint32_t pk0 = 0, npk = 0, nmsg = 0; /* first packet, packets, messages of p.message (the data's cut) */
};

/* A run of a down connection's PSNs: psn0 .. psn0 + n - 1 carry the results of packets pk0 .. pk0 + n - 1. */
struct DownSeg {
	uint32_t psn0, pk0, n;
};

/* One RC-like connection: the sender's and the receiver's state. */
struct Conn {
	int src = -1, dst = -1;
	uint32_t window = 0;
	/* sender */
	uint32_t next = 0, una = 0, ready = 0, max_sent = 0;
	bool rnr_wait = false;
	EventId timer;
	std::function<Frame(uint32_t)> frame;   /* what frame PSN carries */
	std::function<void()> on_ack;           /* progress at the sender */
	/* receiver */
	uint32_t expected = 0;
	uint32_t rx_next = 0;                   /* a host: the PSN after the frames queued for its CPU (Receive()) */
	uint32_t rx_queued = 0;                 /* a host: frames of this connection waiting for its CPU */
	uint32_t held = kNone;                  /* a switch's ACK held back: the PSN it would acknowledge */
	uint32_t acked = kNone;                 /* the last PSN acknowledged, kNone: none */
	bool nak_sent = false;
	std::function<bool(uint32_t, const Frame &)> on_data; /* in order; false: no room (RNR) */
	std::vector<DownSeg> dsegs;             /* INC, a switch to a child: the results it carries, by PSN */
};

struct Slot {
	uint32_t psn = kNone, count = 0, val = 0, result = 0;
	Frame meta{};
	bool agg = false, res = false;
};

struct NodeState {
	bool host = false;
	struct CpuJob {
		Time cost;
		std::function<void()> fn;
		bool urgent; /* waiting ahead of every job that is not (Cpu()) */
	};
	std::deque<CpuJob> cpu;              /* work waiting for the CPU, the head running */
	uint32_t urgent = 0;                 /* urgent jobs waiting: cpu[1 .. urgent] */
	uint32_t backlog = 0;                /* switch: frames waiting for the CPU */
	double busy = 0;                     /* s of CPU work given to Cpu() */
	std::vector<Ptr<NetDevice>> port_dev; /* per tree neighbour */
	std::vector<int> port_peer;
	int up = -1, down = -1;               /* INC: connections to and from the parent */
	/* switch (INC) */
	std::vector<Slot> slots;
	uint32_t agg_next = 0, res_next = 0, free_next = 0;
	/* host */
	uint32_t post_next = 0;              /* INC and transfers: next message to post (INC: of the call) */
	uint32_t recv_msgs = 0;              /* INC: result messages of the call processed */
	uint32_t cur_call = 0;               /* INC: the call this rank is in (Sim.calls_) */
	bool call_wait = false;              /* INC: waiting a call's own time (Params.call_inc) before it posts */
	/* ring plans (RunPlan()) */
	struct PMsg {
		uint32_t psn0, nf, bytes;
	};
	std::vector<PMsg> pmsgs;             /* messages posted, in order */
	std::deque<std::vector<uint32_t>> snaps; /* their contents, until the right neighbour takes them */
	std::deque<std::vector<uint32_t>> arrived; /* messages received, in order, not yet taken */
	uint32_t p_frames = 0, p_sent = 0, p_acked = 0, p_rproc = 0, p_rdone = 0, p_recvd = 0;
	bool done = false;
	/* ring */
	int out = -1, in = -1;
	std::vector<uint32_t> buf;
	int send_posted = 0, recv_done = 0, cur_step = 0;
	uint32_t rx_held = 0; /* the ring's and chain's receives holding a message not yet taken (RecvSlot()) */
	uint32_t cur_off = 0, sent_total = 0;
	struct Seg {
		uint32_t psn0, pkt0, n;
	};
	std::vector<Seg> segs;
	struct Post {
		uint32_t end, bytes;
	};
	std::vector<Post> pending;
	size_t pending_head = 0;
};

class Sim {
      public:
	Sim(const Tree &t, const Params &p, uint64_t bytes, Coll coll = Coll::AllReduce, int root = 0);
	~Sim() { Simulator::Destroy(); }
	Result RunInc();
	Result RunRing();
	Result RunChain();
	Result RunPlan();
	Result RunTransfer(int src, int dst);
	std::vector<double> RunJobs(const std::vector<std::vector<double>> &jobs);

      private:
	const Tree &t_;
	Params p_;      /* the caller's, with windows, message, slots and queue in model frames (Params.unit) */
	uint32_t unit_; /* payload bytes of a model frame: Params.unit packets of kMtu */
	uint32_t lab_message_; /* the lab's packets per libinccl message (the caller's Params.message) */
	uint32_t host_tx_window_; /* a host's frames in flight: libinccl's window, at most rxe's */
	uint64_t bytes_;
	uint32_t npkts_, nmsgs_;
	Coll coll_;     /* the collective (INC: who sends data, who takes results) */
	int root_;      /* its root rank (Reduce, Broadcast) */
	std::vector<Call> calls_; /* INC: libinccl's calls of the collective, in order (one but for the block collectives) */
	std::vector<int> hosts_below_; /* per node: the ranks of its subtree */
	std::vector<NodeState> n_;
	std::vector<Conn> c_;
	std::vector<uint32_t> expect_;
	Result r_;
	uint32_t base_id_ = 0;
	Ptr<DropOnce> drop_;

	void Build();
	int NewConn(int src, int dst);
	int Route(int u, int dst) const;
	void Cpu(int u, double cost, std::function<void()> fn, bool urgent = false);
	void CpuDone(int u);
	/* the machine's shared cores (Params.cores > 0): processor sharing, Cpu() */
	double vnow_ = 0;       /* work (s) every node with work has had since the start */
	Time vlast_;            /* when vnow_ was brought up to date */
	uint32_t runnable_ = 0; /* nodes with work */
	std::priority_queue<std::pair<double, int>, std::vector<std::pair<double, int>>, std::greater<>> fin_; /* the work done (vnow_) at which each node's job ends */
	EventId ps_ev_;         /* the next end of a job */
	double PsRate() const;
	void PsAdvance();
	void PsSchedule();
	void PsDone();
	/* a host's CPU per message (analysis/loggp.c's terms) */
	double IncSignal() const;
	double IncSend(uint32_t pkts, uint32_t bytes) const;
	double IncEmpty(uint32_t pkts) const;
	double IncRecv(uint32_t bytes) const;
	double RingSend(uint32_t bytes) const;
	double RingRecv(uint32_t bytes, bool sum, bool waited) const;
	void SendPacket(int u, int port, Ptr<Packet> p);
	void SendFrame(int u, const SimHeader &h, uint32_t wire_bytes);
	void Receive(Ptr<NetDevice> dev, Ptr<const Packet> p, uint16_t proto, const Address &from, const Address &to,
		     NetDevice::PacketType type);
	void Handle(int u, const SimHeader &h);
	void Kick(int ci);
	void SendData(int ci, uint32_t psn, const Frame &f);
	void SendCtl(int ci, uint8_t type, uint32_t psn, uint32_t lab = 1);
	bool SwitchLink(int ci) const;
	double RingStart() const;
	void StartCall(int u);
	void Ack(int ci, uint32_t psn);
	uint32_t AckLimit(int ci) const;
	void ArmTimer(int ci, bool restart);
	void Timeout(int ci);
	uint32_t PktBytes(uint64_t k) const;
	Frame SrcFrame(int rank, uint32_t k) const;
	Frame EmptyFrame(uint32_t k, uint32_t value = 0) const;
	uint32_t CallOf(uint32_t k) const;
	uint32_t SrcValue(int rank, const Call &cl, uint32_t k) const;
	bool HasData(int rank, const Call &cl) const;
	bool Expects(int rank, const Call &cl) const;
	bool Wants(int v, const Call &cl) const;
	bool SubtreeWants(int s, const Call &cl) const;
	uint32_t DownPk(int ci, uint32_t psn) const;
	uint32_t DownPsn(int ci, uint32_t k) const;
	uint32_t DownCount(int ci, uint32_t kend) const;
	void PostMore(int u);
	void HostCheckDone(int u);
	void SwitchResults(int s);
	void SwitchFree(int s);
	void RingPostStep(int u);
	void RingRecvDone(int u, int s);
	uint32_t RingChunk(int rank, int step, bool send) const;
	uint32_t ChunkStart(uint32_t c) const { return uint32_t(uint64_t(c) * npkts_ / Ranks()); }
	uint32_t ChunkLen(uint32_t c) const { return ChunkStart(c + 1) - ChunkStart(c); }
	int Ranks() const { return int(t_.host_of_rank.size()); }
	Frame ChunkFrame(uint32_t pkt0, uint32_t n, uint32_t idx, uint32_t value) const;
	bool inc_ = false;   /* RunInc(): hosts post within libinccl's window of their results */
	uint32_t piece_ = 1; /* the ring and the chain: model frames per message (kRingPiece packets, ring.c
	                      * RING_PIECE, whatever libinccl's INC message is) */
	int chain_first_ = 0, chain_last_ = 0; /* the chain: the rank that starts it, the one that ends it */
	void ChainQueue(int u, uint32_t piece);
	bool RecvSlot(int u, const Frame &f);
	void DrainPosts(int u, bool ahead);
	void ChainCheckDone(int u);
	/* ring plans (RunPlan(), hostlib/ring.c): elements per block, per piece, per atom of the check */
	uint64_t plan_n_ = 0, plan_piece_ = 0, plan_atom_ = 1;
	uint32_t plan_nmsg_ = 0;
	void PlanSend(int rank, uint32_t i, uint64_t *off, uint64_t *len, uint32_t *need) const;
	void PlanRecv(int rank, uint32_t i, uint64_t *off, uint64_t *len, bool *reduce) const;
	void A2aFind(uint32_t i, uint64_t *s, uint64_t *k, uint64_t *base) const;
	uint64_t A2aPieces(uint64_t s) const;
	void PlanPost(int u);
	void PlanTake(int u);
	void PlanCheckDone(int u);
	Result Finish();
};

Sim::Sim(const Tree &t, const Params &p, uint64_t bytes, Coll coll, int root)
    : t_(t), p_(p), bytes_(bytes), coll_(coll), root_(root)
{
	uint32_t k = p.unit;
	unit_ = kMtu * k;
	lab_message_ = p.message;
	p_.message = p.message / k;
	p_.slots = std::max(1u, p.slots / k);
	p_.window_host = std::max(1u, p.window_host / k);
	host_tx_window_ = std::max(1u, std::min(p.window_host, kRxeUnacked) / k);
	p_.window_switch = std::max(1u, p.window_switch / k);
	p_.queue = std::max(1u, p.queue / k);
	/* libinccl's calls (hostlib/coll.c): a block collective's blocks in order, a.k.a. one call per block */
	int n = Ranks();
	uint32_t total = 0;
	auto add = [&](Prim pr, int src, int dst, uint64_t b) {
		Call cl;
		cl.prim = pr;
		cl.src = src;
		cl.dst = dst;
		cl.bytes = b;
		cl.pk0 = total;
		cl.npk = b ? uint32_t((b + unit_ - 1) / unit_) : 1; /* a Barrier: one empty packet */
		cl.nmsg = (cl.npk + p_.message - 1) / p_.message;
		total += cl.npk;
		calls_.push_back(cl);
	};
	uint64_t blk = bytes / uint64_t(n);
	switch (coll) {
	case Coll::AllReduce: add(Prim::AllReduce, -1, -1, bytes); break;
	case Coll::Reduce: add(Prim::Reduce, -1, root, bytes); break;
	case Coll::Broadcast: add(Prim::Broadcast, root, -1, bytes); break;
	case Coll::Barrier: add(Prim::Barrier, -1, -1, 0); break;
	case Coll::AllGather: /* block b a Broadcast from rank b */
		for (int b = 0; b < n; b++)
			add(Prim::Broadcast, b, -1, blk);
		break;
	case Coll::ReduceScatter: /* block b a Reduce to rank b */
		for (int b = 0; b < n; b++)
			add(Prim::Reduce, -1, b, blk);
		break;
	case Coll::AllToAll: /* the pairs a -> b, b -> a for a < b, each a Route */
		for (int a = 0; a < n; a++)
			for (int b = a + 1; b < n; b++) {
				add(Prim::Route, a, b, blk);
				add(Prim::Route, b, a, blk);
			}
		break;
	}
	npkts_ = total;
	nmsgs_ = (npkts_ + p_.message - 1) / p_.message;
	r_.host_done.assign(t.host_of_rank.size(), 0);
	hosts_below_.assign(t.nodes.size(), 0);
	for (int h : t.host_of_rank)
		for (int v = h; v >= 0; v = t.nodes[size_t(v)].parent)
			hosts_below_[size_t(v)]++;
	Build();
}

/* Build() - a node per tree node, a link per edge, a protocol handler per device. */
void Sim::Build()
{
	RngSeedManager::SetSeed(p_.seed ? p_.seed : 1);
	NodeContainer nodes;
	nodes.Create(uint32_t(t_.nodes.size()));
	base_id_ = nodes.Get(0)->GetId();
	n_.resize(t_.nodes.size());
	PointToPointHelper ph;
	ph.SetDeviceAttribute("DataRate", DataRateValue(DataRate(uint64_t(p_.link_bw * 8.0 + 0.5))));
	ph.SetChannelAttribute("Delay", TimeValue(Seconds(p_.link_lat)));
	ph.SetQueue("ns3::DropTailQueue<Packet>", "MaxSize", QueueSizeValue(QueueSize(QueueSizeUnit::PACKETS, p_.queue)));
	if (p_.drop_psn >= 0) {
		drop_ = CreateObject<DropOnce>();
		drop_->psn = p_.drop_psn;
	}
	for (size_t i = 0; i < t_.nodes.size(); i++) {
		n_[i].host = t_.nodes[i].host;
		int par = t_.nodes[i].parent;
		if (par < 0)
			continue;
		NetDeviceContainer d = ph.Install(nodes.Get(uint32_t(i)), nodes.Get(uint32_t(par)));
		for (int e = 0; e < 2; e++) {
			int self = e ? par : int(i), peer = e ? int(i) : par;
			Ptr<NetDevice> dev = d.Get(uint32_t(e));
			n_[self].port_dev.push_back(dev);
			n_[self].port_peer.push_back(peer);
			dev->GetNode()->RegisterProtocolHandler(MakeCallback(&Sim::Receive, this), kProto, dev);
			Ptr<PointToPointNetDevice> pd = DynamicCast<PointToPointNetDevice>(dev);
			if (p_.loss > 0) {
				Ptr<RateErrorModel> em = CreateObject<RateErrorModel>();
				em->SetAttribute("ErrorRate", DoubleValue(p_.loss));
				em->SetAttribute("ErrorUnit", StringValue("ERROR_UNIT_PACKET"));
				pd->SetReceiveErrorModel(em);
			} else if (drop_) {
				pd->SetReceiveErrorModel(drop_);
			}
			pd->TraceConnectWithoutContext("PhyRxDrop", MakeBoundCallback(&CountLost, &r_.lost));
		}
	}
	/* per call: a Broadcast's or Route's result is its source's data; any other the sum of every rank's
	 * (a Barrier's: of every rank's arrival, a stand-in its empty packet carries) */
	std::vector<uint32_t> sum(npkts_, 0);
	for (const Call &cl : calls_) {
		bool one = cl.prim == Prim::Broadcast || cl.prim == Prim::Route;
		for (int r = 0; r < Ranks(); r++)
			if (!one || r == cl.src)
				for (uint32_t k = cl.pk0; k < cl.pk0 + cl.npk; k++)
					sum[k] += F(uint32_t(r), k);
	}
	expect_.swap(sum);
}

/* NewConn() - a connection from node @src to node @dst; returns its index. */
int Sim::NewConn(int src, int dst)
{
	Conn c;
	c.src = src;
	c.dst = dst;
	c.window = n_[src].host ? host_tx_window_ : n_[dst].host ? p_.window_host : p_.window_switch;
	c_.push_back(std::move(c));
	return int(c_.size()) - 1;
}

/* Route() - the port of node @u towards node @dst: the child whose subtree holds it, else the parent. */
int Sim::Route(int u, int dst) const
{
	const TreeNode &d = t_.nodes[size_t(dst)];
	const NodeState &s = n_[size_t(u)];
	for (size_t i = 0; i < s.port_peer.size(); i++) {
		const TreeNode &q = t_.nodes[size_t(s.port_peer[i])];
		if (s.port_peer[i] != t_.nodes[size_t(u)].parent && q.tin <= d.tin && d.tin < q.tout)
			return int(i);
	}
	for (size_t i = 0; i < s.port_peer.size(); i++)
		if (s.port_peer[i] == t_.nodes[size_t(u)].parent)
			return int(i);
	return -1;
}

/*
 * Cpu() - node @u's CPU does @cost seconds of work after what it has queued
 * (@urgent: after the job running and the urgent ones waiting only), then
 * @fn. One event per node is pending at a time (CpuDone()), not one per
 * task: a switch with thousands of frames waiting would otherwise fill ns-3's
 * event set, whose cost grows with its size.
 */
void Sim::Cpu(int u, double cost, std::function<void()> fn, bool urgent)
{
	NodeState &s = n_[size_t(u)];
	auto &q = s.cpu;
	bool waits = !q.empty();
	s.busy += cost;
	if (urgent && waits) {
		q.insert(q.begin() + 1 + s.urgent, NodeState::CpuJob{Seconds(cost), std::move(fn), true});
		s.urgent++;
		return;
	}
	q.push_back(NodeState::CpuJob{Seconds(cost), std::move(fn), false});
	if (waits)
		return;
	if (p_.cores <= 0) {
		Simulator::Schedule(q.front().cost, &Sim::CpuDone, this, u);
		return;
	}
	PsAdvance(); /* one more node shares the cores from now */
	runnable_++;
	fin_.emplace(vnow_ + q.front().cost.GetSeconds(), u);
	PsSchedule();
}

/*
 * The lab machine's cores (Params.cores = C > 0), shared by every node as
 * processor sharing: while n nodes have work, each does min(1, C/n) seconds
 * of it per second (a node is one vCPU or one process: at most one core).
 * Linux's fair scheduler gives the runnable threads of a busy machine equal
 * shares, and a thread that slept (a host waiting for a completion, a switch
 * for a frame) runs soon after it wakes; per-job FIFO across nodes would
 * give a host's 600 us send as much turn as a switch's 10 us frame. vnow_ is
 * the work each node with work has had: a node's job started at vnow_ = v
 * with cost c ends when vnow_ reaches v + c, so only the next end is an
 * event, moved when n changes.
 */

/* PsRate() - seconds of work per second each node with work gets. */
double Sim::PsRate() const
{
	return runnable_ > p_.cores ? p_.cores / runnable_ : 1.0;
}

/* PsAdvance() - bring vnow_ up to now at the rate since vlast_ (before runnable_ changes). */
void Sim::PsAdvance()
{
	Time now = Simulator::Now();
	vnow_ += (now - vlast_).GetSeconds() * PsRate();
	vlast_ = now;
}

/* PsSchedule() - the event of the next job's end (rounded up to ns-3's ns, so it is never early). */
void Sim::PsSchedule()
{
	if (ps_ev_.IsRunning())
		Simulator::Remove(ps_ev_);
	if (fin_.empty())
		return;
	double dt = std::max(0.0, (fin_.top().first - vnow_) / PsRate());
	ps_ev_ = Simulator::Schedule(NanoSeconds(int64_t(std::ceil(dt * 1e9 - 1e-6))), &Sim::PsDone, this);
}

/* PsDone() - every job whose work is done: run it, start its node's next (or the node leaves the sharing). */
void Sim::PsDone()
{
	constexpr double kEps = 1e-12; /* s of work: the rounding of a double, far below ns-3's ns */
	PsAdvance();
	while (!fin_.empty() && fin_.top().first <= vnow_ + kEps) {
		int u = fin_.top().second;
		fin_.pop();
		NodeState &s = n_[size_t(u)];
		auto &q = s.cpu;
		std::function<void()> fn = std::move(q.front().fn);
		fn();
		q.pop_front();
		if (q.empty()) {
			runnable_--;
			continue;
		}
		if (q.front().urgent) {
			q.front().urgent = false;
			s.urgent--;
		}
		fin_.emplace(vnow_ + q.front().cost.GetSeconds(), u);
	}
	PsSchedule();
}

/* IncSignal() - libinccl's packets per completion asked (comm.c post_sends(); loggp.c inc_signal()): SIGNAL_EVERY, at least 4 messages, at most half the window. */
double Sim::IncSignal() const
{
	double every = std::max<double>(LOGGP_INC_SIGNAL, 4.0 * lab_message_);
	return std::min<double>(every, LOGGP_INC_WINDOW / 2);
}

/*
 * IncSend() - host CPU of one libinccl send of @pkts packets, @bytes: o_su
 * and an ACK's share (the switch acknowledges once per LOGGP_SW_ACK packets,
 * a whole one at most), the completions it asks for beyond perftest's one in
 * LOGGP_PERFTEST_CQ (which o holds) per packet, every byte sent and swapped
 * (loggp.c inc_post(), inc_send(); spread per message, not rounded up per call).
 */
double Sim::IncSend(uint32_t pkts, uint32_t bytes) const
{
	double k = pkts, extra = k / IncSignal() - 1.0 / LOGGP_PERFTEST_CQ;
	return p_.o_su + p_.o_ack * std::min<double>(k, LOGGP_SW_ACK) / LOGGP_SW_ACK + p_.o_c * std::max(0.0, extra) +
	       bytes * (p_.G_s + p_.G_swap);
}

/* IncEmpty() - host CPU of @pkts empty packets, a work request each at o_e (o_su without it) and an ACK's share (loggp.c inc_empty()). */
double Sim::IncEmpty(uint32_t pkts) const
{
	double extra = 1.0 / IncSignal() - 1.0 / LOGGP_PERFTEST_CQ;
	return pkts * ((p_.o_e >= 0 ? p_.o_e : p_.o_su) + p_.o_ack / LOGGP_SW_ACK + p_.o_c * std::max(0.0, extra));
}

/* IncRecv() - host CPU of one libinccl message of results, @bytes: a completion and a repost, every byte swapped (loggp.c inc_recv()). */
double Sim::IncRecv(uint32_t bytes) const
{
	return p_.o_r + bytes * p_.G_swap;
}

/* RingSend() - host CPU of one ring message of @bytes: o_s, a completion per LOGGP_RING_SIGNAL sends, every byte copied in (loggp.c ring_xfer()). */
double Sim::RingSend(uint32_t bytes) const
{
	double extra = 1.0 / LOGGP_RING_SIGNAL - 1.0 / LOGGP_PERFTEST_CQ;
	return p_.o_s + p_.o_c * std::max(0.0, extra) + bytes * (p_.G_s + p_.G_copy);
}

/*
 * RingRecv() - host CPU of one ring message of @bytes received: o_r, every
 * byte summed (@sum) or copied out, and o_w when it gates the host's next
 * send round the ring (@waited: the host sleeps until it comes).
 */
double Sim::RingRecv(uint32_t bytes, bool sum, bool waited) const
{
	return p_.o_r + (waited ? p_.o_w : 0) + bytes * (sum ? p_.G_sum : p_.G_copy);
}

/* CpuDone() - the head of node @u's CPU queue is done: run it, start the next. */
void Sim::CpuDone(int u)
{
	NodeState &s = n_[size_t(u)];
	auto &q = s.cpu;
	std::function<void()> fn = std::move(q.front().fn);
	fn();
	q.pop_front();
	if (q.empty())
		return;
	if (q.front().urgent) {
		q.front().urgent = false;
		s.urgent--;
	}
	Simulator::Schedule(q.front().cost, &Sim::CpuDone, this, u);
}

/* SendPacket() - @p out of port @port of node @u; a full queue loses it. */
void Sim::SendPacket(int u, int port, Ptr<Packet> p)
{
	Ptr<NetDevice> dev = n_[size_t(u)].port_dev[size_t(port)];
	r_.frames++;
	if (!dev->Send(p, dev->GetBroadcast(), kProto))
		r_.lost++;
}

/* SendFrame() - a frame of @wire_bytes with header @h from node @u towards h.dst (a switch pays c_sw first). */
void Sim::SendFrame(int u, const SimHeader &h, uint32_t wire_bytes)
{
	Ptr<Packet> p = Create<Packet>(wire_bytes - h.GetSerializedSize());
	p->AddHeader(h);
	int port = Route(u, int(h.dst));
	if (n_[size_t(u)].host)
		SendPacket(u, port, p);
	else
		Cpu(u, p_.sw_frame * LabFrames(h), [this, u, port, p]() { SendPacket(u, port, p); });
}

/* Receive() - a frame off a device: forwarded when it is for another node, handled when for this one. */
void Sim::Receive(Ptr<NetDevice> dev, Ptr<const Packet> p, uint16_t, const Address &, const Address &, NetDevice::PacketType)
{
	int u = int(dev->GetNode()->GetId() - base_id_);
	SimHeader h;
	p->PeekHeader(h);
	NodeState &s = n_[size_t(u)];
	if (!s.host && s.backlog >= p_.queue) {
		r_.lost++; /* the switch's receive ring is full: the frame is dropped */
		return;
	}
	if (int(h.dst) != u) {
		/* a frame between hosts (the ring): routed by the kernel of a namespace switch, not by
		 * the aggregation engine whose cost c_sw is, so it costs the links only */
		SendPacket(u, Route(u, int(h.dst)), p->Copy());
		return;
	}
	if (s.host) {
		/* rxe checks a data frame and copies it into the posted receive before it
		 * acknowledges it (rxe_resp.c): the per-byte receive work (G_r) comes first, in
		 * its turn on the host's CPU behind the work queued there (the lab's guests do not
		 * put it ahead: sim/README.md); the message's completion after (IncRecv(),
		 * RingRecv()). A duplicate or early frame costs nothing (rxe drops it on its PSN
		 * before any copy) but waits behind the frames of its connection still queued:
		 * rxe takes a QP's frames in order. */
		if (h.type == T_DATA) {
			Conn &c = c_[h.conn];
			double rx = 0;
			if (h.psn == c.rx_next) {
				rx = h.bytes * p_.G_r;
				c.rx_next++;
			}
			if (rx > 0 || c.rx_queued > 0) {
				c.rx_queued++;
				Cpu(u, rx, [this, u, h]() {
					c_[h.conn].rx_queued--;
					Handle(u, h);
				});
				return;
			}
		}
		Handle(u, h);
		return;
	}
	s.backlog++;
	Cpu(u, p_.sw_frame * LabFrames(h), [this, u, h]() {
		n_[size_t(u)].backlog--;
		Handle(u, h);
	});
}

/* Handle() - the transport's work on a frame for node @u: the receiver's for data, the sender's for ACK/NAK/RNR. */
void Sim::Handle(int u, const SimHeader &h)
{
	Conn &c = c_[h.conn];
	if (h.type == T_DATA) {
		if (h.psn == c.expected) {
			Frame f{h.bytes, h.msg_bytes, h.value, false, h.pkts};
			f.last = h.flags & F_LAST;
			f.quiet = f.last && !(h.flags & F_ACKREQ);
			f.first = h.flags & F_FIRST;
			if (!c.on_data(h.psn, f)) {
				c.rx_next = c.expected; /* what came after it is refused as early */
				r_.rnr_naks++;
				SendCtl(int(h.conn), T_RNR, h.psn);
				return;
			}
			c.expected++;
			c.nak_sent = false;
			/* between switches every frame asks, and one ACK answers kSwitchAck of the lab's frames:
			 * every model frame of kSwitchAck packets or more, else every kSwitchAck-th */
			uint32_t every = std::max(1u, kSwitchAck / (unit_ / kMtu));
			if ((h.flags & F_ACKREQ) || (SwitchLink(int(h.conn)) && (h.psn + 1) % every == 0))
				Ack(int(h.conn), h.psn);
		} else if (h.psn < c.expected) {
			if (c.acked != kNone)
				SendCtl(int(h.conn), T_ACK, c.acked); /* a duplicate: what is acknowledged already */
		} else if (!c.nak_sent) {
			c.nak_sent = true;
			SendCtl(int(h.conn), T_NAK, c.expected);
		}
		return;
	}
	int ci = int(h.conn);
	if (h.type == T_ACK) {
		if (h.psn + 1 <= c.una || h.psn >= c.max_sent)
			return; /* stale, or of a PSN never sent */
		c.una = h.psn + 1;
		c.next = std::max(c.next, c.una);
		ArmTimer(ci, true);
		if (c.on_ack)
			c.on_ack();
		Kick(ci);
	} else if (h.type == T_NAK) {
		r_.naks++;
		if (h.psn < c.una || h.psn >= c.max_sent)
			return;
		bool progress = h.psn > c.una;
		c.una = h.psn; /* a NAK of PSN k acknowledges every PSN before it */
		c.next = h.psn;
		ArmTimer(ci, true);
		if (progress && c.on_ack)
			c.on_ack();
		Kick(ci);
	} else if (h.type == T_RNR) {
		if (h.psn < c.una || h.psn >= c.max_sent)
			return;
		bool progress = h.psn > c.una;
		c.una = h.psn;
		c.next = h.psn;
		c.rnr_wait = true;
		if (progress && c.on_ack)
			c.on_ack();
		Simulator::Schedule(Seconds(p_.rnr), [this, ci]() {
			c_[size_t(ci)].rnr_wait = false;
			Kick(ci);
		});
	}
}

/* Kick() - send what the window and the frames ready allow on connection @ci. */
void Sim::Kick(int ci)
{
	Conn &c = c_[size_t(ci)];
	if (c.rnr_wait)
		return;
	while (c.next < c.ready && c.next < c.una + c.window) {
		if (c.next < c.max_sent)
			r_.retransmits++;
		SendData(ci, c.next, c.frame(c.next));
		c.next++;
		c.max_sent = std::max(c.max_sent, c.next);
	}
	ArmTimer(ci, false);
}

/* SendData() - data frame @psn of connection @ci; AckReq on the last frame of a message. */
void Sim::SendData(int ci, uint32_t psn, const Frame &f)
{
	const Conn &c = c_[size_t(ci)];
	SimHeader h;
	h.type = T_DATA;
	h.flags = uint8_t((f.last ? F_LAST : 0) | (f.last && !f.quiet ? F_ACKREQ : 0) | (f.first ? F_FIRST : 0));
	h.bytes = uint16_t(f.bytes);
	h.conn = uint32_t(ci);
	h.psn = psn;
	h.msg_bytes = f.msg_bytes;
	h.dst = uint32_t(c.dst);
	h.value = f.value;
	h.pkts = uint16_t(f.pkts); /* the lab's frames this model frame stands for, each with its headers */
	SendFrame(c.src, h, f.bytes + f.pkts * kFrameOverhead);
}

/* SendCtl() - an ACK, NAK or RNR NAK of @psn from connection @ci's receiver to its sender, standing for
 * @lab of the lab's (their headers on the wire, c_sw each at a switch). */
void Sim::SendCtl(int ci, uint8_t type, uint32_t psn, uint32_t lab)
{
	const Conn &c = c_[size_t(ci)];
	SimHeader h;
	h.type = type;
	h.conn = uint32_t(ci);
	h.psn = psn;
	h.dst = uint32_t(c.src);
	h.pkts = uint16_t(lab);
	SendFrame(c.dst, h, kAckBytes * lab);
}

/* SwitchLink() - does connection @ci run between two switches? */
bool Sim::SwitchLink(int ci) const
{
	const Conn &c = c_[size_t(ci)];
	return !n_[size_t(c.src)].host && !n_[size_t(c.dst)].host;
}

/*
 * AckLimit() - the highest PSN a switch acknowledges to a child on connection
 * @ci: kAckReserve short of its slot table's end counted from the oldest slot
 * in use, as the lab's switch holds a child that runs ahead (ACK_AHEAD_RESERVE);
 * kNone - 1 (no limit) elsewhere.
 */
uint32_t Sim::AckLimit(int ci) const
{
	const Conn &c = c_[size_t(ci)];
	const NodeState &s = n_[size_t(c.dst)];
	if (s.host || s.slots.empty() || t_.nodes[size_t(c.src)].parent != c.dst)
		return kNone - 1;
	uint32_t reserve = kAckReserve / (unit_ / kMtu);
	uint32_t room = p_.slots > reserve ? p_.slots - reserve : 1;
	return s.free_next + room - 1;
}

/* Ack() - the receiver of @ci acknowledges up to @psn, or as far as AckLimit() allows and holds the rest. */
void Sim::Ack(int ci, uint32_t psn)
{
	Conn &c = c_[size_t(ci)];
	uint32_t lim = AckLimit(ci);
	if (psn > lim) {
		c.held = psn;
		if (c.acked != kNone && lim <= c.acked)
			return;
		psn = lim;
	} else {
		c.held = kNone;
	}
	c.acked = psn;
	/* between switches an ACK of a model frame of K packets stands for the lab's K / kSwitchAck */
	SendCtl(ci, T_ACK, psn, SwitchLink(ci) ? std::max(1u, (unit_ / kMtu) / kSwitchAck) : 1);
}

/* ArmTimer() - the retransmission timer of @ci runs while frames are unacknowledged (@restart: anew). */
void Sim::ArmTimer(int ci, bool restart)
{
	Conn &c = c_[size_t(ci)];
	if (restart)
		c.timer.Cancel();
	if (c.una < c.max_sent && !c.timer.IsRunning())
		c.timer = Simulator::Schedule(Seconds(p_.rto), &Sim::Timeout, this, ci);
}

/* Timeout() - no progress for an RTO: go back to the oldest unacknowledged frame. */
void Sim::Timeout(int ci)
{
	Conn &c = c_[size_t(ci)];
	if (c.una >= c.max_sent)
		return;
	r_.timeouts++;
	c.next = c.una;
	Kick(ci);
	ArmTimer(ci, false);
}

/* PktBytes() - payload bytes of packet @k of a rank's buffer (the last one may be short). */
uint32_t Sim::PktBytes(uint64_t k) const
{
	const Call &cl = calls_[CallOf(uint32_t(k))];
	uint64_t j = k - cl.pk0, end = std::min<uint64_t>((j + 1) * unit_, cl.bytes);
	return end > j * unit_ ? uint32_t(end - j * unit_) : 0;
}

/* CallOf() - the call (index into calls_) that packet @k belongs to. */
uint32_t Sim::CallOf(uint32_t k) const
{
	if (calls_.size() == 1)
		return 0;
	auto it = std::upper_bound(calls_.begin(), calls_.end(), k, [](uint32_t v, const Call &c) { return v < c.pk0; });
	return uint32_t(it - calls_.begin()) - 1;
}

/* SrcValue() - the stand-in rank @rank's packet @k of call @cl carries: its data's, 0 when it sends it empty (a Barrier's: its arrival). */
uint32_t Sim::SrcValue(int rank, const Call &cl, uint32_t k) const
{
	return HasData(rank, cl) || cl.prim == Prim::Barrier ? F(uint32_t(rank), k) : 0;
}

/* SrcFrame() - packet @k of rank @rank's own data, in messages of p.message packets from its call's first. */
Frame Sim::SrcFrame(int rank, uint32_t k) const
{
	const Call &cl = calls_[CallOf(k)];
	uint32_t first = cl.pk0 + (k - cl.pk0) / p_.message * p_.message, end = std::min(first + p_.message, cl.pk0 + cl.npk);
	uint64_t mb = std::min<uint64_t>(uint64_t(end - cl.pk0) * unit_, cl.bytes) - uint64_t(first - cl.pk0) * unit_;
	return Frame{PktBytes(k), uint32_t(mb), rank >= 0 ? F(uint32_t(rank), k) : 0, k + 1 == end, Pkts(PktBytes(k))};
}

/*
 * EmptyFrame() - packet @k of a rank without data (a Broadcast's non-root):
 * libinccl sends each of the collective's packets empty and alone, a message
 * each, so that every rank's PSNs stay aligned; a model frame stands for as
 * many empty packets as packet @k's data frame would. The switch acknowledges
 * them once per message of data packets (p.message) and at the end, as it
 * does data messages: the lab's switch coalesces a host's ACK requests into
 * one ACK per 32 SENDs (ACK_EVERY of switch/engine.c) or a pause.
 */
Frame Sim::EmptyFrame(uint32_t k, uint32_t value) const
{
	const Call &cl = calls_[CallOf(k)];
	Frame f{0, 0, value, true, Pkts(PktBytes(k))};
	f.quiet = (k - cl.pk0 + 1) % p_.message != 0 && k + 1 != cl.pk0 + cl.npk;
	return f;
}

/* HasData() - whether rank @rank sends data in call @cl (AllReduce, Reduce: every rank; Broadcast, Route: the source; Barrier: none) or empty packets. */
bool Sim::HasData(int rank, const Call &cl) const
{
	switch (cl.prim) {
	case Prim::AllReduce:
	case Prim::Reduce: return true;
	case Prim::Barrier: return false;
	default: return rank == cl.src;
	}
}

/* Expects() - whether rank @rank takes results of call @cl (AllReduce, Barrier: every rank; Reduce, Route: the destination; Broadcast: all but the root). */
bool Sim::Expects(int rank, const Call &cl) const
{
	switch (cl.prim) {
	case Prim::Reduce:
	case Prim::Route: return rank == cl.dst;
	case Prim::Broadcast: return rank != cl.src;
	default: return true;
	}
}

/*
 * Wants() - whether a switch sends the result of call @cl to its child node
 * @v, as the lab's switch decides (child_wants() of switch/engine.c):
 * AllReduce and Barrier every child; Reduce and Route the child whose
 * subtree holds the destination; Broadcast every child but one that is the
 * root alone (a host that is the root has the data).
 */
bool Sim::Wants(int v, const Call &cl) const
{
	int rank = cl.prim == Prim::Broadcast ? cl.src : cl.dst;
	if (rank < 0)
		return true;
	const TreeNode &r = t_.nodes[size_t(t_.host_of_rank[size_t(rank)])], &c = t_.nodes[size_t(v)];
	bool holds = c.tin <= r.tin && r.tin < c.tout;
	return cl.prim == Prim::Broadcast ? !(holds && hosts_below_[size_t(v)] == 1) : holds;
}

/* SubtreeWants() - whether any child of switch @s wants the result of call @cl (else a leaf takes none from its parent). */
bool Sim::SubtreeWants(int s, const Call &cl) const
{
	for (int ch : t_.nodes[size_t(s)].children)
		if (Wants(ch, cl))
			return true;
	return false;
}

/* DownPk() - the packet whose result PSN @psn of down connection @ci carries (Conn.dsegs). */
uint32_t Sim::DownPk(int ci, uint32_t psn) const
{
	const auto &v = c_[size_t(ci)].dsegs;
	auto it = std::upper_bound(v.begin(), v.end(), psn, [](uint32_t x, const DownSeg &g) { return x < g.psn0; });
	return (it - 1)->pk0 + (psn - (it - 1)->psn0);
}

/* DownPsn() - the PSN that carries packet @k's result on down connection @ci; kNone when it carries none. */
uint32_t Sim::DownPsn(int ci, uint32_t k) const
{
	const auto &v = c_[size_t(ci)].dsegs;
	auto it = std::upper_bound(v.begin(), v.end(), k, [](uint32_t x, const DownSeg &g) { return x < g.pk0; });
	if (it == v.begin() || k >= (it - 1)->pk0 + (it - 1)->n)
		return kNone;
	return (it - 1)->psn0 + (k - (it - 1)->pk0);
}

/* DownCount() - the results of packets below @kend that down connection @ci carries: its PSNs ready once they are. */
uint32_t Sim::DownCount(int ci, uint32_t kend) const
{
	const auto &v = c_[size_t(ci)].dsegs;
	auto it = std::upper_bound(v.begin(), v.end(), kend, [](uint32_t x, const DownSeg &g) { return x <= g.pk0; });
	if (it == v.begin())
		return 0;
	--it;
	return it->psn0 + std::min(it->n, kend - it->pk0);
}

/*
 * PostMore() - host @u posts its next messages of its current call on its
 * up connection while they fit the window; each costs o + n·G. A rank
 * without data posts each packet as an empty message of its own: o each. In
 * a collective (INC), a rank that takes results also stays within libinccl's
 * window of the results of the call it has processed (run_xfer(): at most a
 * window unanswered).
 */
void Sim::PostMore(int u)
{
	NodeState &s = n_[size_t(u)];
	if (s.cur_call >= calls_.size() || s.call_wait)
		return;
	const Call &cl = calls_[s.cur_call];
	Conn &c = c_[size_t(s.up)];
	int rank = t_.nodes[size_t(u)].rank;
	bool data = HasData(rank, cl), answered = inc_ && Expects(rank, cl);
	uint32_t per = data ? p_.message : 1, msgs = data ? cl.nmsg : cl.npk, cend = cl.pk0 + cl.npk;
	while (s.post_next < msgs) {
		uint32_t first = cl.pk0 + s.post_next * per, end = std::min(first + per, cend);
		if (end > c.una + c.window)
			break;
		if (answered && end - cl.pk0 > std::min(s.recv_msgs * p_.message, cl.npk) + p_.window_host)
			break;
		uint32_t mb = SrcFrame(-1, first).msg_bytes;
		double cost = data ? IncSend(Pkts(mb), mb) : IncEmpty(EmptyFrame(first).pkts);
		int ci = s.up;
		Cpu(u, cost, [this, ci, end]() {
			c_[size_t(ci)].ready = end;
			Kick(ci);
		});
		s.post_next++;
	}
}

/*
 * HostCheckDone() - host @u is done with a call once every result of it is
 * processed and every frame it sent acknowledged; it then starts the next
 * (hostlib/coll.c: one call after the other), and is done after the last.
 */
void Sim::HostCheckDone(int u)
{
	NodeState &s = n_[size_t(u)];
	int rank = t_.nodes[size_t(u)].rank;
	while (!s.done) {
		const Call &cl = calls_[s.cur_call];
		if (s.recv_msgs < (Expects(rank, cl) ? cl.nmsg : 0) || c_[size_t(s.up)].una < cl.pk0 + cl.npk)
			return;
		s.post_next = 0;
		s.recv_msgs = 0;
		if (++s.cur_call < calls_.size()) {
			StartCall(u);
			if (s.call_wait)
				return;
			continue;
		}
		s.done = true;
		r_.host_done[size_t(rank)] = Simulator::Now().GetSeconds();
	}
}

/*
 * StartCall() - host @u starts its current call (INC): it posts once the call's own time
 * (Params.call_inc: libinccl's setup and wake-ups, the ranks' skew) has passed, at once without one.
 */
void Sim::StartCall(int u)
{
	if (!(p_.call_inc > 0)) {
		PostMore(u);
		return;
	}
	n_[size_t(u)].call_wait = true;
	Simulator::Schedule(Seconds(p_.call_inc), [this, u]() {
		n_[size_t(u)].call_wait = false;
		PostMore(u);
		HostCheckDone(u);
	});
}

/*
 * RingStart() - when the ring's ranks post first: Params.call_ring per step of the collective
 * (the analytic model's: 2(P-1) for AllReduce and Barrier, P-1 for the others), waited once
 * before the first post, as the steps follow each other on the critical path.
 */
double Sim::RingStart() const
{
	int p = Ranks();
	double steps = coll_ == Coll::AllReduce || coll_ == Coll::Barrier ? 2.0 * (p - 1) : p - 1.0;
	return p_.call_ring > 0 ? steps * p_.call_ring : 0;
}

/* SwitchResults() - switch @s passes the results ready in order to every child. */
void Sim::SwitchResults(int s)
{
	NodeState &st = n_[size_t(s)];
	while (st.res_next < npkts_) {
		Slot &sl = st.slots[st.res_next % p_.slots];
		if (sl.psn != st.res_next || !sl.res)
			break;
		st.res_next++;
	}
	for (int ch : t_.nodes[size_t(s)].children) {
		int ci = n_[size_t(ch)].down;
		if (c_[size_t(ci)].dsegs.empty())
			continue; /* it wants no result of any call */
		c_[size_t(ci)].ready = DownCount(ci, st.res_next);
		Kick(ci);
	}
}

/* SwitchFree() - switch @s frees the slots every child and the parent acknowledged. */
void Sim::SwitchFree(int s)
{
	NodeState &st = n_[size_t(s)];
	uint32_t before = st.free_next;
	while (st.free_next < st.res_next) {
		uint32_t k = st.free_next;
		bool all = !(st.up >= 0 && c_[size_t(st.up)].una <= k);
		for (int ch : t_.nodes[size_t(s)].children) {
			int ci = n_[size_t(ch)].down;
			uint32_t psn = all ? DownPsn(ci, k) : kNone;
			all = all && (psn == kNone || c_[size_t(ci)].una > psn);
		}
		if (!all)
			break;
		st.slots[k % p_.slots] = Slot();
		st.free_next++;
	}
	if (st.free_next == before)
		return;
	for (int ch : t_.nodes[size_t(s)].children) { /* the ACKs held back go as far as the slots freed allow */
		int ci = n_[size_t(ch)].up;
		if (c_[size_t(ci)].held != kNone)
			Ack(ci, c_[size_t(ci)].held);
	}
}

Result Sim::RunInc()
{
	inc_ = true;
	for (size_t i = 0; i < t_.nodes.size(); i++) {
		int par = t_.nodes[i].parent;
		if (par < 0)
			continue;
		n_[i].up = NewConn(int(i), par);
		n_[i].down = NewConn(par, int(i));
		/* the results the switch sends this child: those of the calls it wants, PSN after PSN */
		auto &segs = c_[size_t(n_[i].down)].dsegs;
		uint32_t psn = 0;
		for (const Call &cl : calls_) {
			if (!Wants(int(i), cl))
				continue;
			if (!segs.empty() && segs.back().pk0 + segs.back().n == cl.pk0)
				segs.back().n += cl.npk;
			else
				segs.push_back(DownSeg{psn, cl.pk0, cl.npk});
			psn += cl.npk;
		}
	}
	for (size_t i = 0; i < t_.nodes.size(); i++) {
		int u = int(i);
		NodeState &s = n_[i];
		const TreeNode &tn = t_.nodes[i];
		if (tn.host) {
			int rank = tn.rank;
			c_[size_t(s.up)].frame = [this, rank](uint32_t k) {
				const Call &cl = calls_[CallOf(k)];
				return HasData(rank, cl) ? SrcFrame(rank, k) : EmptyFrame(k, SrcValue(rank, cl, k));
			};
			c_[size_t(s.up)].on_ack = [this, u]() {
				PostMore(u);
				HostCheckDone(u);
			};
			int ci = s.down;
			c_[size_t(s.down)].on_data = [this, u, rank, ci](uint32_t psn, const Frame &f) {
				uint32_t k = DownPk(ci, psn);
				if (!Expects(rank, calls_[CallOf(k)]) || f.value != expect_[k])
					r_.wrong_pkts++; /* a wrong result, or one this rank is not due */
				if (f.last)
					Cpu(u, IncRecv(f.msg_bytes), [this, u]() {
						n_[size_t(u)].recv_msgs++;
						PostMore(u);
						HostCheckDone(u);
					});
				return true;
			};
			continue;
		}
		s.slots.assign(p_.slots, Slot());
		uint32_t nch = uint32_t(tn.children.size());
		bool root = tn.parent < 0;
		for (int ch : tn.children) {
			c_[size_t(n_[size_t(ch)].up)].on_data = [this, u, nch, root](uint32_t k, const Frame &f) {
				NodeState &st = n_[size_t(u)];
				Slot &sl = st.slots[k % p_.slots];
				if (sl.psn != k) {
					if (sl.psn != kNone)
						return false; /* an older round still holds the slot */
					sl = Slot();
					sl.psn = k;
					sl.meta = f;
				} else if (f.bytes > sl.meta.bytes) {
					sl.meta = f; /* a Broadcast's result goes in the root's frames and messages */
				}
				sl.val += f.value;
				if (++sl.count < nch)
					return true;
				sl.agg = true;
				if (root) {
					sl.result = sl.val;
					sl.res = true;
					SwitchResults(u);
					return true;
				}
				while (st.agg_next < npkts_) {
					Slot &a = st.slots[st.agg_next % p_.slots];
					if (a.psn != st.agg_next || !a.agg)
						break;
					st.agg_next++;
				}
				c_[size_t(st.up)].ready = st.agg_next;
				Kick(st.up);
				if (!SubtreeWants(u, calls_[CallOf(k)])) { /* no result comes down (a Reduce's other subtrees, a Broadcast's root alone) */
					sl.res = true;
					SwitchResults(u);
				}
				return true;
			};
			int dci = n_[size_t(ch)].down;
			Conn &dc = c_[size_t(dci)];
			dc.frame = [this, u, dci](uint32_t psn) {
				uint32_t k = DownPk(dci, psn);
				const Slot &sl = n_[size_t(u)].slots[k % p_.slots];
				Frame f{sl.meta.bytes, sl.meta.msg_bytes, sl.result, sl.meta.last, sl.meta.pkts};
				f.quiet = sl.meta.quiet;
				return f;
			};
			dc.on_ack = [this, u]() { SwitchFree(u); };
		}
		if (!root) {
			c_[size_t(s.up)].frame = [this, u](uint32_t k) {
				const Slot &sl = n_[size_t(u)].slots[k % p_.slots];
				Frame f{sl.meta.bytes, sl.meta.msg_bytes, sl.val, sl.meta.last, sl.meta.pkts};
				f.quiet = sl.meta.quiet;
				return f;
			};
			c_[size_t(s.up)].on_ack = [this, u]() { SwitchFree(u); };
			int ci = s.down;
			c_[size_t(s.down)].on_data = [this, u, ci](uint32_t psn, const Frame &f) {
				uint32_t k = DownPk(ci, psn);
				Slot &sl = n_[size_t(u)].slots[k % p_.slots];
				if (sl.psn != k) {
					r_.wrong_pkts++; /* a result no slot awaits: a fault of the model */
					return true;
				}
				sl.result = f.value;
				sl.res = true;
				/* the result goes down as the parent cut it: a Broadcast's or Route's data into a
				 * subtree whose ranks all sent their packets empty (its slot's frames were theirs) */
				sl.meta.bytes = f.bytes;
				sl.meta.msg_bytes = f.msg_bytes;
				sl.meta.last = f.last;
				sl.meta.quiet = f.quiet;
				sl.meta.pkts = f.pkts;
				SwitchResults(u);
				return true;
			};
		}
	}
	for (int u : t_.host_of_rank)
		Simulator::ScheduleNow(&Sim::StartCall, this, u);
	Simulator::Run();
	return Finish();
}

/* RingChunk() - the chunk rank @rank sends (@send) or receives at ring step @step. */
uint32_t Sim::RingChunk(int rank, int step, bool send) const
{
	int p = Ranks(), c;
	if (step < p - 1)
		c = send ? rank - step : rank - step - 1;
	else
		c = send ? rank + 1 - (step - (p - 1)) : rank - (step - (p - 1));
	return uint32_t(((c % p) + p) % p);
}

/* ChunkFrame() - frame @idx of a chunk of @n frames from frame @pkt0, in the ring's messages of piece_ frames. */
Frame Sim::ChunkFrame(uint32_t pkt0, uint32_t n, uint32_t idx, uint32_t value) const
{
	uint32_t first = idx / piece_ * piece_, end = std::min(first + piece_, n);
	uint64_t mb = 0;
	for (uint32_t j = first; j < end; j++)
		mb += PktBytes(pkt0 + j);
	Frame f{PktBytes(pkt0 + idx), uint32_t(mb), value, idx + 1 == end, Pkts(PktBytes(pkt0 + idx))};
	f.first = idx == first;
	return f;
}

/* RingPostStep() - host @u posts the sends of its next ring step: messages queued for the window. */
void Sim::RingPostStep(int u)
{
	NodeState &s = n_[size_t(u)];
	int rank = t_.nodes[size_t(u)].rank;
	uint32_t ch = RingChunk(rank, s.send_posted++, true), pkt0 = ChunkStart(ch), n = ChunkLen(ch);
	if (n) {
		s.segs.push_back(NodeState::Seg{s.sent_total, pkt0, n});
		for (uint32_t first = 0; first < n; first += piece_) {
			Frame f = ChunkFrame(pkt0, n, first, 0);
			s.pending.push_back(NodeState::Post{s.sent_total + std::min(first + piece_, n), f.msg_bytes});
		}
		s.sent_total += n;
	}
	DrainPosts(u, false);
}

/* RingRecvDone() - host @u processed all of ring step @step's receive: the next step's send may go. */
void Sim::RingRecvDone(int u, int step)
{
	NodeState &s = n_[size_t(u)];
	int steps = 2 * (Ranks() - 1), rank = t_.nodes[size_t(u)].rank;
	s.recv_done = step + 1;
	if (s.recv_done < steps) {
		RingPostStep(u);
		if (ChunkLen(RingChunk(rank, s.recv_done, false)) == 0)
			RingRecvDone(u, s.recv_done);
		return;
	}
	if (c_[size_t(s.out)].una >= s.sent_total && !s.done) {
		s.done = true;
		r_.host_done[size_t(rank)] = Simulator::Now().GetSeconds();
	}
}

Result Sim::RunRing()
{
	int p = Ranks();
	piece_ = std::max(1u, kRingPiece * kMtu / unit_); /* libinccl ring's messages, as RunChain() and RunPlan() */
	for (int r = 0; r < p; r++)
		n_[size_t(t_.host_of_rank[size_t(r)])].out = NewConn(t_.host_of_rank[size_t(r)], t_.host_of_rank[size_t((r + 1) % p)]);
	for (int r = 0; r < p; r++) {
		int u = t_.host_of_rank[size_t(r)];
		NodeState &s = n_[size_t(u)];
		s.in = n_[size_t(t_.host_of_rank[size_t((r + p - 1) % p)])].out;
		s.buf.resize(npkts_);
		for (uint32_t k = 0; k < npkts_; k++)
			s.buf[k] = F(uint32_t(r), k);
		Conn &out = c_[size_t(s.out)];
		out.frame = [this, u](uint32_t psn) {
			const NodeState &st = n_[size_t(u)];
			auto it = std::upper_bound(st.segs.begin(), st.segs.end(), psn,
						   [](uint32_t v, const NodeState::Seg &g) { return v < g.psn0; });
			const NodeState::Seg &g = *(it - 1);
			uint32_t idx = psn - g.psn0;
			return ChunkFrame(g.pkt0, g.n, idx, st.buf[g.pkt0 + idx]);
		};
		out.on_ack = [this, u]() {
			NodeState &st = n_[size_t(u)];
			DrainPosts(u, false);
			int steps = 2 * (Ranks() - 1);
			if (st.recv_done == steps && c_[size_t(st.out)].una >= st.sent_total && !st.done) {
				st.done = true;
				r_.host_done[size_t(t_.nodes[size_t(u)].rank)] = Simulator::Now().GetSeconds();
			}
		};
		c_[size_t(s.in)].on_data = [this, u, r, p](uint32_t, const Frame &f) {
			if (!RecvSlot(u, f))
				return false;
			NodeState &st = n_[size_t(u)];
			int steps = 2 * (p - 1);
			while (st.cur_step < steps && st.cur_off == ChunkLen(RingChunk(r, st.cur_step, false))) {
				st.cur_step++;
				st.cur_off = 0;
			}
			if (st.cur_step >= steps) {
				r_.wrong_pkts++; /* more data than the ring sends: a fault of the model */
				return true;
			}
			uint32_t ch = RingChunk(r, st.cur_step, false), n = ChunkLen(ch), pkt = ChunkStart(ch) + st.cur_off;
			if (st.cur_step < p - 1)
				st.buf[pkt] += f.value;
			else
				st.buf[pkt] = f.value;
			st.cur_off++;
			if (f.last) {
				int step = st.cur_step;
				bool step_end = st.cur_off == n;
				/* every step's but the last gates the next step's send: the ranks move in step */
				Cpu(u, RingRecv(f.msg_bytes, step < p - 1, step < steps - 1), [this, u, step, step_end]() {
					n_[size_t(u)].rx_held--; /* taken: its receive is posted again */
					if (step_end)
						RingRecvDone(u, step);
				});
			}
			return true;
		};
	}
	for (int r = 0; r < p; r++) {
		int u = t_.host_of_rank[size_t(r)];
		Simulator::Schedule(Seconds(RingStart()), [this, u, r]() {
			RingPostStep(u);
			if (ChunkLen(RingChunk(r, 0, false)) == 0)
				RingRecvDone(u, 0);
		});
	}
	Simulator::Run();
	for (int r = 0; r < p; r++) {
		const NodeState &s = n_[size_t(t_.host_of_rank[size_t(r)])];
		for (uint32_t k = 0; k < npkts_; k++)
			r_.wrong_pkts += s.buf[k] != expect_[k];
	}
	return Finish();
}

/*
 * RecvSlot() - whether ring or chain host @u has a receive posted for the
 * message that frame @f belongs to; its first frame takes one (held until
 * the message is taken: the caller gives it back). libinccl's ring keeps
 * kRingRecvs receives posted and reposts one only once it has taken the
 * message in it (ring.c take()), so a rank that receives faster than it
 * takes runs out and rxe answers RNR: its left neighbour waits and resends,
 * paced by this rank. Without it a Broadcast's root finished its sends
 * while the chain behind it had most of the data still to forward (1-2-4,
 * 128 MiB: 8.4 s of 13.0 s), where the lab's root returns near the end.
 */
bool Sim::RecvSlot(int u, const Frame &f)
{
	NodeState &s = n_[size_t(u)];
	if (!f.first)
		return true;
	if (s.rx_held >= kRingRecvs)
		return false;
	s.rx_held++;
	return true;
}

/* ChainQueue() - host @u queues the send of chain message @piece (libinccl's ring piece) and posts what the window allows. */
void Sim::ChainQueue(int u, uint32_t piece)
{
	NodeState &s = n_[size_t(u)];
	uint32_t first = piece * piece_, end = std::min(first + piece_, npkts_);
	s.pending.push_back(NodeState::Post{end, ChunkFrame(first, end - first, 0, 0).msg_bytes});
	DrainPosts(u, true);
}

/*
 * DrainPosts() - host @u posts its queued ring or chain messages while they
 * fit the window; each costs o + n·G on its CPU. With @ahead (the chain) they
 * go ahead of the received messages still waiting to be processed:
 * libinccl's ring (run_plan()) posts every send it may between two polls of
 * at most 32 completions. A plain FIFO let a rank that receives faster than
 * it forwards put every receive first and forward late (1-2-4, 16 MiB Reduce:
 * 1.93 s, each rank added 0.6 s; now 1.35 s). The ring AllReduce's posts keep
 * the CPU's order (@ahead false), as they always did.
 */
void Sim::DrainPosts(int u, bool ahead)
{
	NodeState &s = n_[size_t(u)];
	Conn &c = c_[size_t(s.out)];
	while (s.pending_head < s.pending.size() && s.pending[s.pending_head].end <= c.una + c.window) {
		const NodeState::Post &po = s.pending[s.pending_head++];
		int ci = s.out;
		uint32_t end = po.end;
		Cpu(
			u, RingSend(po.bytes),
			[this, ci, end]() {
				c_[size_t(ci)].ready = end;
				Kick(ci);
			},
			ahead);
	}
}

/* ChainCheckDone() - host @u is done once it processed every message due to it and its own are acknowledged. */
void Sim::ChainCheckDone(int u)
{
	NodeState &s = n_[size_t(u)];
	int rank = t_.nodes[size_t(u)].rank;
	uint32_t pieces = (npkts_ + piece_ - 1) / piece_;
	if (s.done || (rank != chain_first_ && uint32_t(s.recv_done) < pieces) ||
	    (rank != chain_last_ && c_[size_t(s.out)].una < npkts_))
		return;
	s.done = true;
	r_.host_done[size_t(rank)] = Simulator::Now().GetSeconds();
}

/*
 * RunChain() - the host baseline of Broadcast and Reduce: a pipelined chain
 * along the ring (rank r sends to r + 1). Broadcast is libinccl's
 * (hostlib/ring.c bc_send/bc_recv): the root sends its buffer in messages of
 * kRingPiece packets, every other rank forwards message i once it has
 * received (and processed) it, the root's left neighbour ends the chain.
 * Reduce, which libinccl's ring does not have, is that chain reversed: it
 * starts at root + 1, each rank adds its own data to message i before it
 * forwards it, the root adds its own last.
 */
Result Sim::RunChain()
{
	int p = Ranks();
	bool reduce = coll_ == Coll::Reduce;
	chain_first_ = reduce ? (root_ + 1) % p : root_;
	chain_last_ = (chain_first_ + p - 1) % p;
	piece_ = std::max(1u, kRingPiece * kMtu / unit_);
	uint32_t pieces = (npkts_ + piece_ - 1) / piece_;
	for (int r = 0; r < p; r++)
		if (r != chain_last_)
			n_[size_t(t_.host_of_rank[size_t(r)])].out =
				NewConn(t_.host_of_rank[size_t(r)], t_.host_of_rank[size_t((r + 1) % p)]);
	for (int r = 0; r < p; r++) {
		int u = t_.host_of_rank[size_t(r)];
		NodeState &s = n_[size_t(u)];
		s.buf.assign(npkts_, 0);
		if (reduce || r == root_)
			for (uint32_t k = 0; k < npkts_; k++)
				s.buf[k] = F(uint32_t(r), k);
		if (r != chain_last_) {
			Conn &out = c_[size_t(s.out)];
			out.frame = [this, u](uint32_t k) {
				uint32_t first = k / piece_ * piece_, n = std::min(first + piece_, npkts_) - first;
				return ChunkFrame(first, n, k - first, n_[size_t(u)].buf[k]);
			};
			out.on_ack = [this, u]() {
				DrainPosts(u, true);
				ChainCheckDone(u);
			};
		}
		if (r == chain_first_)
			continue;
		s.in = n_[size_t(t_.host_of_rank[size_t((r + p - 1) % p)])].out;
		c_[size_t(s.in)].on_data = [this, u, r, reduce, pieces](uint32_t k, const Frame &f) {
			if (!RecvSlot(u, f))
				return false;
			NodeState &st = n_[size_t(u)];
			st.buf[k] = reduce ? st.buf[k] + f.value : f.value;
			if (f.last)
				Cpu(u, RingRecv(f.msg_bytes, reduce, false), [this, u, r, k]() { /* a chain: none waits */
					NodeState &sn = n_[size_t(u)];
					sn.rx_held--; /* taken: its receive is posted again */
					sn.recv_done++;
					if (r != chain_last_)
						ChainQueue(u, k / piece_); /* forward what came in */
					ChainCheckDone(u);
				});
			return true;
		};
	}
	int first = t_.host_of_rank[size_t(chain_first_)];
	Simulator::Schedule(Seconds(RingStart()), [this, first, pieces]() {
		for (uint32_t i = 0; i < pieces; i++)
			ChainQueue(first, i);
	});
	Simulator::Run();
	for (int r = 0; r < p; r++) { /* a Reduce's result is the root's; a Broadcast's every rank's */
		if (reduce && r != root_)
			continue;
		const NodeState &s = n_[size_t(t_.host_of_rank[size_t(r)])];
		for (uint32_t k = 0; k < npkts_; k++)
			r_.wrong_pkts += s.buf[k] != expect_[k];
	}
	return Finish();
}

/*
 * The ring plans of libinccl's AllGather, ReduceScatter, AllToAll and
 * Barrier (hostlib/ring.c, in elements of kElem bytes): message i of a
 * rank's stream to the right moves elements [off, off + len) of its work
 * buffer; received message i lands on the same range of the receiver's,
 * added (ReduceScatter's, the Barrier's first half) or copied. Send i waits
 * until `need` messages were taken; an AllToAll's received message i waits
 * until send i was posted (it overwrites what that one reads).
 *   AllGather, ReduceScatter (ag_*, rs_*): blocks of plan_n_ elements cut
 *   into rounds of one piece (plan_piece_) per block; step k of a round
 *   sends block rank - k (ReduceScatter: rank - k - 1) and receives block
 *   rank - k - 1 (rank - k - 2).
 *   AllToAll (a2a_*): nranks - 1 blocks by distance, step s sends blocks
 *   s - 1 .. nranks - 2 (pieces cut from the end), receives the same range.
 *   Barrier: the ring AllReduce (ar_*) of one element.
 */
void Sim::PlanSend(int rank, uint32_t i, uint64_t *off, uint64_t *len, uint32_t *need) const
{
	long p = Ranks();
	auto mod = [p](long a) { return uint64_t(((a % p) + p) % p); };
	if (coll_ == Coll::Barrier) { /* ar_send of one element: one round */
		uint64_t steps = 2 * uint64_t(p - 1), k = i % steps, h = uint64_t(p - 1);
		uint64_t sidx = k < h ? mod(rank - long(k)) : mod(rank + 1 - long(k - h));
		*off = sidx * plan_n_ / uint64_t(p);
		*len = (sidx + 1) * plan_n_ / uint64_t(p) - *off;
		*need = k == 0 ? 0 : i;
		return;
	}
	if (coll_ == Coll::AllToAll) {
		uint64_t st, k, base;
		A2aFind(i, &st, &k, &base);
		uint64_t end = uint64_t(p - 1) * plan_n_, start = (st - 1) * plan_n_, hi = end - k * plan_piece_;
		uint64_t lo = hi - start > plan_piece_ ? hi - plan_piece_ : start;
		*off = lo;
		*len = hi - lo;
		*need = st == 1 ? 0 : uint32_t(base - A2aPieces(st - 1) + k + 1);
		return;
	}
	uint64_t h = uint64_t(p - 1), q = i / h, k = i % h, first = q * plan_piece_;
	uint64_t b = coll_ == Coll::AllGather ? mod(rank - long(k)) : mod(rank - long(k) - 1);
	*off = b * plan_n_ + first;
	*len = std::min(plan_n_ - first, plan_piece_);
	*need = k == 0 ? 0 : i;
}

/* PlanRecv() - the range received message @i of rank @rank lands on, and whether it is added (@reduce) or copied. */
void Sim::PlanRecv(int rank, uint32_t i, uint64_t *off, uint64_t *len, bool *reduce) const
{
	long p = Ranks();
	auto mod = [p](long a) { return uint64_t(((a % p) + p) % p); };
	uint32_t need;
	if (coll_ == Coll::Barrier) {
		uint64_t steps = 2 * uint64_t(p - 1), k = i % steps, h = uint64_t(p - 1);
		uint64_t sidx = k < h ? mod(rank - long(k) - 1) : mod(rank - long(k - h));
		*off = sidx * plan_n_ / uint64_t(p);
		*len = (sidx + 1) * plan_n_ / uint64_t(p) - *off;
		*reduce = k < h;
		return;
	}
	if (coll_ == Coll::AllToAll) {
		PlanSend(rank, i, off, len, &need); /* the same step and piece */
		*reduce = false;
		return;
	}
	uint64_t h = uint64_t(p - 1), q = i / h, k = i % h, first = q * plan_piece_;
	uint64_t b = coll_ == Coll::AllGather ? mod(rank - long(k) - 1) : mod(rank - long(k) - 2);
	*off = b * plan_n_ + first;
	*len = std::min(plan_n_ - first, plan_piece_);
	*reduce = coll_ == Coll::ReduceScatter;
}

/* A2aPieces() - the messages of AllToAll step @s (ring.c a2a_pieces()). */
uint64_t Sim::A2aPieces(uint64_t st) const
{
	return ((uint64_t(Ranks()) - st) * plan_n_ + plan_piece_ - 1) / plan_piece_;
}

/* A2aFind() - the step *@s and piece *@k of AllToAll message @i; *@base: the messages of the steps before (ring.c a2a_find()). */
void Sim::A2aFind(uint32_t i, uint64_t *st, uint64_t *k, uint64_t *base) const
{
	uint64_t b = 0;
	for (*st = 1; *st + 1 < uint64_t(Ranks()); (*st)++) {
		uint64_t m = A2aPieces(*st);
		if (i < b + m)
			break;
		b += m;
	}
	*k = i - b;
	*base = b;
}

/*
 * PlanPost() - host @u posts its next plan messages while run_plan() would:
 * each once the messages it needs were taken, at most kRingWindow
 * unacknowledged and rxe's frames in flight. A post costs o + n·G and goes
 * ahead of the receives waiting for the CPU (run_plan() posts every send it
 * may between two polls); at its end the message's contents are copied
 * (the send buffer), its frames go.
 */
void Sim::PlanPost(int u)
{
	NodeState &s = n_[size_t(u)];
	Conn &c = c_[size_t(s.out)];
	int rank = t_.nodes[size_t(u)].rank;
	while (s.post_next < plan_nmsg_) {
		uint64_t off, len;
		uint32_t need;
		PlanSend(rank, s.post_next, &off, &len, &need);
		uint32_t bytes = uint32_t(len * kElem), nf = bytes ? (bytes + unit_ - 1) / unit_ : 1;
		if (s.p_rdone < need || s.post_next - s.p_acked >= kRingWindow || s.p_frames + nf > c.una + c.window)
			break;
		s.pmsgs.push_back(NodeState::PMsg{s.p_frames, nf, bytes});
		s.p_frames += nf;
		s.post_next++;
		int ci = s.out;
		uint32_t end = s.p_frames;
		Cpu(
			u, RingSend(bytes),
			[this, u, ci, end, off, len]() {
				NodeState &st = n_[size_t(u)];
				uint64_t a0 = off / plan_atom_, na = len / plan_atom_;
				st.snaps.emplace_back(st.buf.begin() + long(a0), st.buf.begin() + long(a0 + na));
				st.p_sent++;
				c_[size_t(ci)].ready = end;
				Kick(ci);
				PlanTake(u);
			},
			true);
	}
}

/*
 * PlanTake() - host @u takes the messages it received and processed, in
 * order, into its work buffer (an AllToAll's once the send of the same
 * number was posted); then posts what that allows.
 */
void Sim::PlanTake(int u)
{
	NodeState &s = n_[size_t(u)];
	int rank = t_.nodes[size_t(u)].rank;
	while (s.p_rdone < s.p_rproc && (coll_ != Coll::AllToAll || s.p_sent >= s.p_rdone + 1)) {
		uint64_t off, len;
		bool reduce;
		PlanRecv(rank, s.p_rdone, &off, &len, &reduce);
		const std::vector<uint32_t> &m = s.arrived.front();
		uint64_t a0 = off / plan_atom_;
		if (m.size() != len / plan_atom_)
			r_.wrong_pkts++; /* a message of another length than the plan's: a fault of the model */
		for (size_t j = 0; j < m.size() && a0 + j < s.buf.size(); j++)
			s.buf[a0 + j] = reduce ? s.buf[a0 + j] + m[j] : m[j];
		s.arrived.pop_front();
		s.p_rdone++;
		s.rx_held--; /* taken: its receive is posted again (ring.c take()) */
	}
	PlanPost(u);
	PlanCheckDone(u);
}

/* PlanCheckDone() - host @u is done once it took every message, posted every one and has their ACKs. */
void Sim::PlanCheckDone(int u)
{
	NodeState &s = n_[size_t(u)];
	if (s.done || s.p_rdone < plan_nmsg_ || s.p_sent < plan_nmsg_ || c_[size_t(s.out)].una < s.p_frames)
		return;
	s.done = true;
	r_.host_done[size_t(t_.nodes[size_t(u)].rank)] = Simulator::Now().GetSeconds();
}

/*
 * RunPlan() - the host baseline of AllGather, ReduceScatter, AllToAll and
 * Barrier: libinccl's ring plans (hostlib/ring.c run_plan()) over the ring
 * of RunRing(), messages of at most kRingPiece packets (a model frame each
 * per Params.unit packets, at least one: an empty message is a frame of
 * headers). Contents are checked in atoms of plan_atom_ elements (every
 * boundary of a piece and a block is one): each message carries a copy of
 * its range, taken as the plan says; the results against stand-ins computed
 * apart: AllGather every block from its rank, ReduceScatter a rank's block
 * summed over every rank, AllToAll the block each rank holds for it, the
 * Barrier's one element every rank's sum.
 */
Result Sim::RunPlan()
{
	int p = Ranks();
	uint64_t blk = coll_ == Coll::Barrier ? kElem : bytes_ / uint64_t(p);
	plan_n_ = blk / kElem;
	plan_piece_ = kRingPiece * kMtu / kElem;
	plan_atom_ = coll_ == Coll::Barrier ? 1 : std::gcd<uint64_t>(plan_n_, unit_ / kElem);
	uint64_t work = coll_ == Coll::Barrier ? 1 : coll_ == Coll::AllToAll ? uint64_t(p - 1) * plan_n_ : uint64_t(p) * plan_n_;
	uint64_t nab = plan_n_ / plan_atom_; /* atoms per block */
	if (coll_ == Coll::Barrier)
		plan_nmsg_ = 2 * uint32_t(p - 1);
	else if (coll_ == Coll::AllToAll)
		for (int st = 1; st < p; st++)
			plan_nmsg_ += uint32_t(A2aPieces(uint64_t(st)));
	else
		plan_nmsg_ = uint32_t((plan_n_ + plan_piece_ - 1) / plan_piece_) * uint32_t(p - 1);
	for (int r = 0; r < p; r++)
		n_[size_t(t_.host_of_rank[size_t(r)])].out = NewConn(t_.host_of_rank[size_t(r)], t_.host_of_rank[size_t((r + 1) % p)]);
	for (int r = 0; r < p; r++) {
		int u = t_.host_of_rank[size_t(r)], left = t_.host_of_rank[size_t((r + p - 1) % p)];
		NodeState &s = n_[size_t(u)];
		s.in = n_[size_t(left)].out;
		/* the work buffer's input (ring.c coll_setup()), in atoms */
		s.buf.assign(work / plan_atom_, 0);
		for (uint64_t j = 0; j < s.buf.size(); j++) {
			uint64_t b = j / nab, a = j % nab;
			switch (coll_) {
			case Coll::AllGather: /* its own block, in place */
				if (b == uint64_t(r))
					s.buf[j] = F(uint32_t(r), uint32_t(a));
				break;
			case Coll::ReduceScatter: /* its input: block b for rank b */
				s.buf[j] = F(uint32_t(r), uint32_t(j));
				break;
			case Coll::AllToAll: /* by distance: block b for rank + b + 1 */
				s.buf[j] = F(uint32_t(r), uint32_t(((uint64_t(r) + b + 1) % uint64_t(p)) * nab + a));
				break;
			default: /* the Barrier's token */
				s.buf[j] = F(uint32_t(r), 0);
			}
		}
		Conn &out = c_[size_t(s.out)];
		out.frame = [this, u](uint32_t psn) {
			const NodeState &st = n_[size_t(u)];
			auto it = std::upper_bound(st.pmsgs.begin(), st.pmsgs.end(), psn,
						   [](uint32_t v, const NodeState::PMsg &m) { return v < m.psn0; });
			const NodeState::PMsg &m = *(it - 1);
			uint32_t j = psn - m.psn0, b = m.bytes > j * unit_ ? std::min(unit_, m.bytes - j * unit_) : 0;
			Frame f{b, m.bytes, 0, j + 1 == m.nf, Pkts(b)};
			f.first = j == 0;
			return f;
		};
		out.on_ack = [this, u]() {
			NodeState &st = n_[size_t(u)];
			while (st.p_acked < st.pmsgs.size() && st.pmsgs[st.p_acked].psn0 + st.pmsgs[st.p_acked].nf <= c_[size_t(st.out)].una)
				st.p_acked++;
			PlanPost(u);
			PlanCheckDone(u);
		};
		c_[size_t(s.in)].on_data = [this, u, left](uint32_t, const Frame &f) {
			if (!RecvSlot(u, f))
				return false;
			if (!f.last)
				return true;
			NodeState &st = n_[size_t(u)], &ls = n_[size_t(left)];
			if (ls.snaps.empty()) {
				r_.wrong_pkts++; /* a message never posted: a fault of the model */
				return true;
			}
			st.arrived.push_back(std::move(ls.snaps.front()));
			ls.snaps.pop_front();
			uint64_t off, len;
			bool sum;
			/* AllGather, ReduceScatter: each step's but a round's last gates the next send; an AllToAll's
			 * forwarded pieces came during the longer step before, a Barrier's empty messages are its step */
			uint32_t i = st.p_recvd, h = uint32_t(Ranks() - 1);
			bool waited = (coll_ == Coll::AllGather || coll_ == Coll::ReduceScatter) && i % h + 1 < h;
			PlanRecv(t_.nodes[size_t(u)].rank, st.p_recvd++, &off, &len, &sum);
			Cpu(u, RingRecv(f.msg_bytes, sum, waited), [this, u]() {
				n_[size_t(u)].p_rproc++;
				PlanTake(u);
			});
			return true;
		};
	}
	for (int r = 0; r < p; r++)
		Simulator::Schedule(Seconds(RingStart()), &Sim::PlanPost, this, t_.host_of_rank[size_t(r)]);
	Simulator::Run();
	/* the results (ring.c coll_finish()), against what each must be */
	uint64_t wrong_atoms = 0;
	for (int r = 0; r < p; r++) {
		const NodeState &s = n_[size_t(t_.host_of_rank[size_t(r)])];
		uint64_t bad = 0;
		for (uint64_t j = 0; j < s.buf.size(); j++) {
			uint64_t b = j / nab, a = j % nab;
			uint32_t want = 0;
			switch (coll_) {
			case Coll::AllGather: want = F(uint32_t(b), uint32_t(a)); break;
			case Coll::ReduceScatter:
				if (b != uint64_t(r))
					continue; /* partial sums: only this rank's block is its result */
				for (int q = 0; q < p; q++)
					want += F(uint32_t(q), uint32_t(j));
				break;
			case Coll::AllToAll: /* step b + 1 brought rank - b - 1's block for this rank */
				want = F(uint32_t((uint64_t(r) + uint64_t(p) - b - 1) % uint64_t(p)), uint32_t(uint64_t(r) * nab + a));
				break;
			default:
				for (int q = 0; q < p; q++)
					want += F(uint32_t(q), 0);
			}
			bad += s.buf[j] != want;
		}
		wrong_atoms += bad;
		r_.wrong_pkts += bad;
	}
	r_.wrong_elems = coll_ == Coll::Barrier ? r_.wrong_pkts : wrong_atoms * plan_atom_;
	return Finish();
}

Result Sim::RunTransfer(int src, int dst)
{
	int su = t_.host_of_rank[size_t(src)], du = t_.host_of_rank[size_t(dst)];
	n_[size_t(su)].up = NewConn(su, du);
	Conn &c = c_[size_t(n_[size_t(su)].up)];
	c.frame = [this, src](uint32_t k) { return SrcFrame(src, k); };
	c.on_ack = [this, su]() {
		PostMore(su);
		if (c_[size_t(n_[size_t(su)].up)].una == npkts_)
			r_.host_done[0] = Simulator::Now().GetSeconds();
	};
	c.on_data = [this, du, src](uint32_t k, const Frame &f) {
		if (f.value != F(uint32_t(src), k))
			r_.wrong_pkts++;
		if (f.last)
			Cpu(du, IncRecv(f.msg_bytes), [this, du]() {
				if (++n_[size_t(du)].recv_msgs == nmsgs_)
					r_.host_done[1] = Simulator::Now().GetSeconds();
			});
		return true;
	};
	Simulator::ScheduleNow(&Sim::PostMore, this, su);
	Simulator::Run();
	return Finish();
}

/* RunJobs() - node i of the tree (its hosts, in order) queues @jobs[i] at time 0; when each finished its last. */
std::vector<double> Sim::RunJobs(const std::vector<std::vector<double>> &jobs)
{
	std::vector<double> done(jobs.size(), 0);
	for (size_t i = 0; i < jobs.size(); i++) {
		int u = t_.host_of_rank[i];
		Simulator::ScheduleNow([this, u, i, &jobs, &done]() {
			for (double c : jobs[i])
				Cpu(u, c, [i, &done]() { done[i] = Simulator::Now().GetSeconds(); });
		});
	}
	Simulator::Run();
	return done;
}

/* Finish() - the run's time (the last completion; a host that never finished makes it infinite) and counters. */
Result Sim::Finish()
{
	r_.events = Simulator::GetEventCount();
	if (!r_.wrong_elems) /* INC, the ring AllReduce and the chain: a wrong model frame's elements */
		r_.wrong_elems = coll_ == Coll::Barrier ? r_.wrong_pkts : r_.wrong_pkts * p_.unit * (kMtu / kElem);
	double tmax = 0;
	for (double d : r_.host_done)
		tmax = d > 0 ? std::max(tmax, d) : 1.0 / 0.0;
	r_.time_s = tmax;
	for (const NodeState &s : n_) {
		(s.host ? r_.cpu_hosts : r_.cpu_switches) += s.busy;
		if (s.host)
			r_.cpu_host_max = std::max(r_.cpu_host_max, s.busy);
	}
	return r_;
}

} // namespace

bool ValidateParams(const Params &p, std::string *err)
{
	auto bad = [err](const std::string &m) {
		*err = m;
		return false;
	};
	if (!(p.link_bw > 0 && p.link_bw < 1e13))
		return bad("link bandwidth must be above 0 and below 10 TB/s");
	if (!(p.link_lat >= 0 && p.link_lat < 10))
		return bad("link latency must be 0..10 s");
	for (double o : {p.o_su, p.o_ack, p.o_s, p.o_r, p.o_c, p.o_w})
		if (!(o >= 0 && o < 10))
			return bad("host per-message costs (o_su, o_ack, o_s, o_r, o_c, o_w) must be 0..10 s");
	for (double g : {p.G_s, p.G_r, p.G_swap, p.G_copy, p.G_sum})
		if (!(g >= 0 && g < 1))
			return bad("host per-byte costs (G_s, G_r, G_swap, G_copy, G_sum) must be 0..1 s per byte");
	if (!(p.cores == 0 || (p.cores >= 0.01 && p.cores <= 65536)))
		return bad("cores must be 0 (a core per node) or 0.01..65536");
	if (!(p.sw_frame >= 0 && p.sw_frame < 10))
		return bad("switch per-frame cost must be 0..10 s");
	if (!(p.call_inc >= 0 && p.call_inc < 100) || !(p.call_ring >= 0 && p.call_ring < 100))
		return bad("a call's own time (INC, per ring step) must be 0..100 s");
	if (!(p.loss >= 0 && p.loss < 1))
		return bad("loss must be in [0, 1)");
	if (!(p.rto > 0 && p.rto < 100) || !(p.rnr >= 0 && p.rnr < 100))
		return bad("RTO must be above 0 and RNR wait 0..100 s");
	if (p.window_host < 1 || p.window_host > 16384 || p.window_switch < 1 || p.window_switch > 16384)
		return bad("windows must be 1..16384 frames");
	if (p.message < 1 || p.message > 64)
		return bad("message must be 1..64 frames");
	if (p.unit < 1 || p.unit > 32 || p.unit > p.message || p.message % p.unit)
		return bad("a model frame must be 1..32 packets, at most a message, and divide the message");
	if (p.slots < 1 || p.slots > (1u << 22))
		return bad("slots must be 1..4194304");
	if (p.queue < 1 || p.queue > (1u << 24))
		return bad("device queue must be 1..16777216 frames");
	return true;
}

Result RunCollective(const Tree &t, const Params &p, uint64_t bytes, Coll c, Algo a, int root)
{
	Sim s(t, p, bytes, c, root);
	if (a == Algo::Inc)
		return s.RunInc();
	switch (c) {
	case Coll::AllReduce: return s.RunRing();
	case Coll::Reduce:
	case Coll::Broadcast: return s.RunChain();
	default: return s.RunPlan();
	}
}

Result RunAllReduce(const Tree &t, const Params &p, uint64_t bytes, Algo a)
{
	return RunCollective(t, p, bytes, Coll::AllReduce, a, 0);
}

const char *CollName(Coll c)
{
	switch (c) {
	case Coll::Reduce: return "reduce";
	case Coll::Broadcast: return "broadcast";
	case Coll::AllGather: return "allgather";
	case Coll::ReduceScatter: return "reducescatter";
	case Coll::AllToAll: return "alltoall";
	case Coll::Barrier: return "barrier";
	default: return "allreduce";
	}
}

bool CollBlocks(Coll c)
{
	return c == Coll::AllGather || c == Coll::ReduceScatter || c == Coll::AllToAll;
}

bool CollHasRoot(Coll c)
{
	return c == Coll::Reduce || c == Coll::Broadcast;
}

bool CollParse(const std::string &name, Coll *c)
{
	for (Coll x : {Coll::AllReduce, Coll::Reduce, Coll::Broadcast, Coll::AllGather, Coll::ReduceScatter, Coll::AllToAll,
		       Coll::Barrier})
		if (name == CollName(x)) {
			*c = x;
			return true;
		}
	return false;
}

std::vector<double> RunCpuJobs(const Params &p, const std::vector<std::vector<double>> &jobs)
{
	Tree t;
	std::string err;
	if (jobs.size() < 2 || !TreeFromShape("1-" + std::to_string(jobs.size()), &t, &err))
		return {};
	Sim s(t, p, kMtu);
	return s.RunJobs(jobs);
}

Result RunTransfer(const Tree &t, const Params &p, int src, int dst, uint64_t bytes)
{
	Sim s(t, p, bytes);
	Result r = s.RunTransfer(src, dst);
	r.host_done.resize(2);
	return r;
}

} // namespace incsim
