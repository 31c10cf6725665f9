/*
 * events.c -- the append-only event log (DESIGN.md section 7): every state
 * change appends an event in the same transaction (txn_event), so an event
 * exists if and only if its change does.  Events are rows of their own table,
 * ordered by their time-ordered id, with a secondary index by type so that
 * GET /v1/events?type=offer.created walks only matching rows, and one by
 * the entity the event is scoped to: a partner's key reads only its own
 * entity's events (the read-path filter), walking only those.  Events with
 * no entity (platform-wide) are visible to operators only.
 *
 * Event document: {id, type, occurred_at, scope: {entity_id}, payload}.
 * The id is the consumer's idempotency key.
 *
 * This file is the model only (row, decode, indexes): storage, which
 * txn_event and the tables use, includes nothing of the HTTP edge.  The
 * route GET /v1/events reads these indexes from engine/edge/event_routes.c.
 */
#include <stdlib.h>
#include <string.h>

#include "engine/storage/events.h"
#include "engine/storage/id.h"
#include "engine/storage/image.h"
#include "engine/storage/record.h"
#include "engine/base/config.h"

struct event {
	struct row row;
	struct event_vals v;       /* type; scope.entity_id, "" when platform-wide */
};

struct event_ext {
	struct oidx by_type;       /* type NUL id */
	struct oidx by_entity;     /* entity NUL id */
};

static struct event_ext *ext(const struct table *t) { return t->ext; }

struct oidx *event_by_type(struct table *t) { return &ext(t)->by_type; }
struct oidx *event_by_entity(struct table *t) { return &ext(t)->by_entity; }
const char *event_type(const struct row *r) { return ((const struct event *)r)->v.type; }
const char *event_entity(const struct row *r) { return ((const struct event *)r)->v.entity; }

/* Secondary key: entity, NUL, id. */
static uint32_t entity_key(const struct event *e, uint8_t *out)
{
	size_t el = strlen(e->v.entity);
	memcpy(out, e->v.entity, el);
	out[el] = 0;
	memcpy(out + el + 1, e->row.id, e->row.id_len);
	return (uint32_t)(el + 1 + e->row.id_len);
}

/* Secondary key: type, NUL, id. */
static uint32_t type_key(const struct event *e, uint8_t *out)
{
	size_t tl = strlen(e->v.type);
	memcpy(out, e->v.type, tl);
	out[tl] = 0;
	memcpy(out + tl + 1, e->row.id, e->row.id_len);
	return (uint32_t)(tl + 1 + e->row.id_len);
}

/* Text the event's fields may hold: 1..max bytes, no control character --
 * the rules of fld_str (engine/edge/fields.c), restated here so that
 * storage does not include the HTTP edge; a stored row that breaks them
 * is refused at load. */
static int text_ok(const char *s, size_t n, size_t max)
{
	if (n == 0 || n > max)
		return 0;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return 0;
	return 1;
}

/* Copy member name of obj, a string, into out (max bytes + NUL).  Returns
 * 1 copied, 0 absent or null, -1 anything else (text_ok). */
static int doc_str(const struct json_value *obj, const char *name, char *out, size_t max)
{
	const struct json_value *v = json_get(obj, name);
	if (!v || v->type == JSON_NULL)
		return 0;
	if (v->type != JSON_STRING || !text_ok(v->u.str, v->len, max))
		return -1;
	memcpy(out, v->u.str, v->len);
	out[v->len] = 0;
	return 1;
}

static int event_decode(struct table *t, struct row *r, const struct json_value *doc)
{
	(void)t;
	struct event *e = (struct event *)r;
	if (doc_str(doc, "type", e->v.type, EVENT_MAX_TYPE) != 1)
		return -1;
	const struct json_value *scope = json_get(doc, "scope");
	e->v.entity[0] = 0;
	if (scope && scope->type == JSON_OBJECT &&
	    doc_str(scope, "entity_id", e->v.entity, sizeof(e->v.entity) - 1) < 0)
		return -1;
	return 0;
}

/* The typed fast path (table.h): the values txn_event wrote the document from. */
static int event_decode_typed(struct table *t, struct row *r, const void *typed)
{
	(void)t;
	const struct event_vals *v = typed;
	struct event *e = (struct event *)r;
	size_t tl = strnlen(v->type, sizeof(v->type)), el = strnlen(v->entity, sizeof(v->entity));
	if (!text_ok(v->type, tl, EVENT_MAX_TYPE) || (el && !text_ok(v->entity, el, sizeof(e->v.entity) - 1)))
		return -1;
	memcpy(e->v.type, v->type, tl);
	memcpy(e->v.entity, v->entity, el);
	return 0;
}

