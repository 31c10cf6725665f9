/*
 * pickup.c -- carrier pickups (spec 2.8 "Pickup: date, time_window,
 * carrier_ref, location_id; per source location", 4.1):
 *
 *   POST /v1/orders/{id}/pickup     request (or reschedule) the pickup at a location
 *   POST /v1/pickups                the same, the order named in the body
 *   GET  /v1/orders/{id}/pickup     the order's pickups the caller may see
 *   GET  /v1/pickups/{id}           one pickup
 *   POST /v1/pickups/{id}/accept    the carrier side (the platform) accepts it
 *
 * Why a pickup's id is "<order id>.P<n>" (n: the first leg at its location,
 * counted from 1): there is one pickup per order and location, so the id
 * IS the idempotency key the spec asks for -- a second request for the
 * same location finds the first without a second index, a retried request
 * cannot make two, and the router finds its shard from the order's id
 * (route_class.c cuts at the dot).  The row lives with its order on the
 * destination's shard (DESIGN.md 2).
 *
 * States (the spec leaves them open): requested -> accepted, stored; and
 * two that are read, not written, so they can never disagree with the
 * legs and the order they describe: collected (every leg at the location
 * was scanned by the carrier: picked_up or later) and cancelled (the
 * order was cancelled or failed).  A requested pickup may be rescheduled
 * (a request with other values replaces them); an accepted one is fixed
 * (409 pickup_accepted).
 *
 * Who: the fulfiller of the legs at the location (or the platform)
 * requests; the platform -- where carriers' integrations run -- accepts.
 * A pickup at a location outside the caller's view of the order answers
 * as a missing one.
 */
#include "engine/orders/pickup.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/base/log.h"
#include "engine/edge/fields.h"
#include "engine/orders/order.h"
#include "engine/storage/record.h"

#define PICKUP_DAYS_AHEAD 90   /* a pickup date: today (UTC) .. today + 90 days */
#define PICKUP_REF_MAX 64      /* carrier_ref bytes */
#define PICKUP_ID_MAX (ID_MAX_LEN + 8)

enum pickup_status { PK_REQUESTED, PK_ACCEPTED, PK_COLLECTED, PK_CANCELLED, PICKUP_N_STATUS };
static const char *const pickup_status_names[] = {"requested", "accepted", "collected", "cancelled", NULL};

struct pickup {
	struct row row;
	char order_id[ID_MAX_LEN];
	char location_id[ID_MAX_LEN];
	char date[11];                /* YYYY-MM-DD */
	char time_window[12];         /* HH:MM-HH:MM */
	char carrier_ref[PICKUP_REF_MAX + 1];
	uint8_t status;               /* PK_REQUESTED or PK_ACCEPTED (stored) */
};

/* ---- the table ------------------------------------------------------------------------- */

static int pickup_decode(struct table *t, struct row *r, const struct json_value *doc)
{
	(void)t;
	struct pickup *p = (struct pickup *)r;
	char st[16];
	if (fld_doc_str(doc, "order_id", p->order_id, sizeof(p->order_id)) || !p->order_id[0] ||
	    fld_doc_str(doc, "location_id", p->location_id, sizeof(p->location_id)) || !p->location_id[0] ||
	    fld_doc_str(doc, "date", p->date, sizeof(p->date)) || fld_doc_str(doc, "time_window", p->time_window,
									    sizeof(p->time_window)) ||
	    fld_doc_str(doc, "carrier_ref", p->carrier_ref, sizeof(p->carrier_ref)) ||
	    fld_doc_str(doc, "status", st, sizeof(st)))
		return -1;
	int s = order_name_index(pickup_status_names, st);
	if (s != PK_REQUESTED && s != PK_ACCEPTED)
		return -1;
	p->status = (uint8_t)s;
	return 0;
}

static const char *const pickup_keys[] = {"order_id", "location_id", "date", "time_window", "carrier_ref", "status",
					  NULL};

const struct table_ops pickup_table_ops = {
	.rec_table = REC_T_PICKUP,
	.name = "pickup",
	.row_size = sizeof(struct pickup),
	.decode = pickup_decode,
	.decode_keys = pickup_keys,
};

/* ---- the order's locations -------------------------------------------------------------- */

/* The first leg of o at location (index), or -1. */
static int first_leg_at(const struct order *o, const char *location)
{
	for (unsigned i = 0; i < o->n_legs; i++)
		if (!strcmp(o->legs[i].location_id, location))
			return (int)i;
	return -1;
}

