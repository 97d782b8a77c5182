/*
 * bundle.h — several switch-link frames carried in one Ethernet frame.
 *
 * Under TCG the lab pays per frame, not per byte (switch/README.md, "Where the
 * time goes"): every frame costs a virtio doorbell, a packet-socket wake-up
 * and a QEMU main-loop round on each end. Switch<->switch links are between
 * two incswitch daemons, so when their MTU allows it the frames one round
 * sends to the same peer switch travel together in a bundle:
 *
 *   Ethernet(14) | IPv4(20) | UDP(8, dst BUNDLE_UDP_PORT) |
 *   version(1) count(1) reserved(2) | { length(2, big-endian) | frame }^count
 *
 * Each inner frame is the complete RoCEv2 frame (UDP 4792, its own ICRC) the
 * engine built, unchanged; the outer Ethernet and IPv4 headers are the first
 * inner frame's, with lengths and checksum for the bundle. The receiver hands
 * the inner frames to its engine one by one, as if each had been captured:
 * the engine's reliability (PSNs, ACKs, retransmission) stays per frame, and
 * a lost bundle is just several lost frames. A run of one frame is sent as
 * it is, without a bundle.
 */
#ifndef INCLAB_BUNDLE_H
#define INCLAB_BUNDLE_H

#include <stddef.h>
#include <stdint.h>

#include "roce.h"

#define BUNDLE_UDP_PORT 4793     /* next to the seed's 4791 (hosts) and 4792 (switch links) */
#define BUNDLE_VERSION 1
#define BUNDLE_HDR_LEN 4         /* version, count, 2 reserved bytes */
#define BUNDLE_ENTRY_LEN 2       /* the length before each inner frame */
#define BUNDLE_MAX_FRAMES 255    /* count is one byte */
/* Outer Ethernet + IPv4 (no options) + UDP + bundle header. */
#define BUNDLE_OUTER_LEN (ROCE_BTH_OFF + BUNDLE_HDR_LEN)
/* Smallest inner frame: Ethernet, IPv4, UDP and a BTH (an ACK is longer). */
#define BUNDLE_INNER_MIN ROCE_HDRS_LEN

/**
 * bundle_room() - bytes of inner frames (each with its length) that fit in a
 * bundle on a link of IP MTU @mtu; 0 when the MTU is too small to be worth it.
 */
size_t bundle_room(int mtu);

/**
 * bundle_take() - how many of the @n frames of @len[i] bytes, from the first,
 * go into one bundle of @room bytes (bundle_room()); at least 1 when @n > 0,
 * and a "bundle" of 1 is sent as the plain frame. At most BUNDLE_MAX_FRAMES.
 */
int bundle_take(const uint16_t *len, int n, size_t room);

/**
 * bundle_build() - write a bundle of the @n frames @frame[i] of @len[i] bytes
 * into @out (@cap bytes). The frames must be IPv4/UDP without IP options (as
 * the engine builds them); the outer headers are copied from @frame[0].
 * Return: the bundle's length, or 0 when @n is out of 1..BUNDLE_MAX_FRAMES,
 * a frame is not IPv4/UDP, or the bundle does not fit in @cap.
 */
size_t bundle_build(uint8_t *out, size_t cap, const uint8_t *const *frame, const uint16_t *len, int n);

/** bundle_is() - whether the frame of @len bytes is IPv4/UDP to BUNDLE_UDP_PORT. */
int bundle_is(const uint8_t *frame, size_t len);

/**
 * bundle_split() - the inner frames of the bundle @frame of @len bytes:
 * @inner[i] points into @frame, @ilen[i] is its length, at most @max.
 * Return: the number of inner frames, or -1 with *@why set to a short reason
 * when the bundle is malformed (truncated, wrong version, a count that does
 * not match its lengths, an inner frame too short for its headers, more than
 * @max frames). Nothing is returned from a malformed bundle.
 */
int bundle_split(const uint8_t *frame, size_t len, const uint8_t **inner, uint16_t *ilen, int max,
		 const char **why);

/** What incswitch counts of the bundles it receives (per rules). */
struct bundle_rx_counters {
	uint64_t bundles_rx;     /* bundles split, their frames handed to the engine */
	uint64_t drop_bundle;    /* bundles malformed or cut by the capture length: none of their frames used */
};

/**
 * bundle_rx() - a frame captured on a port, @caplen of its @len bytes, as
 * incswitch takes it: a bundle is split into @inner/@ilen (room for
 * BUNDLE_MAX_FRAMES) and counted in @c->bundles_rx, or refused whole and
 * counted in @c->drop_bundle when it is malformed or was cut by the capture.
 * Return: the number of inner frames for the engine (0: refused), or -1 when
 * the frame is no bundle: the engine takes it as captured (and counts it if
 * it drops it).
 */
int bundle_rx(const uint8_t *frame, size_t caplen, size_t len, const uint8_t **inner, uint16_t *ilen,
	      struct bundle_rx_counters *c);

#endif
