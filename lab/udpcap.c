/*
 * udpcap — capture links of the lab, all at once, into one pcapng file with
 * one interface per link, and say how many frames the capture lost.
 *
 *   udpcap -o FILE.pcapng [-s SECONDS] [-b BUFFER_MIB] [-m KEY:LINK:in|out[:SRC,...]]... LINK...
 *
 * Each LINK is one of
 *   NAME:netns:NAMESPACE:IFACE  a real interface (a namespace node's veth,
 *                               SWITCHES=netns) in network namespace NAMESPACE
 *                               (a name under /run/netns, or a path; "-": ours)
 *   NAME:udp:PORT_A:PORT_B      a pair of QEMU <interface type='udp'> tunnels on
 *                               127.0.0.1: every frame the VMs send is the payload
 *                               of one loopback UDP datagram, to PORT_A when it goes
 *                               to the link's first node, to PORT_B to its second
 * NAME is the link's, "A-B" (A: the node the interface belongs to, for netns).
 * Each link is one interface block named NAME; every frame carries its
 * direction (epb_flags): inbound = to A, outbound = from A. The frames are
 * written exactly as on the wire, RoCE ICRC included.
 *
 * Counting: each direction has its own capture socket (a UDP port filter, or
 * the ring entry's packet type, picks the direction), with a ring of BUFFER_MIB (32 MiB by default) in TPACKET_V3
 * blocks, read whenever poll() says a block is full or its timeout passed.
 * At the end every link prints the frames captured, what its capture sockets
 * dropped (the kernel's count, exact) and, for a netns interface, what the
 * interface itself counted (rx, tx) over the same window. Lost: for an
 * interface, the counted frames that are not in the capture (both its
 * sockets see every frame, so one's drops may be frames the other kept); for
 * a tunnel, whose sockets' kernel filters pick their own frames alone, their
 * drops. The
 * counters and the capture window cannot be opened at the very same instant:
 * a frame in flight at either edge may be counted on one side only (exact
 * when the link is idle at the start and the end, as in the lab's tests).
 * The last block of the file is an interface statistics block per link with
 * these numbers (isb_ifrecv, isb_osdrop, isb_usrdeliv).
 *
 * -m (a switch's counters, lab/lab.sh capture): count the frames of LINK in
 * direction in or out that a switch's port takes (SW_CAPTURE_FILTER,
 * switch/portstat.h: the same libpcap filter, run on each frame; a tunnel's
 * without its outer headers), with SRC only those from these IPv4 sources;
 * every frame captured counts, also those the window's edges drain. At the
 * end stdout has a line "KEY N" per -m, in their order. The caller compares
 * N with the switch's rx/tx over its own window, which holds ours.
 *
 * Exit: 0 nothing lost; 3 frames lost (the file is written all the same, and
 * stderr says LOST); 2 usage; 1 the capture could not be made or written.
 *
 * Why the old udpcap lost 4-30 % of the frames, silently: it asked for
 * immediate mode, in which libpcap uses TPACKET_V2 with one fixed slot per
 * frame, 64 KiB on an interface that offloads segmentation (veth, lo), so its
 * default 2 MiB ring held about 30 frames, and a burst of an AllReduce
 * overflowed it between two reads. It read no drop counter.
 */
#include "pcapng.h"
#include "../switch/portstat.h"

#include <pcap/pcap.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <arpa/inet.h>
#include <inttypes.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Outer headers on lo: Ethernet (14) + IPv4 (IHL words of 4) + UDP (8). */
#define OUTER_ETH 14
#define OUTER_IP 20
#define OUTER_UDP 8
#define INNER_ETH 14

#define MAX_LINKS 64          /* more than any topology's links */
#define MAX_MATCH (4 * MAX_LINKS) /* -m: a switch at each end, rx and tx */
#define MAX_SRCS 16           /* -m: source addresses of one count (a switch's own) */
#define SNAPLEN 65535         /* whole frames: a veth's MTU is far below, and a loopback datagram fits */
#define BUFFER_MIB 32         /* per direction: ~30,000 full-size lab frames, ~0.3 s at the lab's rates */
#define BLOCK_TIMEOUT_MS 20   /* a TPACKET_V3 block not full is handed over after this */
#define POLL_MS 100           /* the loop looks at the clock and signals at least this often */
#define NETNS_DIR "/run/netns" /* where `ip netns add` names namespaces */
#define LINKTYPE_ETHERNET 1

