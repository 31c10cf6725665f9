/*
 * shard_map.h -- the cluster's shard map (DESIGN.md section 9): which shard
 * owns which ISO 3166-1 countries, where each shard listens, and the map's
 * version.  Read by every process of a cluster (routers and shards); a
 * process that receives a request for a country it does not own answers an
 * internal 421 carrying its map version, so a stale router reloads.
 *
 * The file is plain text, one directive per line, '#' starts a comment:
 *
 *     version 3
 *     shard 0 127.0.0.1:9100 FR BE LU      # shard 0: the catalogue home
 *     shard 1 127.0.0.1:9101 DE AT CH
 *     shard 2 127.0.0.1:9102 GB IE
 *     router 0 127.0.0.1:9000                 # optional: 2PC coordinators
 *
 * Exactly one `version` line (a positive integer); one `shard` line per
 * shard: id (0 .. SMAP_MAX_SHARDS-1, unique; ids 0..n-1 all present, 0 is
 * the catalogue home), internal address HOST:PORT, then the countries it
 * owns (officially assigned alpha-2 codes, upper case).  A country belongs
 * to exactly one shard, and every country the caller names as required
 * (the countries any reference data prices) must belong to one.  The
 * loader is strict: the first error is reported as FILE:LINE: what.
 * `router` lines (id 0 .. SMAP_MAX_ROUTERS-1, unique, HOST:PORT) name the
 * routers that coordinate cross-shard orders: a participant holding a
 * transaction "r<ID>:<order id>" in doubt asks router ID about it.
 */
#ifndef WM_SHARD_MAP_H
#define WM_SHARD_MAP_H

#include <stddef.h>
#include <stdint.h>

#define SMAP_MAX_SHARDS 64         /* shard ids 0..63 */
#define SMAP_MAX_ADDR 64           /* bytes of HOST:PORT, NUL included */
#define SMAP_MAX_LINE 4096         /* bytes of one line, newline excluded */
#define SMAP_MAX_FILE (256u << 10) /* bytes of the whole file */
#define SMAP_MAX_ROUTERS 16        /* router ids 0..15 */

struct smap_shard {
	uint32_t id;
	char addr[SMAP_MAX_ADDR];      /* HOST:PORT as written */
	uint16_t n_countries;
};

struct shard_map {
	uint64_t version;
	uint32_t n;                                 /* shards; ids are 0..n-1 */
	struct smap_shard shards[SMAP_MAX_SHARDS];  /* indexed by id */
	uint8_t owner[26 * 26];                     /* country -> id + 1; 0 = none */
	char routers[SMAP_MAX_ROUTERS][SMAP_MAX_ADDR]; /* coordinator addresses by id; "" = none */
};

/*
 * Parse a shard map from text (len bytes, need not be NUL-terminated);
 * `name` labels errors ("FILE:LINE: ...").  required: n_required
 * two-letter codes that must each be owned by a shard (NULL/0: none).
 * Returns 0 and fills *out, or -1 with the first error in err (errlen).
 */
int smap_parse(const char *text, size_t len, const char *name, const char *const *required, size_t n_required,
	       struct shard_map *out, char *err, size_t errlen);

/* smap_parse over the file at path (at most SMAP_MAX_FILE bytes). */
int smap_load(const char *path, const char *const *required, size_t n_required, struct shard_map *out, char *err,
	      size_t errlen);

/* The id of the shard owning country cc (2 upper-case letters), or -1. */
int smap_owner(const struct shard_map *m, const char *cc);

#endif
