/*
 * test_wine_hidden.c -- an ingest never reaches a wine its sender may not
 * read (issue: read-path leaks, item 1).
 *
 * An estate keeps a draft with a GTIN, an LWIN and a natural key.  Another
 * originator sends wines that meet that draft by each of the three keys:
 * every answer is 202 pending_review naming nothing of the draft, the
 * draft is byte for byte unchanged, POST /v1/wines/match answers exactly as
 * for a wine nobody has, and the platform finds each submission in its
 * review queue; confirming one enriches the draft as a tier 4 match would,
 * rejecting one drops it.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/api_client.h"
#include "tests/harness.h"
#include "tests/wm_test.h"

#define DRAFT_BODY                                                                                             \
	"{\"title\":\"Domaine Cache Cuvee Secrete 2020\",\"producer\":{\"name\":\"Domaine Cache\",\"country\":\"FR\"}," \
	"\"cuvee\":\"Cuvee Secrete\",\"vintage\":2020,\"volume_in_liters\":0.75,\"gtin\":\"4006381333931\","    \
	"\"lwin\":\"1098765\"}"

/* The raw body of a GET as the operator. */
static char *raw_get(int port, const char *path)
{
	struct http_resp r;
	cr_assert_eq(http_do(port, "GET", path, NULL, NULL, &r), 0);
	cr_assert_eq(r.status, 200, "%s: %d %s", path, r.status, r.body);
	char *b = strdup(r.body);
	http_resp_free(&r);
	return b;
}

/* Send an ingest that meets the hidden draft; it must be pending and name
 * nothing of it.  The review id into review (>= 64 bytes). */
static void expect_pending(int port, const char *key, const char *body, const char *draft, char *review)
{
	json_t *j = tc_expect(port, "POST", "/v1/wines", key, body, 202);
	char *dump = json_dumps(j, JSON_COMPACT);
	cr_assert_null(strstr(dump, draft), "the answer names the hidden draft: %s", dump);
	cr_assert_null(strstr(dump, "Domaine Cache"), "the answer shows the hidden draft: %s", dump);
	cr_assert_str_eq(tc_jstr(j, "status"), "pending_review");
	json_t *m = json_object_get(j, "match");
	cr_assert_str_eq(tc_jstr(m, "result"), "pending_review");
	cr_assert(json_is_null(json_object_get(m, "wine_id")), "%s", dump);
	cr_assert(json_is_null(json_object_get(m, "tier")), "%s", dump);
	const char *rid = tc_jstr(j, "review_id");
	cr_assert(rid && !strncmp(rid, "rev_", 4), "%s", dump);
	snprintf(review, 64, "%s", rid);
	free(dump);
	json_decref(j);
}

