/*
 * ctlauth.h — who is at the other end of a control connection, and that
 * every message on it came from there, once, in order (libsodium).
 *
 * Keys. Every lab node has its own 32-byte secret (lab-up makes it, the
 * node alone gets it, CTL_NODE_KEY_FILE); the controller holds the table of
 * all of them (CTL_KEY_TABLE_FILE, "NAME HEX" lines). The ranks of one job
 * share a job key made by whoever starts the job. A key is written as 64
 * hex digits; a key file must not be readable by group or others.
 *
 * Handshake, on every connection where the accepting end holds keys (the
 * controller; rank 0 of a job that has a key):
 *
 *   server -> client   msg: challenge   nonce: 64 hex (32 fresh random bytes)
 *   client -> server   msg: auth        node: NAME, role: ROLE, mac: 64 hex
 *   server -> client   msg: welcome     node: NAME (sealed; or an unsealed
 *                                       "msg: error" with the reason, and close)
 *
 * mac = HMAC-SHA512-256(key, "inclab-auth-1" | nonce | NAME | 0 | ROLE | 0)
 * (libsodium crypto_auth). The server looks up NAME's key (the controller:
 * its table; rank 0: the job key) and compares in constant time.
 *
 * After it, every message either way ends with two lines
 *
 *   seq: N           0, 1, 2, ... per direction
 *   mac: 64 hex      HMAC-SHA512-256(key, "inclab-msg-1" | nonce | DIR | text up to and with the seq line)
 *
 * DIR is 'c' from the client, 's' from the server. A message recorded on one
 * connection fails the MAC on any other (another nonce); re-sent on the same
 * one it has an old sequence number; reflected back, the wrong DIR. The
 * receiver refuses all three, and a message without the two lines.
 */
#ifndef INCLAB_CTLAUTH_H
#define INCLAB_CTLAUTH_H

#include <stddef.h>
#include <stdint.h>

#include "ctlmsg.h"

#define CTL_KEY_BYTES 32   /* crypto_auth_KEYBYTES */
#define CTL_NONCE_BYTES 32 /* a nonce never repeats by chance: 2^-128 after 2^64 connections */
#define CTL_MAC_BYTES 32   /* crypto_auth_BYTES */
#define CTL_NODE_KEY_FILE "/etc/inclab/node.key"  /* default: this node's key */
#define CTL_KEY_TABLE_FILE "/etc/inclab/node-keys" /* default: the controller's table of every node's key */
#define CTL_AUTH_MS 5000   /* a connection must authenticate within this (it costs one round trip) */
#define CTL_KEYTAB_MAX 1024

/** The authentication state of one connection (zeroed: none). */
struct ctl_auth {
	int on;                              /* the handshake is done: messages are sealed and opened */
	unsigned char key[CTL_KEY_BYTES];
	unsigned char nonce[CTL_NONCE_BYTES];
	char out_dir, in_dir;                /* 'c' or 's' */
	uint64_t out_seq, in_seq;
	char err[160];                       /* why the last ctl_auth_open() refused */
};

/** The controller's table of node keys. */
struct ctl_keytab {
	int n;
	struct ctl_keytab_entry {
		char name[64];
		unsigned char key[CTL_KEY_BYTES];
	} *e;
};

/** ctl_auth_init() - initialise libsodium (idempotent, thread-safe); 0 or -1. */
int ctl_auth_init(void);

/** ctl_key_parse() - 64 hex digits (and nothing else but a final newline) into @key; 0 or -1. */
int ctl_key_parse(const char *hex, unsigned char key[CTL_KEY_BYTES]);

/**
 * ctl_key_load() - read key file @path (64 hex digits). Refused when it is
 * readable by group or others. Return 0, or -1 with the reason in @err.
 */
int ctl_key_load(const char *path, unsigned char key[CTL_KEY_BYTES], char *err, size_t errlen);

/**
 * ctl_key_make() - a new random key (crypto_auth_keygen) into file @path,
 * created mode 0600; an existing file is kept. Return 0, or -1 with @err.
 */
int ctl_key_make(const char *path, char *err, size_t errlen);

/** ctl_key_new() - a new random key (crypto_auth_keygen; ctl_auth_init() first). */
void ctl_key_new(unsigned char key[CTL_KEY_BYTES]);

/** ctl_key_wipe() - overwrite @key with zeros (a write the compiler keeps). */
void ctl_key_wipe(unsigned char key[CTL_KEY_BYTES]);

/** ctl_key_hex() - @key as 64 hex digits into @out (65 bytes). */
char *ctl_key_hex(const unsigned char key[CTL_KEY_BYTES], char out[2 * CTL_KEY_BYTES + 1]);

/**
 * ctl_keytab_load() - read a table of "NAME HEX" lines ('#' comments, blank
 * lines) from @path, refused when readable by group or others. Return 0, or
 * -1 with "PATH:LINE: reason" in @err.
 */
int ctl_keytab_load(const char *path, struct ctl_keytab *t, char *err, size_t errlen);

/** ctl_keytab_find() - the key of node @name in @t, or NULL. */
const unsigned char *ctl_keytab_find(const struct ctl_keytab *t, const char *name);

void ctl_keytab_free(struct ctl_keytab *t);

/** ctl_auth_challenge() - server: a fresh nonce in @a, and the challenge message into @text. */
void ctl_auth_challenge(struct ctl_auth *a, char *text, size_t len);

/**
 * ctl_auth_verify() - server: does @mac_hex (of a "msg: auth") prove node
 * @name in role @role under @key (NULL: a node without a key) for @a's
 * nonce? On success @a is on; -1 with the reason in @err.
 */
int ctl_auth_verify(struct ctl_auth *a, const unsigned char *key, const char *name, const char *role,
		    const char *mac_hex, char *err, size_t errlen);

/**
 * ctl_auth_client() - client: wait for the challenge on @fd (within
 * @timeout_ms), answer it as node @name in role @role with @key, and wait for
 * the welcome; @a is on after. Return 0, or -1 with @err ("refused: ..."
 * with the server's reason when it refused).
 */
int ctl_auth_client(struct ctl_auth *a, int fd, struct ctl_buf *b, const unsigned char key[CTL_KEY_BYTES],
		    const char *name, const char *role, int timeout_ms, char *err, size_t errlen);

/** ctl_auth_seal() - @text with its seq and mac lines (malloc'd), or a copy when @a is off; NULL: no memory. */
char *ctl_auth_seal(struct ctl_auth *a, const char *text);

/**
 * ctl_auth_open() - check received message @msg (as ctl_next() returns it)
 * and cut its seq and mac lines off in place. Nothing is done when @a is off.
 * Return 0, or -1 with the reason in a->err (forged, replayed, reordered).
 */
int ctl_auth_open(struct ctl_auth *a, char *msg);

/** ctl_asend() - ctl_send() of @text sealed by @a (NULL or off: as it is). */
int ctl_asend(struct ctl_auth *a, int fd, const char *text, int timeout_ms);

/** ctl_asendf() - ctl_asend() of a printf-formatted text. */
int ctl_asendf(struct ctl_auth *a, int fd, int timeout_ms, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/** ctl_arecv() - ctl_recv() opened by @a: CTL_EAUTH (reason in a->err) for a message that fails. */
int ctl_arecv(struct ctl_auth *a, int fd, struct ctl_buf *b, int timeout_ms, char **msg);

#endif
