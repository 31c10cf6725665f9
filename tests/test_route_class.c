/*
 * test_route_class.c -- the cluster's routing table (shard-router/
 * route_class.h): every route of the service has a rule, and each kind of
 * rule sends a request where DESIGN.md section 9 says (expected values are
 * written from the design, not read from the table).
 */
#include <stdio.h>
#include <string.h>

#include "engine/edge/route.h"
#include "engine/cluster/route_class.h"
#include "tests/wm_test.h"

/* A concrete path for a pattern: each "{x}" becomes a plausible id. */
static void concrete(const char *pat, char *out, size_t n)
{
	size_t o = 0;
	for (const char *p = pat; *p && o + 32 < n; p++) {
		if (*p == '{') {
			o += (size_t)snprintf(out + o, n - o, "ord_FR_01HZZZZZZZ0000ABCDEF");
			p = strchr(p, '}');
			continue;
		}
		out[o++] = *p;
	}
	out[o] = 0;
}

WM_TEST(route_class, every_route_has_a_rule)
{
	unsigned n = 0;
	for (const struct route *r = api_route_table(); r->pattern; r++, n++) {
		char path[256];
		concrete(r->pattern, path, sizeof(path));
		const struct rc_rule *rule = rc_find(r->method, path, strlen(path));
		cr_assert_not_null(rule, "no cluster rule for %s", r->pattern);
	}
	cr_assert_gt(n, 50);
}

static int kind_of(enum http_method m, const char *path)
{
	const struct rc_rule *r = rc_find(m, path, strlen(path));
	return r ? r->kind : 0;
}

WM_TEST(route_class, kinds_follow_the_design)
{
	cr_assert_eq(kind_of(HTTP_M_GET, "/healthz"), RC_EDGE);
	cr_assert_eq(kind_of(HTTP_M_POST, "/v1/wines"), RC_HOME);
	cr_assert_eq(kind_of(HTTP_M_PATCH, "/v1/offers/off_X"), RC_HOME);
	cr_assert_eq(kind_of(HTTP_M_POST, "/api/keys"), RC_HOME);
	cr_assert_eq(kind_of(HTTP_M_POST, "/v1/orders/quote-calculate"), RC_BODY);
	cr_assert_eq(kind_of(HTTP_M_POST, "/v1/orders"), RC_BODY);
	cr_assert_eq(kind_of(HTTP_M_GET, "/v1/orders"), RC_FANOUT);
	cr_assert_eq(kind_of(HTTP_M_GET, "/v1/orders/ord_FR_X"), RC_PATH_ID);
	cr_assert_eq(kind_of(HTTP_M_POST, "/v1/orders/ord_FR_X/cancel"), RC_PATH_ID);
	cr_assert_eq(kind_of(HTTP_M_GET, "/v1/events"), RC_FANOUT);
	cr_assert_eq(kind_of(HTTP_M_GET, "/v1/inventory/network-snapshot"), RC_HOME); /* its replica has every shard's */
	cr_assert_eq(kind_of(HTTP_M_GET, "/v1/audit"), RC_FANOUT);
	cr_assert_eq(kind_of(HTTP_M_POST, "/v1/holds/h1/release"), RC_FIND);
	cr_assert_eq(kind_of(HTTP_M_POST, "/v1/admin/snapshots"), RC_BROADCAST);
	/* a path the service does not have still goes somewhere (the home's 404) */
	cr_assert_eq(kind_of(HTTP_M_GET, "/v1/nothing-here"), RC_HOME);
	cr_assert_eq(kind_of(HTTP_M_GET, "/elsewhere"), 0);
}

WM_TEST(route_class, countries_from_paths_and_bodies)
{
	char cc[3];
	const char *p = "/v1/orders/ord_DE_01HZZZZZZZ0000ABCDEF/sourcing";
	const struct rc_rule *r = rc_find(HTTP_M_GET, p, strlen(p));
	cr_assert_eq(rc_path_country(r, p, strlen(p), cc), 1);
	cr_assert_str_eq(cc, "DE");
	p = "/v1/orders/not-an-id";
	r = rc_find(HTTP_M_GET, p, strlen(p));
	cr_assert_eq(rc_path_country(r, p, strlen(p), cc), 0);

	p = "/v1/orders/quote-calculate";
	r = rc_find(HTTP_M_POST, p, strlen(p));
	const char *b = "{\"lines\":[],\"destination_country\":\"IT\"}";
	cr_assert_eq(rc_body_country(r, b, strlen(b), cc), 1);
	cr_assert_str_eq(cc, "IT");
	b = "{\"destination_country\":\"it\"}"; /* not a code: left to validation */
	cr_assert_eq(rc_body_country(r, b, strlen(b), cc), 0);
	b = "{\"destination_country\":";
	cr_assert_eq(rc_body_country(r, b, strlen(b), cc), 0);

	p = "/v1/stock-locations";
	r = rc_find(HTTP_M_POST, p, strlen(p));
	b = "{\"name\":\"x\",\"address\":{\"city\":\"Lyon\",\"country\":\"FR\"}}";
	cr_assert_eq(rc_body_country(r, b, strlen(b), cc), 1);
	cr_assert_str_eq(cc, "FR");

	p = "/v1/inventory";
	r = rc_find(HTTP_M_POST, p, strlen(p));
	b = "{\"sku\":\"s\",\"location_id\":\"loc_ES_01HZZZZZZZ0000ABCDEF\"}";
	cr_assert_eq(rc_body_country(r, b, strlen(b), cc), 1);
	cr_assert_str_eq(cc, "ES");
}
