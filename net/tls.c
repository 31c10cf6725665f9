/*
 * tls.c -- OpenSSL behind the small non-blocking interface of tls.h.
 *
 * Why a wrapper at all: the server must stay readable as an HTTP server.
 * OpenSSL's error model (SSL_get_error after every call, a thread-local
 * error queue that must be drained so that one connection's failure does
 * not show up as another's) lives here once, and the server sees five
 * outcomes: ok, want read, want write, end of input, error.
 *
 * Choices, each for a reason:
 *   - TLS 1.2 minimum (1.0/1.1 are deprecated by RFC 8996), 1.3 maximum;
 *     OpenSSL's default cipher lists for both (forward secret AEADs first).
 *   - No renegotiation (SSL_OP_NO_RENEGOTIATION): a client-initiated
 *     renegotiation is a CPU-exhaustion lever and would let SSL_read need
 *     to write in TLS 1.2.
 *   - SSL_OP_IGNORE_UNEXPECTED_EOF: a client that closes TCP without a
 *     close_notify (most HTTP clients after a "Connection: close" answer)
 *     is an ordinary end of input, not a protocol error; HTTP framing
 *     (Content-Length) already tells truncation apart.
 *   - SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER:
 *     the server's output buffer may be compacted (moved) between a write
 *     that would block and its retry, and it wants partial progress
 *     reported like send() does.
 *   - SSL_MODE_RELEASE_BUFFERS: an idle keep-alive connection holds no
 *     34 KiB of record buffers.
 *   - ALPN: we speak http/1.1 only; a client offering ALPN without it gets
 *     the no_application_protocol alert (RFC 7301 section 3.2) instead of a
 *     silent mismatch.
 */
#include "net/tls.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct tls_ctx {
	SSL_CTX *ctx;
};

struct tls_conn {
	SSL *ssl;
	int hs_done;
};

static const unsigned char alpn_http11[] = "\x08http/1.1";

/* ALPN selection: http/1.1 or a fatal no_application_protocol alert. */
static int alpn_select(SSL *ssl, const unsigned char **out, unsigned char *outlen, const unsigned char *in,
		       unsigned int inlen, void *arg)
{
	(void)ssl;
	(void)arg;
	unsigned char *sel = NULL;
	if (SSL_select_next_proto(&sel, outlen, alpn_http11, sizeof(alpn_http11) - 1, in, inlen) !=
	    OPENSSL_NPN_NEGOTIATED)
		return SSL_TLSEXT_ERR_ALERT_FATAL;
	*out = sel;
	return SSL_TLSEXT_ERR_OK;
}

const char *tls_last_error(char *buf, size_t n)
{
	unsigned long e = ERR_peek_last_error();
	if (n == 0)
		return buf;
	buf[0] = 0;
	if (e)
		ERR_error_string_n(e, buf, n);
	ERR_clear_error();
	return buf;
}

/* Message for a failed setup step, with OpenSSL's reason appended. */
static void ctx_fail(char *err, size_t errlen, const char *what, const char *file)
{
	char e[256];
	tls_last_error(e, sizeof(e));
	snprintf(err, errlen, "%s %s: %s", what, file, e[0] ? e : "unknown error");
}

struct tls_ctx *tls_ctx_new(const char *cert_file, const char *key_file, char *err, size_t errlen)
{
	ERR_clear_error();
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
	if (!ctx) {
		ctx_fail(err, errlen, "cannot create a TLS context for", cert_file);
		return NULL;
	}
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	SSL_CTX_set_max_proto_version(ctx, TLS1_3_VERSION);
	SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION |
					 SSL_OP_IGNORE_UNEXPECTED_EOF | SSL_OP_CIPHER_SERVER_PREFERENCE);
	SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
				      SSL_MODE_RELEASE_BUFFERS);
	SSL_CTX_set_alpn_select_cb(ctx, alpn_select, NULL);
	if (SSL_CTX_use_certificate_chain_file(ctx, cert_file) != 1) {
		ctx_fail(err, errlen, "cannot load the TLS certificate", cert_file);
		SSL_CTX_free(ctx);
		return NULL;
	}
	if (SSL_CTX_use_PrivateKey_file(ctx, key_file, SSL_FILETYPE_PEM) != 1) {
		ctx_fail(err, errlen, "cannot load the TLS private key", key_file);
		SSL_CTX_free(ctx);
		return NULL;
	}
	if (SSL_CTX_check_private_key(ctx) != 1) {
		ctx_fail(err, errlen, "the TLS private key does not match the certificate", cert_file);
		SSL_CTX_free(ctx);
		return NULL;
	}
	struct tls_ctx *t = malloc(sizeof(*t));
	if (!t) {
		SSL_CTX_free(ctx);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	t->ctx = ctx;
	return t;
}

void tls_ctx_free(struct tls_ctx *t)
{
	if (!t)
		return;
	SSL_CTX_free(t->ctx); /* connections still using it hold their own reference */
	free(t);
}

struct tls_conn *tls_conn_new(struct tls_ctx *t, int fd)
{
	struct tls_conn *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->ssl = SSL_new(t->ctx);
	if (!c->ssl || SSL_set_fd(c->ssl, fd) != 1) {
		ERR_clear_error();
		SSL_free(c->ssl);
		free(c);
		return NULL;
	}
	SSL_set_accept_state(c->ssl);
	return c;
}

void tls_conn_free(struct tls_conn *c)
{
	if (!c)
		return;
	if (c->hs_done)
		SSL_shutdown(c->ssl); /* one non-blocking attempt at close_notify */
	ERR_clear_error();
	SSL_free(c->ssl);
	free(c);
}

/* Map the outcome of an SSL_* call that returned r <= 0. */
static enum tls_io io_result(struct tls_conn *c, int r)
{
	int e = SSL_get_error(c->ssl, r);
	switch (e) {
	case SSL_ERROR_WANT_READ:
		return TLS_IO_WANT_READ;
	case SSL_ERROR_WANT_WRITE:
		return TLS_IO_WANT_WRITE;
	case SSL_ERROR_ZERO_RETURN:
		return TLS_IO_EOF;
	case SSL_ERROR_SYSCALL:
		/* with SSL_OP_IGNORE_UNEXPECTED_EOF a bare FIN is ZERO_RETURN;
		 * what is left here is a socket error */
		return TLS_IO_ERROR;
	default:
		return TLS_IO_ERROR;
	}
}

enum tls_io tls_handshake(struct tls_conn *c)
{
	if (c->hs_done)
		return TLS_IO_OK;
	int r = SSL_do_handshake(c->ssl);
	if (r == 1) {
		c->hs_done = 1;
		return TLS_IO_OK;
	}
	return io_result(c, r);
}

int tls_handshake_done(const struct tls_conn *c) { return c->hs_done; }

enum tls_io tls_read(struct tls_conn *c, void *buf, size_t n, size_t *got)
{
	*got = 0;
	size_t k = 0;
	int r = SSL_read_ex(c->ssl, buf, n, &k);
	if (r == 1) {
		*got = k;
		return TLS_IO_OK;
	}
	return io_result(c, r);
}

enum tls_io tls_write(struct tls_conn *c, const void *buf, size_t n, size_t *put)
{
	*put = 0;
	size_t k = 0;
	int r = SSL_write_ex(c->ssl, buf, n, &k);
	if (r == 1) {
		*put = k;
		return TLS_IO_OK;
	}
	return io_result(c, r);
}

int tls_pending(const struct tls_conn *c) { return SSL_pending(c->ssl) > 0; }
