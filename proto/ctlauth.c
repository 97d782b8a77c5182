/*
 * ctlauth.c — node and job keys, the challenge handshake and sealed
 * messages of the control protocol (see ctlauth.h). All cryptography is
 * libsodium's: crypto_auth (HMAC-SHA512-256) in its multi-part form,
 * randombytes_buf, sodium_memcmp (constant time), sodium_hex2bin/bin2hex.
 */
#include "ctlauth.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define HELLO_TAG "inclab-auth-1" /* domain separation: a handshake MAC is never a message MAC */
#define MSG_TAG "inclab-msg-1"

int ctl_auth_init(void)
{
	return sodium_init() < 0 ? -1 : 0; /* 1: already done */
}

int ctl_key_parse(const char *hex, unsigned char key[CTL_KEY_BYTES])
{
	size_t n = hex ? strlen(hex) : 0, got = 0;
	const char *end;

	if (n && hex[n - 1] == '\n')
		n--;
	if (n != 2 * CTL_KEY_BYTES)
		return -1;
	if (sodium_hex2bin(key, CTL_KEY_BYTES, hex, n, NULL, &got, &end) < 0 || got != CTL_KEY_BYTES ||
	    end != hex + n)
		return -1;
	return 0;
}

void ctl_key_new(unsigned char key[CTL_KEY_BYTES])
{
	crypto_auth_keygen(key);
}

void ctl_key_wipe(unsigned char key[CTL_KEY_BYTES])
{
	sodium_memzero(key, CTL_KEY_BYTES);
}

char *ctl_key_hex(const unsigned char key[CTL_KEY_BYTES], char out[2 * CTL_KEY_BYTES + 1])
{
	return sodium_bin2hex(out, 2 * CTL_KEY_BYTES + 1, key, CTL_KEY_BYTES);
}

/* Open @path for reading as a secret: a regular file not readable by group or others. */
static FILE *open_secret(const char *path, char *err, size_t errlen)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	FILE *f;

	if (fd < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (st.st_mode & 077)) {
		snprintf(err, errlen, "%s: a key file must be a regular file readable by its owner only (mode 0600)", path);
		close(fd);
		return NULL;
	}
	if (!(f = fdopen(fd, "r"))) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		close(fd);
	}
	return f;
}

int ctl_key_load(const char *path, unsigned char key[CTL_KEY_BYTES], char *err, size_t errlen)
{
	char line[2 * CTL_KEY_BYTES + 8] = "";
	FILE *f = open_secret(path, err, errlen);
	int rc;

	if (!f)
		return -1;
	rc = fgets(line, sizeof(line), f) && fgetc(f) == EOF && ctl_key_parse(line, key) == 0 ? 0 : -1;
	fclose(f);
	sodium_memzero(line, sizeof(line));
	if (rc < 0)
		snprintf(err, errlen, "%s: not a key (one line of %d hex digits)", path, 2 * CTL_KEY_BYTES);
	return rc;
}

int ctl_key_make(const char *path, char *err, size_t errlen)
{
	unsigned char key[CTL_KEY_BYTES];
	char hex[2 * CTL_KEY_BYTES + 1];
	int fd, ok;

	if (ctl_auth_init() < 0) {
		snprintf(err, errlen, "libsodium does not initialise");
		return -1;
	}
	if ((fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600)) < 0) {
		if (errno == EEXIST)
			return 0;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	crypto_auth_keygen(key);
	ctl_key_hex(key, hex);
	hex[2 * CTL_KEY_BYTES] = '\n'; /* the NUL is not written */
	ok = write(fd, hex, sizeof(hex)) == (ssize_t)sizeof(hex);
	ok = close(fd) == 0 && ok;
	sodium_memzero(key, sizeof(key));
	sodium_memzero(hex, sizeof(hex));
	if (!ok) {
		snprintf(err, errlen, "%s: cannot write the key", path);
		unlink(path);
		return -1;
	}
	return 0;
}

