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
 */
#include <stdlib.h>
#include <string.h>

#include "engine/edge/api.h"
#include "engine/storage/events.h"
#include "engine/edge/fields.h"
#include "engine/storage/resources.h"

#define EVENT_MAX_TYPE 64

struct event {
	struct row row;
	char type[EVENT_MAX_TYPE + 1];
	char entity[ID_MAX_LEN];   /* scope.entity_id, "" when platform-wide */
};

struct event_ext {
	struct oidx by_type;       /* type NUL id */
	struct oidx by_entity;     /* entity NUL id */
};

static struct event_ext *ext(const struct table *t) { return t->ext; }

/* Secondary key: entity, NUL, id. */
static uint32_t entity_key(const struct event *e, uint8_t *out)
{
	size_t el = strlen(e->entity);
	memcpy(out, e->entity, el);
	out[el] = 0;
	memcpy(out + el + 1, e->row.id, e->row.id_len);
	return (uint32_t)(el + 1 + e->row.id_len);
}

/* Secondary key: type, NUL, id. */
static uint32_t type_key(const struct event *e, uint8_t *out)
{
	size_t tl = strlen(e->type);
	memcpy(out, e->type, tl);
	out[tl] = 0;
	memcpy(out + tl + 1, e->row.id, e->row.id_len);
	return (uint32_t)(tl + 1 + e->row.id_len);
}

static int event_decode(struct table *t, struct row *r, const struct json_value *doc)
{
	(void)t;
	struct event *e = (struct event *)r;
	if (fld_str(NULL, doc, "type", NULL, e->type, EVENT_MAX_TYPE) != FLD_SET)
		return -1;
	const struct json_value *scope = json_get(doc, "scope");
	e->entity[0] = 0;
	if (scope && scope->type == JSON_OBJECT &&
	    fld_str(NULL, scope, "entity_id", NULL, e->entity, sizeof(e->entity) - 1) == FLD_BAD)
		return -1;
	return 0;
}

static int event_init(struct table *t)
{
	struct event_ext *x = malloc(sizeof(*x));
	if (!x)
		return -1;
	oidx_init(&x->by_type);
	oidx_init(&x->by_entity);
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
	if (!e->entity[0])
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
	if (e->entity[0])
		oidx_del(&ext(t)->by_entity, k, entity_key(e, k));
}

const struct table_ops event_table_ops = {
	.rec_table = REC_T_EVENT,
	.name = "event",
	.row_size = sizeof(struct event),
	.decode = event_decode,
	.init = event_init,
	.fini = event_fini,
	.index_add = event_index_add,
	.index_del = event_index_del,
};

/* Valid event type: lower-case dotted words, e.g. "partner.created". */
static int type_valid(const char *s, int n)
{
	if (n < 3 || n > EVENT_MAX_TYPE)
		return 0;
	for (int i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || s[i] == '.' || s[i] == '_'))
			return 0;
	return 1;
}

static int type_matches(struct api_ctx *c, const struct row *r, void *arg)
{
	(void)c;
	return strcmp(((const struct event *)r)->type, arg) == 0;
}

static void events_list(struct api_ctx *c)
{
	struct api_page pg;
	if (api_page_parse(c, &pg))
		return;
	struct table *t = &c->sh->tables[REC_T_EVENT];
	char type[EVENT_MAX_TYPE + 2];
	int n = api_query(c, "type", type, sizeof(type));
	if (n != -1 && (n < 0 || !type_valid(type, n))) {
		api_error(c, 400, "invalid_filter", "type must be an event type such as partner.created");
		return;
	}
	if (!c->who.is_platform) {
		/* Read-path filter: the caller's entity's events only. */
		uint8_t prefix[ID_MAX_LEN + 1];
		size_t el = strlen(c->who.entity_id);
		memcpy(prefix, c->who.entity_id, el);
		prefix[el] = 0;
		api_list(c, &ext(t)->by_entity, prefix, (uint32_t)el + 1, &pg, n == -1 ? NULL : type_matches,
			 type, NULL);
		return;
	}
	if (n == -1)
		api_list(c, &t->by_order, NULL, 0, &pg, NULL, NULL, NULL);
	else
		api_list(c, &ext(t)->by_type, type, (uint32_t)n + 1, &pg, NULL, NULL, NULL);
}

const struct route event_routes[] = {
	{HTTP_M_GET, "/v1/events", events_list, SC_READ_EVENTS, ACT_READ_EVENTS, "List events (cursor-paginated, filter by type)", 0},
	{0, NULL, NULL, 0, 0, NULL, 0},
};
