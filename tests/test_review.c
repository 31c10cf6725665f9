/*
 * test_review.c -- tier 4 of wine dedup over HTTP against real wm-shard
 * processes: a candidate at ingest opens a pending review in the same
 * transaction; operators list, confirm (merge: candidate enriched, new
 * wine archived with merged_into, wine.matched tier 4) or reject it; a
 * decided review is final; partners may not see the queue; reviews
 * survive kill -9.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/api_client.h"
#include "tests/harness.h"
#include "tests/wm_test.h"

/* One request as `key` (NULL: the operator key) expecting `want`; the body. */
static json_t *expect(int port, const char *method, const char *path, const char *key, const char *body, int want)
{
	char h[256] = "";
	if (key)
		snprintf(h, sizeof(h), "Authorization: Bearer %s\r\n", key);
	struct http_resp r;
	cr_assert_eq(http_do(port, method, path, key ? h : NULL, body, &r), 0, "%s %s: no response", method, path);
	json_error_t e;
	json_t *j = json_loadb(r.body, r.body_len, 0, &e);
	cr_assert_not_null(j, "%s %s: body is not JSON (%d): %s", method, path, r.status, r.body);
	cr_assert_eq(r.status, want, "%s %s: got %d, want %d: %s", method, path, r.status, want, r.body);
	http_resp_free(&r);
	return j;
}

static void expect_code(int port, const char *method, const char *path, const char *body, int want, const char *code)
{
	json_t *j = expect(port, method, path, NULL, body, want);
	cr_assert_str_eq(tc_jstr(j, "code"), code);
	json_decref(j);
}

/* Penfolds Grange 2018 (the existing wine, id into existing) then 2017 with
 * extra members and a label image: a tier-3 candidate.  The review id. */
static void candidate_pair(int port, const char *cuvee, char *existing, char *created, char *review, char *media)
{
	char body[600];
	json_t *m = expect(port, "POST", "/v1/media",
			   NULL, "{\"mime\":\"image/png\",\"size\":1000,\"alt\":\"Front label\",\"role\":\"label_front\"}", 201);
	snprintf(media, 64, "%s", tc_jstr(m, "id"));
	json_decref(m);
	snprintf(body, sizeof(body),
		 "{\"title\":\"Penfolds %s 2018\",\"producer\":{\"name\":\"Penfolds\",\"country\":\"AU\"},\"cuvee\":\"%s\","
		 "\"vintage\":2018,\"volume_in_liters\":0.75}",
		 cuvee, cuvee);
	json_t *j = expect(port, "POST", "/v1/wines", NULL, body, 201);
	snprintf(existing, 64, "%s", tc_jstr(j, "id"));
	json_decref(j);
	snprintf(body, sizeof(body),
		 "{\"title\":\"Penfolds %s 2017\",\"producer\":{\"name\":\"Penfolds\"},\"cuvee\":\"%s\",\"vintage\":2017,"
		 "\"volume_in_liters\":0.75,\"country\":\"AU\",\"colour\":\"red\",\"abv\":14.5,\"main_image\":\"%s\"}",
		 cuvee, cuvee, media);
	j = expect(port, "POST", "/v1/wines", NULL, body, 201);
	json_t *mt = json_object_get(j, "match");
	cr_assert_str_eq(tc_jstr(mt, "result"), "candidate");
	cr_assert_str_eq(tc_jstr(mt, "wine_id"), existing);
	snprintf(created, 64, "%s", tc_jstr(j, "id"));
	json_decref(j);
	/* the review is the newest pending one naming the created wine */
	j = expect(port, "GET", "/v1/wine-reviews?status=pending&page_size=200", NULL, NULL, 200);
	json_t *data = json_object_get(j, "data");
	review[0] = 0;
	size_t i;
	json_t *r;
	json_array_foreach(data, i, r)
	{
		if (!strcmp(tc_jstr(r, "wine_id"), created))
			snprintf(review, 64, "%s", tc_jstr(r, "id"));
	}
	cr_assert(!strncmp(review, "rev_", 4), "no pending review for %s", created);
	json_decref(j);
}

static size_t count(int port, const char *path)
{
	json_t *j = expect(port, "GET", path, NULL, NULL, 200);
	size_t n = json_array_size(json_object_get(j, "data"));
	json_decref(j);
	return n;
}

/* The newest event of a type; caller decrefs. */
static json_t *last_event(int port, const char *type)
{
	char path[128];
	snprintf(path, sizeof(path), "/v1/events?type=%s&page_size=200", type);
	json_t *j = expect(port, "GET", path, NULL, NULL, 200);
	json_t *data = json_object_get(j, "data");
	cr_assert_gt(json_array_size(data), 0, "no %s event", type);
	json_t *e = json_incref(json_array_get(data, json_array_size(data) - 1));
	json_decref(j);
	return e;
}

