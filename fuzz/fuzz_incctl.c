/*
 * fuzz_incctl.c — libFuzzer target: the controller (controller/incctl.c)
 * taking messages from switches and clients, through its own input path
 * (socket -> ctl_feed() -> take_input() -> on_switch()/on_client()), with
 * the topology of topology/1-2-4.yaml.
 *
 * incctl.c is compiled into this file (its main() renamed) so that its
 * event loop's handlers run without the loop: the harness plays the loop,
 * its peers being socketpairs whose other ends it reads and discards.
 *
 * Input: records until the input ends: one byte b (connection b % NCONN:
 * 0..3 switches' connections, 4..5 clients'; b & 0x40: that connection
 * closes first; b & 0x80: every deadline passes first), a length (2 bytes),
 * and that many bytes arriving on the connection.
 * Properties: nothing a peer sends stops or crashes the controller; every
 * message it sends parses, and the rules it pushes parse with the switch's
 * own parser (switch/swconfig.c); once
 * every connection closed, no group and no communicator is left, and no
 * switch is registered.
 */
#include <fcntl.h>

#define main incctl_main
#include "../controller/incctl.c"
#undef main

#include "../switch/swconfig.h"
#include "fuzz.h"

#define NCONN 6
#define NSWITCH_CONNS 4

/* topology/1-2-4.yaml, without its comments */
static const char topo_1_2_4[] =
	"name: 1-2-4\nroot: sw0\nmanagement: 192.168.0.0/16\n"
	"nodes:\n"
	"  - {name: controller, role: controller, mgmt: 192.168.0.3}\n"
	"  - {name: sw0, role: switch, mgmt: 192.168.0.19}\n"
	"  - {name: sw1, role: switch, mgmt: 192.168.0.20}\n"
	"  - {name: sw2, role: switch, mgmt: 192.168.0.21}\n"
	"  - {name: pku1, role: host, rank: 0, mgmt: 192.168.0.101}\n"
	"  - {name: pku2, role: host, rank: 1, mgmt: 192.168.0.102}\n"
	"  - {name: pku3, role: host, rank: 2, mgmt: 192.168.0.103}\n"
	"  - {name: pku4, role: host, rank: 3, mgmt: 192.168.0.104}\n"
	"links:\n"
	"  - {sw0: 172.16.0.1/16, sw1: 172.16.0.5/16}\n"
	"  - {sw0: 10.10.0.1/16, sw2: 10.10.0.7/16}\n"
	"  - {sw1: 10.1.1.1/24, pku1: 10.1.1.21/24}\n"
	"  - {sw1: 10.1.1.1/24, pku2: 10.1.1.5/24}\n"
	"  - {sw2: 10.2.1.1/24, pku3: 10.2.1.7/24}\n"
	"  - {sw2: 10.2.1.1/24, pku4: 10.2.1.12/24}\n";

static int far[NCONN]; /* the peer's end of each connection */

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	int null = open("/dev/null", O_WRONLY);

	(void)argc, (void)argv;
	if (null < 0 || dup2(null, STDOUT_FILENO) < 0) /* the controller's log; libFuzzer reports on stderr */
		abort();
	close(null);
	if (!(ctl.topo = topo_parse(topo_1_2_4, strlen(topo_1_2_4), "1-2-4.yaml", stderr)))
		abort();
	ctl.defaults = (struct plan_params){ .nslots = 64, .retransmit_us = 200000, .rnr_timer = 1 };
	ctl.switch_wait_ms = SWITCH_WAIT_MS;
	ctl.idle_ms = IDLE_MS;
	signal(SIGPIPE, SIG_IGN);
	return 0;
}

/* Connection @ci as accept_on() makes it, its peer's end in far[]. */
static void open_conn(int ci)
{
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) < 0)
		abort();
	ctl.conn[ci] = (struct conn){ .kind = ci < NSWITCH_CONNS ? C_SWITCH : C_CLIENT, .fd = sv[0],
				      .addr = 0x7f000001, .node = -1, .last_ms = ctl_now_ms() };
	snprintf(ctl.conn[ci].peer, sizeof(ctl.conn[ci].peer), "127.0.0.1:%d", 40000 + ci);
	far[ci] = sv[1];
}