struct dir {
	pcap_t *pc;
	uint64_t captured, in_window, dropped;
};

struct link {
	char *name, *kind, *a, *b; /* the spec's fields, in place */
	int nsfd;                  /* the namespace (netns), or -1 */
	uint32_t ifid;
	struct dir d[2];           /* [0] inbound: to the first node; [1] outbound */
	uint64_t rx0, tx0, rx1, tx1; /* the interface's counters at the window's edges (netns) */
	int counted;               /* rx/tx known */
};

/* -m: frames of link @link, direction @dir, that pass @prog (a switch port's filter, and the sources) */
struct match {
	const char *key;
	int link, dir;
	struct bpf_program prog;
	uint64_t n;
};

static struct match matches[MAX_MATCH];
static int nmatch;
static struct link links[MAX_LINKS];
static int nlinks, selfns = -1;
static struct pcapng out;
static uint64_t t_start, t_end; /* the counters' window, ns */
static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* parse_num() - @s as an integer in [@lo, @hi], or -1 (with a message naming @what). */
static long parse_num(const char *s, long lo, long hi, const char *what)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi) {
		fprintf(stderr, "udpcap: %s must be a whole number in %ld..%ld, not '%s'\n", what, lo, hi, s);
		return -1;
	}
	return v;
}

/*
 * parse_link() - split spec @s (modified in place) into @l; 0, or -1 with a
 * message saying what is wrong with it.
 */
static int parse_link(char *s, struct link *l)
{
	char *f[5];
	int n = 0;

	for (char *p = s; n < 5; n++) {
		f[n] = p;
		p = strchr(p, ':');
		if (!p) {
			n++;
			break;
		}
		*p++ = 0;
	}
	if (n != 4 || !*f[0] || !*f[2] || !*f[3]) {
		fprintf(stderr, "udpcap: link '%s' is not NAME:netns:NAMESPACE:IFACE or NAME:udp:PORT_A:PORT_B\n", s);
		return -1;
	}
	*l = (struct link){ .name = f[0], .kind = f[1], .a = f[2], .b = f[3], .nsfd = -1 };
	if (!strcmp(l->kind, "udp"))
		return parse_num(l->a, 1, 65535, "a tunnel port") < 0 || parse_num(l->b, 1, 65535, "a tunnel port") < 0
			       ? -1
			       : 0;
	if (!strcmp(l->kind, "netns")) {
		if (strlen(l->b) >= 16) { /* IFNAMSIZ */
			fprintf(stderr, "udpcap: link %s: '%s' is too long for an interface name\n", l->name, l->b);
			return -1;
		}
		return 0;
	}
	fprintf(stderr, "udpcap: link %s: kind must be netns or udp, not '%s'\n", l->name, l->kind);
	return -1;
}

