/*
 * rcecho — terminate one host's RC connection on a switch port and echo every
 * message back: the smallest complete use of the switch's frame path.
 *
 * It proves, against the real rdma_rxe of a lab host, that the frames the
 * switch builds are accepted: the host's SENDs complete only if our ACKs
 * (PSN, MSN, ICRC) are right, and the host receives the echo only if our SEND
 * frames (our own PSN sequence, opcodes, ICRC, source address) are right.
 *
 *   rcecho -i PORT -l LOCAL_IP -q LOCAL_QPN -s LOCAL_PSN \
 *          -r PEER_IP -Q PEER_QPN -S PEER_PSN [-n MESSAGES] [-t SECONDS]
 *
 * Prints "rcecho: capturing on PORT" once its capture is active (a test waits
 * for it before the host sends). Exits 0 after MESSAGES echoes were
 * acknowledged by the host; prints one line of counters at exit (nothing
 * per packet).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <pcap/pcap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "rc_conn.h"
#include "roce.h"

#define MTU 1024            /* RoCE path MTU of the lab (1500-byte Ethernet) */
#define MAX_MSG (64 * 1024) /* largest message echoed */
#define RETRY_NS 50000000LL /* resend unacknowledged frames after 50 ms */

struct echo {
	pcap_t *pc;
	struct rc_conn conn;
	uint32_t local_ip, peer_ip, local_qpn, peer_qpn;
	uint8_t local_mac[6], peer_mac[6];
	int have_macs;
	uint8_t msg[MAX_MSG];
	size_t msg_len;
	/* frames of the echo in flight, by PSN offset from first_psn */
	uint8_t frames[MAX_MSG / MTU + 1][MTU + 128];
	size_t frame_len[MAX_MSG / MTU + 1];
	uint32_t first_psn;
	int nframes;
	long long last_tx_ns;
	uint16_t ip_id;
	/* counters */
	unsigned long rx, tx, bad_icrc, not_ours, acks_sent, naks_sent, dup, echoes_acked, retransmits;
	unsigned long parse_err[ROCE_ERR__COUNT];
};

static long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int send_frame(struct echo *e, const uint8_t *f, size_t len)
{
	if (pcap_inject(e->pc, f, len) != (int)len) {
		fprintf(stderr, "rcecho: inject: %s\n", pcap_geterr(e->pc));
		return -1;
	}
	e->tx++;
	return 0;
}

static void send_ack(struct echo *e, const struct roce_pkt *p, enum rc_rx_verdict v)
{
	struct roce_build b = { .src_mac = e->local_mac, .dst_mac = e->peer_mac, .src_ip = e->local_ip,
				.dst_ip = e->peer_ip, .src_port = 49152, .dst_port = ROCE_PORT_HOST,
				.opcode = RC_ACK, .dest_qp = e->peer_qpn, .has_aeth = 1, .ip_id = e->ip_id++ };
	uint8_t f[128];

	if (!rc_conn_ack_fields(&e->conn, p, v, &b.psn, &b.syndrome, &b.msn))
		return;
	if ((b.syndrome & AETH_TYPE_MASK) == AETH_TYPE_ACK)
		e->acks_sent++;
	else
		e->naks_sent++;
	send_frame(e, f, roce_build_frame(f, sizeof(f), &b));
}

/* Build the echo of the message just received: FIRST, MIDDLEs, LAST, or ONLY. */
static void start_echo(struct echo *e)
{
	size_t off = 0;
	int n = (int)((e->msg_len + MTU - 1) / MTU);

	if (n == 0)
		n = 1;
	e->first_psn = e->conn.spsn;
	for (int i = 0; i < n; i++, off += MTU) {
		size_t len = e->msg_len - off < MTU ? e->msg_len - off : MTU;
		uint8_t op = n == 1 ? RC_SEND_ONLY : i == 0 ? RC_SEND_FIRST : i == n - 1 ? RC_SEND_LAST : RC_SEND_MIDDLE;
		struct roce_build b = { .src_mac = e->local_mac, .dst_mac = e->peer_mac, .src_ip = e->local_ip,
					.dst_ip = e->peer_ip, .src_port = 49152, .dst_port = ROCE_PORT_HOST, .opcode = op,
					.ack_req = i == n - 1, .dest_qp = e->peer_qpn, .psn = rc_conn_next_psn(&e->conn),
					.payload = e->msg + off, .payload_len = len, .ip_id = e->ip_id++ };
		e->frame_len[i] = roce_build_frame(e->frames[i], sizeof(e->frames[i]), &b);
	}
	e->nframes = n;
	for (int i = 0; i < n; i++)
		send_frame(e, e->frames[i], e->frame_len[i]);
	e->last_tx_ns = now_ns();
}