int ctl_keytab_load(const char *path, struct ctl_keytab *t, char *err, size_t errlen)
{
	char line[256];
	int lineno = 0;
	FILE *f = open_secret(path, err, errlen);

	memset(t, 0, sizeof(*t));
	if (!f)
		return -1;
	if (!(t->e = calloc(CTL_KEYTAB_MAX, sizeof(*t->e)))) {
		snprintf(err, errlen, "out of memory");
		goto bad;
	}
	while (fgets(line, sizeof(line), f)) {
		char name[64], hex[2 * CTL_KEY_BYTES + 2], extra[2];
		lineno++;
		if (!strchr(line, '\n') && !feof(f)) {
			snprintf(err, errlen, "%s:%d: line too long", path, lineno);
			goto bad;
		}
		size_t skip = strspn(line, " \t");
		if (line[skip] == '#' || line[skip] == '\n' || !line[skip])
			continue;
		if (sscanf(line, "%63s %65s %1s", name, hex, extra) != 2 || ctl_key_parse(hex, t->e[t->n].key) < 0) {
			snprintf(err, errlen, "%s:%d: want 'NODE KEY' (KEY: %d hex digits)", path, lineno, 2 * CTL_KEY_BYTES);
			goto bad;
		}
		if (ctl_keytab_find(t, name)) {
			snprintf(err, errlen, "%s:%d: node '%s' has a key already", path, lineno, name);
			goto bad;
		}
		if (t->n == CTL_KEYTAB_MAX) {
			snprintf(err, errlen, "%s:%d: more than %d keys", path, lineno, CTL_KEYTAB_MAX);
			goto bad;
		}
		snprintf(t->e[t->n++].name, sizeof(t->e[0].name), "%s", name);
		sodium_memzero(hex, sizeof(hex));
	}
	fclose(f);
	sodium_memzero(line, sizeof(line));
	return 0;
bad:
	fclose(f);
	sodium_memzero(line, sizeof(line));
	ctl_keytab_free(t);
	return -1;
}

const unsigned char *ctl_keytab_find(const struct ctl_keytab *t, const char *name)
{
	for (int i = 0; name && i < t->n; i++)
		if (!strcmp(t->e[i].name, name))
			return t->e[i].key;
	return NULL;
}

void ctl_keytab_free(struct ctl_keytab *t)
{
	if (t->e)
		sodium_memzero(t->e, CTL_KEYTAB_MAX * sizeof(*t->e));
	free(t->e);
	memset(t, 0, sizeof(*t));
}

/* The handshake MAC of @name/@role under @key for nonce @nonce. */
static void hello_mac(const unsigned char *key, const unsigned char *nonce, const char *name, const char *role,
		      unsigned char mac[CTL_MAC_BYTES])
{
	crypto_auth_hmacsha512256_state st;

	crypto_auth_hmacsha512256_init(&st, key, CTL_KEY_BYTES);
	crypto_auth_hmacsha512256_update(&st, (const unsigned char *)HELLO_TAG, sizeof(HELLO_TAG));
	crypto_auth_hmacsha512256_update(&st, nonce, CTL_NONCE_BYTES);
	crypto_auth_hmacsha512256_update(&st, (const unsigned char *)name, strlen(name) + 1);
	crypto_auth_hmacsha512256_update(&st, (const unsigned char *)role, strlen(role) + 1);
	crypto_auth_hmacsha512256_final(&st, mac);
}

/* The MAC of message bytes @body[0, @len) sent in direction @dir on @a's connection. */
static void msg_mac(const struct ctl_auth *a, char dir, const char *body, size_t len, unsigned char mac[CTL_MAC_BYTES])
{
	crypto_auth_hmacsha512256_state st;

	crypto_auth_hmacsha512256_init(&st, a->key, CTL_KEY_BYTES);
	crypto_auth_hmacsha512256_update(&st, (const unsigned char *)MSG_TAG, sizeof(MSG_TAG));
	crypto_auth_hmacsha512256_update(&st, a->nonce, CTL_NONCE_BYTES);
	crypto_auth_hmacsha512256_update(&st, (const unsigned char *)&dir, 1);
	crypto_auth_hmacsha512256_update(&st, (const unsigned char *)body, len);
	crypto_auth_hmacsha512256_final(&st, mac);
}

void ctl_auth_challenge(struct ctl_auth *a, char *text, size_t len)
{
	char hex[2 * CTL_NONCE_BYTES + 1];

	memset(a, 0, sizeof(*a));
	randombytes_buf(a->nonce, CTL_NONCE_BYTES);
	snprintf(text, len, "msg: challenge\nnonce: %s\n", sodium_bin2hex(hex, sizeof(hex), a->nonce, CTL_NONCE_BYTES));
}

int ctl_auth_verify(struct ctl_auth *a, const unsigned char *key, const char *name, const char *role,
		    const char *mac_hex, char *err, size_t errlen)
{
	unsigned char want[CTL_MAC_BYTES], got[CTL_MAC_BYTES];

	if (!name || !role || !mac_hex) {
		snprintf(err, errlen, "'auth' needs node, role and mac");
		return -1;
	}
	if (!key) {
		snprintf(err, errlen, "no key is known for node '%.60s'", name);
		return -1;
	}
	if (ctl_key_parse(mac_hex, got) < 0) { /* a MAC has a key's length */
		snprintf(err, errlen, "'mac' must be %d hex digits", 2 * CTL_MAC_BYTES);
		return -1;
	}
	hello_mac(key, a->nonce, name, role, want);
	if (sodium_memcmp(want, got, CTL_MAC_BYTES) != 0) {
		snprintf(err, errlen, "node '%.60s' (%.20s) failed to prove its key", name, role);
		return -1;
	}
	memcpy(a->key, key, CTL_KEY_BYTES);
	a->out_dir = 's';
	a->in_dir = 'c';
	a->on = 1;
	return 0;
}

