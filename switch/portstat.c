/* portstat.c — incswitch's counters per port (portstat.h). */
#include "portstat.h"

#include <stdlib.h>
#include <string.h>

struct sw_port_stat *sw_port_stat_open(struct sw_port_stats *t, const char *name)
{
	struct sw_port_stat *st = NULL;

	if (strlen(name) >= SW_PORT_NAME_MAX)
		return NULL;
	for (int i = 0; i < t->n && !st; i++)
		if (!strcmp(t->port[i].name, name))
			st = &t->port[i];
	if (!st) {
		if (t->n == SW_PORT_STATS_MAX)
			return NULL;
		st = &t->port[t->n++];
		*st = (struct sw_port_stat){ 0 };
		strcpy(st->name, name); /* fits: checked above */
	}
	st->opens++;
	st->open = 1;
	return st;
}

void sw_port_stat_close(struct sw_port_stat *st)
{
	if (st)
		st->open = 0;
}

void sw_port_stats_print(const struct sw_port_stats *t, const char *sw, FILE *f)
{
	char *line = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&line, &len); /* the line in one write: a reader never sees half of it */

	if (!m)
		return;
	fprintf(m, "incswitch %s ports:%s", sw, t->n ? "" : " none");
	for (int i = 0; i < t->n; i++) {
		const struct sw_port_stat *p = &t->port[i];
		fprintf(m, "%s %s rx=%llu tx=%llu open=%d opens=%llu", i ? "," : "", p->name, (unsigned long long)p->rx,
			(unsigned long long)p->tx, p->open, (unsigned long long)p->opens);
	}
	fprintf(m, "\n");
	if (fclose(m) == 0)
		fwrite(line, 1, len, f);
	free(line);
	fflush(f);
}
