/*
 * test_sim.cc — incsim's model against hand-computed values (make test-sim).
 *
 * Every case uses links of 1 MB/s (a 1 KiB frame, 1024 + 58 + 2 bytes on the
 * wire, takes 1084 us), 100 us of latency, a host o of 10 us and G of 1 ns/B,
 * so each figure below is a sum that can be checked by hand; ns-3 keeps time
 * in ns, so the simulated figures must be exact to 10 ns.
 */
#include "model.h"
#include "params.h"

#include <cmath>
#include <cstdio>

using namespace incsim;

static int failures, checks;

/* Near() - one check that @got is @want within @tol, printed either way. */
static void Near(const char *what, double got, double want, double tol)
{
	checks++;
	bool ok = std::fabs(got - want) <= tol;
	failures += !ok;
	printf("%s %s: %.3f (expected %.3f)\n", ok ? "ok  " : "FAIL", what, got, want);
}

/* SetO() - every per-message host cost of @p @o s (send, ring send, receive), no ACK share or completion. */
static void SetO(Params *p, double o)
{
	p->o_su = p->o_s = p->o_r = o;
	p->o_ack = p->o_c = 0;
}

/* SetG() - every per-byte host cost of @p @G s/B, none of the host's own loops. */
static void SetG(Params *p, double G)
{
	p->G_s = p->G_r = G;
	p->G_swap = p->G_copy = p->G_sum = 0;
}

/* Params0() - the parameters of the hand computations. */
static Params Params0()
{
	Params p;
	p.link_bw = 1e6;
	p.link_lat = 100e-6;
	SetO(&p, 10e-6);
	SetG(&p, 1e-9);
	p.sw_frame = 50e-6;
	return p;
}

static Tree Shape(const char *s)
{
	Tree t;
	std::string err;
	if (!TreeFromShape(s, &t, &err)) {
		printf("FAIL tree %s: %s\n", s, err.c_str());
		failures++;
	}
	return t;
}

