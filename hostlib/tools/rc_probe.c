/*
 * rc_probe — one RC queue pair on a real RDMA device, connected to a switch
 * port instead of another host: sends messages, and checks that each SEND
 * completes (the switch's ACK was accepted by the device) and that the echo
 * the switch sends back arrives intact (its SEND frames were accepted).
 *
 *   rc_probe -d rxe0 -g GID_INDEX -r SWITCH_IP -Q SWITCH_QPN -S SWITCH_PSN \
 *            [-n MESSAGES] [-b BYTES] -w QPN_FILE -G GO_FILE
 *
 * The switch must know our QP number before we send: rc_probe writes
 * "QPN PSN" to QPN_FILE after creating its QP, then waits until GO_FILE exists.
 * Exits 0 when every message was sent, acknowledged and echoed byte for byte.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TIMEOUT_S 30

static int die(const char *what, int err)
{
	fprintf(stderr, "rc_probe: %s: %s\n", what, strerror(err));
	return 1;
}

/* Wait for one completion of @want opcode class; fail on error status or timeout. */
static int wait_wc(struct ibv_cq *cq, enum ibv_wc_opcode want, uint32_t *byte_len)
{
	time_t end = time(NULL) + TIMEOUT_S;
	struct ibv_wc wc;

	while (time(NULL) < end) {
		int n = ibv_poll_cq(cq, 1, &wc);
		if (n < 0)
			return -1;
		if (n == 0) {
			usleep(100);
			continue;
		}
		if (wc.status != IBV_WC_SUCCESS) {
			fprintf(stderr, "rc_probe: completion of wr %llu failed: %s (status %d, vendor_err 0x%x)\n",
				(unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status), wc.status, wc.vendor_err);
			return -1;
		}
		if (wc.opcode != want) {
			fprintf(stderr, "rc_probe: unexpected completion opcode %d\n", wc.opcode);
			return -1;
		}
		if (byte_len)
			*byte_len = wc.byte_len;
		return 0;
	}
	fprintf(stderr, "rc_probe: no %s completion within %d s\n", want == IBV_WC_SEND ? "send" : "receive", TIMEOUT_S);
	return -1;
}