WM_TEST(wine_hidden, ingest_never_reaches_a_hidden_draft, .timeout = 60)
{
	struct wm_proc p;
	tc_start(&p);
	char estate[64], other[64], ke[128], ko[128], draft[64], path[128];
	tc_partner_live(p.port, "Domaine Cache", "FR", "[\"originator\"]", "\"originator_type\":\"estate\"", estate);
	tc_partner_live(p.port, "Rival Stock", "FR", "[\"originator\"]", "\"originator_type\":\"stock\"", other);
	tc_key_for(p.port, estate, ke);
	tc_key_for(p.port, other, ko);
	json_t *j = tc_expect(p.port, "POST", "/v1/wines", ke, DRAFT_BODY, 201);
	snprintf(draft, sizeof(draft), "%s", tc_jstr(j, "id"));
	json_decref(j);
	snprintf(path, sizeof(path), "/v1/wines/%s", draft);
	char *before = raw_get(p.port, path);
	json_decref(tc_expect(p.port, "GET", path, ko, NULL, 404)); /* hidden from the rival */

	/* by GTIN, by LWIN (with vintage and volume), by natural key */
	char r_gtin[64], r_lwin[64], r_nk[64];
	expect_pending(p.port, ko,
		       "{\"title\":\"A\",\"producer\":{\"name\":\"Someone\",\"country\":\"FR\"},\"gtin\":\"4006381333931\","
		       "\"vintage\":2020,\"volume_in_liters\":0.75,\"description\":\"Injected by GTIN\"}",
		       draft, r_gtin);
	expect_pending(p.port, ko,
		       "{\"title\":\"B\",\"producer\":{\"name\":\"Another\",\"country\":\"FR\"},\"lwin\":\"1098765\","
		       "\"vintage\":2020,\"volume_in_liters\":0.75,\"description\":\"Injected by LWIN\"}",
		       draft, r_lwin);
	expect_pending(p.port, ko,
		       "{\"title\":\"C\",\"producer\":{\"name\":\"Domaine Cache\",\"country\":\"FR\"},"
		       "\"cuvee\":\"Cuvee Secrete\",\"vintage\":2020,\"volume_in_liters\":0.75,"
		       "\"description\":\"Injected by natural key\"}",
		       draft, r_nk);
	char *after = raw_get(p.port, path);
	cr_assert_str_eq(after, before, "the hidden draft changed");
	free(after);

	/* match answers as for a wine nobody has (byte for byte) */
	struct http_resp hidden, unknown;
	char hdr[200];
	snprintf(hdr, sizeof(hdr), "Authorization: Bearer %s\r\n", ko);
	cr_assert_eq(http_do(p.port, "POST", "/v1/wines/match", hdr,
			     "{\"title\":\"A\",\"producer\":{\"name\":\"Someone\",\"country\":\"FR\"},"
			     "\"gtin\":\"4006381333931\"}",
			     &hidden),
		     0);
	cr_assert_eq(http_do(p.port, "POST", "/v1/wines/match", hdr,
			     "{\"title\":\"A\",\"producer\":{\"name\":\"Someone\",\"country\":\"FR\"},"
			     "\"gtin\":\"5901234123457\"}",
			     &unknown),
		     0);
	cr_assert_eq(hidden.status, unknown.status);
	cr_assert_str_eq(hidden.body, unknown.body, "match tells a hidden draft from an unknown wine");
	http_resp_free(&hidden);
	http_resp_free(&unknown);

	/* the platform sees the three submissions */
	j = tc_expect(p.port, "GET", "/v1/wine-reviews?status=pending", NULL, NULL, 200);
	size_t i, seen = 0;
	json_t *r;
	json_array_foreach(json_object_get(j, "data"), i, r)
	{
		if (!strcmp(tc_jstr(r, "kind"), "submission")) {
			cr_assert_str_eq(tc_jstr(r, "candidate_wine_id"), draft);
			cr_assert_str_eq(tc_jstr(r, "submitted_by"), other);
			cr_assert(json_is_null(json_object_get(r, "wine_id")));
			seen++;
		}
	}
	cr_assert_eq(seen, 3, "submission reviews: %zu", seen);
	json_decref(j);

	/* reject one: nothing changes; confirm another: the draft is enriched */
	char rp[128];
	snprintf(rp, sizeof(rp), "/v1/wine-reviews/%s/reject", r_lwin);
	json_decref(tc_expect(p.port, "POST", rp, NULL, NULL, 200));
	after = raw_get(p.port, path);
	cr_assert_str_eq(after, before, "a rejected submission changed the draft");
	free(after);
	snprintf(rp, sizeof(rp), "/v1/wine-reviews/%s/confirm", r_gtin);
	j = tc_expect(p.port, "POST", rp, NULL, NULL, 200);
	cr_assert_str_eq(tc_jstr(j, "status"), "confirmed");
	json_decref(j);
	j = tc_expect(p.port, "GET", path, NULL, NULL, 200);
	cr_assert_str_eq(tc_jstr(j, "description"), "Injected by GTIN", "confirming did not enrich the draft");
	cr_assert_str_eq(tc_jstr(j, "title"), "Domaine Cache Cuvee Secrete 2020", "enrichment overwrote a member");
	json_decref(j);
	json_decref(tc_expect(p.port, "GET", path, ko, NULL, 404)); /* still the estate's draft */

	/* the estate itself still matches and enriches its own draft */
	j = tc_expect(p.port, "POST", "/v1/wines", ke,
		      "{\"title\":\"X\",\"producer\":{\"name\":\"Domaine Cache\",\"country\":\"FR\"},"
		      "\"gtin\":\"4006381333931\",\"vintage\":2020,\"volume_in_liters\":0.75,\"abv\":13}",
		      200);
	cr_assert_str_eq(tc_jstr(json_object_get(j, "match"), "wine_id"), draft);
	json_decref(j);

	/* survives a restart: the pending review is still there */
	wm_kill9(&p);
	cr_assert_eq(wm_start(&p, NULL, NULL), 0);
	snprintf(rp, sizeof(rp), "/v1/wine-reviews/%s", r_nk);
	j = tc_expect(p.port, "GET", rp, NULL, NULL, 200);
	cr_assert_str_eq(tc_jstr(j, "status"), "pending");
	cr_assert_str_eq(tc_jstr(j, "kind"), "submission");
	json_decref(j);
	free(before);
	wm_proc_cleanup(&p);
}
