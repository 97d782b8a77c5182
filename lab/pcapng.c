/*
 * pcapng.c — the pcapng writer of pcapng.h. Block layouts are those of
 * draft-ietf-opsawg-pcapng sections 4.1 (SHB), 4.2 (IDB), 4.3 (EPB), 4.6 (ISB).
 */
#include "pcapng.h"

#include <errno.h>
#include <string.h>

#define BT_SHB 0x0A0D0D0Au  /* section header block */
#define BT_IDB 0x00000001u  /* interface description block */
#define BT_ISB 0x00000005u  /* interface statistics block */
#define BT_EPB 0x00000006u  /* enhanced packet block */
#define BYTE_ORDER_MAGIC 0x1A2B3C4Du

#define OPT_END 0           /* opt_endofopt */
#define OPT_SHB_USERAPPL 4
#define OPT_IF_NAME 2
#define OPT_IF_DESCRIPTION 3
#define OPT_IF_TSRESOL 9
#define OPT_EPB_FLAGS 2
#define OPT_ISB_STARTTIME 2
#define OPT_ISB_ENDTIME 3
#define OPT_ISB_IFRECV 4
#define OPT_ISB_OSDROP 7
#define OPT_ISB_USRDELIV 8

#define TSRESOL_NS 9        /* if_tsresol: 10^-9 s */
#define WRITE_BUFFER (1 << 20) /* a frame is 3-5 small writes: few write(2)s at the lab's 20,000 frames/s */
#define MAX_OPT 0xfffc      /* an option's length is 16 bits; longer text is cut to this (a multiple of 4) */

static uint32_t pad4(size_t n)
{
	return (uint32_t)((n + 3) & ~(size_t)3);
}

static void put(struct pcapng *w, const void *p, size_t n)
{
	if (n && fwrite(p, 1, n, w->f) != n)
		w->err = 1;
}

static void put32(struct pcapng *w, uint32_t v)
{
	put(w, &v, 4);
}

static void put_zeros(struct pcapng *w, size_t n)
{
	static const uint8_t z[4];
	put(w, z, n);
}

/* Size on disk of an option of @len value bytes. */
static uint32_t opt_size(size_t len)
{
	return 4 + pad4(len);
}

/* An option @code with @len bytes of @val, padded. */
static void put_opt(struct pcapng *w, uint16_t code, const void *val, size_t len)
{
	uint16_t h[2] = { code, (uint16_t)len };
	put(w, h, 4);
	put(w, val, len);
	put_zeros(w, pad4(len) - len);
}

/* A timestamp as pcapng stores it: the high 32 bits, then the low 32. */
static void ts_split(uint64_t ts, uint32_t out[2])
{
	out[0] = (uint32_t)(ts >> 32);
	out[1] = (uint32_t)ts;
}

static size_t text_len(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	return n > MAX_OPT ? MAX_OPT : n;
}

int pcapng_open(struct pcapng *w, const char *path, const char *appl)
{
	size_t la = text_len(appl);
	uint32_t len = 28 + (la ? opt_size(la) : 0) + 4; /* header 24 + options + end option + trailing length */
	uint16_t ver[2] = { 1, 0 };                       /* pcapng 1.0 */
	int64_t section_len = -1;                         /* not given */

	memset(w, 0, sizeof(*w));
	w->f = fopen(path, "wb");
	if (!w->f)
		return -1;
	setvbuf(w->f, NULL, _IOFBF, WRITE_BUFFER);
	put32(w, BT_SHB);
	put32(w, len);
	put32(w, BYTE_ORDER_MAGIC);
	put(w, ver, 4);
	put(w, &section_len, 8);
	if (la)
		put_opt(w, OPT_SHB_USERAPPL, appl, la);
	put_opt(w, OPT_END, NULL, 0);
	put32(w, len);
	return 0;
}

uint32_t pcapng_idb(struct pcapng *w, uint16_t linktype, uint32_t snaplen, const char *name, const char *desc)
{
	size_t ln = text_len(name), ld = text_len(desc);
	uint8_t tsresol = TSRESOL_NS;
	uint32_t len = 16 + (ln ? opt_size(ln) : 0) + (ld ? opt_size(ld) : 0) + opt_size(1) + 4 + 4; /* header, options, end, length */
	uint16_t lt[2] = { linktype, 0 };

	put32(w, BT_IDB);
	put32(w, len);
	put(w, lt, 4);
	put32(w, snaplen);
	if (ln)
		put_opt(w, OPT_IF_NAME, name, ln);
	if (ld)
		put_opt(w, OPT_IF_DESCRIPTION, desc, ld);
	put_opt(w, OPT_IF_TSRESOL, &tsresol, 1);
	put_opt(w, OPT_END, NULL, 0);
	put32(w, len);
	return w->nif++;
}

void pcapng_epb(struct pcapng *w, uint32_t ifid, uint64_t ts_ns, const void *data, uint32_t caplen,
		uint32_t origlen, unsigned dir)
{
	uint32_t flags = dir & 3, ts[2];
	uint32_t len = 28 + pad4(caplen) + (dir ? opt_size(4) + 4 : 0) + 4; /* header, data, flags, end, length */

	ts_split(ts_ns, ts);
	put32(w, BT_EPB);
	put32(w, len);
	put32(w, ifid);
	put(w, ts, 8);
	put32(w, caplen);
	put32(w, origlen);
	put(w, data, caplen);
	put_zeros(w, pad4(caplen) - caplen);
	if (dir) {
		put_opt(w, OPT_EPB_FLAGS, &flags, 4);
		put_opt(w, OPT_END, NULL, 0);
	}
	put32(w, len);
}

void pcapng_isb(struct pcapng *w, uint32_t ifid, uint64_t start_ns, uint64_t end_ns, uint64_t ifrecv,
		uint64_t osdrop, uint64_t usrdeliv)
{
	const struct { uint16_t code; uint64_t v; } c[] = {
		{ OPT_ISB_IFRECV, ifrecv }, { OPT_ISB_OSDROP, osdrop }, { OPT_ISB_USRDELIV, usrdeliv },
	};
	uint32_t len = 20 + 2 * opt_size(8) + 4 + 4, ts[2]; /* header, start/end times, end, length */

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++)
		len += c[i].v != PCAPNG_UNKNOWN ? opt_size(8) : 0;
	put32(w, BT_ISB);
	put32(w, len);
	put32(w, ifid);
	ts_split(end_ns, ts);
	put(w, ts, 8);
	ts_split(start_ns, ts);
	put_opt(w, OPT_ISB_STARTTIME, ts, 8);
	ts_split(end_ns, ts);
	put_opt(w, OPT_ISB_ENDTIME, ts, 8);
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++)
		if (c[i].v != PCAPNG_UNKNOWN)
			put_opt(w, c[i].code, &c[i].v, 8);
	put_opt(w, OPT_END, NULL, 0);
	put32(w, len);
}

int pcapng_close(struct pcapng *w)
{
	int err = w->err;

	if (fclose(w->f) != 0)
		err = 1;
	w->f = NULL;
	if (err && !errno)
		errno = EIO;
	return err ? -1 : 0;
}