int main(int argc, char **argv)
{
	const char *devname = "rxe0", *qpn_file = NULL, *go_file = NULL;
	int gid_index = 1, opt, messages = 4, bytes = 4000;
	uint32_t remote_qpn = 0, remote_psn = 0, my_psn;
	struct in_addr remote = { 0 };

	while ((opt = getopt(argc, argv, "d:g:r:Q:S:n:b:w:G:")) != -1) {
		switch (opt) {
		case 'd': devname = optarg; break;
		case 'g': gid_index = atoi(optarg); break;
		case 'r':
			if (inet_pton(AF_INET, optarg, &remote) != 1)
				goto usage;
			break;
		case 'Q': remote_qpn = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'S': remote_psn = (uint32_t)strtoul(optarg, NULL, 0) & 0xffffff; break;
		case 'n': messages = atoi(optarg); break;
		case 'b': bytes = atoi(optarg); break;
		case 'w': qpn_file = optarg; break;
		case 'G': go_file = optarg; break;
		default: goto usage;
		}
	}
	if (!remote.s_addr || !remote_qpn || !qpn_file || !go_file || bytes < 1 || bytes > 65536 || messages < 1)
		goto usage;

	int ndev;
	struct ibv_device **devs = ibv_get_device_list(&ndev), *dev = NULL;
	for (int i = 0; devs && i < ndev; i++)
		if (strcmp(ibv_get_device_name(devs[i]), devname) == 0)
			dev = devs[i];
	if (!dev) {
		fprintf(stderr, "rc_probe: no RDMA device '%s'\n", devname);
		return 1;
	}
	struct ibv_context *ctx = ibv_open_device(dev);
	if (!ctx)
		return die("ibv_open_device", errno);
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = pd ? ibv_create_cq(ctx, 64, NULL, NULL, 0) : NULL;
	char *sbuf = malloc((size_t)bytes), *rbuf = calloc(1, (size_t)bytes);
	struct ibv_mr *smr = cq ? ibv_reg_mr(pd, sbuf, (size_t)bytes, 0) : NULL;
	struct ibv_mr *rmr = smr ? ibv_reg_mr(pd, rbuf, (size_t)bytes, IBV_ACCESS_LOCAL_WRITE) : NULL;
	if (!rmr)
		return die("PD/CQ/MR", errno);
	struct ibv_qp_init_attr qia = { .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
					.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1 } };
	struct ibv_qp *qp = ibv_create_qp(pd, &qia);
	if (!qp)
		return die("ibv_create_qp", errno);

	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1,
				 .qp_access_flags = IBV_ACCESS_LOCAL_WRITE };
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		return die("modify_qp INIT", errno);

	srand((unsigned)time(NULL) ^ (unsigned)getpid());
	my_psn = (uint32_t)rand() & 0xffffff;
	FILE *f = fopen(qpn_file, "w");
	if (!f || fprintf(f, "%u %u\n", qp->qp_num, my_psn) < 0 || fclose(f))
		return die(qpn_file, errno);
	for (time_t end = time(NULL) + 120; access(go_file, F_OK) != 0; usleep(20000))
		if (time(NULL) > end) {
			fprintf(stderr, "rc_probe: %s did not appear within 120 s\n", go_file);
			return 1;
		}

	/* RTR: the switch port is our peer; its address is the IPv4-mapped GID. */
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = remote_qpn;
	a.rq_psn = remote_psn;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.sgid_index = (uint8_t)gid_index;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.grh.dgid.raw[10] = 0xff;
	a.ah_attr.grh.dgid.raw[11] = 0xff;
	memcpy(&a.ah_attr.grh.dgid.raw[12], &remote.s_addr, 4);
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				      IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		return die("modify_qp RTR", errno);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = my_psn;
	a.timeout = 16;   /* 4.096 us * 2^16 = 268 ms local ACK timeout: TCG guests stall for tens of ms */
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				      IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC))
		return die("modify_qp RTS", errno);

	for (int m = 0; m < messages; m++) {
		struct ibv_sge rs = { (uintptr_t)rbuf, (uint32_t)bytes, rmr->lkey }, ss = { (uintptr_t)sbuf, (uint32_t)bytes, smr->lkey };
		struct ibv_recv_wr rwr = { .wr_id = 1000 + (uint64_t)m, .sg_list = &rs, .num_sge = 1 }, *rbad;
		struct ibv_send_wr swr = { .wr_id = (uint64_t)m, .sg_list = &ss, .num_sge = 1, .opcode = IBV_WR_SEND,
					   .send_flags = IBV_SEND_SIGNALED }, *sbad;
		uint32_t got = 0;

		for (int i = 0; i < bytes; i++)
			sbuf[i] = (char)(m * 31 + i * 7 + (i >> 8));
		memset(rbuf, 0, (size_t)bytes);
		if (ibv_post_recv(qp, &rwr, &rbad) || ibv_post_send(qp, &swr, &sbad))
			return die("post", errno);
		if (wait_wc(cq, IBV_WC_SEND, NULL) < 0) {
			fprintf(stderr, "rc_probe: message %d: SEND not acknowledged\n", m);
			return 1;
		}
		if (wait_wc(cq, IBV_WC_RECV, &got) < 0) {
			fprintf(stderr, "rc_probe: message %d: no echo received\n", m);
			return 1;
		}
		if (got != (uint32_t)bytes || memcmp(sbuf, rbuf, (size_t)bytes) != 0) {
			fprintf(stderr, "rc_probe: message %d: echo differs (%u bytes, want %d)\n", m, got, bytes);
			return 1;
		}
	}
	printf("rc_probe: %d messages of %d bytes sent, acknowledged by the switch and echoed back intact "
	       "(qpn 0x%x psn %u -> %s qpn 0x%x)\n", messages, bytes, qp->qp_num, my_psn, inet_ntoa(remote), remote_qpn);
	ibv_destroy_qp(qp);
	ibv_dereg_mr(rmr);
	ibv_dereg_mr(smr);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(devs);
	return 0;
usage:
	fprintf(stderr, "usage: rc_probe -d DEV -g GID_INDEX -r SWITCH_IP -Q SWITCH_QPN -S SWITCH_PSN [-n MESSAGES] "
			"[-b BYTES] -w QPN_FILE -G GO_FILE\n");
	return 2;
}
