/*
 * incswitch — the INC switch daemon: the engine (engine.c) on real ports.
 *
 *   incswitch -c CONTROLLER[:PORT] -n NAME [-t SECONDS] [-m SLOTS] [-F FAULT_FILE] [-k auto|simd|scalar] [-K KEY_FILE]
 *
 * Registers with the controller (TCP 52311, proto/ctlmsg.h) as switch
 * NAME of the topology, saying how many communicators (SW_MAX_COMMS) and
 * aggregation slots (-m, default SW_SLOTS) it can give, and serves the rules
 * the controller pushes: each communicator's rules get an engine of their
 * own (its slots, its connections, its queue pair numbers), removed on
 * "release"; rules for a communicator it serves replace that one's. Rules
 * that would pass either limit are refused ("code: busy") and touch nothing
 * that runs. The ports the communicators name are opened once and shared:
 * it captures the RoCEv2 frames arriving on them with libpcap, hands each to
 * the engine of the communicator its destination queue pair number names
 * (INC_QPN_COMM_KEY(), proto/inc_proto.h; a frame that names none goes to the
 * first engine, which counts it where it belongs: drop_parse,
 * drop_unknown_qp, ...), and sends what the engines emit on the port they
 * name, a batch per round of input (sendmmsg on the port's transmit-only
 * packet socket, tx_socket()). On a switch<->switch
 * port whose MTU has room, the frames of one batch travel together in
 * bundles (bundle.h, UDP 4793), which the peer's incswitch splits again
 * before its engine sees them. It holds UDP 4791/4792/4793 on its
 * addresses so the kernel does not answer the hosts' frames with ICMP port
 * unreachable. If the controller goes away the switch keeps serving its
 * rules and reconnects (on registering again it drops them: the controller
 * ended them with the old connection). Counters: on the controller's request, on SIGUSR1
 * and whenever rules end (a "name=value" line on stdout, per communicator);
 * nothing is logged per packet. The counters of the ports themselves
 * (inject_errors, bundles, capture_drops) count from when the first
 * communicator opened them to when the last one closed them, and every
 * communicator's line shows them. Per interface (portstat.h: the frames its
 * capture delivered, rx, and those sent on it, tx), for the daemon's life:
 * one "incswitch NAME ports: IFACE rx=N tx=N open=0|1 opens=N, ..." line on
 * SIGUSR1, after the communicators' (lab/lab.sh capture compares it with
 * the frames captured on the link).
 *
 * -F (test labs only: the lab gives it to a test lab's switches alone) allows
 * fault injection: each time rules arrive, FAULT_FILE is read, and a fault
 * it names ("corrupt", "drop", "early-barrier"; engine.h) is armed on the new
 * communicator's engine (only that one's), so a test can show that the hosts' checks catch a
 * wrong result. A missing or empty file, or "off", arms nothing. Without -F
 * nothing is ever read and no fault can be armed.
 *
 * -k (default: the environment's INCSWITCH_KERNEL, else auto) chooses the
 * kernels that combine and byte-swap payloads (inc_proto.h) and the ICRC's
 * CRC (crc32.h): simd and ISA-L for a native CPU, scalar and
 * libdeflate's tables for one emulated by QEMU TCG; auto tells
 * them apart by CPUID. The "started" line names both and what chose them.
 *
 * -K (default CTL_NODE_KEY_FILE when it exists): this node's key. The switch
 * answers the controller's challenge with it as node NAME, and every message
 * after is sealed and checked (proto/ctlauth.h); a message from the
 * controller that fails is refused and the connection made anew. Named with
 * -K, the file is read at every connection attempt, so a key delivered late
 * is taken up at the next one.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <getopt.h>
#include <netinet/in.h>
#include <pcap/pcap.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <endian.h>
#include <linux/if_packet.h>
#include <linux/virtio_net.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../proto/ctlmsg.h"
#include "../proto/ctlauth.h"
#include "bundle.h"
#include "crc32.h"
#include "engine.h"
#include "portstat.h"
#include "swconfig.h"

#define CTL_TIMEOUT_MS 5000      /* to send one control message */
#define RECONNECT_MS 2000        /* between attempts to reach the controller */
#define CONNECT_TIMEOUT_MS 300   /* one attempt: short, the data path waits meanwhile */
#define TXQ_FRAMES 128           /* frames the engine emits in one batch before a sendmmsg() */
#define TXQ_FRAME_MAX 1536       /* room for a frame of the lab's 1024-byte MTU and its headers */
#define BUNDLE_MAX 9216          /* largest bundle built (an IP MTU of 9000 plus headers) */
#define SNAPLEN_MIN 2048         /* capture length of host ports: one 1024-byte-MTU frame */
#define SW_MAX_COMMS 8           /* communicators served at once (each one engine) */
#define SW_SLOTS 32768           /* aggregation slots all communicators share unless -m says otherwise:
                                  * four of the controller's default 8192, each slot about 1.1 KiB of
                                  * data and state plus its frames in the send rings */
#define MAX_PORTS SW_MAX_CHILDREN /* interfaces open at once, whatever communicators name them */
#define MAX_HELD (2 * (SW_MAX_CHILDREN + 1))

static volatile sig_atomic_t stop, report;

