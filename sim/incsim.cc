/*
 * incsim — inclab's trees and collectives (AllReduce, Reduce, Broadcast,
 * AllGather, ReduceScatter, AllToAll, Barrier) in ns-3 (model.h), in the
 * lab's results format (experiments/README.md) so that `make plots` draws it.
 *
 *   incsim (--topology FILE | --tree SHAPE) --size LIST
 *          [--collective allreduce|reduce|broadcast|allgather|reducescatter|alltoall|barrier]
 *          [--root RANK] [--algorithms inc,ring]
 *          [--run DIR] [--link-bw-MBps X] [--link-latency-us X] [--host-o-us X]
 *          [--host-G-us-per-byte X] [--switch-frame-us X] [--cores C] [--loss P] [--seed N]
 *          [--window N] [--message N] [--slots N] [--rto-us X]
 *          [--results DIR] [--commit HASH]
 *
 * AllGather's, ReduceScatter's and AllToAll's size is the whole buffer
 * (nccl-tests' and inccl_perf's), rounded down as inccl_perf does to whole
 * blocks of ranks float32 elements; a Barrier takes no --size.
 *
 * Exit: 0 every result right, 1 a wrong result or a host that never
 * finished, 2 bad input (a precise message on stderr).
 */
#include "model.h"
#include "params.h"

#include <getopt.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>

using namespace incsim;

namespace {

/* Fail() - print "incsim: MSG" and exit 2 (bad input). */
[[noreturn]] void Fail(const std::string &msg)
{
	fprintf(stderr, "incsim: %s\n", msg.c_str());
	exit(2);
}

/* Num() - @s as a finite number in [@lo, @hi], or Fail() naming @what. */
double Num(const char *what, const char *s, double lo, double hi)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || *end || !std::isfinite(v) || v < lo || v > hi)
		Fail(std::string(what) + ": '" + s + "' is not a number in " + std::to_string(lo) + ".." + std::to_string(hi));
	return v;
}

/* Size() - "4", "64K", "16M", "2G" (powers of 1024) as bytes 1..kMaxBytes, or Fail(). */
uint64_t Size(const std::string &s)
{
	char *end;
	errno = 0;
	if (s.empty() || s[0] < '0' || s[0] > '9')
		Fail("size '" + s + "': a number with K, M or G");
	unsigned long long v = strtoull(s.c_str(), &end, 10);
	int sh = 0;
	if (*end == 'K' || *end == 'k')
		sh = 10, end++;
	else if (*end == 'M' || *end == 'm')
		sh = 20, end++;
	else if (*end == 'G' || *end == 'g')
		sh = 30, end++;
	if (errno || *end || v == 0 || v > (kMaxBytes >> sh))
		Fail("size '" + s + "': 1 B .. 2G (K, M, G are powers of 1024)");
	return uint64_t(v) << sh;
}

/* Quote() - @s as a YAML single-quoted string, control characters as spaces. */
std::string Quote(const std::string &s)
{
	std::string q = "'";
	for (char c : s)
		q += c == '\'' ? std::string("''") : std::string(1, (unsigned char)c < 0x20 || c == 0x7f ? ' ' : c);
	return q + "'";
}

/* Loadavg() - /proc/loadavg's three figures, or "unknown". */
std::string Loadavg()
{
	std::ifstream f("/proc/loadavg");
	std::string a, b, c;
	if (!(f >> a >> b >> c))
		return "unknown";
	return a + " " + b + " " + c;
}

/* CpuModel() - /proc/cpuinfo's first model name, "" if none. */
std::string CpuModel()
{
	std::ifstream f("/proc/cpuinfo");
	std::string line;
	while (std::getline(f, line))
		if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos) {
			std::string v = line.substr(line.find(':') + 1);
			return v.substr(v.find_first_not_of(' ') == std::string::npos ? v.size() : v.find_first_not_of(' '));
		}
	return "";
}

/* UtcNow() - the time as @fmt (strftime) in UTC. */
std::string UtcNow(const char *fmt)
{
	char b[64];
	time_t t = time(nullptr);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(b, sizeof b, fmt, &tm);
	return b;
}

