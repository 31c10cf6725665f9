/*
 * shard_map.c -- the strict loader of the cluster's shard map (contract and
 * file format in shard_map.h).
 *
 * Why strict: the map decides where every write of a country goes.  A
 * country listed twice, a shard id missing from 0..n-1, a typo in an
 * address or a country no shard owns would otherwise surface later as
 * misrouted writes or 421 loops between a router and a shard.  So the
 * loader refuses the whole file at its first error and names FILE:LINE, and
 * a process keeps its previous map when a reload fails (the caller's rule).
 *
 * Shape: one pass over the lines; each line is split into at most
 * SMAP_MAX_TOKENS tokens and dispatched on its first token through a small
 * table of directives; the cross-line rules (ids contiguous, required
 * countries owned) run once at the end.  Nothing is allocated except the
 * file buffer of smap_load.
 */
#include "engine/cluster/shard_map.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/base/iso.h"

#define SMAP_MAX_TOKENS 300 /* "shard ID ADDR" + every assigned country fits */

struct smap_ctx {
	const char *name;
	unsigned line;
	char *err;
	size_t errlen;
	struct shard_map *m;
	int have_version;
	unsigned shard_line[SMAP_MAX_SHARDS];   /* line of each shard; 0 = absent */
	unsigned country_line[26 * 26];         /* line that assigned each country */
};

/* Record an error at the current line; always -1. */
static int fail(struct smap_ctx *x, const char *fmt, ...)
{
	int n = x->line ? snprintf(x->err, x->errlen, "%s:%u: ", x->name, x->line)
			: snprintf(x->err, x->errlen, "%s: ", x->name);
	if (n >= 0 && (size_t)n < x->errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(x->err + n, x->errlen - (size_t)n, fmt, ap);
		va_end(ap);
	}
	return -1;
}

static int country_index(const char *cc) { return (cc[0] - 'A') * 26 + (cc[1] - 'A'); }

/* A decimal without sign or leading zeros (other than "0") <= max; 0 or -1. */
static int parse_uint(const char *s, uint64_t max, uint64_t *out)
{
	if (!s[0] || (s[0] == '0' && s[1]) || strlen(s) > 19)
		return -1;
	uint64_t v = 0;
	for (const char *p = s; *p; p++) {
		if (*p < '0' || *p > '9')
			return -1;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	if (v > max)
		return -1;
	*out = v;
	return 0;
}

/* HOST:PORT: a host name or IPv4 ([A-Za-z0-9.-]), or [IPv6]; port 1..65535. */
static int addr_valid(const char *a)
{
	const char *colon = strrchr(a, ':');
	if (!colon || colon == a || strlen(a) >= SMAP_MAX_ADDR)
		return 0;
	uint64_t port;
	if (parse_uint(colon + 1, 65535, &port) || port == 0)
		return 0;
	if (a[0] == '[') {
		if (colon[-1] != ']' || colon - a < 3)
			return 0;
		for (const char *p = a + 1; p < colon - 1; p++)
			if (!strchr("0123456789abcdefABCDEF:.", *p))
				return 0;
		return 1;
	}
	for (const char *p = a; p < colon; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '.' ||
		      *p == '-'))
			return 0;
	return 1;
}

static int dir_version(struct smap_ctx *x, char **tok, int n)
{
	if (x->have_version)
		return fail(x, "a second version line (the map has exactly one)");
	if (n != 2 || parse_uint(tok[1], UINT64_MAX, &x->m->version) || x->m->version == 0)
		return fail(x, "expected \"version N\" with N a positive integer");
	x->have_version = 1;
	return 0;
}

static int dir_shard(struct smap_ctx *x, char **tok, int n)
{
	uint64_t id;
	if (n < 3)
		return fail(x, "expected \"shard ID HOST:PORT COUNTRY...\"");
	if (parse_uint(tok[1], SMAP_MAX_SHARDS - 1, &id))
		return fail(x, "shard id \"%s\" is not an integer 0..%d", tok[1], SMAP_MAX_SHARDS - 1);
	if (x->shard_line[id])
		return fail(x, "shard %u is already defined on line %u", (unsigned)id, x->shard_line[id]);
	if (!addr_valid(tok[2]))
		return fail(x, "shard %u: address \"%s\" is not HOST:PORT", (unsigned)id, tok[2]);
	struct smap_shard *s = &x->m->shards[id];
	s->id = (uint32_t)id;
	snprintf(s->addr, sizeof(s->addr), "%s", tok[2]);
	for (int i = 3; i < n; i++) {
		const char *cc = tok[i];
		if (strlen(cc) != 2 || !iso_country_valid(cc, 2))
			return fail(x, "shard %u: \"%s\" is not an ISO 3166-1 alpha-2 country code", (unsigned)id, cc);
		int ci = country_index(cc);
		if (x->m->owner[ci])
			return fail(x, "country %s is already owned by shard %u (line %u)", cc, x->m->owner[ci] - 1u,
				    x->country_line[ci]);
		x->m->owner[ci] = (uint8_t)(id + 1);
		x->country_line[ci] = x->line;
		s->n_countries++;
	}
	if (id != 0 && s->n_countries == 0)
		return fail(x, "shard %u owns no country (only shard 0, the catalogue home, may)", (unsigned)id);
	x->shard_line[id] = x->line;
	if (id + 1 > x->m->n)
		x->m->n = (uint32_t)id + 1;
	return 0;
}