static void on_signal(int sig)
{
	if (sig == SIGUSR1)
		report = 1;
	else
		stop = 1;
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* An interface the switch captures and sends on, shared by the communicators that name it. */
struct port {
	char name[SW_PORT_NAME_MAX];
	int refs;                  /* communicators using it; 0: closed */
	pcap_t *pc;
	int txfd;                  /* its transmit socket (tx_socket()), or -1 (none: sends through pc) */
	size_t bundle_room;        /* bytes of frames a bundle may carry on it; 0: none (a host's port) */
	struct sw_port_stat *st;   /* its counters (portstat.h), or NULL (too many interfaces counted) */
};

/* A UDP port held on one of the switch's addresses (hold_port()), shared the same way. */
struct held {
	uint32_t ip;
	uint16_t udp;
	int fd, refs;              /* refs 0: free */
};

struct daemon;

/* One communicator the switch serves. */
struct served {
	struct daemon *d;
	int on;                    /* serving; else a free entry */
	struct sw_rules rules;
	struct sw_engine *eng;
	int port[SW_MAX_CHILDREN]; /* the rules' port i is the daemon's port[i] */
	int held[MAX_HELD], nheld; /* indexes into the daemon's held[] */
};

struct daemon {
	const char *name, *controller;
	const char *fault_file;    /* -F: where a test lab says which fault to arm; NULL: never */
	int ctl;                   /* connection to the controller, -1 while there is none */
	struct ctl_buf in;
	const char *keyfile;       /* -K, or CTL_NODE_KEY_FILE when it exists; NULL: no authentication */
	struct ctl_auth auth;      /* of the connection to the controller */
	uint64_t next_connect_ms;
	unsigned slots;            /* -m: aggregation slots the communicators may hold together */
	int nserved;               /* communicators served */
	struct served comm[SW_MAX_COMMS];
	struct port port[MAX_PORTS];
	struct held held[MAX_HELD];
	/* the ports' counters, from when the first communicator opened them */
	uint64_t inject_errors;
	uint64_t bundles_tx, bundled_frames_tx;
	struct bundle_rx_counters brx;
	struct sw_port_stats pstats; /* per interface, for the daemon's life (portstat.h) */
	struct {                 /* frames the engine emitted, not yet handed to the kernel */
		int n;
		int port[TXQ_FRAMES];
		uint16_t len[TXQ_FRAMES];
		uint8_t data[TXQ_FRAMES][TXQ_FRAME_MAX];
	} txq;
};

/*
 * send_all() - hand the @n frames @buf[i] of @len[i] bytes to the kernel on
 * @port with sendmmsg() on the port's transmit socket, each frame behind a
 * virtio-net header (tx_socket()), or on its capture handle's socket when
 * there is none (what pcap_inject() does one frame per system call). A full
 * socket buffer gets one short wait for room; a frame that still cannot go
 * counts as an inject error.
 */
static void send_all(struct daemon *d, int port, uint8_t *const *buf, const uint16_t *len, int n)
{
	struct mmsghdr m[TXQ_FRAMES];
	struct iovec v[TXQ_FRAMES][2];
	struct virtio_net_hdr vh[TXQ_FRAMES];
	int vnet = d->port[port].txfd >= 0, fd = vnet ? d->port[port].txfd : pcap_get_selectable_fd(d->port[port].pc);
	int done = 0, waited = 0;

	for (int i = 0; i < n; i++) {
		/* hdr_len: the whole frame goes in the skb's linear part (see tx_socket()) */
		vh[i] = (struct virtio_net_hdr){ .gso_type = VIRTIO_NET_HDR_GSO_NONE, .hdr_len = htole16(len[i]) };
		v[i][0] = (struct iovec){ &vh[i], sizeof(vh[i]) };
		v[i][1] = (struct iovec){ buf[i], len[i] };
		m[i] = (struct mmsghdr){ .msg_hdr = { .msg_iov = vnet ? v[i] : v[i] + 1, .msg_iovlen = vnet ? 2 : 1 } };
	}
	while (done < n) {
		int r = sendmmsg(fd, m + done, (unsigned)(n - done), MSG_DONTWAIT);
		if (r > 0) {
			done += r;
			if (d->port[port].st)
				d->port[port].st->tx += (uint64_t)r;
			waited = 0;
			continue;
		}
		struct pollfd p = { .fd = fd, .events = POLLOUT };
		if (r < 0 && (errno == EAGAIN || errno == ENOBUFS) && !waited++ && poll(&p, 1, 2) == 1)
			continue;
		d->inject_errors++; /* this frame; the next ones get their own try */
		done++;
		waited = 0;
	}
}

/*
 * bundle_run() - put the @n frames @idx[] of the queue (all for @port, in
 * order) into as few bundles as the port's MTU allows, in @out; a bundle of
 * one frame stays that frame, and a port without bundle room (a host's)
 * gets every frame as it is. Return the number of frames now in @out/@olen.
 */
static int bundle_run(struct daemon *d, int port, const int *idx, int n, uint8_t **out, uint16_t *olen)
{
	static uint8_t bundles[TXQ_FRAMES][BUNDLE_MAX];
	const uint8_t *f[TXQ_FRAMES];
	uint16_t l[TXQ_FRAMES];
	int nout = 0;

	for (int j = 0; j < n; j++)
		f[j] = d->txq.data[idx[j]], l[j] = d->txq.len[idx[j]];
	for (int i = 0, k; i < n; i += k) {
		size_t blen = 0;

		k = bundle_take(l + i, n - i, d->port[port].bundle_room);
		if (k > 1 && (blen = bundle_build(bundles[nout], BUNDLE_MAX, f + i, l + i, k)) > 0) {
			out[nout] = bundles[nout];
			olen[nout++] = (uint16_t)blen;
			d->bundles_tx++;
			d->bundled_frames_tx += (uint64_t)k;
		} else { /* one frame, or one that is not plain IPv4/UDP: as it is */
			k = 1;
			out[nout] = d->txq.data[idx[i]];
			olen[nout++] = l[i];
		}
	}
	return nout;
}

/* tx_flush() - put every queued frame on the wire, in order per port, bundled where the port allows. */
static void tx_flush(struct daemon *d)
{
	static uint8_t done[TXQ_FRAMES];

	memset(done, 0, (size_t)d->txq.n);
	for (int i = 0; i < d->txq.n; i++) {
		int port = d->txq.port[i], idx[TXQ_FRAMES], n = 0;
		uint8_t *out[TXQ_FRAMES];
		uint16_t olen[TXQ_FRAMES];

		if (done[i])
			continue;
		for (int j = i; j < d->txq.n; j++)
			if (!done[j] && d->txq.port[j] == port)
				idx[n++] = j, done[j] = 1;
		n = bundle_run(d, port, idx, n, out, olen);
		send_all(d, port, out, olen, n);
	}
	d->txq.n = 0;
}

/*
 * The output of communicator @ctx's engine on its rules' port @port: queued
 * for the daemon's port, and sent in batches by tx_flush() after each round
 * of input.
 */
static void tx(void *ctx, int port, const uint8_t *frame, size_t len)
{
	struct served *s = ctx;
	struct daemon *d = s->d;

	port = s->port[port];
	if (len > TXQ_FRAME_MAX) {
		d->inject_errors++;
		return;
	}
	if (d->txq.n == TXQ_FRAMES)
		tx_flush(d);
	d->txq.port[d->txq.n] = port;
	d->txq.len[d->txq.n] = (uint16_t)len;
	memcpy(d->txq.data[d->txq.n++], frame, len);
}

/*
 * engine_for() - the engine of the communicator whose queue pair frame @f
 * (@len bytes) is addressed to: its destination QPN (roce_peek_dest_qp())
 * names the communicator (INC_QPN_COMM_KEY()). A frame too short to name
 * one, or naming none the switch serves, goes to the first communicator's
 * engine, whose checks count it (drop_parse, drop_unknown_qp): every frame
 * still lands on one counter.
 */
static struct sw_engine *engine_for(struct daemon *d, const uint8_t *f, size_t len)
{
	struct served *first = NULL;
	int64_t qpn = roce_peek_dest_qp(f, len);
	int key = qpn < 0 ? -1 : INC_QPN_COMM_KEY((uint32_t)qpn);

	for (int i = 0; i < SW_MAX_COMMS; i++) {
		struct served *s = &d->comm[i];
		if (!s->on)
			continue;
		if ((int)INC_COMM_KEY(s->rules.comm) == key)
			return s->eng;
		if (!first)
			first = s;
	}
	return first ? first->eng : NULL;
}

/* What pcap_dispatch() hands on_packet(): the daemon and the counters of the port read. */
struct rx_ctx {
	struct daemon *d;
	struct sw_port_stat *st;
};

/* One captured frame to its engine, or a bundle's frames one by one (bundle_rx() counts bundles refused);
 * the port's rx counts it once, as it was on the wire. */
static void on_packet(u_char *user, const struct pcap_pkthdr *h, const u_char *bytes)
{
	const struct rx_ctx *c = (const struct rx_ctx *)user;
	struct daemon *d = c->d;
	uint64_t now = now_ns();
	const uint8_t *inner[BUNDLE_MAX_FRAMES];
	uint16_t ilen[BUNDLE_MAX_FRAMES];
	int n = bundle_rx(bytes, h->caplen, h->len, inner, ilen, &d->brx);
	struct sw_engine *e;

	if (c->st)
		c->st->rx++;
	if (n < 0 && (e = engine_for(d, bytes, h->caplen)))
		sw_engine_rx(e, bytes, h->caplen, now);
	for (int i = 0; i < n; i++)
		if ((e = engine_for(d, inner[i], ilen[i])))
			sw_engine_rx(e, inner[i], ilen[i], now);
}

/* The engine's counters in the order they are reported: every field of struct sw_counters (checked below). */
#define C(field) { #field, offsetof(struct sw_counters, field) }
static const struct { const char *name; size_t off; } engine_counters[] = {
	C(rx_frames), C(tx_frames), C(aggregations), C(slots_completed), C(sent_up), C(results_from_parent),
	C(results_tx), C(retransmits), C(acks_tx), C(naks_tx), C(rnr_naks_tx), C(duplicates), C(acks_rx),
	C(naks_rx), C(rnr_naks_rx), C(fatal_naks_rx), C(acks_stale), C(drop_parse), C(drop_icrc),
	C(drop_unknown_qp), C(drop_bad_imm), C(drop_bad_op), C(drop_oversize), C(drop_mismatch), C(mismatch_count), C(drop_seq),
	C(drop_bad_ack), C(naks_ignored), C(timeouts), C(tail_probes), C(ooo_held), C(acks_held), C(faults_injected),
	C(held_for_turn), C(holds_full), C(holds_peak),
};
#undef C
#define NENGINE_COUNTERS (sizeof(engine_counters) / sizeof(engine_counters[0]))
_Static_assert(NENGINE_COUNTERS == sizeof(struct sw_counters) / sizeof(uint64_t),
	       "every counter of struct sw_counters (all uint64_t) is in engine_counters[]");

/* The daemon's own, reported after the engine's (counters() gives their values in this order): the ports'
 * counters, then the communicator's busy slots. */
static const char *const daemon_counters[] = {
	"inject_errors", "bundles_tx", "bundled_frames_tx", "bundles_rx", "drop_bundle", "capture_drops", "busy_slots",
};
#define NDAEMON_COUNTERS (sizeof(daemon_counters) / sizeof(daemon_counters[0]))
#define MAX_COUNTERS (NENGINE_COUNTERS + NDAEMON_COUNTERS)

/* The counters of communicator @s as "name" / value pairs (MAX_COUNTERS of them); returns how many. */
static int counters(const struct served *s, const char **name, unsigned long long *val)
{
	const struct daemon *d = s->d;
	const struct sw_counters *c = sw_engine_counters(s->eng);
	unsigned long long capture_drops = 0;
	int n = 0;

	for (int i = 0; i < MAX_PORTS; i++) {
		struct pcap_stat st;
		if (d->port[i].refs && pcap_stats(d->port[i].pc, &st) == 0)
			capture_drops += st.ps_drop + st.ps_ifdrop;
	}
	const unsigned long long own[] = { d->inject_errors, d->bundles_tx, d->bundled_frames_tx, d->brx.bundles_rx,
					   d->brx.drop_bundle, capture_drops, sw_engine_busy_slots(s->eng) };
	_Static_assert(sizeof(own) / sizeof(own[0]) == NDAEMON_COUNTERS, "a value for each of daemon_counters[]");

	for (size_t i = 0; i < NENGINE_COUNTERS; i++, n++) {
		name[n] = engine_counters[i].name;
		val[n] = *(const uint64_t *)((const char *)c + engine_counters[i].off);
	}
	for (size_t i = 0; i < NDAEMON_COUNTERS; i++, n++) {
		name[n] = daemon_counters[i];
		val[n] = own[i];
	}
	return n;
}

/* print_counters() - communicator @s's counters as one "incswitch NAME comm N: name=value ..." line. */
static void print_counters(const struct served *s, FILE *f)
{
	const char *name[MAX_COUNTERS];
	unsigned long long val[MAX_COUNTERS];
	int n = counters(s, name, val);

	fprintf(f, "incswitch %s comm %u:", s->rules.name, s->rules.comm);
	for (int i = 0; i < n; i++)
		fprintf(f, " %s=%llu", name[i], val[i]);
	fprintf(f, "\n");
	fflush(f);
}

/* Hold UDP @port on @ip: an open socket keeps the kernel from sending port-unreachable. */
static int hold_port(uint32_t ip, uint16_t port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(ip) };
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), small = 4096;

	if (s < 0)
		return -1;
	if (bind(s, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = errno;
		close(s);
		errno = e;
		return -1;
	}
	setsockopt(s, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small)); /* nobody reads it */
	return s;
}