WM_TEST(review, candidate_opens_a_pending_review_operators_only)
{
	struct wm_proc p;
	tc_start(&p);
	char existing[64], created[64], review[64], media[64], path[160];
	candidate_pair(p.port, "Grange", existing, created, review, media);
	snprintf(path, sizeof(path), "/v1/wine-reviews/%s", review);
	json_t *r = expect(p.port, "GET", path, NULL, NULL, 200);
	cr_assert_str_eq(tc_jstr(r, "candidate_wine_id"), existing);
	cr_assert_str_eq(tc_jstr(r, "wine_id"), created);
	cr_assert_str_eq(tc_jstr(r, "status"), "pending");
	cr_assert_str_eq(tc_jstr(r, "label_media_id"), media);
	cr_assert_eq(json_integer_value(json_object_get(r, "tier")), 3);
	cr_assert(json_is_number(json_object_get(r, "confidence")));
	cr_assert(tc_jstr(r, "reason") && tc_jstr(r, "reason")[0]);
	cr_assert(json_is_null(json_object_get(r, "decided_at")));
	json_decref(r);
	json_t *e = last_event(p.port, "review.opened");
	cr_assert_str_eq(tc_jstr(json_object_get(e, "payload"), "id"), review);
	json_decref(e);
	cr_assert_eq(count(p.port, "/v1/wine-reviews"), 1);
	cr_assert_eq(count(p.port, "/v1/wine-reviews?status=confirmed"), 0);
	expect_code(p.port, "GET", "/v1/wine-reviews?status=maybe", NULL, 400, "invalid_filter");
	expect_code(p.port, "GET", "/v1/wine-reviews/rev_01M7YD76420001QQVSYV", NULL, 404, "not_found");
	expect_code(p.port, "POST", "/v1/wine-reviews/rev_01M7YD76420001QQVSYV/reject", NULL, 404, "not_found");
	/* a new wine (no candidate) and a match open no review */
	json_decref(expect(p.port, "POST", "/v1/wines", NULL,
			   "{\"title\":\"Hill of Grace 2018\",\"producer\":{\"name\":\"Henschke\"},\"cuvee\":\"Hill of Grace\","
			   "\"vintage\":2018,\"volume_in_liters\":0.75,\"country\":\"AU\"}",
			   201));
	cr_assert_eq(count(p.port, "/v1/wine-reviews"), 1);
	/* partners may not see the queue */
	json_t *pt = expect(p.port, "POST", "/v1/partners", NULL,
			    "{\"legal_name\":\"Estate\",\"country\":\"FR\",\"roles\":[\"originator\"],\"originator_type\":\"estate\"}",
			    201);
	char body[160], key[160];
	snprintf(body, sizeof(body), "{\"entity_id\":\"%s\"}", tc_jstr(pt, "id"));
	json_decref(pt);
	json_t *k = expect(p.port, "POST", "/api/keys", NULL, body, 201);
	snprintf(key, sizeof(key), "%s", tc_jstr(k, "key"));
	json_decref(k);
	json_decref(expect(p.port, "GET", "/v1/wine-reviews", key, NULL, 403));
	json_decref(expect(p.port, "GET", path, key, NULL, 403));
	snprintf(path, sizeof(path), "/v1/wine-reviews/%s/confirm", review);
	json_decref(expect(p.port, "POST", path, key, NULL, 403));
	wm_proc_cleanup(&p);
}