int ctl_auth_client(struct ctl_auth *a, int fd, struct ctl_buf *b, const unsigned char key[CTL_KEY_BYTES],
		    const char *name, const char *role, int timeout_ms, char *err, size_t errlen)
{
	char *text = NULL, e[256], hex[2 * CTL_MAC_BYTES + 1], qn[200], qr[80];
	unsigned char mac[CTL_MAC_BYTES];
	struct ctl_doc m;
	int rc;

	memset(a, 0, sizeof(*a));
	if (ctl_auth_init() < 0) {
		snprintf(err, errlen, "libsodium does not initialise");
		return -1;
	}
	if ((rc = ctl_recv(fd, b, timeout_ms, &text)) < 0) {
		snprintf(err, errlen, "no challenge: %s", rc == CTL_ETIMEDOUT ? "none came in time (does it authenticate?)"
										 : ctl_strerror(rc));
		return -1;
	}
	rc = ctl_parse(text, &m, e, sizeof(e));
	free(text);
	if (rc < 0) {
		snprintf(err, errlen, "bad challenge: %s", e);
		return -1;
	}
	const char *nonce = ctl_str(&m, NULL, "nonce");
	size_t got = 0;
	if (!strcmp(m.kind, "error")) {
		snprintf(err, errlen, "refused: %.200s", ctl_str(&m, NULL, "error") ? ctl_str(&m, NULL, "error") : "?");
		rc = -1;
	} else if (strcmp(m.kind, "challenge") || !nonce || strlen(nonce) != 2 * CTL_NONCE_BYTES ||
		   sodium_hex2bin(a->nonce, CTL_NONCE_BYTES, nonce, strlen(nonce), NULL, &got, NULL) < 0 ||
		   got != CTL_NONCE_BYTES) {
		snprintf(err, errlen, "a challenge with a %d-byte nonce was due, not '%.40s'", CTL_NONCE_BYTES, m.kind);
		rc = -1;
	}
	ctl_doc_free(&m);
	if (rc < 0)
		return -1;
	hello_mac(key, a->nonce, name, role, mac);
	sodium_bin2hex(hex, sizeof(hex), mac, sizeof(mac));
	if ((rc = ctl_sendf(fd, timeout_ms, "msg: auth\nnode: %s\nrole: %s\nmac: %s\n", ctl_quote(name, qn, sizeof(qn)),
			    ctl_quote(role, qr, sizeof(qr)), hex)) < 0) {
		snprintf(err, errlen, "cannot answer the challenge: %s", ctl_strerror(rc));
		return -1;
	}
	memcpy(a->key, key, CTL_KEY_BYTES);
	a->out_dir = 'c';
	a->in_dir = 's';
	a->on = 1;
	if ((rc = ctl_arecv(a, fd, b, timeout_ms, &text)) < 0) { /* the welcome, sealed: we are known */
		snprintf(err, errlen, "%s", rc == CTL_EAUTH ? a->err : rc == CTL_ETIMEDOUT ? "no welcome in time" : ctl_strerror(rc));
		memset(a, 0, sizeof(*a));
		return -1;
	}
	int welcome = !strncmp(text, "msg: welcome\n", 13);
	free(text);
	if (!welcome) {
		snprintf(err, errlen, "a welcome was due");
		memset(a, 0, sizeof(*a));
		return -1;
	}
	return 0;
}

char *ctl_auth_seal(struct ctl_auth *a, const char *text)
{
	unsigned char mac[CTL_MAC_BYTES];
	char hex[2 * CTL_MAC_BYTES + 1], *out = NULL;
	size_t n = strlen(text);
	int k;

	if (!a || !a->on)
		return strdup(text);
	k = asprintf(&out, "%s%sseq: %" PRIu64 "\nmac: %s\n", text, n && text[n - 1] != '\n' ? "\n" : "", a->out_seq,
		     "");
	if (k < 0)
		return NULL;
	msg_mac(a, a->out_dir, out, (size_t)k - strlen("mac: \n"), mac);
	sodium_bin2hex(hex, sizeof(hex), mac, sizeof(mac));
	char *sealed = realloc(out, (size_t)k + sizeof(hex));
	if (!sealed) {
		free(out);
		return NULL;
	}
	snprintf(sealed + k - 1, sizeof(hex) + 1, "%s\n", hex); /* after "mac: " */
	a->out_seq++;
	return sealed;
}

