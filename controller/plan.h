/*
 * plan.h — from a topology and a communicator's ranks to switch rules.
 *
 * The controller's only computation, kept free of I/O so it can be tested
 * offline: each rank is found in the topology by the IPv4 address of its RDMA
 * port; the communicator's aggregation tree is the part of the topology tree
 * between those hosts and their lowest common switch (the communicator's
 * root); every switch on it gets a rules document (the format of
 * switch/swconfig.c), and every rank learns the address, queue pair number
 * and PSN of its end at its leaf switch.
 */
#ifndef INCLAB_PLAN_H
#define INCLAB_PLAN_H

#include <stdint.h>

#include "../topology/topo.h"

#define PLAN_MAX_RANKS 1024

struct plan_rank_in {
	uint32_t ip;  /* host order: the address of the rank's RDMA port */
	uint32_t qpn; /* its queue pair */
};

struct plan_params {
	unsigned comm;           /* communicator id (goes into the switch QPNs) */
	uint32_t host_psn;       /* first PSN both ways on every host connection */
	uint32_t link_psn;       /* first PSN both ways on switch-switch links */
	unsigned nslots;         /* aggregation slots per switch */
	unsigned retransmit_us;  /* switch retransmission timeout */
	unsigned rnr_timer;      /* RNR NAK timer code */
};

struct plan_rank_out {
	uint32_t switch_ip;  /* host order */
	uint32_t switch_qpn;
	int leaf;            /* node index of the leaf switch */
};

struct plan_switch {
	int node;            /* node index in the topology */
	char *rules;         /* YAML document (malloc'd) */
};

struct plan {
	int nranks;
	struct plan_rank_out rank[PLAN_MAX_RANKS];
	int nswitches;
	struct plan_switch sw[TOPO_MAX_NODES]; /* leaves first... root last (post-order) */
	int root;            /* node index of the communicator's top switch */
};

/**
 * plan_make() - compute the rules of a communicator of @nranks ranks.
 * @in: rank i's address and queue pair, for every rank.
 * Return: 0 and @out (release with plan_free()), or -1 with a one-line
 * reason in @err (an address that is no host of the topology, two ranks on
 * one host, ranks under a switch that are not consecutive, ...).
 */
int plan_make(const struct topology *t, const struct plan_params *p, const struct plan_rank_in *in, int nranks,
	      struct plan *out, char *err, size_t errlen);

/** plan_free() - release the rules texts of @pl. */
void plan_free(struct plan *pl);

#endif
