/*
 * portstat.h — incswitch's counters per port (interface), for comparing with
 * a capture of the link (lab/lab.sh capture) and with the kernel's counters.
 *
 * What is counted, per interface name as the rules name it:
 *   rx     frames the port's capture handed to incswitch: those that entered
 *          the interface (PCAP_D_IN) and pass SW_CAPTURE_FILTER (IPv4, UDP to
 *          4791, 4792 or 4793, whatever the IP destination: RoCE the node's
 *          kernel forwards between hosts is counted too), as they are on the
 *          wire (a bundle is one frame). Frames the kernel could not queue
 *          for the capture are not: they are capture_drops.
 *   tx     frames incswitch handed to the kernel on the port and the kernel
 *          took (sendmmsg() counted them sent), a bundle as one frame; a frame
 *          refused is an inject error instead. Always from one of the
 *          switch's own addresses (the rules' local_ip); what the node's
 *          kernel forwards or sends itself (ARP, ICMP) is not incswitch's.
 *   opens  times the port was opened (by the first communicator naming it).
 * A port is captured only while a communicator uses it (open 1): nothing
 * arriving while it is closed is counted. The counters of an interface
 * live as long as the daemon (they go on across closing and opening
 * again, never reset), so a reader takes differences over its window.
 * Incrementing is a plain add per frame, nothing else on the data path.
 */
#ifndef INCLAB_PORTSTAT_H
#define INCLAB_PORTSTAT_H

#include <stdint.h>
#include <stdio.h>

#include "swconfig.h"

/* The frames a port's capture takes (pcap filter syntax); lab/lab.sh capture counts the captured ones with the same. */
#define SW_CAPTURE_FILTER "ip and udp and (dst port 4791 or dst port 4792 or dst port 4793)"
/* Interfaces counted over the daemon's life: four times the ports open at once (SW_MAX_CHILDREN + 1 per rules). */
#define SW_PORT_STATS_MAX 256

struct sw_port_stat {
	char name[SW_PORT_NAME_MAX];
	uint64_t rx, tx, opens;
	int open;                  /* captured now (a communicator uses it) */
};

struct sw_port_stats {
	int n;
	struct sw_port_stat port[SW_PORT_STATS_MAX];
};

/*
 * sw_port_stat_open() - the counters of interface @name (made, all zero, the
 * first time), now open: opens counts one more. NULL when @name is too long
 * or SW_PORT_STATS_MAX interfaces are counted already (then nothing of it is).
 */
struct sw_port_stat *sw_port_stat_open(struct sw_port_stats *t, const char *name);

/* sw_port_stat_close() - @st (may be NULL) is no longer captured; its counters stay. */
void sw_port_stat_close(struct sw_port_stat *st);

/*
 * sw_port_stats_print() - one line for every interface ever opened, in the
 * order first opened:
 *   "incswitch SWITCH ports: IFACE rx=N tx=N open=0|1 opens=N[, IFACE ...]\n"
 * ("incswitch SWITCH ports: none" before any) and a flush.
 */
void sw_port_stats_print(const struct sw_port_stats *t, const char *sw, FILE *f);

#endif