int main()
{
	setvbuf(stdout, nullptr, _IOLBF, 0);
	const double F = 1084, A = 64, lat = 100, tol = 0.01; /* us: a full frame, an ACK on one link; latency; tolerance */
	Tree t12 = Shape("1-2");

	/* 1. Links: one frame of 1 KiB from rank 0 to rank 1 through the switch (it only routes).
	 * Sender CPU o + nG = 11.024, two links of F + lat each, receiver CPU 11.024: nG = 1.024
	 * on the frame (rxe's copy and check), then the ACK leaves and crosses both links back,
	 * then o on the message's completion. */
	{
		Params p = Params0();
		Result r = RunTransfer(t12, p, 0, 1, 1024);
		double arrive = 11.024 + 2 * (F + lat);
		Near("one frame: receiver done (us)", r.host_done[1] * 1e6, arrive + 11.024, tol);
		Near("one frame: sender has its ACK (us)", r.host_done[0] * 1e6, arrive + 1.024 + 2 * (A + lat), tol);
		/* four frames, one message: the second link forwards each frame as it arrives,
		 * so the last arrives 4F + lat + F + lat after the CPU's 10 + 4.096 us; the receiver
		 * did each frame's 1.024 as it came (F apart), the last's then o */
		r = RunTransfer(t12, p, 0, 1, 4096);
		arrive = 14.096 + 4 * F + lat + F + lat;
		Near("four frames: receiver done (us)", r.host_done[1] * 1e6, arrive + 1.024 + 10, tol);
		Near("four frames: sender has its ACK (us)", r.host_done[0] * 1e6, arrive + 1.024 + 2 * (A + lat), tol);
		Near("four frames: wrong packets", double(r.wrong_pkts), 0, 0);
	}

	/* 1b. The window: four frames, a message each, at most two in flight. Frames 0 and 1
	 * go at once (CPU 11.024 each; frame 1 waits for the link until 11.024 + F); frame 2
	 * is posted when frame 0's ACK is back (11.024 + 2(F + lat) + 1.024 + 2(A + lat): the
	 * receiver's 1.024 on the frame comes before its ACK) and frame 3
	 * when frame 1's is (F later), its CPU then free, its link busy with frame 2 until
	 * then; the last arrives 2(F + lat) after it starts. */
	{
		Params p = Params0();
		p.message = 1;
		p.window_host = 2;
		Result r = RunTransfer(t12, p, 0, 1, 4096);
		double ack0 = 11.024 + 2 * (F + lat) + 1.024 + 2 * (A + lat), f2 = ack0 + 11.024 + F, last = f2 + F + 2 * lat + F;
		Near("window 2: receiver done (us)", r.host_done[1] * 1e6, last + 11.024, tol);
		Near("window 2: sender has its ACK (us)", r.host_done[0] * 1e6, last + 1.024 + 2 * (A + lat), tol);
	}

	/* 1c. Coarsening: the same four packets as one model frame (unit 4) carry their four
	 * frames' headers, 4 · 1082 + 2 bytes, over each link in one piece. */
	{
		Params p = Params0();
		p.unit = 4;
		Result r = RunTransfer(t12, p, 0, 1, 4096);
		Near("unit 4: receiver done (us)", r.host_done[1] * 1e6, 14.096 + 2 * (4 * 1082 + 2 + lat) + 14.096, tol);
		/* a lossless AllReduce of 1 MiB on 1-2-4 in frames of 16 packets is within 2 % of the lab's frames */
		p.link_bw = 30e6;
		p.sw_frame = 5e-6;
		SetG(&p, 0.0375e-6);
		p.unit = 1;
		Tree t124 = Shape("1-2-4");
		double fine = RunAllReduce(t124, p, 1 << 20, Algo::Inc).time_s;
		p.unit = 16;
		Result cr = RunAllReduce(t124, p, 1 << 20, Algo::Inc);
		Near("unit 16: 1 MiB INC on 1-2-4 against unit 1 (ratio)", cr.time_s / fine, 1, 0.02);
		Near("unit 16: wrong", double(cr.wrong_pkts), 0, 0);
	}

	/* 1d. The switches' frames, as the lab's engine sends them (analysis/loggp.c loggp_frames()), c_sw
	 * 1 us, so the switches' CPU counts them. An AllReduce of 4 packets on 1-2-4 (one message): 16
	 * data frames a packet (64); between two switches every frame asks and is acknowledged once per
	 * 2 (switch/engine.c SWITCH_ACK_EVERY): PSNs 1 and 3 on each of the 4 links' directions, 8 ACKs,
	 * each counted at both switches (16); a host's link an ACK per message each way (8): 88 us (80
	 * with an ACK per message between switches too). In model frames of 4 packets (16 packets: one
	 * message of 4 model frames) every frame between switches is acknowledged, each ACK the lab's 2:
	 * 256 data frames, 4 x 4 x 2 ACKs at both ends (64), 8 on the hosts' links: 328 us. */
	{
		Params p = Params0();
		p.sw_frame = 1e-6;
		Tree t124 = Shape("1-2-4");
		Result r = RunAllReduce(t124, p, 4096, Algo::Inc);
		Near("switches' frames: AllReduce of 4 packets on 1-2-4, switch CPU (us)", r.cpu_switches * 1e6, 88, 1e-6);
		p.unit = 4;
		r = RunAllReduce(t124, p, 16384, Algo::Inc);
		Near("switches' frames: 16 packets in model frames of 4, switch CPU (us)", r.cpu_switches * 1e6, 328, 1e-6);
		Near("switches' frames: wrong", double(r.wrong_pkts), 0, 0);
	}

	/* 2. One switch's aggregation: AllReduce of one 1 KiB packet on 1-2, c_sw = 50 us.
	 * Both frames reach sw0 at ta = 11.024 + F + lat. Its CPU, one frame after the
	 * other: rx A, rx B, ACK to A (queued while handling A), result to rank 0, result to
	 * rank 1 (both queued when B completes the slot), ACK to B: each 50 us.
	 * Rank 0: its ACK leaves at ta + 150 and holds the link for A, so its result goes
	 * at ta + 150 + A, arrives F + lat later and takes o + nG = 11.024 to process.
	 * Rank 1: its result goes at ta + 250; its ACK, ready at ta + 300, waits behind it on
	 * the link and arrives at ta + 250 + F + A + lat, after the result was processed: a
	 * host is done when it has its results and its own frames are acknowledged. */
	{
		Params p = Params0();
		Result r = RunAllReduce(t12, p, 1024, Algo::Inc);
		double ta = 11.024 + F + lat;
		Near("aggregation: rank 0 done (us)", r.host_done[0] * 1e6, ta + 150 + A + F + lat + 11.024, tol);
		Near("aggregation: rank 1 done (us)", r.host_done[1] * 1e6, ta + 250 + F + A + lat, tol);
		Near("aggregation: wrong packets", double(r.wrong_pkts), 0, 0);
		/* the switch's cost counts: with c_sw = 0 the result and the ACK leave at ta */
		p.sw_frame = 0;
		r = RunAllReduce(t12, p, 1024, Algo::Inc);
		Near("aggregation, c_sw 0: rank 1 done (us)", r.host_done[1] * 1e6, ta + F + A + lat, tol);
	}

	/* 2b. Reduce to rank 0 on 1-2, one packet: both ranks send as in 2, the switch's CPU
	 * does rx A, rx B, ACK to A, the result to rank 0 only (the root), ACK to B. Rank 0
	 * as in 2; rank 1 takes no result: done when its ACK, ready at ta + 250, arrives. */
	{
		Params p = Params0();
		Result r = RunCollective(t12, p, 1024, Coll::Reduce, Algo::Inc, 0);
		double ta = 11.024 + F + lat;
		Near("reduce: rank 0 (root) done (us)", r.host_done[0] * 1e6, ta + 150 + A + F + lat + 11.024, tol);
		Near("reduce: rank 1 done (us)", r.host_done[1] * 1e6, ta + 250 + A + lat, tol);
		Near("reduce: wrong packets", double(r.wrong_pkts), 0, 0);
	}

	/* 2c. Broadcast from rank 0 on 1-2, one packet: rank 1 sends the packet empty, a
	 * message of its own (CPU o = 10, 58 + 2 bytes: E = 60 us on a link), which reaches
	 * the switch at 10 + E + lat, long before rank 0's data at ta. The switch's CPU: rx
	 * of the empty one and its ACK (done by ta), then rx A at ta + 50, which completes the
	 * slot: the result to rank 1 only (rank 0 is the root) at ta + 100, ACK to A at ta + 150. */
	{
		Params p = Params0();
		Result r = RunCollective(t12, p, 1024, Coll::Broadcast, Algo::Inc, 0);
		double ta = 11.024 + F + lat;
		Near("broadcast: rank 0 (root) done (us)", r.host_done[0] * 1e6, ta + 150 + A + lat, tol);
		Near("broadcast: rank 1 done (us)", r.host_done[1] * 1e6, ta + 100 + F + lat + 11.024, tol);
		Near("broadcast: wrong packets", double(r.wrong_pkts), 0, 0);
		/* four packets, one message of the root's, o = 2000 us, c_sw = 0: rank 1 pays o
		 * for each empty packet, so its last one leaves at 4o and reaches the switch
		 * at 4o + E + lat, after the root's last data frame (o + 4.096 + 4F + lat); the
		 * last result goes then, arrives F + lat later, and rank 1 does its 1.024 (the
		 * three before it came while it posted, and were done by 4o) and takes the message
		 * of 4 packets (o) */
		SetO(&p, 2000e-6);
		p.sw_frame = 0;
		p.message = 4;
		r = RunCollective(t12, p, 4096, Coll::Broadcast, Algo::Inc, 0);
		double last = 4 * 2000 + 60 + lat;
		Near("broadcast, empty packets a message each: root's last frame first (us)", 2004.096 + 4 * F + lat < last, 1, 0);
		Near("broadcast, empty packets a message each: rank 1 done (us)", r.host_done[1] * 1e6, last + F + lat + 1.024 + 2000,
		     tol);
		Near("broadcast, 4 packets: wrong packets", double(r.wrong_pkts), 0, 0);
		/* the same with an empty packet's send at o_e = 500 us: rank 1's last leaves at 2000, long
		 * before the root's last data frame reaches the switch (2004.096 + 4F + lat), which now
		 * completes the last slot; its result reaches rank 1 F + lat later */
		p.o_e = 500e-6;
		Result re = RunCollective(t12, p, 4096, Coll::Broadcast, Algo::Inc, 0);
		Near("broadcast, empty packets at o_e: rank 1 done (us)", re.host_done[1] * 1e6,
		     2004.096 + 4 * F + lat + F + lat + 1.024 + 2000, tol);
		p.o_e = -1;
		/* frames: 4 data and 4 empty up, 4 results down, an ACK each of the root's
		 * message, rank 1's (its empty packets acknowledged once per message of 4, as
		 * data) and the result message */
		Near("broadcast, 4 packets: frames", double(r.frames), 15, 0);
	}

	/* 2e. libinccl's window counts results: Broadcast from 0 on 1-2, two packets, a
	 * message each, a window of 1, c_sw = 0. Rank 1's empty packet 0 is acknowledged at
	 * 10 + E + lat + A + lat, but it posts packet 1 only once it has processed result 0
	 * (at most a window unanswered): the root's data 0 reaches the switch at ta, result
	 * 0 rank 1 at ta + F + lat; rank 1 processes it and posts packet 1 (11.024 + o),
	 * which goes after rank 1's ACK of result 0 (sent after the frame's 1.024, then A on
	 * its link), E + lat to the switch:
	 * the last slot completes there, after the root's data 1 (posted on the ACK of data
	 * 0, at ta + A + lat + 11.024, it arrives F + lat later). Result 1 goes first, then
	 * the ACK of rank 1's packet: it arrives F + A + lat after the slot completed. */
	{
		Params p = Params0();
		p.sw_frame = 0;
		p.message = 1;
		p.window_host = 1;
		Result r = RunCollective(t12, p, 2048, Coll::Broadcast, Algo::Inc, 0);
		double ta = 11.024 + F + lat, e1 = ta + F + lat + 1.024 + A + 60 + lat, d1 = ta + A + lat + 11.024 + F + lat;
		Near("window of results: root's data 1 before rank 1's empty 1", d1 < e1, 1, 0);
		Near("window of results: rank 1 done (us)", r.host_done[1] * 1e6, e1 + F + A + lat, tol);
		Near("window of results: rank 0 done (us)", r.host_done[0] * 1e6, d1 + A + lat, tol);
		Near("window of results: wrong packets", double(r.wrong_pkts), 0, 0);
	}

	/* 2d. The host baseline of Broadcast and Reduce: the chain along the ring on 1-3,
	 * one packet, o = 100 us (o + nG = c = 101.024). Broadcast from 0: 0 -> 1 -> 2.
	 * Rank 1 has the frame at t1 = c + 2(F + lat) and sends its ACK once it did the frame
	 * (1.024; then A on its link); it processes the message (c in all), then posts the
	 * forward (c): rank 2 has it at
	 * t1 + 2c + 2(F + lat) and processes it. Reduce to 0: 1 -> 2 -> 0 alike, each rank
	 * adding its own packet; rank 0 checks the sum. */
	{
		Params p = Params0();
		SetO(&p, 100e-6);
		Tree t13 = Shape("1-3");
		double c = 101.024, t1 = c + 2 * (F + lat), t2 = t1 + 2 * c + 2 * (F + lat);
		Result r = RunCollective(t13, p, 1024, Coll::Broadcast, Algo::Ring, 0);
		Near("chain broadcast: rank 2 done (us)", r.host_done[2] * 1e6, t2 + c, tol);
		Near("chain broadcast: rank 1 done (us)", r.host_done[1] * 1e6, t2 + 1.024 + 2 * (A + lat), tol);
		Near("chain broadcast: rank 0 done (us)", r.host_done[0] * 1e6, t1 + 1.024 + 2 * (A + lat), tol);
		Near("chain broadcast: wrong packets", double(r.wrong_pkts), 0, 0);
		r = RunCollective(t13, p, 1024, Coll::Reduce, Algo::Ring, 0);
		Near("chain reduce: rank 0 (root) done (us)", r.host_done[0] * 1e6, t2 + c, tol);
		Near("chain reduce: rank 2 done (us)", r.host_done[2] * 1e6, t2 + 1.024 + 2 * (A + lat), tol);
		Near("chain reduce: rank 1 done (us)", r.host_done[1] * 1e6, t1 + 1.024 + 2 * (A + lat), tol);
		Near("chain reduce: wrong packets", double(r.wrong_pkts), 0, 0);
	}

	/* 2f. The chain's forwards go ahead of receives waiting: 1-4, four messages of 16
	 * packets (model frames of 16: 17314 bytes, 1 us on a link of 17314 MB/s, no
	 * latency, so 2 us a hop), o = c = 1000 us, G = 0. Rank 0 posts message i by
	 * (i + 1)c; rank 1 receives it 2 us later but needs 2c a message (receive,
	 * forward): it forwards message i at (2i + 3)c + 2, rank 2 at (2i + 5)c + 4, and
	 * rank 3 has processed the last at (2 · 3 + 6)c + 6. Reduce to 3 (0 -> 1 -> 2 -> 3)
	 * alike. */
	{
		Params p = Params0();
		p.unit = 16;
		p.link_bw = 17314e6;
		p.link_lat = 0;
		SetO(&p, 1000e-6);
		SetG(&p, 0);
		Tree t14 = Shape("1-4");
		Result r = RunCollective(t14, p, 64 * 1024, Coll::Broadcast, Algo::Ring, 0);
		Near("chain broadcast, 4 messages: rank 3 done (us)", r.host_done[3] * 1e6, 12 * 1000 + 6, 0.1);
		Near("chain broadcast, 4 messages: wrong packets", double(r.wrong_pkts), 0, 0);
		r = RunCollective(t14, p, 64 * 1024, Coll::Reduce, Algo::Ring, 3);
		Near("chain reduce, 4 messages: rank 3 (root) done (us)", r.host_done[3] * 1e6, 12 * 1000 + 6, 0.1);
		Near("chain reduce, 4 messages: wrong packets", double(r.wrong_pkts), 0, 0);
	}

	/* 2i. The ring's posted receives pace its sender: 1-2, a Broadcast from 0 of 400
	 * messages of 16 packets (model frames of 16, 2 us a hop as in 2f), o_s = 10 us, o_r =
	 * 1000 us, RNR wait 50 us. Rank 1 takes message k at about (k + 1) ms; libinccl's ring
	 * keeps 128 receives posted and reposts one per message taken, so message 399 finds
	 * one only once message 271 is taken, at 272 ms (plus at most an RNR wait and the
	 * hops): rank 0 is done then, not at 4 ms (400 posts of 10 us) as with a receive
	 * always there. Rank 1 is done at 400 ms. */
	{
		Params p = Params0();
		p.unit = 16;
		p.link_bw = 17314e6;
		p.link_lat = 0;
		SetO(&p, 10e-6);
		p.o_r = 1000e-6;
		SetG(&p, 0);
		p.rnr = 50e-6;
		Tree t12 = Shape("1-2");
		Result r = RunCollective(t12, p, 400 * 16 * 1024, Coll::Broadcast, Algo::Ring, 0);
		Near("chain broadcast, receives run out: rank 0 done (ms)", r.host_done[0] * 1e3, 272.03, 0.06);
		Near("chain broadcast, receives run out: rank 1 done (ms)", r.host_done[1] * 1e3, 400.01, 0.02);
		Near("chain broadcast, receives run out: RNR NAKs at least 1", r.rnr_naks >= 1, 1, 0);
		Near("chain broadcast, receives run out: wrong packets", double(r.wrong_pkts), 0, 0);
	}

	/* 2g. The block collectives in the network, one packet per block, c_sw = 0 (D = o + 1024 G =
	 * 11.024 to post or take a data message, 10 an empty packet, E = 60 us on a link). Every rank
	 * does libinccl's calls one after the other, each once it is done with the one before.
	 * AllGather on 1-2: call 0 a Broadcast from rank 0. Rank 1's empty packet reaches the
	 * switch at 170 and is acknowledged; rank 0's data at ta = D + F + lat completes the slot:
	 * the result to rank 1 (ta + F + lat, taken D later), the ACK to rank 0 (ta + A + lat: rank
	 * 0, due no result, is done with call 0). Call 1 a Broadcast from rank 1: rank 0's empty
	 * packet is long there when rank 1, done with call 0, posts its data; the result reaches
	 * rank 0 F + lat after it arrived. A rank acknowledges a result once it did the frame
	 * (1.024 of D): its next packet waits for that ACK on its link (1.024 + A > 2D: it posts
	 * sooner than the link is free). */
	{
		Params p = Params0();
		p.sw_frame = 0;
		const double D = 11.024, ta = D + F + lat;
		Result r = RunCollective(t12, p, 2048, Coll::AllGather, Algo::Inc, 0);
		double d1 = ta + F + lat + 1.024 + A + F + lat;
		Near("inc allgather 1-2: rank 0 done (us)", r.host_done[0] * 1e6, d1 + F + lat + D, tol);
		Near("inc allgather 1-2: rank 1 done (us)", r.host_done[1] * 1e6, d1 + A + lat, tol);
		Near("inc allgather 1-2: wrong packets", double(r.wrong_pkts), 0, 0);
		/* ReduceScatter on 1-2: call 0 a Reduce to rank 0, both send data, both reach the switch at
		 * ta: rank 0's ACK goes first on its link (it arrived first), then its result; rank 1 is
		 * done with call 0 at its ACK (ta + A + lat) and posts its data of call 1 at once; rank 0
		 * sends its own after the ACK of its result (1.024 after it came); the sum goes to rank 1
		 * only. */
		r = RunCollective(t12, p, 2048, Coll::ReduceScatter, Algo::Inc, 0);
		double s1 = ta + A + F + lat + 1.024 + A + F + lat;
		Near("inc reducescatter 1-2: rank 0 done (us)", r.host_done[0] * 1e6, s1 + A + lat, tol);
		Near("inc reducescatter 1-2: rank 1 done (us)", r.host_done[1] * 1e6, s1 + F + lat + D, tol);
		Near("inc reducescatter 1-2: wrong packets", double(r.wrong_pkts), 0, 0);
		/* AllToAll on 1-3: the Routes 0->1, 1->0, 0->2, 2->0, 1->2, 2->1 in that order, each the
		 * source's data and everyone else's empty packet, the result to the destination only.
		 * The switch acknowledges a packet when it arrives: a source is done with a call X = D +
		 * F + lat + A + lat after it started it, a rank neither source nor destination Z = 10 +
		 * E + lat + A + lat after; the slot completes at C, the latest arrival (the source's data
		 * D + F + lat after it started, an empty packet 10 + E + lat after), and the destination
		 * is done when it took the result, C + F + lat + D, but its next packet leaves only after
		 * its ACK of the result, which goes once it did the frame: C + F + lat + 1.024 + A.
		 * Calls, C and the ranks' ends (us):
		 *   0->1: C = 1195.024; rank 0 done 1359.024, rank 1 2390.048 (link free 2444.048), rank 2 334
		 *   1->0: rank 1's data leaves at 2444.048, C = 3628.048; rank 0 4823.072, rank 1 3792.048, rank 2 668
		 *   0->2: C = 6061.072; rank 0 6225.072, rank 1 4126.048, rank 2 7256.096
		 *   2->0: C = 8494.096; rank 0 9689.120, rank 1 4460.048, rank 2 8658.096
		 *   1->2: rank 0's empty packet last, leaving at 9743.120, C = 9903.120; rank 0 10067.120,
		 *         rank 1 5819.072, rank 2 11098.144
		 *   2->1: C = 12336.144; rank 0 10401.120, rank 1 13531.168, rank 2 12500.144 */
		Tree t13 = Shape("1-3");
		r = RunCollective(t13, p, 3072, Coll::AllToAll, Algo::Inc, 0);
		Near("inc alltoall 1-3: rank 0 done (us)", r.host_done[0] * 1e6, 10401.120, tol);
		Near("inc alltoall 1-3: rank 1 done (us)", r.host_done[1] * 1e6, 13531.168, tol);
		Near("inc alltoall 1-3: rank 2 done (us)", r.host_done[2] * 1e6, 12500.144, tol);
		Near("inc alltoall 1-3: wrong packets", double(r.wrong_pkts), 0, 0);
		/* Barrier on 1-2: one empty packet per rank, both at the switch at 170; the slot completes
		 * with the second: rank 0's ACK (queued when its packet came) goes before its result, rank
		 * 1's after. Each result carries the sum of both ranks' arrivals (checked). */
		r = RunCollective(t12, p, 0, Coll::Barrier, Algo::Inc, 0);
		Near("inc barrier 1-2: rank 0 done (us)", r.host_done[0] * 1e6, 170 + A + 60 + lat + 10, tol);
		Near("inc barrier 1-2: rank 1 done (us)", r.host_done[1] * 1e6, 170 + 60 + A + lat, tol);
		Near("inc barrier 1-2: wrong results", double(r.wrong_pkts), 0, 0);
		/* a call's own time (Params.call_inc, the run's Barrier less half a ping-pong): every rank
		 * waits it before it posts a call. The Barrier: C = 1000 us later. The AllGather: each rank
		 * starts call 0 at C and call 1 C after it is done with call 0 (rank 0 at ta' + A + lat, ta'
		 * = C + ta; rank 1 at ta' + F + lat + D): by then every link is free, rank 0's empty packet
		 * of call 1 waits at the switch for rank 1's data, there at t1 = ta' + F + lat + D + C + D +
		 * F + lat; rank 0 takes the result F + lat + D later, rank 1 has its ACK at A + lat. */
		const double C = 1000;
		p.call_inc = C * 1e-6;
		r = RunCollective(t12, p, 0, Coll::Barrier, Algo::Inc, 0);
		Near("inc barrier 1-2, a call's own time 1 ms: rank 0 done (us)", r.host_done[0] * 1e6, C + 170 + A + 60 + lat + 10, tol);
		Near("inc barrier 1-2, a call's own time 1 ms: rank 1 done (us)", r.host_done[1] * 1e6, C + 170 + 60 + A + lat, tol);
		r = RunCollective(t12, p, 2048, Coll::AllGather, Algo::Inc, 0);
		double t1 = C + ta + F + lat + D + C + D + F + lat;
		Near("inc allgather 1-2, a call's own time 1 ms: rank 0 done (us)", r.host_done[0] * 1e6, t1 + F + lat + D, tol);
		Near("inc allgather 1-2, a call's own time 1 ms: rank 1 done (us)", r.host_done[1] * 1e6, t1 + A + lat, tol);
		Near("inc allgather 1-2, a call's own time 1 ms: wrong packets", double(r.wrong_pkts), 0, 0);
	}

	/* 2h. libinccl's ring plans on 1-3, links of 1 GB/s (a frame of 1 KiB takes f = 1.084 us, an
	 * empty one 0.06, a 4-byte one 0.064, an ACK a = 0.064), o = 10 us, G = 0, so that ACKs never
	 * stand in a message's way. AllGather and ReduceScatter of one packet per block: two steps,
	 * the second's send once the first's receive was taken: each hop 2(f + lat), each end o. */
	{
		Params p = Params0();
		p.link_bw = 1e9;
		SetG(&p, 0);
		Tree t13 = Shape("1-3");
		const double f = 1.084, a = 0.064, o = 10, ack = 2 * (a + lat);
		double arrive = o + 2 * (f + lat) + o + o + 2 * (f + lat);
		for (Coll c : {Coll::AllGather, Coll::ReduceScatter}) {
			Result r = RunCollective(t13, p, 3072, c, Algo::Ring, 0);
			std::string w = std::string("ring ") + CollName(c) + " 1-3: ";
			for (int k = 0; k < 3; k++)
				Near((w + "rank " + std::to_string(k) + " done (us)").c_str(), r.host_done[size_t(k)] * 1e6, arrive + ack, tol);
			Near((w + "wrong packets").c_str(), double(r.wrong_pkts), 0, 0);
		}
		/* AllToAll: step 1 sends blocks 0 and 1 by distance (one message of 2 frames: the last
		 * arrives f after the first), step 2 block 1 as it came in (one frame) */
		Result r = RunCollective(t13, p, 3072, Coll::AllToAll, Algo::Ring, 0);
		arrive = o + 2 * (f + lat) + f + o + o + 2 * (f + lat);
		for (int k = 0; k < 3; k++)
			Near(("ring alltoall 1-3: rank " + std::to_string(k) + " done (us)").c_str(), r.host_done[size_t(k)] * 1e6,
			     arrive + ack, tol);
		Near("ring alltoall 1-3: wrong packets", double(r.wrong_pkts), 0, 0);
		/* Barrier: the ring AllReduce of one element, 2(p - 1) = 4 steps, each message empty but
		 * for the piece that holds the element (4 bytes: rank 0 sends it at step 1, rank 1 at
		 * step 2, rank 2 at steps 0 and 3); a hop takes 2(0.060 + lat) = 200.12 us empty, 200.128
		 * with the element, a step o to take and o to post. Rank 0 posts at 10, 230.128,
		 * 450.24, 670.36 (its left, rank 2, was 0.008 later at steps 0 and 1), ranks 1 and 2 at
		 * 670.36 and 670.384; rank 0's last message is acknowledged at 670.36 + 200.12 +
		 * 200.128, rank 2's (the element) at 670.384 + 2 · 200.128. */
		r = RunCollective(t13, p, 0, Coll::Barrier, Algo::Ring, 0);
		Near("ring barrier 1-3: rank 0 done (us)", r.host_done[0] * 1e6, 1070.608, tol);
		Near("ring barrier 1-3: rank 1 done (us)", r.host_done[1] * 1e6, 1070.608, tol);
		Near("ring barrier 1-3: rank 2 done (us)", r.host_done[2] * 1e6, 1070.640, tol);
		Near("ring barrier 1-3: wrong results", double(r.wrong_pkts), 0, 0);
		/* a call's own time per ring step (Params.call_ring), 100 us: the 4 steps' 400 us before the
		 * first post; an AllGather's 2 steps 200 */
		p.call_ring = 100e-6;
		r = RunCollective(t13, p, 0, Coll::Barrier, Algo::Ring, 0);
		Near("ring barrier 1-3, 100 us a step: rank 0 done (us)", r.host_done[0] * 1e6, 400 + 1070.608, tol);
		Near("ring barrier 1-3, 100 us a step: rank 2 done (us)", r.host_done[2] * 1e6, 400 + 1070.640, tol);
		r = RunCollective(t13, p, 3072, Coll::AllGather, Algo::Ring, 0);
		Near("ring allgather 1-3, 100 us a step: rank 1 done (us)", r.host_done[1] * 1e6,
		     200 + o + 2 * (f + lat) + o + o + 2 * (f + lat) + ack, tol);
	}

	/* 3. A retransmission: four frames, the first copy of PSN 1 lost on the first link.
	 * PSN 2 reaches the receiver at t0 + 3F + lat + F + lat (t0 = 14.096): a gap, one NAK
	 * of PSN 1, back over both links (2(A + lat)); PSN 3 is dropped without a second NAK.
	 * The sender goes back to PSN 1 and resends 1, 2, 3: the last arrives 3F + lat + F +
	 * lat after the NAK, the receiver does it (1.024), acknowledges it and takes the
	 * message (10). Early and duplicate frames cost nothing: rxe drops them on their PSN. */
	{
		Params p = Params0();
		p.drop_psn = 1;
		Result r = RunTransfer(t12, p, 0, 1, 4096);
		double t0 = 14.096, nak = t0 + 4 * F + 2 * lat + 2 * (A + lat), last = nak + 4 * F + 2 * lat;
		Near("retransmission: receiver done (us)", r.host_done[1] * 1e6, last + 1.024 + 10, tol);
		Near("retransmission: sender has its ACK (us)", r.host_done[0] * 1e6, last + 1.024 + 2 * (A + lat), tol);
		/* one post (14.096), four frames done once each and the message taken (14.096): the
		 * first copies of PSN 2 and 3 came early and cost nothing */
		Near("retransmission: the hosts' CPU (us)", r.cpu_hosts * 1e6, 2 * 14.096, tol);
		Near("retransmission: frames resent", double(r.retransmits), 3, 0);
		Near("retransmission: NAKs", double(r.naks), 1, 0);
		Near("retransmission: frames lost", double(r.lost), 1, 0);
		Near("retransmission: wrong packets", double(r.wrong_pkts), 0, 0);
	}

	/* 4. Results right on bigger trees: every packet of every rank's result equals the sum
	 * computed apart, INC and ring, also with random loss, and with ring chunks that are
	 * empty (3 packets on 6 ranks) or uneven. */
	{
		Params p = Params0();
		p.link_bw = 1e8;
		p.sw_frame = 1e-6;
		struct {
			const char *shape;
			uint64_t bytes;
			double loss;
		} cases[] = {{"1-2-4", 200 * 1024 + 100, 0}, {"1-2-6", 3 * 1024, 0}, {"1-3-6", 77 * 1024, 0},
			     {"1-2-4", 100 * 1024, 0.02}, {"1-2-4-8", 50 * 1024, 0.01}};
		for (auto &c : cases) {
			p.loss = c.loss;
			Tree t = Shape(c.shape);
			int n = int(t.host_of_rank.size());
			/* every collective; Reduce and Broadcast rooted at 0 and at the last rank */
			struct {
				Coll coll;
				int root;
			} runs[] = {{Coll::AllReduce, 0}, {Coll::Reduce, 0}, {Coll::Reduce, n - 1}, {Coll::Broadcast, 0},
				    {Coll::Broadcast, n - 1}, {Coll::AllGather, 0}, {Coll::ReduceScatter, 0}, {Coll::AllToAll, 0},
				    {Coll::Barrier, 0}};
			for (auto &cr : runs)
			for (Algo a : {Algo::Inc, Algo::Ring}) {
				/* a block collective's size in whole blocks of n elements, a Barrier's none */
				uint64_t bytes = cr.coll == Coll::Barrier ? 0 : CollBlocks(cr.coll) ? c.bytes - c.bytes % (uint64_t(n) * 4) : c.bytes;
				Result r = RunCollective(t, p, bytes, cr.coll, a, cr.root);
				char what[160];
				snprintf(what, sizeof what, "%s %s root %d %s %llu B, loss %.2f: wrong packets (finished: %s)",
					 a == Algo::Inc ? "inc" : "ring", CollName(cr.coll), cr.root, c.shape,
					 (unsigned long long)c.bytes, c.loss, std::isfinite(r.time_s) ? "yes" : "no");
				Near(what, std::isfinite(r.time_s) ? double(r.wrong_pkts) : -1, 0, 0);
				if (c.loss > 0 && cr.coll != Coll::Barrier) { /* a Barrier's few frames: lost ACKs may outnumber resent frames */
					snprintf(what, sizeof what, "%s %s root %d %s loss %.2f: frames resent >= lost",
						 a == Algo::Inc ? "inc" : "ring", CollName(cr.coll), cr.root, c.shape, c.loss);
					Near(what, r.retransmits >= r.lost && r.lost > 0, 1, 0);
				}
			}
		}
	}

	/* 4b. The lab's tree of mixed children (topology/1-2-2-2.yaml: rank 3 alone under the
	 * root switch, ranks 1 and 2 two levels down), every root, 1 % loss: a Broadcast
	 * from rank 3 sends nothing down to it, a Reduce to rank 1 only down sw1 and sw2
	 * (run from the top of the tree, as make test-sim does). */
	{
		Params p = Params0();
		p.link_bw = 1e8;
		p.sw_frame = 1e-6;
		p.loss = 0.01;
		Tree t;
		std::string err;
		bool ok = TreeFromTopology("topology/1-2-2-2.yaml", &t, &err);
		Near(("topology/1-2-2-2.yaml read " + err).c_str(), ok, 1, 0);
		for (int root = 0; ok && root < 4; root++)
			for (Coll c : {Coll::Reduce, Coll::Broadcast, Coll::AllGather, Coll::ReduceScatter, Coll::AllToAll})
				for (Algo a : {Algo::Inc, Algo::Ring}) {
					if (CollBlocks(c) && root > 0)
						continue; /* no root: once */
					Result r = RunCollective(t, p, CollBlocks(c) ? 40 * 1024 : 40 * 1024 + 7, c, a, root);
					char what[160];
					snprintf(what, sizeof what, "%s %s root %d 1-2-2-2 loss 0.01: wrong packets (finished: %s)",
						 a == Algo::Inc ? "inc" : "ring", CollName(c), root, std::isfinite(r.time_s) ? "yes" : "no");
					Near(what, std::isfinite(r.time_s) ? double(r.wrong_pkts) : -1, 0, 0);
				}
	}

	/* 6. The lab machine's cores: every node's work shares p.cores (processor sharing). Four
	 * nodes with 10 ms each: on 2 cores each runs at half speed, 20 ms; on 4 (or a core per
	 * node, 0) 10 ms. */
	{
		Params p = Params0();
		std::vector<std::vector<double>> four(4, std::vector<double>{10e-3});
		for (double c : {2.0, 4.0, 0.0}) {
			p.cores = c;
			std::vector<double> d = RunCpuJobs(p, four);
			for (size_t i = 0; i < 4; i++)
				Near(("cores " + std::to_string(int(c)) + ": node " + std::to_string(i) + " of four with 10 ms done (ms)").c_str(),
				     d.size() == 4 ? d[i] * 1e3 : -1, c == 2 ? 20 : 10, 1e-6);
		}
		/* a fair share, not a turn per job: one core, node 0 one job of 20 ms, node 1 ten of
		 * 1 ms. Both run at half speed until node 1's 10 ms are done (20 ms), then node 0 its
		 * last 10 ms on the whole core (30 ms). FIFO across nodes would end them at 20 and 30
		 * the other way round. */
		p.cores = 1;
		std::vector<double> d = RunCpuJobs(p, {{20e-3}, std::vector<double>(10, 1e-3)});
		Near("one core, 20 ms against 10 x 1 ms: node 0 done (ms)", d.size() == 2 ? d[0] * 1e3 : -1, 30, 1e-6);
		Near("one core, 20 ms against 10 x 1 ms: node 1 done (ms)", d.size() == 2 ? d[1] * 1e3 : -1, 20, 1e-6);
		/* 2 cores, nodes of 10, 10 and 5 ms: 2/3 of a core each until the third's 5 ms are done
		 * at 7.5 ms, then 5 ms left each on a core of its own: 12.5 ms. 1.5 cores, three of 3 ms:
		 * half a core each, 6 ms. */
		p.cores = 2;
		d = RunCpuJobs(p, {{10e-3}, {4e-3, 6e-3}, {5e-3}});
		Near("two cores, 10, 4 + 6 and 5 ms: node 0 done (ms)", d.size() == 3 ? d[0] * 1e3 : -1, 12.5, 1e-6);
		Near("two cores, 10, 4 + 6 and 5 ms: node 1 done (ms)", d.size() == 3 ? d[1] * 1e3 : -1, 12.5, 1e-6);
		Near("two cores, 10, 4 + 6 and 5 ms: node 2 done (ms)", d.size() == 3 ? d[2] * 1e3 : -1, 7.5, 1e-6);
		p.cores = 1.5;
		d = RunCpuJobs(p, std::vector<std::vector<double>>(3, std::vector<double>{3e-3}));
		Near("1.5 cores, three of 3 ms: node 2 done (ms)", d.size() == 3 ? d[2] * 1e3 : -1, 6, 1e-6);
		/* In a collective: test 2's aggregation on one core. Both hosts post at once, each
		 * 11.024 us of work at half speed: the frames leave at 22.048; the rest as there (the
		 * switch works alone, each host's result is processed while the other is idle). */
		p = Params0();
		p.cores = 1;
		Result r = RunAllReduce(t12, p, 1024, Algo::Inc);
		double ta = 22.048 + F + lat;
		Near("one core: aggregation rank 0 done (us)", r.host_done[0] * 1e6, ta + 150 + A + F + lat + 11.024, tol);
		Near("one core: aggregation rank 1 done (us)", r.host_done[1] * 1e6, ta + 250 + F + A + lat, tol);
		/* the CPU work it counts: each host 11.024 us to send and to take the result; the
		 * switch 50 us for each of 8 frames (two in, two ACKs and two results out, the hosts'
		 * two ACKs of their results in) */
		Near("one core: aggregation's busiest host CPU (us)", r.cpu_host_max * 1e6, 22.048, 1e-6);
		Near("one core: aggregation's hosts' CPU (us)", r.cpu_hosts * 1e6, 44.096, 1e-6);
		Near("one core: aggregation's switch CPU (us)", r.cpu_switches * 1e6, 400, 1e-6);
		/* as many cores as nodes: the same times as a core per node */
		Tree t124 = Shape("1-2-4");
		p = Params0();
		Result a = RunAllReduce(t124, p, 64 * 1024, Algo::Inc);
		p.cores = 7;
		Result b = RunAllReduce(t124, p, 64 * 1024, Algo::Inc);
		Near("7 cores for 7 nodes: 64 KiB INC on 1-2-4 as with a core each (us)", b.time_s * 1e6, a.time_s * 1e6, tol);
	}

	/* 6b. The results a subtree without the data takes: a Broadcast from rank 0 on 1-2-4 of 1 MiB
	 * (1024 packets, messages of 16), o = 10 us, G = 0: each non-root posts 1024 empty packets
	 * and takes 64 result messages (ranks 2 and 3 too, under the leaf whose slots held only
	 * empty packets: the result comes down as the root switch cut it), 10.88 ms; the root 64
	 * messages, 0.64 ms. An AllToAll of 1 MiB (blocks of 256 packets): each rank sends its 3
	 * blocks (16 messages each), 9 blocks' packets empty, and takes 3 blocks' 16 messages:
	 * (48 + 2304 + 48) · 10 us = 24 ms. */
	{
		Params p = Params0();
		SetG(&p, 0);
		p.sw_frame = 0;
		Tree t124 = Shape("1-2-4");
		Result r = RunCollective(t124, p, 1 << 20, Coll::Broadcast, Algo::Inc, 0);
		Near("broadcast 1 MiB on 1-2-4: busiest host's CPU (ms)", r.cpu_host_max * 1e3, 10.88, 1e-6);
		Near("broadcast 1 MiB on 1-2-4: every host's CPU (ms)", r.cpu_hosts * 1e3, 3 * 10.88 + 0.64, 1e-6);
		Near("broadcast 1 MiB on 1-2-4: wrong packets", double(r.wrong_pkts), 0, 0);
		r = RunCollective(t124, p, 1 << 20, Coll::AllToAll, Algo::Inc, 0);
		Near("alltoall 1 MiB on 1-2-4: every host's CPU (ms)", r.cpu_hosts * 1e3, 4 * 24.0, 1e-6);
		Near("alltoall 1 MiB on 1-2-4: busiest host's CPU (ms)", r.cpu_host_max * 1e3, 24.0, 1e-6);
	}

	/* 7. A host's costs as the analytic model has them (analysis/loggp.c). One libinccl message
	 * of 16 packets on 1-2 with o_su = 20, a = 32, o_c = 50 us, G_s = 1, G_swap = 0.5 ns/B:
	 * 20 + 32 · 16/32 + 50 · (16/64 - 1/100) + 16384 · 1.5e-3 = 72.576 us to send (a
	 * completion per 64 packets, perftest's one in 100 already in o); the last frame arrives
	 * 16F + lat + F + lat later; o_r = 30 us, G_r = 2 ns/B: 1024 · 2e-3 = 2.048 us on each
	 * frame as it comes (before its ACK; F apart, so the last's alone is left when it
	 * arrives), then 30 + 16384 · 0.5e-3 = 38.192 us to take the message: 70.96 us in all. */
	{
		Params p = Params0();
		p.o_su = 20e-6;
		p.o_ack = 32e-6;
		p.o_c = 50e-6;
		p.G_s = 1e-9;
		p.G_swap = 0.5e-9;
		p.o_r = 30e-6;
		p.G_r = 2e-9;
		Result r = RunTransfer(t12, p, 0, 1, 16384);
		double arrive = 72.576 + 16 * F + lat + F + lat;
		Near("host costs: a libinccl message of 16 packets taken (us)", r.host_done[1] * 1e6, arrive + 2.048 + 38.192, tol);
		Near("host costs: both hosts' CPU (us)", r.cpu_hosts * 1e6, 72.576 + 70.96, tol);
		/* the ring (test 2h's AllGather and ReduceScatter on 1-3, one packet a block): a send
		 * o_s + o_c (1/16 - 1/100) + 1024 (G_s + G_copy) = 10 + 0.84 + 2.048 = 12.888 us; a
		 * receive o_r + 1024 (G_r + G_copy) = 22.048 (AllGather), + G_sum 24.096 (ReduceScatter) */
		p = Params0();
		p.link_bw = 1e9;
		p.o_s = 10e-6;
		p.o_r = 20e-6;
		p.o_c = 16e-6;
		p.G_s = p.G_r = 0;
		p.G_copy = 2e-9;
		p.G_sum = 4e-9;
		Tree t13 = Shape("1-3");
		const double f = 1.084, ack = 2 * (0.064 + lat), S = 12.888;
		for (Coll c : {Coll::AllGather, Coll::ReduceScatter}) {
			double R = c == Coll::AllGather ? 22.048 : 24.096, arrive2 = S + 2 * (f + lat) + R + S + 2 * (f + lat);
			r = RunCollective(t13, p, 3072, c, Algo::Ring, 0);
			Near((std::string("host costs: ring ") + CollName(c) + " 1-3 rank 0 done (us)").c_str(), r.host_done[0] * 1e6,
			     arrive2 + ack, tol);
			/* the receive ends after the ACK when it costs more: o_r 300 us */
			p.o_r = 300e-6;
			r = RunCollective(t13, p, 3072, c, Algo::Ring, 0);
			R += 280;
			arrive2 = S + 2 * (f + lat) + R + S + 2 * (f + lat);
			Near((std::string("host costs: ring ") + CollName(c) + " 1-3, o_r 300 us, rank 0 done (us)").c_str(),
			     r.host_done[0] * 1e6, arrive2 + R, tol);
			p.o_r = 20e-6;
		}
		/* o_w, a message received waiting, 1 ms each where the ring's gates go round it (analysis/loggp.c
		 * ring_waits()): 1 MiB on 1-2-4, blocks of 256 KiB in 16 messages of 16 KiB. AllReduce: 2P - 3 = 5
		 * of each host's 6 steps, 4 x 5 x 16 = 320 ms; AllGather, ReduceScatter: P - 2 = 2 of 3, 128 ms;
		 * Broadcast (a chain) and AllToAll (forwarded pieces come ahead of need): none */
		Tree t124 = Shape("1-2-4");
		const struct {
			Coll c;
			double ms;
		} waits[] = { { Coll::AllReduce, 320 }, { Coll::AllGather, 128 }, { Coll::ReduceScatter, 128 },
			      { Coll::Broadcast, 0 }, { Coll::AllToAll, 0 } };
		p = Params0();
		p.link_bw = 1e9;
		for (const auto &w : waits) {
			p.o_w = 0;
			Result r0 = RunCollective(t124, p, 1 << 20, w.c, Algo::Ring, 0);
			p.o_w = 1e-3;
			r = RunCollective(t124, p, 1 << 20, w.c, Algo::Ring, 0);
			Near((std::string("o_w: ring ") + CollName(w.c) + " 1 MiB on 1-2-4, every host's CPU beyond (ms)").c_str(),
			     (r.cpu_hosts - r0.cpu_hosts) * 1e3, w.ms, 1e-6);
			Near((std::string("o_w: ring ") + CollName(w.c) + " 1 MiB on 1-2-4, wrong packets").c_str(),
			     double(r.wrong_pkts), 0, 0);
		}
		/* the ring's messages are its own 16 KiB (ring.c RING_PIECE), whatever libinccl's INC message: the
		 * same 320 ms of waits and the same time with messages of 8 packets */
		p.o_w = 1e-3;
		Result r16 = RunCollective(t124, p, 1 << 20, Coll::AllReduce, Algo::Ring, 0);
		p.message = 8;
		r = RunCollective(t124, p, 1 << 20, Coll::AllReduce, Algo::Ring, 0);
		Near("ring allreduce 1 MiB on 1-2-4, INC messages of 8 packets: every host's CPU as with 16 (ms)",
		     r.cpu_hosts * 1e3, r16.cpu_hosts * 1e3, 1e-6);
		Near("ring allreduce 1 MiB on 1-2-4, INC messages of 8 packets: time as with 16 (us)", r.host_done[0] * 1e6,
		     r16.host_done[0] * 1e6, 1e-6);
		/* other shapes: P = 2 waits for 1 of each round's 2 AllReduce steps and none in AllGather (one
		 * step); P = 16 for 29 of 30 and 14 of 15: 1 MiB on 1-16 in blocks of 64 KiB, 4 messages */
		p = Params0();
		p.link_bw = 1e9;
		const struct {
			const char *shape;
			Coll c;
			double ms;
		} shapes[] = { { "1-2", Coll::AllReduce, 2 * 1 * 32 }, { "1-2", Coll::AllGather, 0 },
			       { "1-16", Coll::AllReduce, 16 * 29 * 4 }, { "1-16", Coll::ReduceScatter, 16 * 14 * 4 } };
		for (const auto &w : shapes) {
			Tree ts = Shape(w.shape);
			p.o_w = 0;
			Result r0 = RunCollective(ts, p, 1 << 20, w.c, Algo::Ring, 0);
			p.o_w = 1e-3;
			r = RunCollective(ts, p, 1 << 20, w.c, Algo::Ring, 0);
			Near((std::string("o_w: ring ") + CollName(w.c) + " 1 MiB on " + w.shape + ", every host's CPU beyond (ms)")
				     .c_str(),
			     (r.cpu_hosts - r0.cpu_hosts) * 1e3, w.ms, 1e-6);
		}
	}

	/* 8. The cores a run's measurement had: host_cores less the median the rest of the machine
	 * used in its rounds (0.5 and 0.3: 2 - 0.4), or in the run's other measurements (0.2, 0.3,
	 * 0.5: 2 - 0.3), not less when the rest used none, host_cores when never recorded. */
	{
		RunFigures f;
		f.host_cores = 2;
		std::string how;
		Near("cores of a run, never recorded", RunCores(f, "inc", "allreduce", 1048576, &how), 2, 1e-12);
		f.others = {{"inc", "allreduce", 1048576, 0.5}, {"inc", "allreduce", 1048576, 0.3}, {"ring", "allreduce", 1048576, 0.2}};
		Near("cores of a run, the measurement's rounds", RunCores(f, "inc", "allreduce", 1048576, &how), 1.6, 1e-12);
		Near("cores of a run, the run's other measurements", RunCores(f, "inc", "reduce", 1048576, &how), 1.7, 1e-12);
		f.others = {{"inc", "allreduce", 1048576, -0.1}};
		Near("cores of a run, the rest used none", RunCores(f, "inc", "allreduce", 1048576, &how), 2, 1e-12);
	}

	/* 5. Trees and the latency a run's L gives. */
	{
		Tree t;
		std::string err;
		Near("shape 1-32-1024: hosts", TreeFromShape("1-32-1024", &t, &err) ? double(t.host_of_rank.size()) : -1, 1024, 0);
		Near("shape 1-32-1024: levels", t.levels, 2, 0);
		const char *bad[] = {"2-4", "1-3-4", "1", "1-1", "1--2", "1-2-", "x", "1-2-4-8-16-32-64-128-256", "1-99999999"};
		for (const char *b : bad)
			Near(b, TreeFromShape(b, &t, &err) ? 1 : 0, 0, 0);
		/* L = 400 us over 4 links, c_sw 10 us at 3 switches in and out, 8 + 60 bytes at 1 MB/s per link */
		Near("link latency from L (us)", LinkLatency(400, 4, 10e-6, 1e6, 8) * 1e6, (400 - 60 - 4 * 68) / 4.0, tol);
	}
	printf("%d checks, %d failed\n", checks, failures);
	return failures ? 1 : 0;
}