static struct ctl_buf got[NCONN]; /* what each peer received, not yet taken as messages */

/*
 * Read what the controller sent to every peer: each message must parse, and
 * rules pushed to a switch must parse with the switch's own sw_rules_parse().
 */
static void drain(void)
{
	static struct sw_rules rules;
	char err[512], *msg;
	int rc;

	for (int ci = 0; ci < NCONN; ci++) {
		while (far[ci] >= 0 && ctl_feed(&got[ci], far[ci]) > 0)
			;
		while ((msg = ctl_next(&got[ci], &rc))) {
			struct ctl_doc m;
			FZ_CHECK(ctl_parse(msg, &m, err, sizeof(err)) == 0);
			if (!strcmp(m.kind, "rules"))
				FZ_CHECK(sw_rules_parse(msg, strlen(msg), "rules", &rules, fz_devnull()) == 0);
			ctl_doc_free(&m);
			free(msg);
		}
		FZ_CHECK(rc == CTL_OK);
	}
}

/* The end of a loop turn: doomed connections closed (and their peers' ends), answers flushed. */
static void end_turn(void)
{
	drain();
	for (int ci = 0; ci < NCONN; ci++) {
		if (ctl.conn[ci].kind != C_FREE && ctl.conn[ci].out_len > ctl.conn[ci].out_off)
			flush_out(ci);
		if (ctl.conn[ci].kind != C_FREE && ctl.conn[ci].doomed) {
			drop_conn(ci, ctl.conn[ci].doomed);
			drain(); /* what it was sent before it closed */
			ctl_buf_free(&got[ci]);
			close(far[ci]);
			far[ci] = -1;
		}
	}
	drain();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz f = { data, size };

	/* every input starts from the same controller: ids from 1, the same PSNs */
	ctl.next_group = ctl.next_comm = 0;
	ctl.next_seq = 0;
	srandom(1);
	for (int ci = 0; ci < NCONN; ci++)
		open_conn(ci);
	while (fz_left(&f)) {
		unsigned b = fz_u8(&f), ci = b % NCONN;
		size_t len = fz_u16(&f), got;
		const uint8_t *bytes = fz_take(&f, len, &got);

		if (b & 0x80)
			run_timers(ctl_now_ms() + 3600 * 1000);
		if (b & 0x40)
			doom(ci, "closed by the fuzzer");
		end_turn();
		if (ctl.conn[ci].kind == C_FREE)
			open_conn(ci);
		if (got && write(far[ci], bytes, got) != (ssize_t)got)
			abort(); /* the socket takes it: a buffer of 200 KiB and more */
		while (ctl.conn[ci].kind != C_FREE && !ctl.conn[ci].doomed && ctl_feed(&ctl.conn[ci].in, ctl.conn[ci].fd) > 0)
			;
		if (ctl.conn[ci].kind != C_FREE && !ctl.conn[ci].doomed)
			take_input(ci);
		for (int i = 0; i < NCONN; i++) /* what the loop does each turn: messages that waited for an answer */
			if (ctl.conn[i].kind != C_FREE && !ctl.conn[i].doomed && ctl.conn[i].req.kind == R_NONE &&
			    ctl_buffered(&ctl.conn[i].in))
				take_input(i);
		end_turn();
	}
	for (int ci = 0; ci < NCONN; ci++)
		if (ctl.conn[ci].kind != C_FREE)
			doom(ci, "the input ended");
	end_turn();
	for (int i = 0; i < MAX_COMMS; i++)
		FZ_CHECK(ctl.comm[i].state == CM_FREE);
	for (int i = 0; i < MAX_GROUPS; i++)
		FZ_CHECK(ctl.group[i].id == 0);
	for (int i = 0; i < MAX_CONNS; i++)
		FZ_CHECK(ctl.conn[i].kind == C_FREE);
	return 0;
}