/* "router ID HOST:PORT": a coordinator of cross-shard transactions, where
 * a participant in doubt asks about a transaction id "r<ID>:..." */
static int dir_router(struct smap_ctx *x, char **tok, int n)
{
	uint64_t id;
	if (n != 3)
		return fail(x, "expected \"router ID HOST:PORT\"");
	if (parse_uint(tok[1], SMAP_MAX_ROUTERS - 1, &id))
		return fail(x, "router id \"%s\" is not an integer 0..%d", tok[1], SMAP_MAX_ROUTERS - 1);
	if (x->m->routers[id][0])
		return fail(x, "router %u is already defined", (unsigned)id);
	if (!addr_valid(tok[2]))
		return fail(x, "router %u: address \"%s\" is not HOST:PORT", (unsigned)id, tok[2]);
	snprintf(x->m->routers[id], sizeof(x->m->routers[id]), "%s", tok[2]);
	return 0;
}

static const struct {
	const char *word;
	int (*fn)(struct smap_ctx *x, char **tok, int n);
} directives[] = {
	{"version", dir_version},
	{"shard", dir_shard},
	{"router", dir_router},
};

/* One line (NUL-terminated, comment already cut): 0 or -1. */
static int parse_line(struct smap_ctx *x, char *line)
{
	char *tok[SMAP_MAX_TOKENS];
	int n = 0;
	for (char *save = NULL, *t = strtok_r(line, " \t\r", &save); t; t = strtok_r(NULL, " \t\r", &save)) {
		if (n == SMAP_MAX_TOKENS)
			return fail(x, "more than %d words on one line", SMAP_MAX_TOKENS);
		tok[n++] = t;
	}
	if (n == 0)
		return 0;
	for (size_t i = 0; i < sizeof(directives) / sizeof(directives[0]); i++)
		if (!strcmp(tok[0], directives[i].word))
			return directives[i].fn(x, tok, n);
	return fail(x, "unknown directive \"%.40s\" (expected version, shard or router)", tok[0]);
}

/* The rules that span lines, once every line is read. */
static int check_whole(struct smap_ctx *x, const char *const *required, size_t n_required)
{
	x->line = 0;
	if (!x->have_version)
		return fail(x, "no version line");
	if (x->m->n == 0)
		return fail(x, "no shard line");
	for (uint32_t id = 0; id < x->m->n; id++)
		if (!x->shard_line[id])
			return fail(x, "shard %u is missing: shard ids must be 0..%u without gaps", id, x->m->n - 1);
	for (size_t i = 0; i < n_required; i++) {
		const char *cc = required[i];
		if (!cc || strlen(cc) != 2 || cc[0] < 'A' || cc[0] > 'Z' || cc[1] < 'A' || cc[1] > 'Z')
			return fail(x, "required country \"%s\" is not a country code", cc ? cc : "(null)");
		if (!x->m->owner[country_index(cc)])
			return fail(x, "country %s has reference data but no shard owns it", cc);
	}
	return 0;
}

int smap_parse(const char *text, size_t len, const char *name, const char *const *required, size_t n_required,
	       struct shard_map *out, char *err, size_t errlen)
{
	struct smap_ctx *x = calloc(1, sizeof(*x));
	struct shard_map *m = calloc(1, sizeof(*m));
	char *line = malloc(SMAP_MAX_LINE + 1);
	int rc = -1;
	if (!x || !m || !line) {
		snprintf(err, errlen, "%s: out of memory", name);
		goto out;
	}
	*x = (struct smap_ctx){.name = name, .err = err, .errlen = errlen, .m = m};
	if (len > SMAP_MAX_FILE) {
		fail(x, "larger than %u bytes", SMAP_MAX_FILE);
		goto out;
	}
	for (size_t at = 0; at < len;) {
		const char *nl = memchr(text + at, '\n', len - at);
		size_t ll = nl ? (size_t)(nl - (text + at)) : len - at;
		x->line++;
		if (ll > SMAP_MAX_LINE) {
			fail(x, "line longer than %d bytes", SMAP_MAX_LINE);
			goto out;
		}
		memcpy(line, text + at, ll);
		line[ll] = 0;
		if (memchr(line, 0, ll)) {
			fail(x, "NUL byte in the line");
			goto out;
		}
		char *hash = strchr(line, '#');
		if (hash)
			*hash = 0;
		if (parse_line(x, line))
			goto out;
		at += ll + (nl ? 1 : 0);
	}
	if (check_whole(x, required, n_required))
		goto out;
	*out = *m;
	rc = 0;
out:
	free(line);
	free(m);
	free(x);
	return rc;
}

int smap_load(const char *path, const char *const *required, size_t n_required, struct shard_map *out, char *err,
	      size_t errlen)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	char *buf = malloc(SMAP_MAX_FILE + 1);
	size_t n = buf ? fread(buf, 1, SMAP_MAX_FILE + 1, f) : 0;
	int bad = !buf || ferror(f);
	fclose(f);
	int rc = -1;
	if (bad)
		snprintf(err, errlen, "%s: cannot read", path);
	else
		rc = smap_parse(buf, n, path, required, n_required, out, err, errlen);
	free(buf);
	return rc;
}

int smap_owner(const struct shard_map *m, const char *cc)
{
	if (!cc || cc[0] < 'A' || cc[0] > 'Z' || cc[1] < 'A' || cc[1] > 'Z' || cc[2])
		return -1;
	int o = m->owner[country_index(cc)];
	return o ? o - 1 : -1;
}