/* The pickup id for the location whose first leg is li. */
static void pickup_id(const struct order *o, int li, char out[PICKUP_ID_MAX])
{
	snprintf(out, PICKUP_ID_MAX, "%s.P%d", o->row.id, li + 1);
}

/* The caller sees a leg at the location / fulfils every leg there. */
static int location_in_view(const struct api_ctx *c, const struct order *o, const char *loc, int *fulfils)
{
	int seen = 0;
	*fulfils = 1;
	for (unsigned i = 0; i < o->n_legs; i++)
		if (!strcmp(o->legs[i].location_id, loc)) {
			seen |= order_leg_in_view(c, o, i);
			*fulfils &= order_leg_fulfiller(c, &o->legs[i]);
		}
	return seen;
}

/* What a pickup reads as now: cancelled with its order, collected once the
 * carrier scanned every leg at its location, else what is stored. */
static int shown_status(struct shard *sh, const struct order *o, const struct pickup *p)
{
	const struct order_state *s = order_state_get(sh, o->row.id, o->row.id_len);
	if (!s || s->v.status == ORD_CANCELLED || s->v.status == ORD_FAILED)
		return PK_CANCELLED;
	int all = 1;
	for (unsigned i = 0; i < o->n_legs; i++)
		if (!strcmp(o->legs[i].location_id, p->location_id))
			all &= leg_rank(s->v.leg_status[i]) >= leg_rank(LS_PICKED_UP);
	return all ? PK_COLLECTED : p->status;
}

/* The pickup as the API shows it: the stored document with its status as read and its legs. */
static void write_pickup(struct api_ctx *c, struct jw *w, const struct order *o, const struct pickup *p)
{
	struct json_doc *d = json_parse(p->row.doc, p->row.doc_len, NULL, NULL);
	if (!d) {
		w->err = 1;
		return;
	}
	const struct json_value *root = json_root(d);
	jw_obj_begin(w);
	for (uint32_t i = 0; i < root->len; i++) {
		const struct json_member *m = &root->u.members[i];
		jw_keyn(w, m->key, m->key_len);
		if (!strcmp(m->key, "status"))
			jw_str(w, pickup_status_names[shown_status(c->sh, o, p)]);
		else
			jw_value(w, &m->value);
		if (strcmp(m->key, "location_id"))
			continue;
		jw_key(w, "legs");
		jw_arr_begin(w);
		for (unsigned g = 0; g < o->n_legs; g++)
			if (!strcmp(o->legs[g].location_id, p->location_id) && order_leg_in_view(c, o, g))
				jw_str(w, o->legs[g].leg_id);
		jw_arr_end(w);
	}
	jw_obj_end(w);
	json_doc_free(d);
}

static const struct pickup *pickup_get(struct shard *sh, const char *id)
{
	return (const struct pickup *)table_get(&sh->tables[REC_T_PICKUP], id, strlen(id));
}

/* ---- validation --------------------------------------------------------------------------- */

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil). */
static long days_from_civil(long y, unsigned m, unsigned d)
{
	y -= m <= 2;
	long era = (y >= 0 ? y : y - 399) / 400;
	unsigned yoe = (unsigned)(y - era * 400);
	unsigned doy = (153 * (m + (m > 2 ? (unsigned)-3 : 9)) + 2) / 5 + d - 1;
	unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (long)doe - 719468;
}

/* "YYYY-MM-DD", a real date: its day number into *days.  0 or -1. */
static int parse_date(const char *s, long *days)
{
	static const unsigned mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	unsigned y, m, d;
	char tail;
	if (strlen(s) != 10 || s[4] != '-' || s[7] != '-' || sscanf(s, "%4u-%2u-%2u%c", &y, &m, &d, &tail) != 3 ||
	    m < 1 || m > 12 || d < 1 || d > mdays[m - 1])
		return -1;
	int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
	if (m == 2 && d == 29 && !leap)
		return -1;
	*days = days_from_civil((long)y, m, d);
	return 0;
}

