/* order_world.c -- see order_world.h. */
#include "tests/order_world.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* A postal address in country cc (FR, DE or AT; FR otherwise), as the
 * members line1, city, postal_code of an address object. */
static const char *address_in(const char *cc)
{
	if (cc && !strcmp(cc, "DE"))
		return "\"line1\":\"Weinstrasse 1\",\"city\":\"Berlin\",\"postal_code\":\"10115\"";
	if (cc && !strcmp(cc, "AT"))
		return "\"line1\":\"Weinplatz 1\",\"city\":\"Wien\",\"postal_code\":\"1010\"";
	return "\"line1\":\"1 rue du Vin\",\"city\":\"Beaune\",\"postal_code\":\"21200\"";
}

static void location(int port, const char *key, const char *name, const char *cc, char *out)
{
	char body[512];
	snprintf(body, sizeof(body),
		 "{\"location_type\":\"BONDED_WAREHOUSE\",\"name\":\"%s\",\"address\":{%s,\"country\":\"%s\"}}", name,
		 address_in(cc), cc);
	json_t *j = tc_expect(port, "POST", "/v1/stock-locations", key, body, 201);
	snprintf(out, 64, "%s", tc_jstr(j, "id"));
	json_decref(j);
}

static void level(int port, const char *key, const char *offer, const char *loc, int units, char *out)
{
	char body[512];
	snprintf(body, sizeof(body), "{\"sku\":\"SKU-%s\",\"offer_id\":\"%s\",\"location_id\":\"%s\",\"on_hand\":%d}",
		 offer, offer, loc, units);
	json_t *j = tc_expect(port, "POST", "/v1/inventory", key, body, 201);
	snprintf(out, 64, "%s", tc_jstr(j, "id"));
	json_decref(j);
}

const char *ow_extra_args[11];
const char *ow_extra_env[5];

void ow_restart(struct oworld *x, const char *errinj)
{
	char env[256];
	const char *envv[6] = {NULL};
	unsigned ne = 0;
	if (errinj) {
		snprintf(env, sizeof(env), "WM_ERRINJ=%s", errinj);
		envv[ne++] = env;
	}
	for (unsigned i = 0; i < 4 && ow_extra_env[i]; i++)
		envv[ne++] = ow_extra_env[i];
	/* the worlds make hundreds of calls with one key: no rate limit in the way */
	const char *args[16] = {"--key-rate-rps", "1000000", "--key-rate-burst", "1000000"};
	for (unsigned i = 0; i < 10 && ow_extra_args[i]; i++)
		args[4 + i] = ow_extra_args[i];
	cr_assert_eq(wm_start(&x->p, args, envv), 0, "wm-shard did not start (logs in %s)", x->p.dir);
	x->port = x->p.port;
}

void ow_start(struct oworld *x, const char *errinj, int est_units, int stk_units)
{
	memset(x, 0, sizeof(*x));
	wm_proc_init(&x->p);
	ow_restart(x, errinj);
	ow_build(x, x->port, est_units, stk_units, "FR", "DE");
}

void ow_build(struct oworld *x, int port, int est_units, int stk_units, const char *stock_cc, const char *dest)
{
	x->port = port;
	snprintf(x->stock_cc, sizeof(x->stock_cc), "%s", stock_cc);
	snprintf(x->dest, sizeof(x->dest), "%s", dest);
	tc_partner_live(port, "Estate", "FR", "[\"originator\"]", "\"originator_type\":\"estate\"", x->est);
	tc_partner_live(port, "Stockist", "FR", "[\"originator\"]", "\"originator_type\":\"stock\"", x->stk);
	tc_partner_live(port, "Shop", "DE", "[\"seller\"]", NULL, x->sel);
	tc_key_for(port, x->est, x->kest);
	tc_key_for(port, x->stk, x->kstk);
	tc_key_for(port, x->sel, x->ksel);
	char wname[64]; /* one wine (and producer) per world of a cluster */
	snprintf(wname, sizeof(wname), "Estate Rouge%s%s", strcmp(stock_cc, "FR") ? " " : "",
		 strcmp(stock_cc, "FR") ? stock_cc : "");
	tc_pub_wine_of(port, wname, x->est, "wine", x->w1);
	json_decref(tc_offer(port, x->kest, x->w1,
			     "\"seller_price\":10.00,\"qty_available\":0,\"incoterm\":\"EXW\",\"status\":\"active\","
			     "\"network_shareable\":true",
			     201, x->of_est));
	json_decref(tc_offer(port, x->kstk, x->w1,
			     "\"seller_price\":11.00,\"qty_available\":0,\"incoterm\":\"EXW\",\"status\":\"active\","
			     "\"network_shareable\":true",
			     201, x->of_stk));
	location(port, x->kest, "Estate cellar", x->stock_cc, x->loc_est);
	location(port, x->kstk, "Stockist warehouse", x->stock_cc, x->loc_stk);
	level(port, x->kest, x->of_est, x->loc_est, est_units, x->lv_est);
	level(port, x->kstk, x->of_stk, x->loc_stk, stk_units, x->lv_stk);
}

