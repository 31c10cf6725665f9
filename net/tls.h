/*
 * tls.h -- TLS at the edge (OpenSSL), as small as the server needs it.
 *
 * Partners send secret keys in Authorization headers, so plain HTTP is only
 * acceptable on loopback.  The server (net/server.c) keeps one tls_ctx for
 * the listening socket and one SSL object per connection; a connection
 * whose pointer is NULL is plain HTTP and pays nothing for TLS.  Everything
 * here is non-blocking: the handshake, reads and writes report "would
 * block, wait for readable/writable" instead of waiting, so they run inside
 * the event loop like any other socket work.
 *
 * Policy (not configurable on purpose): TLS 1.2 and 1.3 only, no
 * renegotiation, no compression, ALPN
 * "http/1.1" (a client that offers ALPN without it is refused, RFC 7301),
 * a certificate and its private key from PEM files (the certificate file
 * may hold the chain).  A new context is built from the files on reload;
 * connections already open keep the one they started with (OpenSSL counts
 * references), new ones get the new one.
 */
#ifndef WM_TLS_H
#define WM_TLS_H

#include <stddef.h>
#include <sys/types.h>

struct tls_ctx;   /* one certificate + key + policy */
struct tls_conn;  /* one connection's TLS state */

/* Build a context from PEM files.  NULL with a message in err when a file
 * cannot be read, does not parse, or the key does not match the cert. */
struct tls_ctx *tls_ctx_new(const char *cert_file, const char *key_file, char *err, size_t errlen);
void tls_ctx_free(struct tls_ctx *t);

/* Server side of a new accepted socket (the fd stays owned by the caller).
 * NULL when out of memory. */
struct tls_conn *tls_conn_new(struct tls_ctx *t, int fd);
/* Send close_notify if possible (never waits) and free. */
void tls_conn_free(struct tls_conn *c);

/* What a call needs before it can make progress. */
enum tls_io {
	TLS_IO_OK = 0,       /* done / some bytes moved */
	TLS_IO_WANT_READ,    /* call again when the socket is readable */
	TLS_IO_WANT_WRITE,   /* call again when the socket is writable */
	TLS_IO_EOF,          /* the peer closed its sending side (close_notify or TCP FIN) */
	TLS_IO_ERROR,        /* protocol or socket error: close the connection */
};

/* Drive the handshake.  TLS_IO_OK once it is complete (then idempotent). */
enum tls_io tls_handshake(struct tls_conn *c);
int tls_handshake_done(const struct tls_conn *c);
/* Read up to n bytes; *got = bytes read when TLS_IO_OK. */
enum tls_io tls_read(struct tls_conn *c, void *buf, size_t n, size_t *got);
/* Write up to n (> 0) bytes; *put = bytes written when TLS_IO_OK.  A retry
 * after WANT_* must offer at least the same bytes again (it may offer more,
 * from a moved buffer). */
enum tls_io tls_write(struct tls_conn *c, const void *buf, size_t n, size_t *put);
/* Decrypted bytes already buffered inside the TLS layer (no socket event
 * will announce them). */
int tls_pending(const struct tls_conn *c);
/* Last OpenSSL error as text (for a debug log line); "" when none. */
const char *tls_last_error(char *buf, size_t n);

#endif