/* "HH:MM-HH:MM", the start before the end.  0 or -1. */
static int window_ok(const char *s)
{
	unsigned h1, m1, h2, m2;
	char tail;
	if (strlen(s) != 11 || s[2] != ':' || s[5] != '-' || s[8] != ':' ||
	    sscanf(s, "%2u:%2u-%2u:%2u%c", &h1, &m1, &h2, &m2, &tail) != 4)
		return -1;
	return h1 < 24 && h2 < 24 && m1 < 60 && m2 < 60 && h1 * 60 + m1 < h2 * 60 + m2 ? 0 : -1;
}

struct pickup_req {
	char order_id[ID_MAX_LEN], location_id[ID_MAX_LEN], date[16], time_window[16], carrier_ref[PICKUP_REF_MAX + 1];
};

/* Read and validate the body (order_id only when with_order).  0, or -1 answered. */
static int read_request(struct api_ctx *c, struct pickup_req *q, int with_order)
{
	memset(q, 0, sizeof(*q));
	const struct json_value *b = api_body(c);
	if (!b)
		return -1;
	static const char *const known[] = {"order_id", "location_id", "date", "time_window", "carrier_ref", NULL};
	fld_reject_unknown(c, b, with_order ? known : known + 1, NULL);
	static const struct { const char *name; size_t off, max; } fields[] = {
		{"order_id", offsetof(struct pickup_req, order_id), ID_MAX_LEN - 1},
		{"location_id", offsetof(struct pickup_req, location_id), ID_MAX_LEN - 1},
		{"date", offsetof(struct pickup_req, date), 15},
		{"time_window", offsetof(struct pickup_req, time_window), 15},
		{"carrier_ref", offsetof(struct pickup_req, carrier_ref), PICKUP_REF_MAX},
	};
	for (size_t i = with_order ? 0 : 1; i < sizeof(fields) / sizeof(fields[0]); i++)
		if (fld_str(c, b, fields[i].name, fields[i].name, (char *)q + fields[i].off, fields[i].max) == FLD_ABSENT)
			api_field_error(c, fields[i].name, "required", "a pickup names its %s", fields[i].name);
	long day, today = (long)(wall_ms() / 86400000ull);
	if (q->date[0] && parse_date(q->date, &day))
		api_field_error(c, "date", "format", "a calendar date, YYYY-MM-DD");
	else if (q->date[0] && (day < today || day > today + PICKUP_DAYS_AHEAD))
		api_field_error(c, "date", "range", "from today (UTC) to %d days ahead", PICKUP_DAYS_AHEAD);
	if (q->time_window[0] && window_ok(q->time_window))
		api_field_error(c, "time_window", "format", "HH:MM-HH:MM, the start before the end (local time at the "
							    "location)");
	if (c->n_errs) {
		api_validation_failed(c);
		return -1;
	}
	return 0;
}

/* ---- request ------------------------------------------------------------------------------ */

/* Stage the pickup row (and its event).  0 or -1. */
static int stage_pickup(struct api_ctx *c, const struct order *o, const char *id, const struct pickup_req *q,
			int status, const char *created, const char *event)
{
	char now[32];
	fmt_rfc3339_ms(now, wall_ms());
	struct buf doc;
	buf_init(&doc, REC_MAX_VAL);
	struct jw w;
	jw_init(&w, &doc);
	jw_obj_begin(&w);
	jw_kstr(&w, "id", id);
	jw_kstr(&w, "order_id", o->row.id);
	jw_kstr(&w, "location_id", q->location_id);
	jw_kstr(&w, "date", q->date);
	jw_kstr(&w, "time_window", q->time_window);
	jw_kstr(&w, "carrier_ref", q->carrier_ref);
	jw_kstr(&w, "status", pickup_status_names[status]);
	jw_kstr(&w, "requested_by", c->who.is_platform ? "platform" : c->who.entity_id);
	jw_kstr(&w, "created_at", created ? created : now);
	jw_kstr(&w, "updated_at", now);
	jw_obj_end(&w);
	char extra[ID_MAX_LEN * 2 + 160];
	snprintf(extra, sizeof(extra), "{\"pickup_id\":\"%s\",\"location_id\":\"%s\",\"date\":\"%s\",\"time_window\":\"%s\"}",
		 id, q->location_id, q->date, q->time_window);
	const struct order_state *s = order_state_get(c->sh, o->row.id, o->row.id_len);
	int rc = w.err || !s || txn_put(c->sh, REC_T_PICKUP, id, strlen(id), doc.data, doc.len) ||
			 order_stage_event(c->sh, o, s->v.status, event, extra)
		     ? -1
		     : 0;
	buf_free(&doc);
	return rc;
}