struct Param {
	const char *name, *opt, *unit;
	double cli = -1, run = -1; /* < 0: not given */
	std::string run_src;
};

} // namespace

int main(int argc, char **argv)
{
	enum { O_TOPO = 256, O_TREE, O_SIZE, O_ALGOS, O_RUN, O_BW, O_LAT, O_O, O_G, O_SW, O_LOSS, O_SEED, O_WIN, O_MSG, O_SLOTS,
	       O_RTO, O_QUEUE, O_UNIT, O_RESULTS, O_COMMIT, O_COLL, O_ROOT, O_CORES, O_CALLI, O_CALLR, O_HELP };
	static const struct option opts[] = {
		{"topology", 1, 0, O_TOPO}, {"tree", 1, 0, O_TREE}, {"size", 1, 0, O_SIZE}, {"algorithms", 1, 0, O_ALGOS},
		{"run", 1, 0, O_RUN}, {"link-bw-MBps", 1, 0, O_BW}, {"link-latency-us", 1, 0, O_LAT}, {"host-o-us", 1, 0, O_O},
		{"host-G-us-per-byte", 1, 0, O_G}, {"switch-frame-us", 1, 0, O_SW}, {"loss", 1, 0, O_LOSS},
		{"seed", 1, 0, O_SEED}, {"window", 1, 0, O_WIN}, {"message", 1, 0, O_MSG}, {"slots", 1, 0, O_SLOTS},
		{"rto-us", 1, 0, O_RTO}, {"queue", 1, 0, O_QUEUE}, {"unit", 1, 0, O_UNIT}, {"results", 1, 0, O_RESULTS}, {"commit", 1, 0, O_COMMIT},
		{"collective", 1, 0, O_COLL}, {"root", 1, 0, O_ROOT}, {"cores", 1, 0, O_CORES},
		{"call-inc-us", 1, 0, O_CALLI}, {"call-ring-us", 1, 0, O_CALLR}, {"help", 0, 0, O_HELP},
		{0, 0, 0, 0}};
	std::string topo_file, shape, sizes, algos = "inc,ring", run, results, commit = "unknown", root_arg;
	Coll coll = Coll::AllReduce;
	Params p;
	double call_cli[2] = {-1, -1}; /* a call's own time by hand, INC and per ring step (us) */
	enum { BW, LAT, HO, HG, SW, CORES, NP };
	Param par[NP] = {{"link bandwidth", "--link-bw-MBps", "MB/s", -1, -1, ""},
			 {"link latency", "--link-latency-us", "us", -1, -1, ""},
			 {"host o", "--host-o-us", "us", -1, -1, ""},
			 {"host G", "--host-G-us-per-byte", "us/B", -1, -1, ""},
			 {"switch per-frame cost c_sw", "--switch-frame-us", "us", -1, -1, ""},
			 {"machine cores C", "--cores", "cores every node shares; 0: a core per node", -1, -1, ""}};
	int c;
	while ((c = getopt_long(argc, argv, "", opts, nullptr)) != -1) {
		switch (c) {
		case O_TOPO: topo_file = optarg; break;
		case O_TREE: shape = optarg; break;
		case O_SIZE: sizes = optarg; break;
		case O_ALGOS: algos = optarg; break;
		case O_RUN: run = optarg; break;
		case O_BW: par[BW].cli = Num("--link-bw-MBps", optarg, 1e-6, 1e7); break;
		case O_LAT: par[LAT].cli = Num("--link-latency-us", optarg, 0, 1e7); break;
		case O_O: par[HO].cli = Num("--host-o-us", optarg, 0, 1e7); break;
		case O_G: par[HG].cli = Num("--host-G-us-per-byte", optarg, 0, 1e6); break;
		case O_SW: par[SW].cli = Num("--switch-frame-us", optarg, 0, 1e7); break;
		case O_CORES:
			par[CORES].cli = Num("--cores", optarg, 0, 65536);
			if (par[CORES].cli > 0 && par[CORES].cli < 0.01)
				Fail("--cores: 0 (a core per node) or 0.01..65536");
			break;
		case O_CALLI: call_cli[0] = Num("--call-inc-us", optarg, 0, 1e8); break;
		case O_CALLR: call_cli[1] = Num("--call-ring-us", optarg, 0, 1e8); break;
		case O_LOSS: p.loss = Num("--loss", optarg, 0, 0.5); break;
		case O_SEED: p.seed = uint32_t(Num("--seed", optarg, 1, 4294967295.0)); break;
		case O_WIN: p.window_host = uint32_t(Num("--window", optarg, 1, 16384)); break;
		case O_MSG: p.message = uint32_t(Num("--message", optarg, 1, 64)); break;
		case O_SLOTS: p.slots = uint32_t(Num("--slots", optarg, 1, 4194304)); break;
		case O_RTO: p.rto = Num("--rto-us", optarg, 1, 1e8) * 1e-6; break;
		case O_QUEUE: p.queue = uint32_t(Num("--queue", optarg, 1, 16777216)); break;
		case O_UNIT: p.unit = uint32_t(Num("--unit", optarg, 1, 32)); break;
		case O_RESULTS: results = optarg; break;
		case O_COMMIT: commit = optarg; break;
		case O_COLL:
			if (!CollParse(optarg, &coll))
				Fail(std::string("--collective: '") + optarg +
				     "' is not allreduce, reduce, broadcast, allgather, reducescatter, alltoall or barrier");
			break;
		case O_ROOT: root_arg = optarg; break;
		case O_HELP:
			printf("usage: incsim (--topology FILE | --tree 1-32-1024) --size 1M[,16M,...] [--algorithms inc,ring]\n"
			       "  [--collective allreduce|reduce|broadcast|allgather|reducescatter|alltoall|barrier]\n"
			       "  [--root RANK] (Reduce, Broadcast; default 0)\n"
			       "  allgather, reducescatter, alltoall: --size is the whole buffer (nccl-tests'), rounded down to\n"
			       "  whole blocks of ranks float32 elements as inccl_perf does; barrier: no --size\n"
			       "  parameters: --run RUNDIR and/or --link-bw-MBps --link-latency-us --host-o-us\n"
			       "  --host-G-us-per-byte --switch-frame-us --cores (the command line wins over the run;\n"
			       "  --host-o-us and --host-G-us-per-byte set every per-message and per-byte host cost alike;\n"
			       "  --cores 0: a core per node, else every node's work shares C cores)\n"
			       "  --call-inc-us US --call-ring-us US: a libinccl call's own time beyond its path (INC, per\n"
			       "  ring step; from the run: its Barrier less half a ping-pong; without: 0)\n"
			       "  model: --loss P --seed N --window FRAMES --message FRAMES --slots N --rto-us US --queue FRAMES\n"
			       "  --unit PACKETS (a model frame stands for this many of the lab's: fewer events)\n"
			       "  output: --results DIR (a run directory sim-COLLECTIVE-DATE-TIME in it) --commit HASH\n");
			return 0;
		default: Fail("unknown option (incsim --help)");
		}
	}
	if (optind < argc)
		Fail(std::string("unexpected argument '") + argv[optind] + "'");
	if (topo_file.empty() == shape.empty())
		Fail("give one of --topology FILE and --tree SHAPE");
	if (coll == Coll::Barrier && !sizes.empty())
		Fail("--size: a Barrier moves no data: give no size");
	if (sizes.empty() && coll != Coll::Barrier)
		Fail("give --size (e.g. 1M or 1M,16M,64M)");
	std::vector<uint64_t> size_list;
	if (coll == Coll::Barrier)
		size_list.push_back(0);
	else {
		std::stringstream ss(sizes);
		std::string s;
		while (std::getline(ss, s, ','))
			size_list.push_back(Size(s));
		if (size_list.empty() || size_list.size() > 64)
			Fail("--size: 1..64 sizes joined by ','");
	}
	bool do_inc = false, do_ring = false;
	{
		std::stringstream ss(algos);
		std::string a;
		while (std::getline(ss, a, ',')) {
			if (a == "inc")
				do_inc = true;
			else if (a == "ring")
				do_ring = true;
			else
				Fail("--algorithms: '" + a + "' is not inc or ring");
		}
		if (!do_inc && !do_ring)
			Fail("--algorithms: inc, ring or inc,ring");
	}
	Tree tree;
	std::string err;
	if (!(shape.empty() ? TreeFromTopology(topo_file.c_str(), &tree, &err) : TreeFromShape(shape, &tree, &err)))
		Fail(err);

	RunFigures rf;
	if (!run.empty()) {
		if (!ReadRun(run, &rf, &err))
			Fail("--run: " + err);
		par[BW].run = rf.ceiling_MBps;
		par[BW].run_src = "the median ceiling of " + run;
		par[HO].run = rf.o_s; /* stands for the group: o_su, o_ack, o_s, o_r, o_c, o_w */
		par[HG].run = rf.G_s; /* G_s, G_r, G_swap, G_copy, G_sum */
		par[HO].run_src = par[HG].run_src = "the analytic model's (analysis/loggp.c loggp_params()) of " + run;
		par[SW].run = rf.c_sw_us;
		par[SW].run_src = "the switches' CPU (cpu.csv) over their frames (switch-counters.txt) of " + run;
		par[CORES].run = rf.host_cores;
		par[CORES].run_src = "meta.yaml host_cores of " + run + " less the rest of the machine's use (cpu.csv), per measurement";
	}
	for (int i = 0; i < NP; i++) {
		if (i == LAT)
			continue;
		if (par[i].cli < 0 && par[i].run < 0)
			Fail(std::string("no ") + par[i].name + ": give " + par[i].opt + " (" + par[i].unit + ")" +
			     (run.empty() ? " or --run RUNDIR"
				      : i == SW ? ": " + run + " has no cpu.csv and switch-counters.txt of INC measurements"
				      : i == BW ? ": " + run + "/results.csv has no verified `ceiling` row (BASELINES without ceiling)"
						: ": " + run + " does not give it"));
	}
	auto val = [&](int i) { return par[i].cli >= 0 ? par[i].cli : par[i].run; };
	p.link_bw = val(BW) * 1e6;
	if (par[HO].cli >= 0) { /* by hand: every per-message cost alike */
		p.o_su = p.o_s = p.o_r = par[HO].cli * 1e-6;
		p.o_ack = p.o_c = p.o_w = 0;
	} else {
		p.o_su = rf.o_su * 1e-6;
		p.o_ack = rf.o_ack * 1e-6;
		p.o_e = rf.o_e >= 0 ? rf.o_e * 1e-6 : -1;
		p.o_s = rf.o_s * 1e-6;
		p.o_r = rf.o_r * 1e-6;
		p.o_c = rf.o_c * 1e-6;
		p.o_w = rf.o_w * 1e-6;
	}
	if (par[HG].cli >= 0) { /* by hand: every byte alike, no loops of the host's own */
		p.G_s = p.G_r = par[HG].cli * 1e-6;
		p.G_swap = p.G_copy = p.G_sum = 0;
	} else {
		p.G_s = rf.G_s * 1e-6;
		p.G_r = rf.G_r * 1e-6;
		p.G_swap = rf.G_swap * 1e-6;
		p.G_copy = rf.G_copy * 1e-6;
		p.G_sum = rf.G_sum * 1e-6;
	}
	p.sw_frame = val(SW) * 1e-6;
	p.cores = val(CORES);
	std::string lat_src;
	if (par[LAT].cli >= 0) {
		p.link_lat = par[LAT].cli * 1e-6;
	} else if (!run.empty()) {
		double lat = LinkLatency(rf.L_us, 2 * rf.tree_levels, p.sw_frame, p.link_bw, rf.smallest);
		if (lat < 0)
			Fail("--run: " + run + "/loggp.csv's L = half_rtt - 2o = " + std::to_string(rf.L_us) +
			     " us is shorter than the model's switches and serialisation on the path: give --link-latency-us");
		p.link_lat = lat;
		par[LAT].run = lat * 1e6;
		lat_src = "L = half_rtt - 2o of " + run + "/loggp.csv over " + std::to_string(2 * rf.tree_levels) + " links";
	} else {
		Fail("no link latency: give --link-latency-us (us) or --run RUNDIR");
	}
	par[LAT].run_src = lat_src;
	/* a call's own time: the run's Barrier less half a ping-pong (params.h), INC and per ring step */
	std::string call_src[2];
	for (int a = 0; a < 2; a++) {
		double bar = a == 0 ? rf.barrier_inc_us : rf.barrier_ring_us, steps = a == 0 ? 1 : 2.0 * (rf.nranks - 1), us = 0;
		char b[300];
		if (call_cli[a] >= 0) {
			us = call_cli[a];
			snprintf(b, sizeof b, "command line");
		} else if (run.empty()) {
			snprintf(b, sizeof b, "no run: a call takes its path alone");
		} else if (!(bar > 0)) {
			snprintf(b, sizeof b, "%s has no %s Barrier: a call takes its path alone", run.c_str(), a == 0 ? "INC" : "ring");
		} else {
			us = bar / steps - rf.half_rtt_us;
			snprintf(b, sizeof b, "the %s Barrier of %s (median %.1f us%s) less half a ping-pong (%.1f us)%s",
				 a == 0 ? "INC" : "ring", run.c_str(), bar, a == 0 ? "" : (" over " + std::to_string(int(steps)) + " steps").c_str(),
				 rf.half_rtt_us, us < 0 ? ": none, the Barrier is quicker" : "");
			us = us < 0 ? 0 : us;
		}
		(a == 0 ? p.call_inc : p.call_ring) = us * 1e-6;
		call_src[a] = b;
	}
	if (!ValidateParams(p, &err))
		Fail(err);
	int nranks = int(tree.host_of_rank.size());
	int root = 0;
	if (!root_arg.empty()) {
		if (!CollHasRoot(coll))
			Fail(std::string("--root: ") + (coll == Coll::AllReduce ? "an AllReduce" : coll == Coll::AllGather ? "an AllGather"
							: coll == Coll::ReduceScatter ? "a ReduceScatter" : coll == Coll::AllToAll ? "an AllToAll" : "a Barrier") +
			     " has no root (only reduce and broadcast take one)");
		char *end;
		errno = 0;
		long v = strtol(root_arg.c_str(), &end, 10);
		if (root_arg[0] < '0' || root_arg[0] > '9' || *end || errno || v >= nranks)
			Fail("--root: '" + root_arg + "' is not a rank of 0.." + std::to_string(nranks - 1));
		root = int(v);
	}
	if (do_ring && coll != Coll::AllReduce && (p.unit > kRingPiece || kRingPiece % p.unit))
		Fail("--unit " + std::to_string(p.unit) + " with the ring's " + CollName(coll) + " (" +
		     (CollHasRoot(coll) ? "a chain of messages" : "messages") + " of " + std::to_string(kRingPiece) +
		     " packets, libinccl's ring piece): the model frame must divide them (1, 2, 4, 8 or 16)");
	if (CollBlocks(coll)) /* whole blocks of nranks elements, as inccl_perf's sweep rounds (perf_sweep()) */
		for (uint64_t &b : size_list) {
			uint64_t whole = uint64_t(nranks) * kElem, r = b < whole ? whole : b - b % whole;
			if (r != b)
				fprintf(stderr, "incsim: %s of %llu B: %llu B, whole blocks of %d ranks' %u-byte elements (as inccl_perf rounds)\n",
					CollName(coll), (unsigned long long)b, (unsigned long long)r, nranks, kElem);
			b = r;
		}
	if (do_ring && coll == Coll::AllReduce && p.unit > 1)
		for (uint64_t b : size_list)
			if (b / uint64_t(nranks) < uint64_t(p.unit) * kMtu)
				Fail("--unit " + std::to_string(p.unit) + " with the ring on " + std::to_string(nranks) + " ranks needs a size of at least " +
				     std::to_string(nranks * p.unit) + " KiB (a ring chunk, size / ranks, of at least one model frame); " +
				     std::to_string(b) + " B gives chunks of " + std::to_string(b / uint64_t(nranks)) + " B");
	if (do_ring)
		for (uint64_t b : size_list)
			if (b > kMaxBytes)
				Fail("size too large");

	/* the run directory first, so that a bad --results fails before the simulation */
	std::string rundir;
	if (!results.empty()) {
		struct stat st;
		if (stat(results.c_str(), &st) < 0 || !S_ISDIR(st.st_mode))
			Fail("--results: '" + results + "' is not a directory");
		std::string base = results + "/sim-" + CollName(coll) + "-" + UtcNow("%Y%m%d-%H%M%S");
		for (int i = 1; i < 100; i++) {
			std::string d = i == 1 ? base : base + "-" + std::to_string(i);
			if (mkdir(d.c_str(), 0777) == 0) {
				rundir = d;
				break;
			}
			if (errno != EEXIST)
				Fail("--results: cannot make " + d + ": " + strerror(errno));
		}
		if (rundir.empty())
			Fail("--results: 99 runs in the same second");
	}

	std::string start = UtcNow("%Y-%m-%dT%H:%M:%SZ"), load0 = Loadavg();
	std::ostringstream csv, stats;
	stats.precision(10); /* times to 0.1 us and better, as results.csv has them */
	csv << "algorithm,collective,dtype,op,root,nranks,bytes,elements,iters,time_us,algbw_MBps,busbw_MBps,wrong,round,"
	       "time_max_us\n";
	std::string status = "verified";
	int rc = 0;
	for (uint64_t bytes : size_list) {
		for (int a = 0; a < 2; a++) {
			if ((a == 0 && !do_inc) || (a == 1 && !do_ring))
				continue;
			const char *name = a == 0 ? "inc" : "ring";
			std::string cores_how = "command line";
			if (par[CORES].cli < 0) /* the cores the lab had in this measurement (REPORT's C) */
				p.cores = RunCores(rf, name, CollName(coll), double(bytes), &cores_how);
			auto t0 = std::chrono::steady_clock::now();
			Result r = RunCollective(tree, p, bytes, coll, a == 0 ? Algo::Inc : Algo::Ring, root);
			double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
			uint64_t elements = bytes / kElem;
			uint64_t wrong = r.wrong_elems;
			bool finished = std::isfinite(r.time_s);
			printf("%s %s %s ranks %d bytes %llu, cores %.3g: %s s simulated (rank 0 %.6f s); wall %.2f s, %llu events (%.3g events/s); "
			       "frames %llu, lost %llu, retransmits %llu, naks %llu, rnr %llu, timeouts %llu, wrong packets %llu; "
			       "CPU busiest host %.4g s, hosts %.4g s, switches %.4g s\n",
			       name, CollName(coll), tree.name.c_str(), nranks, (unsigned long long)bytes, p.cores,
			       finished ? std::to_string(r.time_s).c_str() : "never finished", r.host_done[0], wall,
			       (unsigned long long)r.events, r.events / std::max(wall, 1e-9), (unsigned long long)r.frames,
			       (unsigned long long)r.lost, (unsigned long long)r.retransmits, (unsigned long long)r.naks,
			       (unsigned long long)r.rnr_naks, (unsigned long long)r.timeouts, (unsigned long long)r.wrong_pkts,
			       r.cpu_host_max, r.cpu_hosts, r.cpu_switches);
			fflush(stdout);
			stats << "  - {algorithm: " << name << ", bytes: " << bytes << ", rank0_s: " << r.host_done[0]
			      << ", last_rank_s: " << r.time_s << ", cores: " << p.cores << ", cores_from: "
			      << Quote(cores_how) << ", wall_s: " << wall << ", events: " << r.events
			      << ", frames: " << r.frames << ", lost: " << r.lost << ", retransmits: " << r.retransmits
			      << ", timeouts: " << r.timeouts << ", cpu_host_max_s: " << r.cpu_host_max << ", cpu_hosts_s: " << r.cpu_hosts
			      << ", cpu_switches_s: " << r.cpu_switches << "}\n";
			if (!finished || r.wrong_pkts) {
				rc = 1;
				std::string why = std::string(name) + " " + CollName(coll) + " " + std::to_string(bytes) + " B: " +
						  (!finished ? "a host never finished" : std::to_string(wrong) + " wrong elements");
				if (coll == Coll::Barrier && finished)
					why = std::string(name) + " barrier: " + std::to_string(wrong) + " ranks with an early or wrong result";
				status = status == "verified" ? "failed: " + why : status + "; " + why;
				if (!finished)
					continue;
			}
			/* busbw as nccl-tests and inccl_perf have it (perf_busbw_MBps()): AllReduce algbw · 2(n-1)/n,
			 * AllGather, ReduceScatter and AllToAll algbw · (n-1)/n, Reduce and Broadcast algbw; a
			 * Barrier's row has neither, nor a dtype, op or root (inccl_perf's '-') */
			/* rank 0's time, as inccl_perf reports it (its rank 0 writes the row: the time from
			 * the barrier before the call to its own return); a root that is due no result (a
			 * Broadcast's) returns once its frames are acknowledged, before the others */
			double us = r.host_done[0] * 1e6, algbw = double(bytes) / us;
			double busbw = coll == Coll::AllReduce ? algbw * 2.0 * (nranks - 1) / nranks
				       : CollBlocks(coll)      ? algbw * (nranks - 1) / nranks
							       : algbw;
			std::string root_col = CollHasRoot(coll) ? std::to_string(root) : "-";
			bool has_op = coll == Coll::AllReduce || coll == Coll::Reduce || coll == Coll::ReduceScatter;
			char bw[64] = "-,-";
			if (coll != Coll::Barrier)
				snprintf(bw, sizeof bw, "%.2f,%.2f", algbw, busbw);
			char row[256];
			/* and the last rank's (time_max_us, as inccl_perf's MAX over the ranks): when the whole
			 * collective is done, what the LogGP model predicts */
			snprintf(row, sizeof row, "%s,%s,%s,%s,%s,%d,%llu,%llu,1,%.2f,%s,%llu,1,%.2f\n", name, CollName(coll),
				 coll == Coll::Barrier ? "-" : "float32", has_op ? "sum" : "-", root_col.c_str(), nranks,
				 (unsigned long long)bytes, (unsigned long long)elements, us, bw, (unsigned long long)wrong,
				 r.time_s * 1e6);
			csv << row;
		}
	}
	if (rundir.empty())
		return rc;

	std::ofstream(rundir + "/results.csv") << csv.str();
	std::ostringstream m;
	m << "experiment: sim-" << CollName(coll) << "\n"
	  << "date: " << UtcNow("%Y-%m-%dT%H:%M:%SZ") << "\n"
	  << "commit: " << Quote(commit) << "\n"
	  << "topology: " << Quote(tree.name) << "\n"
	  << "topology_file: " << Quote(shape.empty() ? topo_file : "generated: " + shape) << "\n"
	  << "simulated: true\n"
	  << "simulator: 'incsim (ns-3 3.37, sim/README.md)'\n"
	  << "accelerator: 'simulated'\n"
	  << "switch_mode: 'simulated'\n"
	  << "host_cpu: " << Quote(CpuModel()) << "\n"
	  << "host_cores: " << sysconf(_SC_NPROCESSORS_ONLN) << "\n"
	  << "nranks: " << nranks << "\n"
	  << "tree_levels: " << tree.levels << "\n"
	  << "mtu: " << kMtu << "\n"
	  << "dtype: " << (coll == Coll::Barrier ? "'-'" : "float32") << "\nop: "
	  << (coll == Coll::AllReduce || coll == Coll::Reduce || coll == Coll::ReduceScatter ? "sum" : "'-'")
	  << "\nroot: " << root << "\nrounds: 1\n"
	  << "round_conditions:\n  - round: 1\n    start: '" << start << "'\n    loadavg_before: " << Quote(load0)
	  << "\n    loadavg_after: " << Quote(Loadavg()) << "\n"
	  << "sizes: [";
	for (size_t i = 0; i < size_list.size(); i++)
		m << (i ? ", " : "") << size_list[i];
	m << "]\ncollectives: [" << CollName(coll) << "]\n"
	  << "window: " << p.window_host << "\nmessage: " << p.message << "\n"
	  << "baselines: \"" << (do_ring ? "ring" : "") << "\"\n"
	  << "parameters:\n";
	auto param = [&m](const char *key, double v, const std::string &from) {
		char num[64];
		snprintf(num, sizeof num, "%.9g", v);
		m << "  " << key << ": {value: " << num << ", from: " << Quote(from) << "}\n";
	};
	auto src = [&](int i) { return par[i].cli >= 0 ? std::string("command line") : par[i].run_src; };
	param("link_bw_MBps", val(BW), src(BW));
	param("link_latency_us", val(LAT), src(LAT));
	std::string ho = src(HO), hg = src(HG);
	bool run_o = par[HO].cli < 0, run_g = par[HG].cli < 0;
	param("o_su_us", p.o_su * 1e6, run_o ? ho + (rf.uc ? ": o_su" : ": o_sb (no UC stream)") : ho);
	param("o_ack_us", p.o_ack * 1e6, run_o ? ho + (rf.uc ? ": o_sb - o_su" : ": 0 (no UC stream)") : ho + ": 0");
	param("o_e_us", (p.o_e >= 0 ? p.o_e : p.o_su) * 1e6, run_o ? ho + (p.o_e >= 0 ? ": o_e" : ": as o_su_us (no empty packets' stream)") : ho);
	param("o_s_us", p.o_s * 1e6, ho);
	param("o_r_us", p.o_r * 1e6, ho);
	/* a refinement measured but not above 0 is noise: 0, and said so (not "not measured") */
	auto refined = [&](bool used, bool seen) {
		return !run_o ? ho + ": 0" : ho + (used ? "" : seen ? ": 0 (measured, not above 0: noise)" : ": 0 (not measured)");
	};
	param("o_c_us", p.o_c * 1e6, refined(rf.signaled, rf.signaled_seen));
	param("o_w_us", p.o_w * 1e6, refined(rf.waited, rf.waited_seen));
	param("G_s_us_per_byte", p.G_s * 1e6, hg);
	param("G_r_us_per_byte", p.G_r * 1e6, hg);
	for (auto &g : {std::make_pair("G_swap_us_per_byte", p.G_swap), std::make_pair("G_copy_us_per_byte", p.G_copy),
			std::make_pair("G_sum_us_per_byte", p.G_sum)})
		param(g.first, g.second * 1e6, run_g ? hg + (rf.hostwork ? "" : ": 0 (hostwork not measured)") : hg + ": 0");
	param("switch_frame_us", val(SW), src(SW));
	param("call_inc_us", p.call_inc * 1e6, call_src[0]);
	param("call_ring_us", p.call_ring * 1e6, call_src[1]);
	if (par[CORES].cli >= 0)
		param("cores", par[CORES].cli, "command line");
	else
		m << "  cores: {value: 'per measurement (simulation:)', from: " << Quote(src(CORES)) << "}\n";
	m << "  loss: " << p.loss << "\n  seed: " << p.seed << "\n  window_switch: " << p.window_switch
	  << "\n  slots: " << p.slots << "\n  rto_us: " << p.rto * 1e6 << "\n  rnr_us: " << p.rnr * 1e6
	  << "\n  queue_frames: " << p.queue << "\n  unit_packets: " << p.unit << "\n"
	  << "simulation:\n" << stats.str()
	  << "status: " << (status == "verified" ? status : Quote(status)) << "\n";
	std::ofstream(rundir + "/meta.yaml") << m.str();
	printf("incsim: run stored in %s\n", rundir.c_str());
	return rc;
}
