/*
 * fuzz_swconfig.c — libFuzzer target: a switch rules document (YAML, from
 * the controller on TCP 52311 or from a file) through sw_rules_parse(),
 * then sw_engine_new() of what it accepted, as incswitch's apply_rules().
 *
 * Input: the document's bytes.
 * Properties: refused rules leave at least one "rules:LINE: ..." message;
 * accepted ones have 1..SW_MAX_CHILDREN children, each on a declared port
 * with non-zero QPNs and 24-bit PSNs, port names NUL-terminated; the engine
 * either takes them or refuses them (NULL), and frees what it took.
 */
#include "../switch/engine.h"
#include "../switch/swconfig.h"
#include "fuzz.h"

static void tx(void *ctx, int port, const uint8_t *frame, size_t len)
{
	(void)ctx, (void)port, (void)frame, (void)len;
}

static void check_conn(const struct sw_rules *r, const struct sw_conn_cfg *c)
{
	FZ_CHECK(c->port >= 0 && c->port < r->nports);
	FZ_CHECK(c->local_qpn && c->local_qpn <= 0xffffff && c->peer_qpn && c->peer_qpn <= 0xffffff);
	FZ_CHECK(c->rq_psn <= 0xffffff && c->sq_psn <= 0xffffff && c->nranks >= 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct sw_rules r;
	char *msgs = NULL;
	size_t mlen = 0;
	FILE *err = open_memstream(&msgs, &mlen);
	int rc;

	if (!err)
		abort();
	rc = sw_rules_parse((const char *)data, size, "rules", &r, err);
	fclose(err);
	if (rc < 0) {
		FZ_CHECK(mlen > 0 && !strncmp(msgs, "rules:", 6));
		free(msgs);
		return 0;
	}
	FZ_CHECK(mlen == 0);
	free(msgs);
	FZ_CHECK(r.cfg.nchildren >= 1 && r.cfg.nchildren <= SW_MAX_CHILDREN);
	FZ_CHECK(r.nports >= 1 && r.nports <= SW_MAX_CHILDREN && strnlen(r.name, sizeof(r.name)) < sizeof(r.name));
	for (int i = 0; i < r.nports; i++)
		FZ_CHECK(strnlen(r.port[i], SW_PORT_NAME_MAX) < SW_PORT_NAME_MAX && r.port[i][0]);
	for (int i = 0; i < r.cfg.nchildren; i++)
		check_conn(&r, &r.cfg.child[i]);
	if (r.cfg.has_parent)
		check_conn(&r, &r.cfg.parent);

	FILE *saved = stderr; /* the engine explains a refusal on stderr */
	stderr = fz_devnull();
	struct sw_engine *e = sw_engine_new(&r.cfg, tx, NULL);
	stderr = saved;
	if (e) {
		sw_engine_tick(e, 1000000000);
		sw_engine_free(e);
	}
	return 0;
}
