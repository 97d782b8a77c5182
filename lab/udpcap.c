/*
 * udpcap — capture one tree edge of the lab as a pcap of its Ethernet frames.
 *
 * A tree edge is a pair of QEMU <interface type='udp'> tunnels on 127.0.0.1:
 * every frame a VM sends on that NIC is the payload of one loopback UDP
 * datagram to the peer's port. udpcap captures those datagrams on "lo" with
 * libpcap and writes their payloads — the VMs' frames exactly as on the wire,
 * RoCE ICRC included — to a pcap file with link type Ethernet, so tshark and
 * the switch's offline tests can read them.
 *
 *   udpcap -p PORT [-s SECONDS] [-c COUNT] -o FILE.pcap
 *   udpcap -i IFACE [-s SECONDS] [-c COUNT] -o FILE.pcap
 *
 * PORT is the first of the link's two tunnel ports (links.tsv): both
 * directions, PORT and PORT+1, are captured. With -i the edge is a real
 * interface (a namespace node's veth, SWITCHES=netns; run inside its
 * namespace): its frames are written as they are.
 */
#include <pcap/pcap.h>

#include <arpa/inet.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Outer headers on lo: Ethernet (14) + IPv4 without options (20) + UDP (8). */
#define OUTER_ETH 14
#define OUTER_IP 20
#define OUTER_UDP 8

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

int main(int argc, char **argv)
{
	char errbuf[PCAP_ERRBUF_SIZE], filter[96];
	const char *outpath = NULL, *iface = NULL;
	int port = 0, seconds = 10, opt;
	long limit = -1, frames = 0, skipped = 0;
	struct bpf_program prog;
	pcap_t *in, *dead;
	pcap_dumper_t *out;
	time_t end;

	while ((opt = getopt(argc, argv, "p:i:s:c:o:")) != -1) {
		switch (opt) {
		case 'p': port = atoi(optarg); break;
		case 'i': iface = optarg; break;
		case 's': seconds = atoi(optarg); break;
		case 'c': limit = atol(optarg); break;
		case 'o': outpath = optarg; break;
		default: goto usage;
		}
	}
	if ((iface ? port != 0 : port < 1 || port > 65534) || seconds < 1 || !outpath)
		goto usage;

	/* Immediate mode ignores the read timeout: read non-blocking and poll() with
	 * a timeout of our own, so an idle link cannot keep us past SECONDS. */
	in = pcap_create(iface ? iface : "lo", errbuf);
	if (!in || pcap_set_snaplen(in, 65535) || pcap_set_immediate_mode(in, 1) || pcap_activate(in) < 0 ||
	    pcap_setnonblock(in, 1, errbuf) < 0) {
		fprintf(stderr, "udpcap: cannot capture on %s: %s\n", iface ? iface : "lo", in ? pcap_geterr(in) : errbuf);
		return 1;
	}
	if (iface && pcap_datalink(in) != DLT_EN10MB) {
		fprintf(stderr, "udpcap: %s is not an Ethernet interface\n", iface);
		return 1;
	}
	snprintf(filter, sizeof(filter), "ip and udp and (dst port %d or dst port %d)", port, port + 1);
	if (!iface && (pcap_compile(in, &prog, filter, 1, PCAP_NETMASK_UNKNOWN) < 0 || pcap_setfilter(in, &prog) < 0)) {
		fprintf(stderr, "udpcap: filter '%s': %s\n", filter, pcap_geterr(in));
		return 1;
	}
	dead = pcap_open_dead(DLT_EN10MB, 65535);
	out = pcap_dump_open(dead, outpath);
	if (!out) {
		fprintf(stderr, "udpcap: cannot write %s: %s\n", outpath, pcap_geterr(dead));
		return 1;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	end = time(NULL) + seconds;
	while (!stop && time(NULL) < end && (limit < 0 || frames < limit)) {
		struct pcap_pkthdr *h;
		const unsigned char *data;
		int rc = pcap_next_ex(in, &h, &data);

		if (rc == 0) {
			struct pollfd p = { .fd = pcap_get_selectable_fd(in), .events = POLLIN };
			poll(&p, 1, 100);
			continue;
		}
		if (rc < 0) {
			fprintf(stderr, "udpcap: capture error: %s\n", pcap_geterr(in));
			break;
		}
		if (iface) { /* the frame itself */
			pcap_dump((unsigned char *)out, h, data);
			frames++;
			continue;
		}
		unsigned ihl = h->caplen > OUTER_ETH ? (data[OUTER_ETH] & 0x0f) * 4u : 0;
		unsigned off = OUTER_ETH + ihl + OUTER_UDP;
		if (ihl < OUTER_IP || h->caplen < off + 14) { /* not a whole inner Ethernet header */
			skipped++;
			continue;
		}
		struct pcap_pkthdr inner = { h->ts, h->caplen - off, h->len - off };
		pcap_dump((unsigned char *)out, &inner, data + off);
		frames++;
	}
	pcap_dump_close(out);
	pcap_close(in);
	fprintf(stderr, "udpcap: %ld frames written to %s (%ld runts skipped)\n", frames, outpath, skipped);
	return 0;
usage:
	fprintf(stderr, "usage: udpcap -p PORT | -i IFACE [-s SECONDS] [-c COUNT] -o FILE.pcap\n");
	return 2;
}
