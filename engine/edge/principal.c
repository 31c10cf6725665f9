/*
 * principal.c -- X-WM-Principal, the identity a router forwards (contract
 * and wire form in principal.h).
 *
 * The decoder is strict: exact field names in exact order, bounded
 * lengths, no leading zeros: one wire form per principal.  It only ever sees signed headers, but a parser of bytes from
 * the network gets a fuzz target all the same (tests/fuzz/fuzz_principal.c).
 */
#include "engine/edge/principal.h"

#include <stdio.h>
#include <string.h>

#include "engine/edge/key.h"

static int pr_id_char(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_' ||
	       ch == '-';
}

static int pr_id_ok(const char *s)
{
	size_t n = 0;
	for (; s[n]; n++)
		if (!pr_id_char(s[n]) || n >= ID_MAX_LEN - 1)
			return 0;
	return n > 0;
}

/* The encoder's output: PRINCIPAL_MAX bytes at out, n used; full once a
 * put does not fit (with its NUL). */
struct pw {
	char *out;
	size_t n;
	int full;
};

static void pw_put(struct pw *w, const char *s, size_t l)
{
	if (w->full || l >= PRINCIPAL_MAX - w->n) {
		w->full = 1;
		return;
	}
	memcpy(w->out + w->n, s, l);
	w->n += l;
}

static void pw_str(struct pw *w, const char *s) { pw_put(w, s, strlen(s)); }

/* v in base 10 or 16 (lower-case), as printf's %u and %x write it. */
static void pw_uint(struct pw *w, unsigned v, unsigned base)
{
	char d[16];
	size_t i = sizeof(d);
	do {
		d[--i] = "0123456789abcdef"[v % base];
		v /= base;
	} while (v);
	pw_put(w, d + i, sizeof(d) - i);
}

/* "v1 k=%s e=%s s=%x t=%u r=%u st=%u c=%s q=%u", written piece by piece:
 * snprintf was ~3,000 instructions a request the router forwards. */
int principal_encode(const struct principal *who, uint32_t quota_left, char out[PRINCIPAL_MAX])
{
	if (!pr_id_ok(who->key_id) || !pr_id_ok(who->entity_id) || (who->channel_id[0] && !pr_id_ok(who->channel_id)))
		return -1;
	struct pw w = {.out = out};
	pw_str(&w, "v1 k=");
	pw_str(&w, who->key_id);
	pw_str(&w, " e=");
	pw_str(&w, who->entity_id);
	pw_str(&w, " s=");
	pw_uint(&w, (unsigned)who->scopes, 16);
	pw_str(&w, " t=");
	pw_uint(&w, who->kind, 10);
	pw_str(&w, " r=");
	pw_uint(&w, who->roles, 10);
	pw_str(&w, " st=");
	pw_uint(&w, who->status, 10);
	pw_str(&w, " c=");
	pw_str(&w, who->channel_id[0] ? who->channel_id : "-");
	pw_str(&w, " q=");
	pw_uint(&w, quota_left, 10);
	if (w.full)
		return -1;
	out[w.n] = 0;
	return (int)w.n;
}

/* The cursor over a value being decoded. */
struct pcur {
	const char *p, *end;
};

/* Expect the literal s; 0 or -1. */
static int lit(struct pcur *c, const char *s)
{
	size_t l = strlen(s);
	if ((size_t)(c->end - c->p) < l || memcmp(c->p, s, l))
		return -1;
	c->p += l;
	return 0;
}

/* An id up to the next space or the end into out (ID_MAX_LEN); 0 or -1. */
static int field_id(struct pcur *c, char *out)
{
	size_t n = 0;
	while (c->p < c->end && *c->p != ' ') {
		if (!pr_id_char(*c->p) || n == ID_MAX_LEN - 1)
			return -1;
		out[n++] = *c->p++;
	}
	out[n] = 0;
	return n ? 0 : -1;
}

/* A number in base 10 or 16, at most max; 0 or -1. */
static int field_num(struct pcur *c, unsigned base, uint64_t max, uint64_t *v)
{
	uint64_t x = 0;
	size_t digits = 0;
	while (c->p < c->end && *c->p != ' ') {
		char ch = *c->p++;
		unsigned d;
		if (ch >= '0' && ch <= '9')
			d = (unsigned)(ch - '0');
		else if (base == 16 && ch >= 'a' && ch <= 'f')
			d = (unsigned)(ch - 'a' + 10);
		else
			return -1;
		if ((digits && x == 0) || ++digits > 20 || x > (max - d) / base)
			return -1; /* a leading zero, or past the bound */
		x = x * base + d;
	}
	*v = x;
	return digits ? 0 : -1;
}

int principal_decode(const char *v, size_t len, struct principal *who, uint32_t *quota_left)
{
	struct pcur c = {v, v + len};
	memset(who, 0, sizeof(*who));
	uint64_t s, t, r, st, q;
	char chan[ID_MAX_LEN];
	if (len >= PRINCIPAL_MAX || lit(&c, "v1 k=") || field_id(&c, who->key_id) || lit(&c, " e=") ||
	    field_id(&c, who->entity_id) || lit(&c, " s=") || field_num(&c, 16, UINT32_MAX, &s) ||
	    lit(&c, " t=") || field_num(&c, 10, UINT8_MAX, &t) || lit(&c, " r=") || field_num(&c, 10, UINT8_MAX, &r) ||
	    lit(&c, " st=") || field_num(&c, 10, UINT8_MAX, &st) || lit(&c, " c=") || field_id(&c, chan) ||
	    lit(&c, " q=") || field_num(&c, 10, UINT32_MAX, &q) || c.p != c.end)
		return -1;
	who->scopes = (scope_set)s;
	who->kind = (uint8_t)t;
	who->roles = (uint8_t)r;
	who->status = (uint8_t)st;
	if (strcmp(chan, "-"))
		snprintf(who->channel_id, sizeof(who->channel_id), "%s", chan);
	who->is_platform = strcmp(who->entity_id, KEY_PLATFORM_ENTITY) == 0;
	who->authenticated = 1;
	*quota_left = (uint32_t)q;
	return 0;
}