/* MAC of the interface that owns @ip (the bridge for bridged host ports), from sysfs. */
static int local_mac(uint32_t ip, uint8_t mac[6])
{
	struct ifaddrs *ifs, *a;
	int rc = -1;

	if (getifaddrs(&ifs) < 0)
		return -1;
	for (a = ifs; a; a = a->ifa_next)
		if (a->ifa_addr && a->ifa_addr->sa_family == AF_INET &&
		    ntohl(((struct sockaddr_in *)a->ifa_addr)->sin_addr.s_addr) == ip) {
			char path[128];
			snprintf(path, sizeof(path), "/sys/class/net/%s/address", a->ifa_name);
			FILE *f = fopen(path, "r");
			if (f && fscanf(f, "%hhx:%hhx:%hhx:%hhx:%hhx:%hhx", &mac[0], &mac[1], &mac[2], &mac[3], &mac[4],
					&mac[5]) == 6)
				rc = 0;
			if (f)
				fclose(f);
			break;
		}
	freeifaddrs(ifs);
	return rc;
}

/* The peer's MAC from the neighbour table, prompting ARP with one datagram to
 * the discard port when it is not there yet; waits up to 3 s, or with
 * @nowait not at all. */
static int peer_mac(uint32_t local, uint32_t peer, uint8_t mac[6], int nowait)
{
	char want[INET_ADDRSTRLEN], line[256], ip[64], hw[64];
	struct in_addr a = { htonl(peer) };

	inet_ntop(AF_INET, &a, want, sizeof(want));
	for (int tries = 0; tries < (nowait ? 1 : 30); tries++) {
		FILE *f = fopen("/proc/net/arp", "r");
		while (f && fgets(line, sizeof(line), f))
			if (sscanf(line, "%63s %*s %*s %63s", ip, hw) == 2 && strcmp(ip, want) == 0 &&
			    strcmp(hw, "00:00:00:00:00:00") != 0 &&
			    sscanf(hw, "%hhx:%hhx:%hhx:%hhx:%hhx:%hhx", &mac[0], &mac[1], &mac[2], &mac[3], &mac[4], &mac[5]) == 6) {
				fclose(f);
				return 0;
			}
		if (f)
			fclose(f);
		if (tries % 10 == 0) {
			struct sockaddr_in from = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(local) };
			struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons(9), .sin_addr.s_addr = htonl(peer) };
			int s = socket(AF_INET, SOCK_DGRAM, 0);
			if (s >= 0) {
				bind(s, (struct sockaddr *)&from, sizeof(from));
				sendto(s, "", 0, 0, (struct sockaddr *)&to, sizeof(to));
				close(s);
			}
		}
		if (!nowait)
			usleep(100000);
	}
	return -1;
}