const char *ow_consumer_email;

/* The body with a consumer: ow_consumer_email, else one derived from the
 * Idempotency-Key (a retry must send the same body), else a new one. */
void ow_body_for(const struct oworld *x, int qty, const char *extra, const char *idem, char *out, size_t size)
{
	/* a consumer of its own per body unless a test names one: the volume
	 * caps count a consumer's orders (engine/orders/consumer_volume.c) */
	static unsigned n;
	char email[96];
	unsigned long h = 5381;
	for (const char *p = idem; p && *p; p++)
		h = h * 33 + (unsigned char)*p;
	if (ow_consumer_email)
		snprintf(email, sizeof(email), "%s", ow_consumer_email);
	else if (idem)
		snprintf(email, sizeof(email), "erika+k%lx@example.de", h);
	else
		snprintf(email, sizeof(email), "erika+%d.%u@example.de", (int)getpid(), n++);
	snprintf(out, size,
		 "{\"channel\":\"webshop_connect\",\"destination_country\":\"%s\",\"consumer\":{\"name\":\"Erika "
		 "Mustermann\",\"email\":\"%s\",\"address\":{%s}},\"lines\":[{\"sku\":\"%s\",\"qty\":%d,"
		 "\"box_units\":12}]%s%s}",
		 x->dest[0] ? x->dest : "DE", email, address_in(x->dest[0] ? x->dest : "DE"), x->w1, qty,
		 extra ? "," : "", extra ? extra : "");
}

void ow_body(const struct oworld *x, int qty, const char *extra, char *out, size_t size)
{
	ow_body_for(x, qty, extra, NULL, out, size);
}

json_t *ow_order(struct oworld *x, int qty, const char *extra, const char *idem, int *status)
{
	char body[2048], h[512];
	ow_body_for(x, qty, extra, idem, body, sizeof(body));
	int n = snprintf(h, sizeof(h), "Authorization: Bearer %s\r\n", x->ksel);
	if (idem)
		snprintf(h + n, sizeof(h) - (size_t)n, "Idempotency-Key: %s\r\n", idem);
	struct http_resp r;
	cr_assert_eq(http_do(x->port, "POST", "/v1/orders", h, body, &r), 0, "POST /v1/orders: no response");
	json_error_t e;
	json_t *j = json_loadb(r.body, r.body_len, 0, &e);
	cr_assert_not_null(j, "POST /v1/orders: not JSON: %s", r.body);
	*status = r.status;
	http_resp_free(&r);
	return j;
}

int ow_order_try(struct oworld *x, int qty, const char *extra, const char *idem, json_t **out)
{
	char body[2048], h[512];
	ow_body_for(x, qty, extra, idem, body, sizeof(body));
	int n = snprintf(h, sizeof(h), "Authorization: Bearer %s\r\n", x->ksel);
	if (idem)
		snprintf(h + n, sizeof(h) - (size_t)n, "Idempotency-Key: %s\r\n", idem);
	struct http_resp r;
	*out = NULL;
	if (http_do(x->port, "POST", "/v1/orders", h, body, &r))
		return -1; /* the connection closed unanswered: the shard died */
	json_error_t e;
	json_t *j = json_loadb(r.body, r.body_len, 0, &e);
	cr_assert_not_null(j, "POST /v1/orders: not JSON (%d): %s", r.status, r.body);
	int status = r.status;
	http_resp_free(&r);
	*out = j;
	return status;
}

json_t *ow_get(struct oworld *x, const char *path) { return tc_expect(x->port, "GET", path, NULL, NULL, 200); }

void ow_level(struct oworld *x, const char *level_id, long long *reserved, long long *allocated, long long *on_hand)
{
	char path[128];
	snprintf(path, sizeof(path), "/v1/inventory?location_id=");
	json_t *j = tc_expect(x->port, "GET", "/v1/inventory?page_size=200", NULL, NULL, 200);
	json_t *data = json_object_get(j, "data"), *lv;
	size_t i;
	int found = 0;
	json_array_foreach(data, i, lv)
	{
		if (!strcmp(tc_jstr(lv, "id"), level_id)) {
			*reserved = json_integer_value(json_object_get(lv, "reserved"));
			*allocated = json_integer_value(json_object_get(lv, "allocated"));
			*on_hand = json_integer_value(json_object_get(lv, "on_hand"));
			found = 1;
		}
	}
	cr_assert(found, "level %s not listed", level_id);
	json_decref(j);
}