/* The stored created_at of a pickup row (for a reschedule). */
static void created_of(const struct pickup *p, char out[32])
{
	struct json_doc *d = json_parse(p->row.doc, p->row.doc_len, NULL, NULL);
	out[0] = 0;
	if (d)
		fld_doc_str(json_root(d), "created_at", out, 32);
	json_doc_free(d);
}

/* Request the pickup q on order o (visible to the caller). */
static void request_pickup(struct api_ctx *c, const struct order *o, const struct pickup_req *q)
{
	int fulfils, li = first_leg_at(o, q->location_id);
	if (li < 0 || !location_in_view(c, o, q->location_id, &fulfils)) {
		api_field_error(c, "location_id", "unknown", "not the location of a leg of this order");
		api_validation_failed(c);
		return;
	}
	if (!fulfils) {
		api_error(c, 403, "not_leg_fulfiller", "only the fulfiller of the legs at the location or the platform "
						       "requests their pickup");
		return;
	}
	char id[PICKUP_ID_MAX];
	pickup_id(o, li, id);
	const struct pickup *old = pickup_get(c->sh, id);
	int shown = old ? shown_status(c->sh, o, old) : PK_REQUESTED;
	const struct order_state *s = order_state_get(c->sh, o->row.id, o->row.id_len);
	int moving = s->v.status == ORD_RESERVED || s->v.status == ORD_FULFILLED || s->v.status == ORD_IN_TRANSIT;
	if (!moving || shown == PK_COLLECTED || (old && shown != PK_REQUESTED &&
						 (strcmp(old->date, q->date) || strcmp(old->time_window, q->time_window) ||
						  strcmp(old->carrier_ref, q->carrier_ref)))) {
		char d[200];
		snprintf(d, sizeof(d), "the order is %s and the pickup at this location %s: a pickup is requested or "
				       "rescheduled before the carrier accepts it",
			 order_status_names[s->v.status], old ? pickup_status_names[shown] : "not requested");
		order_conflict(c, moving && old ? "pickup_accepted" : "invalid_order_state", d, o, li);
		return;
	}
	char oid[ID_MAX_LEN];
	snprintf(oid, sizeof(oid), "%s", o->row.id);
	if (old && !strcmp(old->date, q->date) && !strcmp(old->time_window, q->time_window) &&
	    !strcmp(old->carrier_ref, q->carrier_ref)) {
		c->rs->status = 200; /* the same request again: the pickup as it is */
		write_pickup(c, &c->w, o, old);
		return;
	}
	char created[32] = "";
	if (old)
		created_of(old, created);
	txn_begin(c->sh);
	if (stage_pickup(c, o, id, q, PK_REQUESTED, old ? created : NULL, "pickup.requested") || !txn_commit(c->sh)) {
		txn_abort(c->sh);
		api_error(c, 500, "commit_failed", "the pickup could not be stored");
		return;
	}
	o = order_get(c->sh, oid, strlen(oid));
	if (!old)
		buf_printf(&c->rs->headers, "Location: /v1/pickups/%s\r\n", id);
	c->rs->status = old ? 200 : 201;
	write_pickup(c, &c->w, o, pickup_get(c->sh, id));
}

/* POST /v1/orders/{id}/pickup */
static void order_pickup_post(struct api_ctx *c)
{
	struct pickup_req q;
	const struct order *o = order_visible(c);
	if (o && !read_request(c, &q, 0))
		request_pickup(c, o, &q);
}

/* POST /v1/pickups */
static void pickups_post(struct api_ctx *c)
{
	struct pickup_req q;
	if (read_request(c, &q, 1))
		return;
	const struct order *o = order_visible_id(c, q.order_id);
	if (o)
		request_pickup(c, o, &q);
}

/* GET /v1/orders/{id}/pickup: {"data": [the pickups the caller may see]}. */
static void order_pickup_get(struct api_ctx *c)
{
	const struct order *o = order_sublist_begin(c);
	if (!o)
		return;
	for (unsigned i = 0; i < o->n_legs; i++) {
		char id[PICKUP_ID_MAX];
		int fulfils;
		const struct pickup *p = NULL;
		if (first_leg_at(o, o->legs[i].location_id) == (int)i &&
		    location_in_view(c, o, o->legs[i].location_id, &fulfils)) {
			pickup_id(o, (int)i, id);
			p = pickup_get(c->sh, id);
		}
		if (p)
			write_pickup(c, &c->w, o, p);
	}
	order_sublist_end(c);
}