/* Fill in the MACs of a connection (@nowait: without waiting for ARP); a child's are also learnt from its first frame. */
static void resolve_macs(struct sw_conn_cfg *c, const char *what, int nowait)
{
	char ip[INET_ADDRSTRLEN];
	struct in_addr a = { htonl(c->peer_ip) };

	if (local_mac(c->local_ip, c->local_mac) < 0 || peer_mac(c->local_ip, c->peer_ip, c->peer_mac, nowait) < 0)
		fprintf(stderr, "incswitch: warning: no MAC address for %s %s yet; learning it from its frames\n", what,
			inet_ntop(AF_INET, &a, ip, sizeof(ip)));
}

/* The MTU of @s's port @i when a switch (UDP 4792) is reached on it, else 0: bundles go only to switches. */
static int switch_link_mtu(const struct served *s, int i)
{
	const struct sw_cfg *c = &s->rules.cfg;
	struct ifreq ifr = { 0 };
	int is_switch = c->has_parent && c->parent.port == i && c->parent.udp_dst == ROCE_PORT_SWITCH, fd, mtu = 0;

	for (int k = 0; k < c->nchildren; k++)
		is_switch |= c->child[k].port == i && c->child[k].udp_dst == ROCE_PORT_SWITCH;
	if (!is_switch || (fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) < 0)
		return 0;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", s->rules.port[i]);
	if (ioctl(fd, SIOCGIFMTU, &ifr) == 0)
		mtu = ifr.ifr_mtu;
	close(fd);
	return mtu;
}

/*
 * big_sndbuf() - give the packet socket @fd room for thousands of frames:
 * results leave in bursts (one per child per slot). SO_SNDBUFFORCE (root)
 * may exceed net.core.wmem_max; without it, as much as that allows.
 */
static void big_sndbuf(int fd)
{
	int sndbuf = 8 << 20;

	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &sndbuf, sizeof(sndbuf)) < 0)
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
}

/*
 * tx_socket() - a packet socket that only sends, on interface @name, whose
 * frames carry a virtio-net header. Without it a packet socket builds every
 * frame longer than a page (a bundle) from page fragments, and the lab's
 * virtio NICs, which have no scatter-gather (a UDP-tunnel netdev offers no
 * offloads), make the kernel copy it once more into one linear buffer; the
 * header's hdr_len asks for that linear buffer at once. Protocol 0: it
 * receives nothing (the capture does). Return the socket, or -1 (the port
 * then sends through its capture handle, without the header).
 */
static int tx_socket(const char *name)
{
	struct sockaddr_ll sll = { .sll_family = AF_PACKET, .sll_ifindex = (int)if_nametoindex(name) };
	int s = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0), one = 1;

	if (s < 0)
		return -1;
	if (!sll.sll_ifindex || bind(s, (struct sockaddr *)&sll, sizeof(sll)) < 0 ||
	    setsockopt(s, SOL_PACKET, PACKET_VNET_HDR, &one, sizeof(one)) < 0) {
		close(s);
		return -1;
	}
	big_sndbuf(s);
	return s;
}

/*
 * open_port() - make the rules' port @i of @s one of the daemon's ports:
 * the one of that name if another communicator opened it, else a free entry
 * opened now (capture, filter, transmit socket). Return 0 with s->port[i]
 * set, or -1 with the reason in @err.
 */
