/*
 * events.c -- the append-only event log (DESIGN.md section 7): every state
 * change appends an event in the same transaction (txn_event), so an event
 * exists if and only if its change does.  Events are rows of their own table,
 * ordered by their time-ordered id, with a secondary index by type so that
 * GET /v1/events?type=offer.created walks only matching rows.
 *
 * Event document: {id, type, occurred_at, scope: {entity_id}, payload}.
 * The id is the consumer's idempotency key.
 */
#include <stdlib.h>
#include <string.h>

#include "engine/api.h"
#include "engine/events.h"
#include "engine/fields.h"
#include "engine/resources.h"

#define EVENT_MAX_TYPE 64

struct event {
	struct row row;
	char type[EVENT_MAX_TYPE + 1];
};

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
	return fld_str(NULL, doc, "type", NULL, e->type, EVENT_MAX_TYPE) == FLD_SET ? 0 : -1;
}

static int event_init(struct table *t)
{
	struct oidx *by_type = malloc(sizeof(*by_type));
	if (!by_type)
		return -1;
	oidx_init(by_type);
	t->ext = by_type;
	return 0;
}

static void event_fini(struct table *t)
{
	oidx_free(t->ext);
	free(t->ext);
	t->ext = NULL;
}

static int event_index_add(struct table *t, struct row *r)
{
	uint8_t k[IDX_MAX_KEY + EVENT_MAX_TYPE + 2];
	uint32_t kl = type_key((struct event *)r, k);
	return kl > IDX_MAX_KEY ? -1 : oidx_set(t->ext, k, kl, r);
}

static void event_index_del(struct table *t, struct row *r)
{
	uint8_t k[IDX_MAX_KEY + EVENT_MAX_TYPE + 2];
	uint32_t kl = type_key((struct event *)r, k);
	oidx_del(t->ext, k, kl);
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

static void events_list(struct api_ctx *c)
{
	struct api_page pg;
	if (api_page_parse(c, &pg))
		return;
	struct table *t = &c->sh->tables[REC_T_EVENT];
	char type[EVENT_MAX_TYPE + 2];
	int n = api_query(c, "type", type, sizeof(type));
	if (n == -1) {
		api_list(c, &t->by_order, NULL, 0, &pg, NULL, NULL, NULL);
		return;
	}
	if (n < 0 || !type_valid(type, n)) {
		api_error(c, 400, "invalid_filter", "type must be an event type such as partner.created");
		return;
	}
	api_list(c, t->ext, type, (uint32_t)n + 1, &pg, NULL, NULL, NULL);
}

const struct route event_routes[] = {
	{HTTP_M_GET, "/v1/events", events_list, SC_READ_EVENTS, ACT_READ_EVENTS, "List events (cursor-paginated, filter by type)"},
	{0, NULL, NULL, 0, 0, NULL},
};
