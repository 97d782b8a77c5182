/*
 * incswitch — the INC switch daemon: the engine (engine.c) on real ports.
 *
 *   incswitch -r RULES.yaml [-t SECONDS]
 *
 * Captures RoCEv2 frames arriving on each port named by the rules with
 * libpcap, feeds them to the engine, and sends what the engine emits with
 * pcap_inject on the port it names. Holds UDP 4791/4792 on its addresses so
 * the kernel does not answer the hosts' frames with ICMP port unreachable.
 * Counters: printed on SIGUSR1 and at exit (SIGINT/SIGTERM, or -t SECONDS),
 * one "name=value" line; nothing is printed per packet.
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
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "engine.h"
#include "swconfig.h"

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

struct daemon {
	struct sw_rules rules;
	pcap_t *pc[SW_MAX_CHILDREN];
	struct sw_engine *eng;
	uint64_t inject_errors;
};

/* Send on a port; a full socket buffer gets one short wait for room before it counts as an error. */
static void tx(void *ctx, int port, const uint8_t *frame, size_t len)
{
	struct daemon *d = ctx;

	if (pcap_inject(d->pc[port], frame, len) == (int)len)
		return;
	struct pollfd p = { .fd = pcap_get_selectable_fd(d->pc[port]), .events = POLLOUT };
	if (poll(&p, 1, 2) == 1 && pcap_inject(d->pc[port], frame, len) == (int)len)
		return;
	d->inject_errors++;
}

static void on_packet(u_char *user, const struct pcap_pkthdr *h, const u_char *bytes)
{
	struct daemon *d = (struct daemon *)user;
	sw_engine_rx(d->eng, bytes, h->caplen, now_ns());
}

static void print_counters(const struct daemon *d, FILE *f)
{
	const struct sw_counters *c = sw_engine_counters(d->eng);
	unsigned long long capture_drops = 0;
	for (int i = 0; i < d->rules.nports; i++) {
		struct pcap_stat st;
		if (pcap_stats(d->pc[i], &st) == 0)
			capture_drops += st.ps_drop + st.ps_ifdrop;
	}
	fprintf(f,
		"incswitch %s: rx_frames=%llu tx_frames=%llu aggregations=%llu slots_completed=%llu sent_up=%llu "
		"results_from_parent=%llu results_tx=%llu "
		"retransmits=%llu acks_tx=%llu naks_tx=%llu rnr_naks_tx=%llu duplicates=%llu acks_rx=%llu naks_rx=%llu "
		"rnr_naks_rx=%llu fatal_naks_rx=%llu drop_parse=%llu drop_icrc=%llu drop_unknown_qp=%llu "
		"drop_bad_imm=%llu drop_mismatch=%llu drop_seq=%llu inject_errors=%llu capture_drops=%llu busy_slots=%u\n",
		d->rules.name, (unsigned long long)c->rx_frames, (unsigned long long)c->tx_frames,
		(unsigned long long)c->aggregations, (unsigned long long)c->slots_completed,
		(unsigned long long)c->sent_up, (unsigned long long)c->results_from_parent, (unsigned long long)c->results_tx, (unsigned long long)c->retransmits, (unsigned long long)c->acks_tx,
		(unsigned long long)c->naks_tx, (unsigned long long)c->rnr_naks_tx, (unsigned long long)c->duplicates,
		(unsigned long long)c->acks_rx, (unsigned long long)c->naks_rx, (unsigned long long)c->rnr_naks_rx,
		(unsigned long long)c->fatal_naks_rx, (unsigned long long)c->drop_parse,
		(unsigned long long)c->drop_icrc, (unsigned long long)c->drop_unknown_qp,
		(unsigned long long)c->drop_bad_imm, (unsigned long long)c->drop_mismatch,
		(unsigned long long)c->drop_seq, (unsigned long long)d->inject_errors, capture_drops,
		sw_engine_busy_slots(d->eng));
	fflush(f);
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && n < (1 << 20) && fseek(f, 0, SEEK_SET) == 0 &&
	    (buf = malloc((size_t)n + 1)) && fread(buf, 1, (size_t)n, f) == (size_t)n) {
		buf[n] = 0;
		*len = (size_t)n;
	} else {
		free(buf);
		buf = NULL;
		errno = EIO;
	}
	fclose(f);
	return buf;
}

