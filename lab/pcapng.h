/*
 * pcapng.h — a small writer of pcapng files (the capture file format of
 * draft-ietf-opsawg-pcapng): one section, any number of interfaces, enhanced
 * packet blocks with a direction, and interface statistics at the end.
 *
 * libpcap's pcap_dump() writes only the old pcap format, which has a single
 * link and no names; udpcap needs one named interface per link. Blocks are
 * written in the host's byte order (the section header's byte-order magic
 * says which), every block padded to 32 bits, as the format requires.
 * Timestamps are in nanoseconds (if_tsresol 9 on every interface).
 */
#ifndef INCLAB_PCAPNG_H
#define INCLAB_PCAPNG_H

#include <stdint.h>
#include <stdio.h>

/* epb_flags direction bits (pcapng "Enhanced Packet Block Flags Word", bits 0-1) */
#define PCAPNG_DIR_UNKNOWN 0
#define PCAPNG_DIR_IN 1
#define PCAPNG_DIR_OUT 2

/* An interface statistic not known: its option is left out of the block. */
#define PCAPNG_UNKNOWN UINT64_MAX

struct pcapng {
	FILE *f;
	uint32_t nif; /* interfaces described so far: the next one's id */
	int err;      /* a write failed: pcapng_close() says so */
};

/** pcapng_open() - start file @path with a section header naming @appl; 0, or -1 with errno. */
int pcapng_open(struct pcapng *w, const char *path, const char *appl);

/**
 * pcapng_idb() - describe the next interface: link type @linktype (LINKTYPE_*,
 * 1 = Ethernet), @snaplen, name @name and free text @desc (NULL: none).
 * Returns its interface id (0, 1, ... in order of description).
 */
uint32_t pcapng_idb(struct pcapng *w, uint16_t linktype, uint32_t snaplen, const char *name, const char *desc);

/**
 * pcapng_epb() - one frame of interface @ifid at @ts_ns (ns since the epoch):
 * @caplen bytes of @data of a frame @origlen long, direction @dir (PCAPNG_DIR_*).
 */
void pcapng_epb(struct pcapng *w, uint32_t ifid, uint64_t ts_ns, const void *data, uint32_t caplen,
		uint32_t origlen, unsigned dir);

/**
 * pcapng_isb() - statistics of interface @ifid over [@start_ns, @end_ns]:
 * frames the interface counted (@ifrecv), frames the capture's kernel socket
 * dropped (@osdrop), frames written (@usrdeliv). PCAPNG_UNKNOWN leaves one out.
 */
void pcapng_isb(struct pcapng *w, uint32_t ifid, uint64_t start_ns, uint64_t end_ns, uint64_t ifrecv,
		uint64_t osdrop, uint64_t usrdeliv);

/** pcapng_close() - flush and close; 0, or -1 if any write (or the close) failed. */
int pcapng_close(struct pcapng *w);

#endif