/* enter() - move this thread into @l's network namespace (ours for a tunnel); 0 or -1. */
static int enter(const struct link *l)
{
	if (setns(l->nsfd >= 0 ? l->nsfd : selfns, CLONE_NEWNET) < 0) {
		fprintf(stderr, "udpcap: link %s: cannot enter its network namespace: %s\n", l->name, strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * if_counters() - rx and tx packets of interface @ifname in this thread's
 * network namespace, from /proc/thread-self/net/dev; 0, or -1 if it has none.
 */
static int if_counters(const char *ifname, uint64_t *rx, uint64_t *tx)
{
	FILE *f = fopen("/proc/thread-self/net/dev", "r");
	char line[512];
	int rc = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *c = strchr(line, ':'), *p = line;
		unsigned long long v[10];

		if (!c)
			continue;
		*c = 0;
		while (*p == ' ')
			p++;
		/* rx: bytes packets errs drop fifo frame compressed multicast; tx: bytes packets */
		if (!strcmp(p, ifname) && sscanf(c + 1, "%llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1],
						 &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9]) == 10) {
			*rx = v[1];
			*tx = v[9];
			rc = 0;
			break;
		}
	}
	fclose(f);
	return rc;
}

/* open_dir() - the capture socket of direction @i of link @l, in the current namespace; 0 or -1. */
static int open_dir(struct link *l, int i, int buffer_mib)
{
	char errbuf[PCAP_ERRBUF_SIZE], filter[64];
	const char *dev = strcmp(l->kind, "udp") ? l->b : "lo";
	struct bpf_program prog;
	pcap_t *pc = pcap_create(dev, errbuf);

	if (!pc || pcap_set_snaplen(pc, SNAPLEN) || pcap_set_buffer_size(pc, buffer_mib << 20) ||
	    pcap_set_timeout(pc, BLOCK_TIMEOUT_MS) || pcap_set_tstamp_precision(pc, PCAP_TSTAMP_PRECISION_NANO) ||
	    pcap_activate(pc) < 0 || pcap_setnonblock(pc, 1, errbuf) < 0) {
		fprintf(stderr, "udpcap: link %s: cannot capture on %s: %s\n", l->name, dev, pc ? pcap_geterr(pc) : errbuf);
		return -1;
	}
	if (pcap_datalink(pc) != DLT_EN10MB) {
		fprintf(stderr, "udpcap: link %s: %s is not an Ethernet interface\n", l->name, dev);
		return -1;
	}
	if (strcmp(l->kind, "udp")) {
		/* Not a filter ("inbound"): libpcap runs a new filter in userland on the
		 * ring's first block, where the packet type is unknown, and so drops the
		 * first frames. The direction is the ring entry's own (sll_pkttype). */
		if (pcap_setdirection(pc, i ? PCAP_D_OUT : PCAP_D_IN) < 0) {
			fprintf(stderr, "udpcap: link %s: direction: %s\n", l->name, pcap_geterr(pc));
			return -1;
		}
		l->d[i].pc = pc;
		return 0;
	}
	snprintf(filter, sizeof(filter), "ip and udp and dst port %s", i ? l->b : l->a);
	if (pcap_compile(pc, &prog, filter, 1, PCAP_NETMASK_UNKNOWN) < 0 || pcap_setfilter(pc, &prog) < 0) {
		fprintf(stderr, "udpcap: link %s: filter '%s': %s\n", l->name, filter, pcap_geterr(pc));
		return -1;
	}
	pcap_freecode(&prog);
	l->d[i].pc = pc;
	return 0;
}

struct ctx {
	struct link *l;
	int i;
};

/* One frame of direction c->i of link c->l: written (a tunnel's without its outer headers) and counted. */
static void on_frame(unsigned char *user, const struct pcap_pkthdr *h, const unsigned char *data)
{
	const struct ctx *c = (const struct ctx *)user;
	struct dir *d = &c->l->d[c->i];
	uint64_t ts = (uint64_t)h->ts.tv_sec * 1000000000u + (uint64_t)h->ts.tv_usec; /* ns: nano precision */
	uint32_t off = 0;

	if (!strcmp(c->l->kind, "udp")) {
		unsigned ihl = h->caplen > OUTER_ETH ? (data[OUTER_ETH] & 0x0f) * 4u : 0;
		off = OUTER_ETH + ihl + OUTER_UDP;
		if (ihl < OUTER_IP || h->caplen < off + INNER_ETH) /* no whole inner Ethernet header: not a frame */
			return;
	}
	pcapng_epb(&out, c->l->ifid, ts, data + off, h->caplen - off, h->len - off, c->i ? PCAPNG_DIR_OUT : PCAPNG_DIR_IN);
	d->captured++;
	if (nmatch) {
		struct pcap_pkthdr ih = *h;
		ih.caplen -= off;
		ih.len -= off;
		for (int k = 0; k < nmatch; k++)
			if (&links[matches[k].link] == c->l && matches[k].dir == c->i &&
			    pcap_offline_filter(&matches[k].prog, &ih, data + off))
				matches[k].n++;
	}
	if (ts >= t_start && (!t_end || ts <= t_end))
		d->in_window++;
}

/* read_all() - whatever every socket holds now; returns the number of frames read, or -1 on an error. */
static long read_all(void)
{
	long n = 0;

	for (int k = 0; k < nlinks; k++)
		for (int i = 0; i < 2; i++) {
			struct ctx c = { &links[k], i };
			int r = pcap_dispatch(links[k].d[i].pc, -1, on_frame, (unsigned char *)&c);
			if (r < 0) {
				fprintf(stderr, "udpcap: link %s: capture error: %s\n", links[k].name,
					pcap_geterr(links[k].d[i].pc));
				return -1;
			}
			n += r;
		}
	return n;
}

/* read_counters() - every netns link's interface counters into rx/tx @end ? 1 : 0; 0 or -1. */
static int read_counters(int end)
{
	for (int k = 0; k < nlinks; k++) {
		struct link *l = &links[k];
		if (l->nsfd < 0 && strcmp(l->kind, "netns"))
			continue;
		if (enter(l) < 0)
			return -1;
		if (if_counters(l->b, end ? &l->rx1 : &l->rx0, end ? &l->tx1 : &l->tx0) < 0) {
			fprintf(stderr, "udpcap: link %s: no interface %s in /proc/net/dev of its namespace\n", l->name, l->b);
			return -1;
		}
		l->counted = 1;
	}
	return 0;
}

/* report() - one line per link; returns the frames lost over all links. */
static uint64_t report(void)
{
	uint64_t total = 0;

	for (int k = 0; k < nlinks; k++) {
		struct link *l = &links[k];
		uint64_t cap = l->d[0].captured + l->d[1].captured, drop = l->d[0].dropped + l->d[1].dropped;
		uint64_t lost = drop, rx = l->rx1 - l->rx0, tx = l->tx1 - l->tx0, ifrecv = PCAPNG_UNKNOWN;
		char counted[160] = "";

		if (l->counted) {
			/* inbound = what the interface received, outbound = what it sent */
			uint64_t miss_in = rx > l->d[0].in_window ? rx - l->d[0].in_window : 0;
			uint64_t miss_out = tx > l->d[1].in_window ? tx - l->d[1].in_window : 0;
			/* Each direction's socket sees both (the direction is picked in userland), so
			 * its drops may be frames the other one kept: the counters say what is lost. */
			lost = miss_in + miss_out;
			ifrecv = rx + tx;
			snprintf(counted, sizeof(counted), "; %s counted rx %" PRIu64 " tx %" PRIu64 " (captured in its window %" PRIu64 " + %" PRIu64 ")",
				 l->b, rx, tx, l->d[0].in_window, l->d[1].in_window);
		} else {
			snprintf(counted, sizeof(counted), "; a loopback tunnel has no counters of its own: lost = the capture's drops");
		}
		pcapng_isb(&out, l->ifid, t_start, t_end, ifrecv, drop, cap);
		fprintf(stderr, "udpcap: %s: %" PRIu64 " frames (%" PRIu64 " in, %" PRIu64 " out), capture dropped %" PRIu64 "%s; lost %" PRIu64 "\n",
			l->name, cap, l->d[0].captured, l->d[1].captured, drop, counted, lost);
		if (lost)
			fprintf(stderr, "udpcap: LOST %" PRIu64 " frames on link %s: this capture is incomplete\n", lost, l->name);
		total += lost;
	}
	return total;
}

static void usage(void)
{
	fprintf(stderr, "usage: udpcap -o FILE.pcapng [-s SECONDS] [-b BUFFER_MIB] [-m KEY:LINK:in|out[:SRC,...]]... LINK...\n"
			"  LINK: NAME:netns:NAMESPACE:IFACE or NAME:udp:PORT_A:PORT_B\n");
}

/*
 * parse_match() - -m spec @s (modified in place), once the links are known,
 * into the next of matches[]: KEY (letters, digits, . _ -), a LINK's name,
 * in or out, and optionally IPv4 sources separated by commas. 0, or -1 with
 * a message saying what is wrong.
 */
static int parse_match(char *s)
{
	char *f[4] = { s, NULL, NULL, NULL }, expr[sizeof(SW_CAPTURE_FILTER) + MAX_SRCS * 32 + 16], whole[512];
	struct match *m = &matches[nmatch];
	int n = 1, nsrc = 0;
	size_t len;
	pcap_t *dead;

	snprintf(whole, sizeof(whole), "%s", s); /* for the message: s is cut in pieces */
	for (char *p = s; n < 4 && (p = strchr(p, ':')); n++) {
		*p++ = 0;
		f[n] = p;
	}
	if (n < 3 || !*f[0] || strspn(f[0], "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") != strlen(f[0])) {
		fprintf(stderr, "udpcap: -m '%s' is not KEY:LINK:in|out[:SRC,...] (KEY of letters, digits, . _ -)\n", whole);
		return -1;
	}
	*m = (struct match){ .key = f[0], .link = -1, .dir = !strcmp(f[2], "out") ? 1 : !strcmp(f[2], "in") ? 0 : -1 };
	for (int k = 0; k < nlinks; k++)
		if (!strcmp(links[k].name, f[1]))
			m->link = k;
	if (m->link < 0 || m->dir < 0) {
		fprintf(stderr, "udpcap: -m %s: %s\n", f[0], m->link < 0 ? "no such LINK among the links captured" : "the direction is in or out");
		return -1;
	}
	len = (size_t)snprintf(expr, sizeof(expr), "%s", SW_CAPTURE_FILTER);
	for (char *a = f[3], *next; a; a = next, nsrc++) {
		struct in_addr ia;
		if ((next = strchr(a, ',')))
			*next++ = 0;
		if (nsrc == MAX_SRCS || inet_pton(AF_INET, a, &ia) != 1) {
			fprintf(stderr, "udpcap: -m %s: '%s' is not an IPv4 address (at most %d)\n", f[0], a, MAX_SRCS);
			return -1;
		}
		len += (size_t)snprintf(expr + len, sizeof(expr) - len, "%s%s", nsrc ? " or src host " : " and (src host ", a);
	}
	if (nsrc)
		snprintf(expr + len, sizeof(expr) - len, ")");
	dead = pcap_open_dead(DLT_EN10MB, SNAPLEN);
	if (!dead || pcap_compile(dead, &m->prog, expr, 1, PCAP_NETMASK_UNKNOWN) < 0) {
		fprintf(stderr, "udpcap: -m %s: filter '%s': %s\n", f[0], expr, dead ? pcap_geterr(dead) : "no libpcap handle");
		return -1;
	}
	pcap_close(dead);
	nmatch++;
	return 0;
}

int main(int argc, char **argv)
{
	const char *outpath = NULL;
	long seconds = 10, buffer_mib = BUFFER_MIB;
	char *mspec[MAX_MATCH];
	int nmspec = 0;
	uint64_t end, lost;
	int opt;

	while ((opt = getopt(argc, argv, "s:o:b:m:")) != -1) {
		switch (opt) {
		case 's': if ((seconds = parse_num(optarg, 1, 86400, "SECONDS")) < 0) return 2; break;
		case 'b': if ((buffer_mib = parse_num(optarg, 1, 1024, "BUFFER_MIB")) < 0) return 2; break;
		case 'o': outpath = optarg; break;
		case 'm':
			if (nmspec == MAX_MATCH) {
				fprintf(stderr, "udpcap: at most %d -m\n", MAX_MATCH);
				return 2;
			}
			mspec[nmspec++] = optarg;
			break;
		default: usage(); return 2;
		}
	}
	if (!outpath || optind == argc) {
		usage();
		return 2;
	}
	if (argc - optind > MAX_LINKS) {
		fprintf(stderr, "udpcap: at most %d links at once\n", MAX_LINKS);
		return 2;
	}
	for (int k = optind; k < argc; k++, nlinks++) {
		if (parse_link(argv[k], &links[nlinks]) < 0)
			return 2;
		for (int j = 0; j < nlinks; j++)
			if (!strcmp(links[j].name, links[nlinks].name)) {
				fprintf(stderr, "udpcap: link %s given twice\n", links[j].name);
				return 2;
			}
	}
	for (int k = 0; k < nmspec; k++)
		if (parse_match(mspec[k]) < 0)
			return 2;

	selfns = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (selfns < 0) {
		fprintf(stderr, "udpcap: cannot open our own network namespace: %s\n", strerror(errno));
		return 1;
	}
	for (int k = 0; k < nlinks; k++) {
		struct link *l = &links[k];
		if (!strcmp(l->kind, "netns") && strcmp(l->a, "-")) {
			char path[4096];
			snprintf(path, sizeof(path), strchr(l->a, '/') ? "%s" : NETNS_DIR "/%s", l->a);
			l->nsfd = open(path, O_RDONLY | O_CLOEXEC);
			if (l->nsfd < 0) {
				fprintf(stderr, "udpcap: link %s: no network namespace %s: %s\n", l->name, path, strerror(errno));
				return 1;
			}
		}
		if (enter(l) < 0 || open_dir(l, 0, buffer_mib) < 0 || open_dir(l, 1, buffer_mib) < 0)
			return 1;
	}

	if (pcapng_open(&out, outpath, "inclab udpcap") < 0) {
		fprintf(stderr, "udpcap: cannot write %s: %s\n", outpath, strerror(errno));
		return 1;
	}
	for (int k = 0; k < nlinks; k++) {
		struct link *l = &links[k];
		char desc[256];
		if (!strcmp(l->kind, "udp"))
			snprintf(desc, sizeof(desc), "loopback UDP tunnel: inbound = datagrams to port %s, outbound = to port %s", l->a, l->b);
		else
			snprintf(desc, sizeof(desc), "interface %s in network namespace %s: inbound = received, outbound = sent", l->b, l->a);
		l->ifid = pcapng_idb(&out, LINKTYPE_ETHERNET, SNAPLEN, l->name, desc);
	}

	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	/* The window opens before the counters are read and closes after: a frame
	 * counted in it has its capture timestamp in it too, but for one in flight. */
	t_start = now_ns();
	if (read_counters(0) < 0)
		return 1;
	end = t_start + (uint64_t)seconds * 1000000000u;
	/* the window is open: whoever makes the traffic may start (a test waits for this line) */
	fprintf(stderr, "udpcap: capturing %d link%s for at most %ld s\n", nlinks, nlinks == 1 ? "" : "s", (long)seconds);

	struct pollfd p[2 * MAX_LINKS];
	for (int k = 0; k < nlinks; k++)
		for (int i = 0; i < 2; i++)
			p[2 * k + i] = (struct pollfd){ .fd = pcap_get_selectable_fd(links[k].d[i].pc), .events = POLLIN };
	while (!stop) {
		uint64_t now = now_ns();
		if (now >= end)
			break;
		uint64_t left_ms = (end - now) / 1000000u + 1;
		poll(p, 2 * nlinks, left_ms < POLL_MS ? (int)left_ms : POLL_MS);
		if (read_all() < 0)
			return 1;
	}
	if (read_counters(1) < 0)
		return 1;
	t_end = now_ns();
	/* What the sockets still hold: blocks not yet full are handed over within BLOCK_TIMEOUT_MS. */
	for (int quiet = 0; quiet < 2;) {
		poll(p, 2 * nlinks, 3 * BLOCK_TIMEOUT_MS);
		long n = read_all();
		if (n < 0)
			return 1;
		quiet = n ? 0 : quiet + 1;
	}
	for (int k = 0; k < nlinks; k++)
		for (int i = 0; i < 2; i++) {
			struct pcap_stat st;
			if (pcap_stats(links[k].d[i].pc, &st) == 0)
				links[k].d[i].dropped = st.ps_drop; /* the socket's own drops (ps_ifdrop: the whole interface's) */
			pcap_close(links[k].d[i].pc);
		}
	lost = report();
	for (int k = 0; k < nmatch; k++)
		printf("%s %" PRIu64 "\n", matches[k].key, matches[k].n);
	fflush(stdout);
	if (pcapng_close(&out) < 0) {
		fprintf(stderr, "udpcap: writing %s failed: %s\n", outpath, strerror(errno));
		return 1;
	}
	if (lost) {
		fprintf(stderr, "udpcap: LOST %" PRIu64 " frames in all: %s is incomplete\n", lost, outpath);
		return 3;
	}
	return 0;
}