/* Hold UDP @port on @ip: an open socket keeps the kernel from sending port-unreachable. */
static int hold_port(uint32_t ip, uint16_t port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(ip) };
	int s = socket(AF_INET, SOCK_DGRAM, 0), small = 4096;

	if (s < 0 || bind(s, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return -1;
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
 * the discard port when it is not there yet; waits up to 3 s. */
static int peer_mac(uint32_t local, uint32_t peer, uint8_t mac[6])
{
	char want[INET_ADDRSTRLEN], line[256], ip[64], hw[64];
	struct in_addr a = { htonl(peer) };

	inet_ntop(AF_INET, &a, want, sizeof(want));
	for (int tries = 0; tries < 30; tries++) {
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
		usleep(100000);
	}
	return -1;
}

/* Fill in the MACs of a connection; a child's are also learnt from its first frame. */
static void resolve_macs(struct sw_conn_cfg *c, const char *what)
{
	char ip[INET_ADDRSTRLEN];
	struct in_addr a = { htonl(c->peer_ip) };

	if (local_mac(c->local_ip, c->local_mac) < 0 || peer_mac(c->local_ip, c->peer_ip, c->peer_mac) < 0)
		fprintf(stderr, "incswitch: warning: no MAC address for %s %s yet; learning it from its frames\n", what,
			inet_ntop(AF_INET, &a, ip, sizeof(ip)));
}

static int open_port(struct daemon *d, int i)
{
	char err[PCAP_ERRBUF_SIZE];
	struct bpf_program prog;
	const char *name = d->rules.port[i];
	pcap_t *pc = pcap_create(name, err);

	if (!pc || pcap_set_snaplen(pc, 2048) || pcap_set_immediate_mode(pc, 1) || pcap_set_buffer_size(pc, 8 << 20) ||
	    pcap_activate(pc) < 0) {
		fprintf(stderr, "incswitch: cannot capture on port '%s': %s\n", name, pc ? pcap_geterr(pc) : err);
		return -1;
	}
	if (pcap_compile(pc, &prog, "ip and udp and (dst port 4791 or dst port 4792)", 1, PCAP_NETMASK_UNKNOWN) < 0 ||
	    pcap_setfilter(pc, &prog) < 0 || pcap_setdirection(pc, PCAP_D_IN) < 0 || pcap_setnonblock(pc, 1, err) < 0) {
		fprintf(stderr, "incswitch: port '%s': %s\n", name, pcap_geterr(pc));
		return -1;
	}
	pcap_freecode(&prog);
	/* Results leave in bursts (one per child per slot): give the packet socket room
	 * for thousands of frames; root may exceed net.core.wmem_max with SNDBUFFORCE. */
	int sndbuf = 8 << 20;
	if (setsockopt(pcap_get_selectable_fd(pc), SOL_SOCKET, SO_SNDBUFFORCE, &sndbuf, sizeof(sndbuf)) < 0)
		setsockopt(pcap_get_selectable_fd(pc), SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
	d->pc[i] = pc;
	return 0;
}

int main(int argc, char **argv)
{
	static struct daemon d;
	const char *rules_path = NULL;
	unsigned long seconds = 0;
	struct pollfd pfd[SW_MAX_CHILDREN];
	char *text;
	size_t len;
	int opt;

	while ((opt = getopt(argc, argv, "r:t:")) != -1) {
		switch (opt) {
		case 'r': rules_path = optarg; break;
		case 't': seconds = strtoul(optarg, NULL, 10); break;
		default: goto usage;
		}
	}
	if (!rules_path)
		goto usage;
	if (!(text = slurp(rules_path, &len))) {
		fprintf(stderr, "incswitch: cannot read %s: %s\n", rules_path, strerror(errno));
		return 1;
	}
	if (sw_rules_parse(text, len, rules_path, &d.rules, stderr) < 0)
		return 1;
	free(text);
	for (int i = 0; i < d.rules.cfg.nchildren; i++)
		resolve_macs(&d.rules.cfg.child[i], "child");
	if (d.rules.cfg.has_parent)
		resolve_macs(&d.rules.cfg.parent, "parent");
	if (!(d.eng = sw_engine_new(&d.rules.cfg, tx, &d)))
		return 1;
	for (int i = 0; i < d.rules.nports; i++) {
		if (open_port(&d, i) < 0)
			return 1;
		pfd[i] = (struct pollfd){ .fd = pcap_get_selectable_fd(d.pc[i]), .events = POLLIN };
	}
	/* every (address, port) the switch is reached on: children, then the parent */
	struct sw_conn_cfg all[SW_MAX_CHILDREN + 1];
	int nall = d.rules.cfg.nchildren;
	memcpy(all, d.rules.cfg.child, sizeof(all[0]) * (size_t)nall);
	if (d.rules.cfg.has_parent)
		all[nall++] = d.rules.cfg.parent;
	for (int i = 0; i < nall; i++) {
		const struct sw_conn_cfg *c = &all[i];
		int j;
		for (j = 0; j < i && (all[j].local_ip != c->local_ip || all[j].udp_dst != c->udp_dst); j++)
			;
		if (j == i && hold_port(c->local_ip, c->udp_dst) < 0) {
			fprintf(stderr, "incswitch: cannot hold UDP %u on the switch address: %s\n", c->udp_dst, strerror(errno));
			return 1;
		}
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGUSR1, on_signal);
	printf("incswitch %s: %s, %d children on %d ports, %u slots, ready\n", d.rules.name,
	       d.rules.cfg.has_parent ? "leaf" : "root", d.rules.cfg.nchildren, d.rules.nports, d.rules.cfg.nslots);
	fflush(stdout);
	uint64_t end = seconds ? now_ns() + seconds * 1000000000ull : 0;
	while (!stop && (!end || now_ns() < end)) {
		int n = poll(pfd, (nfds_t)d.rules.nports, 1);
		if (n < 0 && errno != EINTR) {
			perror("incswitch: poll");
			break;
		}
		for (int i = 0; n > 0 && i < d.rules.nports; i++)
			if (pfd[i].revents & POLLIN)
				pcap_dispatch(d.pc[i], -1, on_packet, (u_char *)&d);
		sw_engine_tick(d.eng, now_ns());
		if (report) {
			report = 0;
			print_counters(&d, stdout);
		}
	}
	print_counters(&d, stdout);
	sw_engine_free(d.eng);
	return 0;
usage:
	fprintf(stderr, "usage: incswitch -r RULES.yaml [-t SECONDS]\n");
	return 2;
}