/* The pickup of the path's id with its order, when the caller sees it; else 404 answered. */
static const struct pickup *visible_pickup(struct api_ctx *c, const struct order **op)
{
	char id[PICKUP_ID_MAX];
	const struct pickup *p = api_param(c, 0, id, sizeof(id)) > 0 ? pickup_get(c->sh, id) : NULL;
	const struct order *o = p ? order_get(c->sh, p->order_id, strlen(p->order_id)) : NULL;
	int fulfils;
	if (!o || !(c->who.is_platform || order_involves(o, c->who.entity_id)) ||
	    !location_in_view(c, o, p->location_id, &fulfils)) {
		api_error(c, 404, "not_found", "no pickup with this id");
		return NULL;
	}
	*op = o;
	return p;
}

/* GET /v1/pickups/{id} */
static void pickup_read(struct api_ctx *c)
{
	const struct order *o;
	const struct pickup *p = visible_pickup(c, &o);
	if (!p || api_read_row(c))
		return;
	c->rs->status = 200;
	write_pickup(c, &c->w, o, p);
}

/* POST /v1/pickups/{id}/accept: requested -> accepted (again: 200, as it is). */
static void pickup_accept(struct api_ctx *c)
{
	const struct order *o;
	const struct pickup *p = visible_pickup(c, &o);
	if (!p)
		return;
	if (!c->who.is_platform) {
		api_error(c, 403, "platform_only", "the carrier side accepts a pickup, through the platform");
		return;
	}
	int shown = shown_status(c->sh, o, p);
	char id[PICKUP_ID_MAX];
	snprintf(id, sizeof(id), "%s", p->row.id);
	if (shown == PK_ACCEPTED) {
		c->rs->status = 200;
		write_pickup(c, &c->w, o, p);
		return;
	}
	if (shown != PK_REQUESTED) {
		char d[120];
		snprintf(d, sizeof(d), "the pickup is %s: only a requested pickup is accepted", pickup_status_names[shown]);
		order_conflict(c, "invalid_pickup_state", d, o, first_leg_at(o, p->location_id));
		return;
	}
	struct pickup_req q;
	memset(&q, 0, sizeof(q));
	snprintf(q.location_id, sizeof(q.location_id), "%s", p->location_id);
	snprintf(q.date, sizeof(q.date), "%s", p->date);
	snprintf(q.time_window, sizeof(q.time_window), "%s", p->time_window);
	snprintf(q.carrier_ref, sizeof(q.carrier_ref), "%s", p->carrier_ref);
	char created[32];
	created_of(p, created);
	txn_begin(c->sh);
	if (stage_pickup(c, o, id, &q, PK_ACCEPTED, created, "pickup.accepted") || !txn_commit(c->sh)) {
		txn_abort(c->sh);
		api_error(c, 500, "commit_failed", "the pickup could not be stored");
		return;
	}
	saga_crash_point(c->sh, "pickup_crash_after_accept");
	c->rs->status = 200;
	write_pickup(c, &c->w, o, pickup_get(c->sh, id));
}

const struct route pickup_routes[] = {
	{HTTP_M_POST, "/v1/orders/{id}/pickup", order_pickup_post, SC_WRITE_INVENTORY, ACT_WRITE_INVENTORY,
	 "Request (or reschedule) the carrier pickup at one of the order's locations", 0},
	{HTTP_M_GET, "/v1/orders/{id}/pickup", order_pickup_get, SC_READ_ORDERS, ACT_READ_ORDERS,
	 "The order's pickups the caller may see", 0},
	{HTTP_M_POST, "/v1/pickups", pickups_post, SC_WRITE_INVENTORY, ACT_WRITE_INVENTORY,
	 "Request a pickup for an order (the order named in the body)", 0},
	{HTTP_M_GET, "/v1/pickups/{id}", pickup_read, SC_READ_ORDERS, ACT_READ_ORDERS, "One pickup", 0},
	{HTTP_M_POST, "/v1/pickups/{id}/accept", pickup_accept, SC_WRITE_INVENTORY, ACT_WRITE_INVENTORY,
	 "The carrier side accepts a pickup (the platform)", 0},
	{0, NULL, NULL, 0, 0, NULL, 0},
};