/* Refuse in ctl_auth_open(): the reason into a->err. */
static int refuse(struct ctl_auth *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int refuse(struct ctl_auth *a, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(a->err, sizeof(a->err), fmt, ap);
	va_end(ap);
	return -1;
}

/* Start of the last line of @s[0, @end) (@end just past its newline). */
static size_t last_line(const char *s, size_t end)
{
	size_t i = end ? end - 1 : 0;

	while (i > 0 && s[i - 1] != '\n')
		i--;
	return i;
}

/*
 * @msg failed to open: when it is an unsealed "msg: error" (a refusal the
 * peer sent before it trusted this end), its reason is the better one.
 */
static int refused_by_peer(struct ctl_auth *a, const char *msg)
{
	struct ctl_doc m;
	char e[200];

	if (ctl_parse(msg, &m, e, sizeof(e)) == 0) {
		const char *why = ctl_str(&m, NULL, "error");
		if (!strcmp(m.kind, "error") && why && !ctl_get(&m, NULL, "mac"))
			snprintf(a->err, sizeof(a->err), "refused: %.150s", why);
		ctl_doc_free(&m);
	}
	return -1;
}

int ctl_auth_open(struct ctl_auth *a, char *msg)
{
	unsigned char want[CTL_MAC_BYTES], got[CTL_MAC_BYTES];
	size_t end = strlen(msg), l;
	char *stop;

	if (!a->on)
		return 0;
	if (end && msg[end - 1] == '\n') /* the end marker's line "..." (ctl_next() keeps it) */
		end = last_line(msg, end);
	if (end < 2 || msg[end - 1] != '\n') {
		refuse(a, "a sealed message was due (it ends with 'seq' and 'mac' lines)");
		return refused_by_peer(a, msg);
	}
	l = last_line(msg, end); /* "mac: HEX\n" */
	if (end - l != 5 + 2 * CTL_MAC_BYTES + 1 || strncmp(msg + l, "mac: ", 5)) {
		refuse(a, "unsealed message: its last line must be 'mac: %d hex digits'", 2 * CTL_MAC_BYTES);
		return refused_by_peer(a, msg);
	}
	msg[end - 1] = 0;
	int bad = ctl_key_parse(msg + l + 5, got);
	msg[end - 1] = '\n';
	if (bad)
		return refuse(a, "unsealed message: its last line must be 'mac: %d hex digits'", 2 * CTL_MAC_BYTES);
	msg_mac(a, a->in_dir, msg, l, want);
	if (sodium_memcmp(want, got, CTL_MAC_BYTES) != 0)
		return refuse(a, "bad MAC: forged, altered, or recorded on another connection");
	size_t s = last_line(msg, l); /* "seq: N\n": covered by the MAC */
	errno = 0;
	unsigned long long seq = strncmp(msg + s, "seq: ", 5) ? ULLONG_MAX : strtoull(msg + s + 5, &stop, 10);
	if (seq == ULLONG_MAX || errno || *stop != '\n')
		return refuse(a, "sealed message without a 'seq' line");
	if (seq != a->in_seq)
		return refuse(a, "message %llu %s (message %" PRIu64 " was due)", seq,
			      seq < a->in_seq ? "replayed" : "out of order", a->in_seq);
	a->in_seq++;
	msg[s] = 0; /* the message as it was before sealing */
	return 0;
}

int ctl_asend(struct ctl_auth *a, int fd, const char *text, int timeout_ms)
{
	char *sealed;
	int rc;

	if (!a || !a->on)
		return ctl_send(fd, text, timeout_ms);
	if (!(sealed = ctl_auth_seal(a, text))) {
		errno = ENOMEM;
		return CTL_EIO;
	}
	rc = ctl_send(fd, sealed, timeout_ms);
	free(sealed);
	return rc;
}

int ctl_asendf(struct ctl_auth *a, int fd, int timeout_ms, const char *fmt, ...)
{
	va_list ap;
	char *text = NULL;
	int rc;

	va_start(ap, fmt);
	rc = vasprintf(&text, fmt, ap);
	va_end(ap);
	if (rc < 0) {
		errno = ENOMEM;
		return CTL_EIO;
	}
	rc = ctl_asend(a, fd, text, timeout_ms);
	free(text);
	return rc;
}

int ctl_arecv(struct ctl_auth *a, int fd, struct ctl_buf *b, int timeout_ms, char **msg)
{
	int rc = ctl_recv(fd, b, timeout_ms, msg);

	if (rc == CTL_OK && a && ctl_auth_open(a, *msg) < 0) {
		free(*msg);
		*msg = NULL;
		return CTL_EAUTH;
	}
	return rc;
}