void ow_level_wait(struct oworld *x, const char *level_id, long long want_reserved, long long want_allocated,
		   long long *reserved, long long *allocated)
{
	long long on_hand;
	for (int t = 0; t < 300; t++) {
		ow_level(x, level_id, reserved, allocated, &on_hand);
		if (*reserved == want_reserved && *allocated == want_allocated)
			return;
		usleep(50 * 1000);
	}
}

long long ow_cents(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);
	cr_assert(json_is_number(v), "%s is not a number", k);
	return llround(json_number_value(v) * 100.0);
}

void ow_source(struct oworld *x, const char *name, const char *price, int units, struct ow_src *out)
{
	char members[256], loc_name[96];
	memset(out, 0, sizeof(*out));
	tc_partner_live(x->port, name, "FR", "[\"originator\"]", "\"originator_type\":\"stock\"", out->id);
	tc_key_for(x->port, out->id, out->key);
	snprintf(members, sizeof(members),
		 "\"seller_price\":%s,\"qty_available\":0,\"incoterm\":\"EXW\",\"status\":\"active\","
		 "\"network_shareable\":true",
		 price);
	json_decref(tc_offer(x->port, out->key, x->w1, members, 201, out->offer));
	snprintf(loc_name, sizeof(loc_name), "%s warehouse", name);
	location(x->port, out->key, loc_name, x->stock_cc[0] ? x->stock_cc : "FR", out->loc);
	level(x->port, out->key, out->offer, out->loc, units, out->lv);
}

void ow_add_stock(struct oworld *x, int stockist, const char *cc, int units, char *level_out)
{
	char loc[64];
	const char *key = stockist ? x->kstk : x->kest;
	location(x->port, key, stockist ? "Stockist annex" : "Estate annex", cc, loc);
	level(x->port, key, stockist ? x->of_stk : x->of_est, loc, units, level_out);
}

void ow_ago(long ago_s, char out[40])
{
	time_t t = time(NULL) - ago_s;
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(out, 40, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* The status of leg i of order id (the platform's view). */
static void leg_status_of(struct oworld *x, const char *id, size_t i, char *out, size_t n)
{
	char path[160];
	snprintf(path, sizeof(path), "/v1/orders/%s", id);
	json_t *o = ow_get(x, path);
	const char *s = tc_jstr(json_array_get(json_object_get(o, "fulfillments"), i), "status");
	snprintf(out, n, "%s", s ? s : "?");
	json_decref(o);
}

void ow_deliver(struct oworld *x, const char *id, unsigned legs, long ago_s)
{
	char path[320], body[400], at[40], ls[32];
	snprintf(path, sizeof(path), "/v1/orders/%s", id);
	json_t *o = ow_get(x, path);
	json_t *all = json_object_get(o, "fulfillments");
	ow_ago(ago_s, at);
	for (size_t i = 0; i < json_array_size(all) && i < 32; i++) {
		if (!(legs & (1u << i)))
			continue;
		json_t *l = json_array_get(all, i);
		const char *key = !strcmp(tc_jstr(l, "fulfiller_id"), x->est) ? x->kest : x->kstk;
		int st;
		snprintf(path, sizeof(path), "/v1/orders/%s/fulfillments/%s/ship", id, tc_jstr(l, "leg_id"));
		json_decref(tc_call(x->port, "POST", path, key, NULL, &st));
		cr_assert(st == 200 || st == 202, "ship %s: %d", path, st);
		for (int t = 0; st == 202 && t < 400; t++) { /* stock on another shard: shipping, then fulfilled */
			leg_status_of(x, id, i, ls, sizeof(ls));
			if (strcmp(ls, "shipping"))
				break;
			usleep(25 * 1000);
		}
		snprintf(path, sizeof(path), "/v1/orders/%s/fulfillments/%s/tracking", id, tc_jstr(l, "leg_id"));
		snprintf(body, sizeof(body),
			 "{\"scan_id\":\"d%zu\",\"type\":\"delivered\",\"occurred_at\":\"%s\",\"carrier\":\"DHL\","
			 "\"tracking_number\":\"T%zu\"}",
			 i, at, i);
		json_decref(tc_expect(x->port, "POST", path, key, body, 201));
	}
	json_decref(o);
}

json_t *ow_order_replicated(struct oworld *x, int qty)
{
	int st = 0;
	json_t *j = NULL;
	for (int t = 0; t < 250; t++) {
		j = ow_order(x, qty, NULL, NULL, &st);
		if (st != 422)
			break;
		json_decref(j); /* the destination's replica has not seen the stock yet */
		usleep(20 * 1000);
	}
	cr_assert_eq(st, 201, "order: %d", st);
	return j;
}
