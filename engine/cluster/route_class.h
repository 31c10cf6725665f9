/*
 * route_class.h -- where each public request goes in a cluster (DESIGN.md
 * section 9, "Where each request goes"), as one table of data shared by the
 * router (which picks the shard) and the shards (which answer 421 to a
 * request that is not theirs, so a router with a stale map reloads).
 *
 * Kinds:
 *   RC_EDGE       answered by the process itself (health, metrics, the
 *                 contract document): never forwarded.
 *   RC_HOME       the catalogue: partners, keys, producers, wines, media,
 *                 offers, listings, channels, shops, reviews, reference
 *                 data.  Writes go to the catalogue home (shard 0); its
 *                 replicas on the other shards serve the reads the
 *                 quote and order paths make locally.
 *   RC_PATH_ID    the country embedded in a path id ("<prefix>_<CC>_...":
 *                 orders, stock locations, inventory levels).
 *   RC_BODY       the country named by the JSON body: the first of the
 *                 rule's fields present ("destination_country",
 *                 "address.country"; a leading '#' = an id whose embedded
 *                 country decides, such as "#location_id").
 *   RC_FANOUT     a list of rows no shard replicates (orders, events,
 *                 audit, payments): one page from every shard, merged
 *                 in id order (shard-router/fanout.h).  Lists of stock
 *                 are the home's: its replica holds every shard's.
 *   RC_FIND       an id that carries no country (a caller-named hold):
 *                 asked of every shard; the one that knows it answers,
 *                 the others answer 404 and change nothing.
 *   RC_BROADCAST  an action every shard performs (snapshots, payout
 *                 runs, a webhook replay).  `fields` "sum": the 2xx
 *                 answers' counts are added up; "sum-find": the same,
 *                 and a shard that does not know the resource answers
 *                 404, which any 2xx outranks.
 *   RC_QUERY      the owner of the country a query parameter names
 *                 (`fields`: its name, e.g. "destination").
 *
 * Path parameters are matched as in engine/edge/api.c ("{x}" = one
 * non-empty segment).  Nothing here allocates.
 */
#ifndef WM_ROUTE_CLASS_H
#define WM_ROUTE_CLASS_H

#include <stddef.h>
#include <stdint.h>

#include "net/http.h"

enum rc_kind { RC_EDGE = 1, RC_HOME, RC_PATH_ID, RC_BODY, RC_FANOUT, RC_FIND, RC_BROADCAST, RC_QUERY, RC_N_KIND };

#define RC_M(m) (1u << (m))             /* method bit (enum http_method) */
#define RC_READS (RC_M(HTTP_M_GET) | RC_M(HTTP_M_HEAD))
#define RC_WRITES (RC_M(HTTP_M_POST) | RC_M(HTTP_M_PUT) | RC_M(HTTP_M_PATCH) | RC_M(HTTP_M_DELETE))
#define RC_ANY (RC_READS | RC_WRITES)

struct rc_rule {
	uint32_t methods;       /* RC_M bits the rule applies to */
	const char *pattern;    /* "/v1/orders/{id}" or a prefix ending in "*" */
	uint8_t kind;           /* enum rc_kind */
	uint8_t param;          /* RC_PATH_ID: index of the path parameter */
	const char *fields;     /* RC_BODY: '|'-separated fields, "#" = id country; RC_BROADCAST:
				 * "sum" = the answers' integers added up (else the home's answer) */
};

/* The rule for a request, or NULL when no rule names the path (the router
 * then sends it to the catalogue home, which answers 404/405 as one shard
 * would).  Rules are tried in order; the first that matches wins. */
const struct rc_rule *rc_find(enum http_method m, const char *path, size_t path_len);

/* RC_PATH_ID: the country embedded in the rule's path parameter into cc[3]:
 * 1, or 0 when the parameter carries none (a malformed id: the owner of
 * the request is then the catalogue home, which answers 404). */
int rc_path_country(const struct rc_rule *r, const char *path, size_t path_len, char cc[3]);

/* RC_BODY: the country the JSON body names into cc[3]: 1, or 0 when none
 * of the rule's fields holds one (the request is then invalid and any
 * shard's validation answers it: the router sends it to the home). */
/* RC_QUERY: the country of the query parameter the rule names in target
 * ("/path?destination=DE&..."): 1 and cc, or 0 (none or not a country). */
int rc_query_country(const struct rc_rule *r, const char *target, size_t len, char cc[3]);
int rc_body_country(const struct rc_rule *r, const char *body, size_t body_len, char cc[3]);

/* The full table (NULL-pattern terminated), for tests. */
const struct rc_rule *rc_table(void);

#endif
