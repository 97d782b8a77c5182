/*
 * fuzz_topo.c — libFuzzer target: a topology file through topo_parse()
 * (topogen, incctl and lab-up read it), then, when it is valid, the
 * controller's plan (controller/plan.c) of a communicator of every host.
 *
 * Input: the file's bytes.
 * Properties: a refused file gets at least one "topo.yaml:LINE..." message;
 * an accepted one has names of letters, digits, '.', '_', '-' only (they
 * go into generated shell, YAML and XML), is a tree rooted at a switch (every other switch and every
 * host has a parent, ranks 0..nhosts-1 each once); every rules document the
 * plan makes parses with the switch's own sw_rules_parse().
 */
#include "../controller/plan.h"
#include "../switch/swconfig.h"
#include "../topology/topo.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct plan_rank_in in[PLAN_MAX_RANKS];
	static struct plan pl;
	static struct sw_rules rules;
	char *msgs = NULL, err[256];
	size_t mlen = 0;
	FILE *ef = open_memstream(&msgs, &mlen);
	struct topology *t;

	if (!ef)
		abort();
	t = topo_parse((const char *)data, size, "topo.yaml", ef);
	fclose(ef);
	if (!t) {
		FZ_CHECK(mlen > 0 && !strncmp(msgs, "topo.yaml:", 10));
		free(msgs);
		return 0;
	}
	free(msgs);
	FZ_CHECK(t->root >= 0 && t->root < t->nnodes && t->nodes[t->root].role == TOPO_SWITCH);
	/* names go into generated shell, YAML and XML as they are: nothing there may need quoting */
	FZ_CHECK(t->name[0] && strspn(t->name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") ==
				       strlen(t->name));
	int seen_rank[TOPO_MAX_NODES] = { 0 };
	for (int i = 0; i < t->nnodes; i++) {
		const struct topo_node *n = &t->nodes[i];
		FZ_CHECK(n->name[0] && strnlen(n->name, sizeof(n->name)) <= TOPO_NAME_MAX &&
			 strspn(n->name, "abcdefghijklmnopqrstuvwxyz0123456789-") == strlen(n->name));
		if (n->role == TOPO_HOST) {
			FZ_CHECK(n->rank >= 0 && n->rank < t->nhosts && !seen_rank[n->rank]++);
			FZ_CHECK(n->parent >= 0 && t->nodes[n->parent].role == TOPO_SWITCH && n->nports >= 1);
			in[n->rank] = (struct plan_rank_in){ n->ports[0].addr.addr, 0x11 + (uint32_t)n->rank };
		} else if (n->role == TOPO_SWITCH && i != t->root) {
			FZ_CHECK(n->parent >= 0 && t->nodes[n->parent].role == TOPO_SWITCH);
		}
	}
	struct plan_params pp = { .comm = 1, .host_psn = 0xfffffe, .link_psn = 5, .nslots = 16, .retransmit_us = 1000,
				  .rnr_timer = 1 };
	if (t->nhosts <= PLAN_MAX_RANKS && plan_make(t, &pp, in, t->nhosts, &pl, err, sizeof(err)) == 0) {
		for (int k = 0; k < pl.nswitches; k++) {
			const char *y = pl.sw[k].rules;
			FZ_CHECK(sw_rules_parse(y, strlen(y), "rules", &rules, fz_devnull()) == 0);
			FZ_CHECK(!strcmp(rules.name, t->nodes[pl.sw[k].node].name));
		}
		plan_free(&pl);
	}
	topo_free(t);
	return 0;
}
