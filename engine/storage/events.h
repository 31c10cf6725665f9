/*
 * events.h -- the event log's table (the model; implementation and why in
 * events.c).  Its route, GET /v1/events, is engine/edge/event_routes.h.
 */
#ifndef WM_EVENTS_H
#define WM_EVENTS_H

#include "engine/storage/id.h"
#include "engine/storage/table.h"

#define EVENT_MAX_TYPE 64 /* bytes of an event type such as "partner.created" */

/* An event's typed values (the table's decode_typed input, table.h): what
 * txn_event writes as its type and scope.entity_id ("" for none). */
struct event_vals {
	char type[EVENT_MAX_TYPE + 1];
	char entity[ID_MAX_LEN];
};

/* Secondary indexes of the event table t (t->ext; valid while t is open).
 * by_type keys are "type NUL id", by_entity keys "entity_id NUL id" (only
 * events scoped to an entity are in by_entity); values are the rows. */
struct oidx *event_by_type(struct table *t);
struct oidx *event_by_entity(struct table *t);

/* The event table (also listed in resources.h, the registry; declared
 * here so that the table's own file needs nothing above storage). */
extern const struct table_ops event_table_ops;

/* The type of event row r (NUL-terminated, owned by the row). */
const char *event_type(const struct row *r);
/* The scope.entity_id of event row r ("" for a platform-wide event). */
const char *event_entity(const struct row *r);

/* Retention (engine/retention.c prunes, the feed refuses cursors older
 * than it).  How long events are kept, in ms: --retention-days (test
 * builds: WM_RETENTION_MS when set); 0 = for ever. */
struct config;
uint64_t event_retention_ms(const struct config *cfg);
/* 1 for a type retention never prunes: wine.* and offer.*, the change log
 * of the catalogue that a feed's full resync walks (engine/supply/sync.c);
 * the catalogue's churn, not its orders, bounds them.  Pure. */
int event_kept_for_ever(const char *type);

#endif