/* Resend our unacknowledged frames, from the oldest. */
static void resend(struct echo *e)
{
	int from = (int)((e->conn.una - e->first_psn) & ROCE_PSN_MASK);

	for (int i = from; i < e->nframes; i++) {
		send_frame(e, e->frames[i], e->frame_len[i]);
		e->retransmits++;
	}
	e->last_tx_ns = now_ns();
}

static void on_frame(struct echo *e, const uint8_t *f, size_t len)
{
	struct roce_pkt p;
	enum roce_parse_err err = roce_parse(f, len, &p);

	e->rx++;
	if (err != ROCE_OK) {
		e->parse_err[err]++;
		return;
	}
	if (!roce_pkt_icrc_ok(f, &p)) {
		e->bad_icrc++;
		return;
	}
	if (p.src_ip != e->peer_ip || p.dst_ip != e->local_ip || p.dest_qp != e->local_qpn) {
		e->not_ours++;
		return;
	}
	if (!e->have_macs) { /* answer with the addresses the host used */
		memcpy(e->local_mac, p.dst_mac, 6);
		memcpy(e->peer_mac, p.src_mac, 6);
		e->have_macs = 1;
	}
	if (p.opcode == RC_ACK) {
		enum rc_ack_verdict v = rc_conn_ack(&e->conn, &p);
		if (v == RC_ACK_RETRY)
			resend(e);
		else if (v == RC_ACK_PROGRESS && e->nframes && rc_conn_unacked(&e->conn) == 0) {
			e->echoes_acked++;
			e->nframes = 0;
		}
		return;
	}
	enum rc_rx_verdict v = rc_conn_rx(&e->conn, &p);
	if (v == RC_RX_ACCEPT) {
		if (p.opcode == RC_SEND_FIRST || p.opcode == RC_SEND_ONLY || p.opcode == RC_SEND_ONLY_WITH_IMM)
			e->msg_len = 0;
		size_t take = p.payload_len <= MAX_MSG - e->msg_len ? p.payload_len : MAX_MSG - e->msg_len;
		memcpy(e->msg + e->msg_len, f + p.payload_off, take);
		e->msg_len += take;
	} else if (v == RC_RX_DUPLICATE) {
		e->dup++;
	}
	send_ack(e, &p, v);
	if (v == RC_RX_ACCEPT && !e->conn.in_message && e->nframes == 0)
		start_echo(e);
}

static uint32_t parse_ip(const char *s)
{
	struct in_addr a;
	if (inet_pton(AF_INET, s, &a) != 1) {
		fprintf(stderr, "rcecho: '%s' is not an IPv4 address\n", s);
		exit(2);
	}
	return ntohl(a.s_addr);
}

