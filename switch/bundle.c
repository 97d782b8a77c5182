/*
 * bundle.c — several switch-link frames in one Ethernet frame (bundle.h):
 * building a bundle from the frames the engine emitted, and splitting one
 * back into them. Used by incswitch's I/O only; the engine never sees bundles.
 */
#include <string.h>

#include "bundle.h"
#include "roce.h"

#define IP_OFF ROCE_IP_OFF
#define UDP_OFF ROCE_UDP_OFF
#define BODY_OFF ROCE_BTH_OFF /* UDP's payload: a bundle's header where a RoCE frame has its BTH */

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static void put16(uint8_t *p, unsigned v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/* IPv4 over UDP, 20-byte IP header, not a fragment: what the engine builds. */
static int is_plain_udp(const uint8_t *f, size_t len)
{
	return len >= BODY_OFF && get16(f + 12) == ROCE_ETHERTYPE_IPV4 && f[IP_OFF] == 0x45 &&
	       f[IP_OFF + 9] == ROCE_IPPROTO_UDP &&
	       (get16(f + IP_OFF + 6) & 0x3fff) == 0;
}

size_t bundle_room(int mtu)
{
	/* at least two of the smallest frames, or bundling buys nothing */
	if (mtu < ROCE_IP_LEN + ROCE_UDP_LEN + BUNDLE_HDR_LEN + 2 * (BUNDLE_ENTRY_LEN + BUNDLE_INNER_MIN))
		return 0;
	return (size_t)mtu - ROCE_IP_LEN - ROCE_UDP_LEN - BUNDLE_HDR_LEN;
}

int bundle_take(const uint16_t *len, int n, size_t room)
{
	size_t used = 0;
	int k = 0;

	while (k < n && k < BUNDLE_MAX_FRAMES && used + BUNDLE_ENTRY_LEN + len[k] <= room)
		used += BUNDLE_ENTRY_LEN + len[k++];
	return n > 0 && k == 0 ? 1 : k;
}

size_t bundle_build(uint8_t *out, size_t cap, const uint8_t *const *frame, const uint16_t *len, int n)
{
	size_t at = BUNDLE_OUTER_LEN;

	if (n < 1 || n > BUNDLE_MAX_FRAMES || !is_plain_udp(frame[0], len[0]))
		return 0;
	for (int i = 0; i < n; i++) {
		if (!is_plain_udp(frame[i], len[i]) || at + BUNDLE_ENTRY_LEN + len[i] > cap)
			return 0;
		put16(out + at, len[i]);
		memcpy(out + at + BUNDLE_ENTRY_LEN, frame[i], len[i]);
		at += BUNDLE_ENTRY_LEN + len[i];
	}
	if (at - ROCE_ETH_LEN > 0xffff)
		return 0;
	memcpy(out, frame[0], BODY_OFF);  /* Ethernet, IPv4, UDP source port */
	put16(out + IP_OFF + 2, (unsigned)(at - ROCE_ETH_LEN));
	put16(out + IP_OFF + 10, 0);
	put16(out + IP_OFF + 10, roce_ip_checksum(out + IP_OFF));
	put16(out + UDP_OFF + 2, BUNDLE_UDP_PORT);
	put16(out + UDP_OFF + 4, (unsigned)(at - UDP_OFF));
	put16(out + UDP_OFF + 6, 0);  /* no UDP checksum: every inner frame has its ICRC */
	out[BODY_OFF] = BUNDLE_VERSION;
	out[BODY_OFF + 1] = (uint8_t)n;
	put16(out + BODY_OFF + 2, 0);
	return at;
}

int bundle_is(const uint8_t *frame, size_t len)
{
	return is_plain_udp(frame, len) && get16(frame + UDP_OFF + 2) == BUNDLE_UDP_PORT;
}

int bundle_split(const uint8_t *frame, size_t len, const uint8_t **inner, uint16_t *ilen, int max,
		 const char **why)
{
	size_t end, at = BUNDLE_OUTER_LEN;
	int n, count;

	if (!bundle_is(frame, len) || len < BUNDLE_OUTER_LEN)
		return *why = "not a bundle or shorter than its headers", -1;
	end = UDP_OFF + (size_t)get16(frame + UDP_OFF + 4);
	if (end > len || end < BUNDLE_OUTER_LEN || ROCE_ETH_LEN + (size_t)get16(frame + IP_OFF + 2) != end)
		return *why = "IP and UDP lengths do not match the frame", -1;
	if (frame[BODY_OFF] != BUNDLE_VERSION)
		return *why = "unknown bundle version", -1;
	count = frame[BODY_OFF + 1];
	if (count < 1 || count > max)
		return *why = "frame count out of range", -1;
	for (n = 0; n < count; n++) { /* check everything before anything is returned */
		size_t l;
		if (at + BUNDLE_ENTRY_LEN > end)
			return *why = "fewer frames than its count", -1;
		l = get16(frame + at);
		at += BUNDLE_ENTRY_LEN;
		if (l < BUNDLE_INNER_MIN || at + l > end)
			return *why = "an inner frame's length is too short or runs past the bundle", -1;
		at += l;
	}
	if (at != end)
		return *why = "bytes after the last frame of its count", -1;
	for (n = 0, at = BUNDLE_OUTER_LEN; n < count; n++) {
		ilen[n] = get16(frame + at);
		inner[n] = frame + at + BUNDLE_ENTRY_LEN;
		at += BUNDLE_ENTRY_LEN + ilen[n];
	}
	return n;
}

int bundle_rx(const uint8_t *frame, size_t caplen, size_t len, const uint8_t **inner, uint16_t *ilen,
	      struct bundle_rx_counters *c)
{
	const char *why;
	int n;

	if (!bundle_is(frame, caplen))
		return -1;
	n = caplen == len ? bundle_split(frame, caplen, inner, ilen, BUNDLE_MAX_FRAMES, &why) : -1;
	if (n < 0) {
		c->drop_bundle++; /* malformed or cut by the capture length: none of it */
		return 0;
	}
	c->bundles_rx++;
	return n;
}