/* Snapshot images (engine/storage/image.h): a byte of layout version,
 * then the type and the entity ("" platform-wide) as strings.  The
 * document, which an event keeps, is copied beside it: a snapshot of a
 * busy shard holds a hundred thousand events, and parsing each document
 * only to read these two members was most of their share of a restart
 * (perf/bench_scale load: 105,000 events ~85 ms, the builder the slower
 * side). */
#define EVENT_IMAGE_V1 1

static int event_image(const struct row *r, struct buf *out)
{
	const struct event *e = (const struct event *)r;
	struct img_w w = {out, 0};
	img_u8(&w, EVENT_IMAGE_V1);
	img_str(&w, e->v.type);
	img_str(&w, e->v.entity);
	return w.err ? -1 : 0;
}

/* The values event_decode would read, through its checks. */
static int event_from_image(struct table *t, struct row *r, const uint8_t *img, size_t len)
{
	(void)t;
	struct event *e = (struct event *)r;
	struct img_r rd = {img, img + len, 0};
	if (img_get_u8(&rd) != EVENT_IMAGE_V1)
		return -1;
	img_get_str(&rd, e->v.type, sizeof(e->v.type));
	img_get_str(&rd, e->v.entity, sizeof(e->v.entity));
	size_t tl = strlen(e->v.type), el = strlen(e->v.entity);
	if (img_done(&rd) || !text_ok(e->v.type, tl, EVENT_MAX_TYPE) ||
	    (el && !text_ok(e->v.entity, el, sizeof(e->v.entity) - 1)))
		return -1;
	return 0;
}

static int event_init(struct table *t)
{
	struct event_ext *x = malloc(sizeof(*x));
	if (!x)
		return -1;
	/* type NUL id, entity NUL id: tail-keyed (index.h oidx_init_tail) */
	oidx_init_tail(&x->by_type);
	oidx_init_tail(&x->by_entity);
	t->ext = x;
	return 0;
}

static void event_fini(struct table *t)
{
	oidx_free(&ext(t)->by_type);
	oidx_free(&ext(t)->by_entity);
	free(t->ext);
	t->ext = NULL;
}

static int event_index_add(struct table *t, struct row *r)
{
	const struct event *e = (const struct event *)r;
	uint8_t k[IDX_MAX_KEY + EVENT_MAX_TYPE + 2];
	uint32_t kl = type_key(e, k);
	if (kl > IDX_MAX_KEY || oidx_set(&ext(t)->by_type, k, kl, r))
		return -1;
	if (!e->v.entity[0])
		return 0;
	kl = entity_key(e, k);
	if (kl > IDX_MAX_KEY || oidx_set(&ext(t)->by_entity, k, kl, r)) {
		oidx_del(&ext(t)->by_type, k, type_key(e, k));
		return -1;
	}
	return 0;
}

static void event_index_del(struct table *t, struct row *r)
{
	const struct event *e = (const struct event *)r;
	uint8_t k[IDX_MAX_KEY + EVENT_MAX_TYPE + 2];
	oidx_del(&ext(t)->by_type, k, type_key(e, k));
	if (e->v.entity[0])
		oidx_del(&ext(t)->by_entity, k, entity_key(e, k));
}

/* What event_decode reads: never the payload, most of an event's bytes. */
static const char *const event_decode_keys[] = {"type", "scope", NULL};

const struct table_ops event_table_ops = {
	.rec_table = REC_T_EVENT,
	.name = "event",
	.row_size = sizeof(struct event),
	.decode = event_decode,
	.decode_pure = 1, /* recovery may build its rows off the loop (table.h) */
	.decode_typed = event_decode_typed,
	.typed_size = sizeof(struct event_vals),
	.image = event_image,
	.from_image = event_from_image,
	.init = event_init,
	.fini = event_fini,
	.index_add = event_index_add,
	.index_del = event_index_del,
	.decode_keys = event_decode_keys,
};

uint64_t event_retention_ms(const struct config *cfg)
{
	uint64_t ms = cfg->retention_days * 86400000ULL;
#ifdef WM_TESTING
	const char *e = getenv("WM_RETENTION_MS");
	if (e && *e)
		ms = strtoull(e, NULL, 10);
#endif
	return ms;
}

int event_kept_for_ever(const char *type)
{
	return !strncmp(type, "wine.", 5) || !strncmp(type, "offer.", 6);
}