static int open_port(struct served *s, int i, char *err, size_t errlen)
{
	struct daemon *d = s->d;
	char perr[PCAP_ERRBUF_SIZE];
	struct bpf_program prog;
	const char *name = s->rules.port[i];
	int free_ix = -1;

	for (int k = 0; k < MAX_PORTS; k++) {
		if (d->port[k].refs && !strcmp(d->port[k].name, name)) {
			d->port[k].refs++;
			s->port[i] = k;
			return 0;
		}
		if (!d->port[k].refs && free_ix < 0)
			free_ix = k;
	}
	if (free_ix < 0) {
		snprintf(err, errlen, "port '%s': the switch has %d ports open already", name, MAX_PORTS);
		return -1;
	}
	struct port *p = &d->port[free_ix];
	int mtu = switch_link_mtu(s, i);
	pcap_t *pc = pcap_create(name, perr);

	if (!pc || pcap_set_snaplen(pc, mtu + ROCE_ETH_LEN > SNAPLEN_MIN ? mtu + ROCE_ETH_LEN : SNAPLEN_MIN) ||
	    pcap_set_immediate_mode(pc, 1) || pcap_set_buffer_size(pc, 8 << 20) || pcap_activate(pc) < 0) {
		snprintf(err, errlen, "cannot capture on port '%s': %s", name, pc ? pcap_geterr(pc) : perr);
		if (pc)
			pcap_close(pc);
		return -1;
	}
	if (pcap_compile(pc, &prog, SW_CAPTURE_FILTER, 1, PCAP_NETMASK_UNKNOWN) < 0 ||
	    pcap_setfilter(pc, &prog) < 0 || pcap_setdirection(pc, PCAP_D_IN) < 0 || pcap_setnonblock(pc, 1, perr) < 0) {
		snprintf(err, errlen, "port '%s': %s", name, pcap_geterr(pc));
		pcap_close(pc);
		return -1;
	}
	pcap_freecode(&prog);
	/* What leaves the port (our own frames from the transmit socket, routed
	 * traffic) is not input: keep the kernel from copying it into the capture
	 * ring only for libpcap to skip it (PCAP_D_IN). */
	int one = 1;
	setsockopt(pcap_get_selectable_fd(pc), SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one));
	*p = (struct port){ .refs = 1, .pc = pc, .bundle_room = mtu > 0 ? bundle_room(mtu) : 0,
			    .st = sw_port_stat_open(&d->pstats, name) };
	if (!p->st)
		fprintf(stderr, "incswitch: warning: port '%s' is not counted per port (%d interfaces counted already)\n",
			name, SW_PORT_STATS_MAX);
	snprintf(p->name, sizeof(p->name), "%s", name);
	if (p->bundle_room > BUNDLE_MAX - BUNDLE_OUTER_LEN)
		p->bundle_room = BUNDLE_MAX - BUNDLE_OUTER_LEN;
	if ((p->txfd = tx_socket(name)) < 0)
		big_sndbuf(pcap_get_selectable_fd(pc)); /* it sends through the capture handle */
	s->port[i] = free_ix;
	return 0;
}

/*
 * teardown() - stop serving communicator @s: send what its engine queued,
 * report its counters, free the engine, and close the ports and UDP ports
 * no other communicator uses. With the last communicator gone, the ports'
 * counters start again from zero.
 */
static void teardown(struct served *s)
{
	struct daemon *d = s->d;

	if (!s->on)
		return;
	tx_flush(d);
	print_counters(s, stdout);
	sw_engine_free(s->eng);
	s->eng = NULL;
	for (int i = 0; i < s->rules.nports; i++) {
		struct port *p;
		if (s->port[i] < 0 || --(p = &d->port[s->port[i]])->refs)
			continue;
		pcap_close(p->pc);
		sw_port_stat_close(p->st);
		if (p->txfd >= 0)
			close(p->txfd);
		*p = (struct port){ .txfd = -1 };
	}
	for (int i = 0; i < s->nheld; i++) {
		struct held *h = &d->held[s->held[i]];
		if (--h->refs == 0)
			close(h->fd);
	}
	s->nheld = 0;
	s->on = 0;
	if (--d->nserved == 0) {
		d->inject_errors = d->bundles_tx = d->bundled_frames_tx = 0;
		d->brx = (struct bundle_rx_counters){ 0 };
	}
}

/* hold() - make @s a user of UDP @udp held on @ip (shared with other communicators); 0, or -1 with errno. */
static int hold(struct served *s, uint32_t ip, uint16_t udp)
{
	struct daemon *d = s->d;
	int free_ix = -1;

	for (int k = 0; k < MAX_HELD; k++) {
		if (d->held[k].refs && d->held[k].ip == ip && d->held[k].udp == udp) {
			d->held[k].refs++;
			s->held[s->nheld++] = k;
			return 0;
		}
		if (!d->held[k].refs && free_ix < 0)
			free_ix = k;
	}
	if (free_ix < 0) {
		errno = EMFILE;
		return -1;
	}
	int fd = hold_port(ip, udp);
	if (fd < 0)
		return -1;
	d->held[free_ix] = (struct held){ ip, udp, fd, 1 };
	s->held[s->nheld++] = free_ix;
	return 0;
}

/* Hold every (address, UDP port) @s is reached on: children, then the parent; 4793 for bundles next to 4792. */
static int hold_ports(struct served *s, char *err, size_t errlen)
{
	struct sw_conn_cfg all[SW_MAX_CHILDREN + 1];
	int nall = s->rules.cfg.nchildren;

	memcpy(all, s->rules.cfg.child, sizeof(all[0]) * (size_t)nall);
	if (s->rules.cfg.has_parent)
		all[nall++] = s->rules.cfg.parent;
	for (int i = 0; i < nall; i++) {
		int j;
		for (j = 0; j < i && (all[j].local_ip != all[i].local_ip || all[j].udp_dst != all[i].udp_dst); j++)
			;
		if (j < i)
			continue;
		for (int k = 0; k < (all[i].udp_dst == ROCE_PORT_SWITCH ? 2 : 1); k++) { /* a switch link: bundles too */
			uint16_t port = k ? BUNDLE_UDP_PORT : all[i].udp_dst;
			if (hold(s, all[i].local_ip, port) < 0) {
				struct in_addr a = { htonl(all[i].local_ip) };
				snprintf(err, errlen, "cannot hold UDP %u on %s: %s (is it an address of this switch?)",
					 port, inet_ntoa(a), strerror(errno));
				return -1;
			}
		}
	}
	return 0;
}

/*
 * arm_fault() - on a daemon started with -F, arm the fault that d->fault_file
 * names on the engine of communicator @s, whose rules were just applied, and
 * say so in the log. A missing or empty file, or "off", arms nothing; a file
 * that names no fault, or a fault these rules cannot show, is logged and
 * arms nothing.
 */
