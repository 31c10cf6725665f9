/*
 * event_routes.c -- GET /v1/events: lists the event log (the model, its
 * table and indexes, is engine/storage/events.c; why events exist there).
 * Kept apart from the model so that storage includes nothing of the HTTP
 * edge.  Filters: ?type= walks the by-type index; a partner's key reads only
 * its own entity's events (the read-path filter) through the by-entity
 * index; events with no entity (platform-wide) are visible to operators only.
 */
#include <string.h>

#include "engine/edge/api.h"
#include "engine/edge/event_routes.h"
#include "engine/storage/events.h"

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
	return strcmp(event_type(r), arg) == 0;
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
		api_list(c, event_by_entity(t), prefix, (uint32_t)el + 1, &pg, n == -1 ? NULL : type_matches,
			 type, NULL);
		return;
	}
	if (n == -1)
		api_list(c, &t->by_order, NULL, 0, &pg, NULL, NULL, NULL);
	else
		api_list(c, event_by_type(t), type, (uint32_t)n + 1, &pg, NULL, NULL, NULL);
}

const struct route event_routes[] = {
	{HTTP_M_GET, "/v1/events", events_list, SC_READ_EVENTS, ACT_READ_EVENTS, "List events (cursor-paginated, filter by type)", 0},
	{0, NULL, NULL, 0, 0, NULL, 0},
};