int main(int argc, char **argv)
{
	static struct echo e;
	const char *port = NULL;
	char errbuf[PCAP_ERRBUF_SIZE], filter[128], ipbuf[INET_ADDRSTRLEN];
	unsigned long want = 1, seconds = 60;
	uint32_t lpsn = 0, ppsn = 0;
	struct bpf_program prog;
	int opt, sock;

	while ((opt = getopt(argc, argv, "i:l:q:s:r:Q:S:n:t:")) != -1) {
		switch (opt) {
		case 'i': port = optarg; break;
		case 'l': e.local_ip = parse_ip(optarg); break;
		case 'q': e.local_qpn = (uint32_t)strtoul(optarg, NULL, 0) & ROCE_QPN_MASK; break;
		case 's': lpsn = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'r': e.peer_ip = parse_ip(optarg); break;
		case 'Q': e.peer_qpn = (uint32_t)strtoul(optarg, NULL, 0) & ROCE_QPN_MASK; break;
		case 'S': ppsn = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'n': want = strtoul(optarg, NULL, 0); break;
		case 't': seconds = strtoul(optarg, NULL, 0); break;
		default: goto usage;
		}
	}
	if (!port || !e.local_ip || !e.peer_ip || !e.local_qpn || !e.peer_qpn)
		goto usage;
	rc_conn_init(&e.conn, ppsn, lpsn);

	/* Hold UDP 4791 on our address so the kernel does not answer the host's
	 * frames with ICMP port-unreachable; we read them from the capture. */
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(ROCE_PORT_HOST),
				  .sin_addr.s_addr = htonl(e.local_ip) };
	sock = socket(AF_INET, SOCK_DGRAM, 0);
	if (sock < 0 || bind(sock, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		fprintf(stderr, "rcecho: cannot hold UDP port %d: %s\n", ROCE_PORT_HOST, strerror(errno));
		return 1;
	}
	e.pc = pcap_create(port, errbuf);
	if (!e.pc || pcap_set_snaplen(e.pc, 4096) || pcap_set_immediate_mode(e.pc, 1) || pcap_set_timeout(e.pc, 10) ||
	    pcap_activate(e.pc) < 0) {
		fprintf(stderr, "rcecho: cannot capture on %s: %s\n", port, e.pc ? pcap_geterr(e.pc) : errbuf);
		return 1;
	}
	snprintf(filter, sizeof(filter), "udp dst port %d and dst host %s", ROCE_PORT_HOST,
		 inet_ntop(AF_INET, &sa.sin_addr, ipbuf, sizeof(ipbuf)));
	if (pcap_compile(e.pc, &prog, filter, 1, PCAP_NETMASK_UNKNOWN) < 0 || pcap_setfilter(e.pc, &prog) < 0 ||
	    pcap_setdirection(e.pc, PCAP_D_IN) < 0) {
		fprintf(stderr, "rcecho: filter on %s: %s\n", port, pcap_geterr(e.pc));
		return 1;
	}
	printf("rcecho: capturing on %s\n", port);
	fflush(stdout);
	long long deadline = now_ns() + (long long)seconds * 1000000000LL;
	while (e.echoes_acked < want && now_ns() < deadline) {
		struct pcap_pkthdr *h;
		const u_char *d;
		int rc = pcap_next_ex(e.pc, &h, &d);
		if (rc == 1)
			on_frame(&e, d, h->caplen);
		else if (rc < 0) {
			fprintf(stderr, "rcecho: capture: %s\n", pcap_geterr(e.pc));
			break;
		}
		if (e.nframes && now_ns() - e.last_tx_ns > RETRY_NS)
			resend(&e);
	}
	printf("rcecho: echoes_acked=%lu rx=%lu tx=%lu acks=%lu naks=%lu dup=%lu retransmits=%lu bad_icrc=%lu "
	       "not_ours=%lu parse_errors=%lu host_msn=%u seq_naks_from_host=%u rnr_naks_from_host=%u\n",
	       e.echoes_acked, e.rx, e.tx, e.acks_sent, e.naks_sent, e.dup, e.retransmits, e.bad_icrc, e.not_ours,
	       e.parse_err[ROCE_ERR_SHORT] + e.parse_err[ROCE_ERR_IP_HDR] + e.parse_err[ROCE_ERR_OPCODE] +
		       e.parse_err[ROCE_ERR_PAD],
	       e.conn.msn, e.conn.seq_naks, e.conn.rnr_naks);
	pcap_close(e.pc);
	close(sock);
	return e.echoes_acked >= want ? 0 : 1;
usage:
	fprintf(stderr, "usage: rcecho -i PORT -l LOCAL_IP -q LOCAL_QPN -s LOCAL_PSN -r PEER_IP -Q PEER_QPN -S PEER_PSN "
			"[-n MESSAGES] [-t SECONDS]\n");
	return 2;
}