static void arm_fault(struct served *s)
{
	const struct daemon *d = s->d;
	char word[32] = "";
	enum sw_fault f;
	FILE *fp;

	if (!d->fault_file || !(fp = fopen(d->fault_file, "r")))
		return;
	if (fscanf(fp, "%31s", word) != 1)
		word[0] = 0;
	fclose(fp);
	if (!word[0])
		return;
	if (sw_fault_parse(word, &f) < 0)
		printf("incswitch %s comm %u: fault file %s names no fault: '%s' (corrupt, drop, early-barrier, off); "
		       "none armed\n", d->name, s->rules.comm, d->fault_file, word);
	else if (sw_engine_inject(s->eng, f) < 0)
		printf("incswitch %s comm %u: fault '%s' cannot show on these rules (drop needs two children, "
		       "early-barrier host children only); none armed\n", d->name, s->rules.comm, word);
	else if (f != SW_FAULT_NONE)
		printf("incswitch %s comm %u: FAULT INJECTION armed: %s (test lab, %s)\n", d->name, s->rules.comm,
		       sw_fault_name(f), d->fault_file);
}

/* The communicator @comm the switch serves, or NULL. */
static struct served *served(struct daemon *d, unsigned comm)
{
	for (int i = 0; i < SW_MAX_COMMS; i++)
		if (d->comm[i].on && d->comm[i].rules.comm == comm)
			return &d->comm[i];
	return NULL;
}

/*
 * Serve the rules in @text: a new communicator, or new rules for one served
 * (which replace its old ones). Rules that do not parse, or that would pass
 * the switch's limits (SW_MAX_COMMS communicators, -m slots), touch nothing;
 * rules that parse but cannot be set up (a missing port, an address that is
 * not ours) leave nothing of theirs. Nothing another communicator uses is
 * touched either way.
 * Return 0, -1 with the reason in @err, or -2 (the switch is full) with the
 * reason in @err.
 */
static int apply_rules(struct daemon *d, const char *text, char *err, size_t errlen)
{
	static struct sw_rules next;
	struct served *s, *old;
	char *msgs = NULL;
	size_t mlen = 0;
	FILE *f = open_memstream(&msgs, &mlen);
	int rc = f ? sw_rules_parse(text, strlen(text), "rules", &next, f) : -1;
	unsigned used = 0, ncomms = 0;

	if (f)
		fclose(f);
	if (rc < 0) {
		char *nl = msgs ? strchr(msgs, '\n') : NULL;
		if (nl)
			*nl = 0;
		snprintf(err, errlen, "%s", msgs && *msgs ? msgs : "cannot parse the rules");
		free(msgs);
		return -1;
	}
	free(msgs);
	if (strcmp(next.name, d->name)) {
		snprintf(err, errlen, "rules are for switch '%s', this is '%s'", next.name, d->name);
		return -1;
	}
	old = served(d, next.comm);
	for (int i = 0; i < SW_MAX_COMMS; i++)
		if (d->comm[i].on && &d->comm[i] != old) {
			used += d->comm[i].rules.cfg.nslots;
			ncomms++;
		}
	if (ncomms >= SW_MAX_COMMS || used + next.cfg.nslots > d->slots) {
		snprintf(err, errlen, "switch %s is full: %u communicators (at most %d) hold %u of its %u aggregation "
			 "slots; communicator %u needs %u", d->name, ncomms, SW_MAX_COMMS, used, d->slots, next.comm,
			 next.cfg.nslots);
		return -2;
	}
	if (old)
		teardown(old);
	for (s = d->comm; s->on; s++)
		;
	*s = (struct served){ .d = d, .on = 1, .rules = next };
	d->nserved++;
	for (int i = 0; i < SW_MAX_CHILDREN; i++)
		s->port[i] = -1;
	/* With other communicators running, do not stall their frames waiting for
	 * ARP: the neighbours are known by then, or learnt from their frames. */
	for (int i = 0; i < s->rules.cfg.nchildren; i++)
		resolve_macs(&s->rules.cfg.child[i], "child", d->nserved > 1);
	if (s->rules.cfg.has_parent)
		resolve_macs(&s->rules.cfg.parent, "parent", d->nserved > 1);
	if (!(s->eng = sw_engine_new(&s->rules.cfg, tx, s))) {
		snprintf(err, errlen, "the engine rejected the rules (see the switch log)");
		s->on = 0;
		d->nserved--;
		return -1;
	}
	for (int i = 0; i < s->rules.nports; i++)
		if (open_port(s, i, err, errlen) < 0) {
			teardown(s);
			return -1;
		}
	if (hold_ports(s, err, errlen) < 0) {
		teardown(s);
		return -1;
	}
	printf("incswitch %s: serving communicator %u: %s, %d children on %d ports, %u slots (%d communicators, "
	       "%u of %u slots)\n", d->name, s->rules.comm, s->rules.cfg.has_parent ? "leaf" : "root",
	       s->rules.cfg.nchildren, s->rules.nports, s->rules.cfg.nslots, d->nserved, used + s->rules.cfg.nslots,
	       d->slots);
	arm_fault(s);
	fflush(stdout);
	return 0;
}

static void reply_error(struct daemon *d, unsigned comm, const char *why, int busy)
{
	char q[600];
	ctl_asendf(&d->auth, d->ctl, CTL_TIMEOUT_MS, "msg: error\ncomm: %u\nerror: %s\n%s", comm,
		   ctl_quote(why, q, sizeof(q)), busy ? "code: busy\n" : "");
}

/*
 * send_counters() - answer the controller's "counters": those of
 * communicator @comm, or with @comm 0 those of the first one served; and
 * which communicators the switch serves. A switch serving none (or not
 * @comm) sends its name alone.
 */