WM_TEST(review, confirm_merges_into_the_candidate_and_is_final)
{
	struct wm_proc p;
	tc_start(&p);
	char existing[64], created[64], review[64], media[64], path[160];
	candidate_pair(p.port, "Grange", existing, created, review, media);
	snprintf(path, sizeof(path), "/v1/wine-reviews/%s/confirm", review);
	json_t *r = expect(p.port, "POST", path, NULL, NULL, 200);
	cr_assert_str_eq(tc_jstr(r, "status"), "confirmed");
	cr_assert(tc_jstr(r, "decided_at") && tc_jstr(r, "decided_by"));
	json_decref(r);
	/* the candidate gained what it lacked, kept what it had */
	snprintf(path, sizeof(path), "/v1/wines/%s", existing);
	json_t *w = expect(p.port, "GET", path, NULL, NULL, 200);
	cr_assert_str_eq(tc_jstr(w, "colour"), "red");
	cr_assert_str_eq(tc_jstr(w, "main_image"), media);
	cr_assert_eq(json_integer_value(json_object_get(w, "vintage")), 2018, "nothing overwritten");
	cr_assert_str_eq(tc_jstr(w, "status"), "draft");
	json_decref(w);
	/* the new wine is archived and says where it went */
	snprintf(path, sizeof(path), "/v1/wines/%s", created);
	w = expect(p.port, "GET", path, NULL, NULL, 200);
	cr_assert_str_eq(tc_jstr(w, "status"), "archived");
	cr_assert_str_eq(tc_jstr(w, "merged_into"), existing);
	json_decref(w);
	json_t *e = last_event(p.port, "wine.matched");
	json_t *pl = json_object_get(e, "payload");
	cr_assert_str_eq(tc_jstr(pl, "wine_id"), existing);
	cr_assert_str_eq(tc_jstr(pl, "merged"), created);
	cr_assert_eq(json_integer_value(json_object_get(json_object_get(pl, "match"), "tier")), 4);
	json_decref(e);
	e = last_event(p.port, "review.confirmed");
	cr_assert_str_eq(tc_jstr(json_object_get(e, "payload"), "id"), review);
	json_decref(e);
	e = last_event(p.port, "wine.archived");
	cr_assert_str_eq(tc_jstr(json_object_get(e, "payload"), "id"), created);
	json_decref(e);
	/* decided once only, either way */
	snprintf(path, sizeof(path), "/v1/wine-reviews/%s/confirm", review);
	expect_code(p.port, "POST", path, NULL, 409, "review_decided");
	snprintf(path, sizeof(path), "/v1/wine-reviews/%s/reject", review);
	expect_code(p.port, "POST", path, NULL, 409, "review_decided");
	cr_assert_eq(count(p.port, "/v1/wine-reviews?status=confirmed"), 1);
	cr_assert_eq(count(p.port, "/v1/wine-reviews?status=pending"), 0);
	/* a patch of the archived wine may not drop merged_into (read-only member) */
	json_t *j = expect(p.port, "POST", "/v1/wines", NULL,
			   "{\"title\":\"x\",\"producer\":{\"name\":\"x\"},\"merged_into\":\"wine_x\"}", 422);
	json_decref(j);
	wm_proc_cleanup(&p);
}

WM_TEST(review, reject_keeps_both_and_survives_kill9)
{
	struct wm_proc p;
	tc_start(&p);
	char existing[64], created[64], review[64], media[64], path[160];
	candidate_pair(p.port, "Grange", existing, created, review, media);
	char e2[64], c2[64], review2[64], m2[64];
	candidate_pair(p.port, "Bin 389", e2, c2, review2, m2);
	snprintf(path, sizeof(path), "/v1/wine-reviews/%s/reject", review);
	json_t *r = expect(p.port, "POST", path, NULL, NULL, 200);
	cr_assert_str_eq(tc_jstr(r, "status"), "rejected");
	json_decref(r);
	json_t *e = last_event(p.port, "review.rejected");
	cr_assert_str_eq(tc_jstr(json_object_get(e, "payload"), "id"), review);
	json_decref(e);
	expect_code(p.port, "POST", path, NULL, 409, "review_decided");
	snprintf(path, sizeof(path), "/v1/wines/%s", created);
	json_t *w = expect(p.port, "GET", path, NULL, NULL, 200);
	cr_assert_str_eq(tc_jstr(w, "status"), "draft", "a rejected candidate stays a wine of its own");
	cr_assert_null(json_object_get(w, "merged_into"));
	json_decref(w);
	/* kill -9: both reviews, their statuses and the status index come back */
	wm_kill9(&p);
	cr_assert_eq(wm_start(&p, NULL, NULL), 0);
	snprintf(path, sizeof(path), "/v1/wine-reviews/%s", review);
	r = expect(p.port, "GET", path, NULL, NULL, 200);
	cr_assert_str_eq(tc_jstr(r, "status"), "rejected");
	json_decref(r);
	cr_assert_eq(count(p.port, "/v1/wine-reviews?status=pending"), 1);
	cr_assert_eq(count(p.port, "/v1/wine-reviews?status=rejected"), 1);
	/* the pending one is still decidable after recovery */
	snprintf(path, sizeof(path), "/v1/wine-reviews/%s/confirm", review2);
	r = expect(p.port, "POST", path, NULL, NULL, 200);
	cr_assert_str_eq(tc_jstr(r, "status"), "confirmed");
	json_decref(r);
	wm_kill9(&p);
	cr_assert_eq(wm_start(&p, NULL, NULL), 0);
	snprintf(path, sizeof(path), "/v1/wines/%s", c2);
	w = expect(p.port, "GET", path, NULL, NULL, 200);
	cr_assert_str_eq(tc_jstr(w, "merged_into"), e2);
	json_decref(w);
	cr_assert_eq(count(p.port, "/v1/wine-reviews?status=confirmed"), 1);
	wm_proc_cleanup(&p);
}
