/*
 * fuzz_bundle.c — libFuzzer target: a frame captured on a switch link,
 * through switch/bundle.c's bundle_rx() as incswitch takes it, then each
 * inner frame through roce_parse() as the engine would.
 *
 * Input: one byte of flags (bit 0: the capture was cut, caplen < len; bit 1:
 * the rest of the byte is how many bytes were cut), then the frame.
 * Properties: bundle_rx() counts exactly one of bundles_rx or drop_bundle
 * for a bundle and neither for anything else; the inner frames it returns
 * lie inside the captured bytes, in order, each at least BUNDLE_INNER_MIN;
 * and bundle_build() of them (when they are IPv4/UDP) gives a bundle that
 * splits back into the same frames.
 */
#include "../switch/bundle.h"
#include "../switch/roce.h"
#include "fuzz.h"

#define BUNDLE_CAP (BUNDLE_OUTER_LEN + 65536)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t *inner[BUNDLE_MAX_FRAMES], *again[BUNDLE_MAX_FRAMES];
	static uint16_t ilen[BUNDLE_MAX_FRAMES], alen[BUNDLE_MAX_FRAMES];
	static uint8_t out[BUNDLE_CAP];
	struct bundle_rx_counters c = { 0 };
	struct fz f = { data, size };
	unsigned flags = fz_u8(&f);
	size_t caplen = fz_left(&f), len = caplen, got;
	const uint8_t *frame = fz_take(&f, caplen, &got);
	const char *why;

	if (flags & 1)
		len += flags >> 1 ? flags >> 1 : 1; /* the wire frame was longer than what was captured */
	int n = bundle_rx(frame, caplen, len, inner, ilen, &c);
	if (n < 0) {
		FZ_CHECK(!bundle_is(frame, caplen) && c.bundles_rx == 0 && c.drop_bundle == 0);
		return 0;
	}
	FZ_CHECK(c.bundles_rx + c.drop_bundle == 1 && (n == 0) == (c.drop_bundle == 1));
	FZ_CHECK(n <= BUNDLE_MAX_FRAMES && (n == 0 || caplen == len));
	const uint8_t *at = frame + BUNDLE_OUTER_LEN;
	for (int i = 0; i < n; i++) {
		struct roce_pkt p;
		FZ_CHECK(inner[i] == at + BUNDLE_ENTRY_LEN && ilen[i] >= BUNDLE_INNER_MIN);
		FZ_CHECK(inner[i] + ilen[i] <= frame + caplen);
		at = inner[i] + ilen[i];
		(void)roce_parse(inner[i], ilen[i], &p);
	}
	if (n == 0)
		return 0;

	/* rebuilt from its frames, a bundle splits back into the same frames */
	size_t blen = bundle_build(out, sizeof(out), inner, ilen, n);
	int plain = 1;
	for (int i = 0; i < n; i++)
		plain &= ilen[i] >= ROCE_BTH_OFF && inner[i][12] == 8 && inner[i][13] == 0 &&
			 inner[i][14] == 0x45 && inner[i][23] == 17 && ((inner[i][20] << 8 | inner[i][21]) & 0x3fff) == 0;
	FZ_CHECK((blen > 0) == plain);
	if (!blen)
		return 0;
	FZ_CHECK(bundle_split(out, blen, again, alen, BUNDLE_MAX_FRAMES, &why) == n);
	for (int i = 0; i < n; i++)
		FZ_CHECK(alen[i] == ilen[i] && !memcmp(again[i], inner[i], ilen[i]));
	return 0;
}