static void send_counters(struct daemon *d, unsigned comm)
{
	const char *name[MAX_COUNTERS];
	unsigned long long val[MAX_COUNTERS];
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	struct served *s = NULL;

	if (!f)
		return;
	for (int i = 0; i < SW_MAX_COMMS && !s; i++)
		if (d->comm[i].on && (!comm || d->comm[i].rules.comm == comm))
			s = &d->comm[i];
	fprintf(f, "msg: counters\nswitch: %s\nserving: [", d->name);
	for (int i = 0, k = 0; i < SW_MAX_COMMS; i++)
		if (d->comm[i].on)
			fprintf(f, "%s%u", k++ ? ", " : "", d->comm[i].rules.comm);
	fprintf(f, "]\n");
	if (s) {
		int n = counters(s, name, val);
		fprintf(f, "comm: %u\ncounters: {", s->rules.comm);
		for (int i = 0; i < n; i++)
			fprintf(f, "%s%s: %llu", i ? ", " : "", name[i], val[i]);
		fprintf(f, "}\n");
	}
	if (fclose(f) == 0)
		ctl_asend(&d->auth, d->ctl, text, CTL_TIMEOUT_MS);
	free(text);
}

/* One message from the controller. */
static void on_control(struct daemon *d, const char *text)
{
	struct ctl_doc m;
	char err[512];
	unsigned long comm = 0;

	if (ctl_parse(text, &m, err, sizeof(err)) < 0) {
		char why[600];
		snprintf(why, sizeof(why), "bad message: %s", err);
		reply_error(d, 0, why, 0);
		return;
	}
	ctl_uint(&m, NULL, "comm", 0xffffffff, &comm, err, sizeof(err));
	if (!strcmp(m.kind, "ok")) {
		/* A new registration: the controller holds no communicator of this
		 * switch now (it ended them when the old connection did, or it
		 * restarted and knows none), so neither does the switch: stale
		 * engines would hold slots and queue pair numbers it hands out again. */
		int stale = 0;
		for (int i = 0; i < SW_MAX_COMMS; i++)
			if (d->comm[i].on) {
				printf("incswitch %s: communicator %u ended with the old controller connection\n", d->name,
				       d->comm[i].rules.comm);
				teardown(&d->comm[i]);
				stale++;
			}
		printf("incswitch %s: registered with the controller %s%s\n", d->name, d->controller,
		       stale ? " (the communicators of the old connection dropped)" : "");
	} else if (!strcmp(m.kind, "error")) {
		const char *why = ctl_str(&m, NULL, "error");
		printf("incswitch %s: the controller says: %s\n", d->name, why ? why : "(no reason)");
	} else if (!strcmp(m.kind, "rules")) {
		int rc = apply_rules(d, text, err, sizeof(err));
		if (rc < 0)
			reply_error(d, (unsigned)comm, err, rc == -2);
		else
			ctl_asendf(&d->auth, d->ctl, CTL_TIMEOUT_MS, "msg: ok\ncomm: %lu\n", comm);
	} else if (!strcmp(m.kind, "release")) {
		struct served *s = served(d, (unsigned)comm);
		if (s)
			teardown(s);
		ctl_asendf(&d->auth, d->ctl, CTL_TIMEOUT_MS, "msg: ok\ncomm: %lu\n", comm);
	} else if (!strcmp(m.kind, "counters")) {
		send_counters(d, (unsigned)comm);
	} else {
		snprintf(err, sizeof(err), "unknown message '%.40s' (rules, release, counters)", m.kind);
		reply_error(d, (unsigned)comm, err, 0);
	}
	fflush(stdout);
	ctl_doc_free(&m);
}

static void ctl_close(struct daemon *d, const char *why)
{
	printf("incswitch %s: lost the controller (%s); %s, reconnecting\n", d->name, why,
	       d->nserved ? "still serving its communicators" : "no rules");
	fflush(stdout);
	close(d->ctl);
	d->ctl = -1;
	ctl_buf_free(&d->in);
	memset(&d->auth, 0, sizeof(d->auth));
	d->next_connect_ms = ctl_now_ms() + RECONNECT_MS;
}

/* Reach the controller and register, at most every RECONNECT_MS. */
static void ctl_reconnect(struct daemon *d)
{
	static int said;

	if (d->ctl >= 0 || ctl_now_ms() < d->next_connect_ms)
		return;
	d->next_connect_ms = ctl_now_ms() + RECONNECT_MS;
	if ((d->ctl = ctl_connect(d->controller, CTL_PORT_SWITCH, CONNECT_TIMEOUT_MS)) < 0) {
		if (!said++)
			printf("incswitch %s: cannot reach the controller %s yet (%s); retrying every %d ms\n", d->name,
			       d->controller, strerror(errno), RECONNECT_MS);
		fflush(stdout);
		return;
	}
	said = 0;
	if (d->keyfile) { /* prove to be NAME: the challenge comes at once */
		unsigned char key[CTL_KEY_BYTES];
		char err[300];
		if (ctl_key_load(d->keyfile, key, err, sizeof(err)) < 0 ||
		    ctl_auth_client(&d->auth, d->ctl, &d->in, key, d->name, "switch", CTL_TIMEOUT_MS, err, sizeof(err)) < 0) {
			ctl_close(d, err);
			return;
		}
	}
	if (ctl_asendf(&d->auth, d->ctl, CTL_TIMEOUT_MS, "msg: register\nswitch: %s\ncomms: %d\nslots: %u\n", d->name,
		       SW_MAX_COMMS, d->slots) < 0)
		ctl_close(d, "cannot send the registration");
}

static void on_controller_readable(struct daemon *d)
{
	int rc = ctl_feed(&d->in, d->ctl);
	char *msg;

	if (rc < 0) {
		ctl_close(d, ctl_strerror(rc));
		return;
	}
	while (d->ctl >= 0 && (msg = ctl_next(&d->in, &rc))) {
		if (ctl_auth_open(&d->auth, msg) < 0) {
			char why[200];
			snprintf(why, sizeof(why), "refused a message: %s", d->auth.err);
			free(msg);
			ctl_close(d, why);
			return;
		}
		on_control(d, msg);
		free(msg);
	}
	if (rc < 0 && d->ctl >= 0)
		ctl_close(d, ctl_strerror(rc));
}

/* A node name as topologies have them (topo_word_ok() of topology/topo.c, TOPO_NAME_MAX):
 * written into every control message this switch sends, so a word, never quoted. */
#define NAME_MAX_LEN 12
static int name_ok(const char *s)
{
	size_t len = strlen(s);

	if (len < 1 || len > NAME_MAX_LEN || s[0] < 'a' || s[0] > 'z' || s[len - 1] == '-')
		return 0;
	for (size_t i = 0; i < len; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || (s[i] == '-' && s[i + 1] != '-')))
			return 0;
	return 1;
}

int main(int argc, char **argv)
{
	static struct daemon d = { .ctl = -1, .slots = SW_SLOTS };
	unsigned long seconds = 0, slots;
	struct pollfd pfd[MAX_PORTS + 1];
	char *end;
	uint32_t ignored_addr;
	int opt, ignored_port;
	const char *kopt = getenv("INCSWITCH_KERNEL"), *kwhy = "INCSWITCH_KERNEL", *kname, *cname, *cwhy;
	enum inc_kernel kernel = INC_KERNEL_AUTO;

	while ((opt = getopt(argc, argv, "c:n:t:m:F:k:K:")) != -1) {
		switch (opt) {
		case 'K': d.keyfile = optarg; break;
		case 'k': kopt = optarg; kwhy = "-k"; break;
		case 'F': d.fault_file = optarg; break;
		case 'c': d.controller = optarg; break;
		case 'n': d.name = optarg; break;
		case 't': seconds = strtoul(optarg, NULL, 10); break;
		case 'm':
			errno = 0;
			slots = strtoul(optarg, &end, 10);
			if (errno || end == optarg || *end || slots < 16 || slots > 1ul << 22) {
				fprintf(stderr, "incswitch: -m %s: want a number of slots, 16..%lu\n", optarg, 1ul << 22);
				return 2;
			}
			d.slots = (unsigned)slots;
			break;
		default: goto usage;
		}
	}
	if (!d.controller || !d.name || optind != argc)
		goto usage;
	if (!name_ok(d.name)) {
		fprintf(stderr, "incswitch: -n '%s' is not a node name: 1..%d characters of a-z, 0-9 and single '-' between "
				"them, starting with a letter (topology/topo.c)\n", d.name, NAME_MAX_LEN);
		return 2;
	}
	if (!d.keyfile && access(CTL_NODE_KEY_FILE, F_OK) == 0)
		d.keyfile = CTL_NODE_KEY_FILE;
	if (ctl_auth_init() < 0) {
		fprintf(stderr, "incswitch: libsodium does not initialise\n");
		return 1;
	}
	if (ctl_parse_addr(d.controller, CTL_PORT_SWITCH, &ignored_addr, &ignored_port) < 0) {
		fprintf(stderr, "incswitch: bad controller address '%s' (want A.B.C.D[:PORT])\n", d.controller);
		return 2;
	}
	if (kopt && *kopt && inc_kernel_parse(kopt, &kernel)) {
		fprintf(stderr, "incswitch: %s: '%s' is not auto, simd or scalar\n", kwhy, kopt);
		return 2;
	}
	inc_kernel_use(kernel, kwhy);
	crc32_use(kernel == INC_KERNEL_SCALAR ? CRC32_LIBDEFLATE : kernel == INC_KERNEL_SIMD ? CRC32_ISAL : CRC32_AUTO,
		  kwhy);
	kname = inc_kernel_name(&kwhy);
	cname = crc32_name(&cwhy);
	for (int i = 0; i < MAX_PORTS; i++)
		d.port[i].txfd = -1;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGUSR1, on_signal);
	signal(SIGPIPE, SIG_IGN);
	printf("incswitch %s: started; controller %s; %d communicators, %u slots; kernel %s (%s); crc %s (%s)%s%s; %s%s\n",
	       d.name, d.controller, SW_MAX_COMMS, d.slots, kname, kwhy, cname, cwhy,
	       d.fault_file ? "; fault injection allowed (test lab), read from " : "", d.fault_file ? d.fault_file : "",
	       d.keyfile ? "node key " : "no node key (no authentication)", d.keyfile ? d.keyfile : "");
	fflush(stdout);
	uint64_t stop_at = seconds ? now_ns() + seconds * 1000000000ull : 0;
	while (!stop && (!stop_at || now_ns() < stop_at)) {
		int ix[MAX_PORTS], nfd = 0;
		ctl_reconnect(&d);
		for (int i = 0; i < MAX_PORTS; i++)
			if (d.port[i].refs) {
				ix[nfd] = i;
				pfd[nfd++] = (struct pollfd){ .fd = pcap_get_selectable_fd(d.port[i].pc), .events = POLLIN };
			}
		int nports = nfd;
		if (d.ctl >= 0)
			pfd[nfd++] = (struct pollfd){ .fd = d.ctl, .events = POLLIN };
		int n = poll(pfd, (nfds_t)nfd, d.nserved ? 1 : 100);
		if (n < 0 && errno != EINTR) {
			perror("incswitch: poll");
			break;
		}
		for (int i = 0; n > 0 && i < nports; i++)
			if (pfd[i].revents & POLLIN) {
				struct rx_ctx c = { &d, d.port[ix[i]].st };
				pcap_dispatch(d.port[ix[i]].pc, -1, on_packet, (u_char *)&c);
			}
		if (d.nserved) {
			uint64_t now = now_ns();
			for (int i = 0; i < SW_MAX_COMMS; i++)
				if (d.comm[i].on)
					sw_engine_tick(d.comm[i].eng, now);
			tx_flush(&d);
		}
		if (n > 0 && d.ctl >= 0 && (pfd[nfd - 1].revents & (POLLIN | POLLHUP | POLLERR)))
			on_controller_readable(&d);
		if (report) {
			report = 0;
			for (int i = 0; i < SW_MAX_COMMS; i++)
				if (d.comm[i].on)
					print_counters(&d.comm[i], stdout);
			sw_port_stats_print(&d.pstats, d.name, stdout);
		}
	}
	for (int i = 0; i < SW_MAX_COMMS; i++)
		teardown(&d.comm[i]);
	return 0;
usage:
	fprintf(stderr, "usage: incswitch -c CONTROLLER[:PORT] -n NAME [-t SECONDS] [-m SLOTS] [-F FAULT_FILE (test labs only)]\n"
			"                 [-k auto|simd|scalar] [-K KEY_FILE]\n"
			"  -m: aggregation slots all communicators together may hold (default %d; at most %d communicators)\n"
			"  -K: this node's key (default " CTL_NODE_KEY_FILE " when it exists)\n"
			"  -k (or INCSWITCH_KERNEL): combine/byte-swap kernels and CRC; auto (default): scalar and\n"
			"     libdeflate on a CPU emulated by QEMU TCG (CPUID signature TCGTCGTCGTCG), else simd\n"
			"     (AVX2 or SSE2) and ISA-L's CRC (VPCLMULQDQ or PCLMULQDQ)\n", SW_SLOTS, SW_MAX_COMMS);
	return 2;
}
