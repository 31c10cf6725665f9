/*
 * test_refreload.c -- POST/GET /v1/admin/reference-data against real
 * wm-shard processes (issue 6): an uploaded version with a changed DE VAT
 * rate becomes active at once (GET /v1/tax-context shows it), a malformed
 * upload is a 422 naming file:line and changes nothing, the same version
 * twice is a 409, a partner key gets 403, and the uploaded version survives
 * kill -9 (WAL replay) and a snapshot + restart, winning over the
 * --data-ref-dir files.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/harness.h"
#include "tests/wm_test.h"

static json_t *call(int port, const char *method, const char *path, const char *key, const char *body, int want)
{
	char h[256] = "";
	if (key)
		snprintf(h, sizeof(h), "Authorization: Bearer %s\r\n", key);
	struct http_resp r;
	cr_assert_eq(http_do(port, method, path, key ? h : NULL, body, &r), 0, "%s %s: no response", method, path);
	cr_assert_eq(r.status, want, "%s %s: got %d, want %d: %.600s", method, path, r.status, want, r.body);
	json_error_t e;
	json_t *j = json_loadb(r.body, r.body_len, 0, &e);
	cr_assert_not_null(j, "%s %s: not JSON: %s", method, path, r.body);
	http_resp_free(&r);
	return j;
}

static const char *jstr(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);
	return json_is_string(v) ? json_string_value(v) : "";
}

/* A file of data/ as a malloc'd string. */
static char *read_data(const char *name)
{
	const char *src = getenv("WM_SRC_DIR");
	char path[600];
	snprintf(path, sizeof(path), "%s/data/%s", src ? src : ".", name);
	FILE *f = fopen(path, "rb");
	cr_assert_not_null(f, "%s", path);
	char *buf = calloc(1, 1 << 20);
	cr_assert_not_null(buf);
	size_t n = fread(buf, 1, (1 << 20) - 1, f);
	fclose(f);
	buf[n] = 0;
	return buf;
}

/* Replace the first occurrence of `from` in *s by `to`. */
static void replace(char **s, const char *from, const char *to)
{
	char *p = strstr(*s, from);
	cr_assert_not_null(p, "%s not found", from);
	size_t pre = (size_t)(p - *s), fl = strlen(from), tl = strlen(to), rest = strlen(p + fl);
	char *o = malloc(pre + tl + rest + 1);
	cr_assert_not_null(o);
	memcpy(o, *s, pre);
	memcpy(o + pre, to, tl);
	memcpy(o + pre + tl, p + fl, rest + 1);
	free(*s);
	*s = o;
}

/* The upload body for a version; vat is the vat.tsv text to send. */
static char *upload(const char *version, const char *vat)
{
	char *ex = read_data("excise.tsv"), *fr = read_data("freight.tsv"), *fx = read_data("fx.tsv");
	json_t *b = json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:s}}", "version", version, "effective_date", "2026-01-01",
			      "files", "vat.tsv", vat, "excise.tsv", ex, "freight.tsv", fr, "fx.tsv", fx);
	cr_assert_not_null(b);
	char *s = json_dumps(b, JSON_COMPACT);
	json_decref(b);
	free(ex);
	free(fr);
	free(fx);
	return s;
}

/* DE standard VAT rate as GET /v1/tax-context reports it, and the version. */
static double de_vat(int port, char *version, size_t vsize)
{
	json_t *j = call(port, "GET", "/v1/tax-context?origin=FR&destination=DE", NULL, NULL, 200);
	double v = json_number_value(json_object_get(json_object_get(j, "tax_classification"), "vat_rate_percent"));
	snprintf(version, vsize, "%s", jstr(json_object_get(j, "reference_data"), "version"));
	json_decref(j);
	return v;
}

static void expect_active(int port, const char *version, const char *source, double vat)
{
	char v[64];
	cr_assert_eq(de_vat(port, v, sizeof(v)), vat);
	cr_assert_str_eq(v, version);
	json_t *j = call(port, "GET", "/v1/admin/reference-data", NULL, NULL, 200);
	cr_assert_str_eq(jstr(j, "version"), version);
	cr_assert_str_eq(jstr(j, "source"), source);
	json_t *rows = json_object_get(j, "rows");
	cr_assert_gt(json_integer_value(json_object_get(rows, "vat.tsv")), 20);
	cr_assert_gt(json_integer_value(json_object_get(rows, "excise.tsv")), 20);
	cr_assert_gt(json_integer_value(json_object_get(rows, "freight.tsv")), 5);
	cr_assert_gt(json_integer_value(json_object_get(rows, "fx.tsv")), 3);
	if (!strcmp(source, "api"))
		cr_assert(json_is_string(json_object_get(j, "loaded_at")));
	else
		cr_assert(json_is_null(json_object_get(j, "loaded_at")));
	json_decref(j);
}

static size_t count_events(int port, const char *type)
{
	char path[128];
	snprintf(path, sizeof(path), "/v1/events?type=%s&page_size=200", type);
	json_t *j = call(port, "GET", path, NULL, NULL, 200);
	size_t n = json_array_size(json_object_get(j, "data"));
	json_decref(j);
	return n;
}

/* A live seller partner and a key of it. */
static void partner_key(int port, char *key)
{
	json_t *j = call(port, "POST", "/v1/partners", NULL,
			 "{\"legal_name\":\"Seller One\",\"country\":\"DE\",\"roles\":[\"seller\"]}", 201);
	char id[64], path[128], body[128];
	snprintf(id, sizeof(id), "%s", jstr(j, "id"));
	json_decref(j);
	static const char *const steps[] = {"verified", "roles_enabled", "configured", "integrated", "live"};
	snprintf(path, sizeof(path), "/v1/partners/%s", id);
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		snprintf(body, sizeof(body), "{\"status\":\"%s\"}", steps[i]);
		json_decref(call(port, "PATCH", path, NULL, body, 200));
	}
	snprintf(body, sizeof(body), "{\"entity_id\":\"%s\"}", id);
	j = call(port, "POST", "/api/keys", NULL, body, 201);
	snprintf(key, 128, "%s", jstr(j, "key"));
	json_decref(j);
}

WM_TEST(refreload, upload_switches_validates_and_survives_restarts)
{
	struct wm_proc p;
	wm_proc_init(&p);
	cr_assert_eq(wm_start(&p, NULL, NULL), 0, "logs in %s", p.dir);
	int port = p.port;
	expect_active(port, "2026-11-25.1", "files", 19.0);

	/* a malformed upload (DE row without source) is refused, naming file:line */
	char *vat = read_data("vat.tsv");
	char *bad_vat = strdup(vat);
	replace(&bad_vat, "DE\t-\tdefault\t19\thttps://calculariva.app/en-PH/blog/tipos-de-iva-aplicables-en-2025-segun-los-paises-"
			  "miembros-de-la-union-europea (no 2026 standard-rate change: easytax.co/en/tax-mag/info/eu-new-vat-"
			  "rates-from-2026-what-business-need-to-know)",
		"DE\t-\tdefault\t21\t");
	char *body = upload("2026-01-01.1", bad_vat);
	json_t *j = call(port, "POST", "/v1/admin/reference-data", NULL, body, 422);
	cr_assert_str_eq(jstr(j, "code"), "reference_data_invalid");
	cr_assert(strstr(jstr(j, "detail"), "vat.tsv:15: every figure needs its source and as_of"), "%s",
		  jstr(j, "detail"));
	json_t *e0 = json_array_get(json_object_get(j, "errors"), 0);
	cr_assert_str_eq(jstr(e0, "field"), "files.vat.tsv");
	json_decref(j);
	free(body);
	free(bad_vat);
	/* a bad version name and an unknown file are refused too */
	body = upload("bad version", vat);
	j = call(port, "POST", "/v1/admin/reference-data", NULL, body, 422);
	cr_assert(strstr(jstr(j, "detail"), "version: "), "%s", jstr(j, "detail"));
	json_decref(j);
	free(body);
	json_decref(call(port, "POST", "/v1/admin/reference-data", NULL,
			 "{\"version\":\"x1\",\"effective_date\":\"2026-01-01\",\"files\":{\"version.txt\":\"\"}}", 422));
	expect_active(port, "2026-11-25.1", "files", 19.0);
	cr_assert_eq(count_events(port, "reference_data.loaded"), 0);

	/* a partner key may not upload nor read */
	char pkey[128];
	partner_key(port, pkey);
	replace(&vat, "DE\t-\tdefault\t19\t", "DE\t-\tdefault\t21\t");
	body = upload("2026-01-01.1", vat);
	j = call(port, "POST", "/v1/admin/reference-data", pkey, body, 403);
	json_decref(j);
	json_decref(call(port, "GET", "/v1/admin/reference-data", pkey, NULL, 403));
	expect_active(port, "2026-11-25.1", "files", 19.0);

	/* the operator uploads: active at once, one event */
	j = call(port, "POST", "/v1/admin/reference-data", NULL, body, 200);
	cr_assert_str_eq(jstr(j, "version"), "2026-01-01.1");
	cr_assert_str_eq(jstr(j, "source"), "api");
	json_decref(j);
	expect_active(port, "2026-01-01.1", "api", 21.0);
	cr_assert_eq(count_events(port, "reference_data.loaded"), 1);
	/* the same version again is a conflict */
	j = call(port, "POST", "/v1/admin/reference-data", NULL, body, 409);
	cr_assert_str_eq(jstr(j, "code"), "version_unchanged");
	json_decref(j);
	free(body);

	/* kill -9: the WAL replays the upload, which wins over data/ */
	wm_kill9(&p);
	cr_assert_eq(wm_start(&p, NULL, NULL), 0, "logs in %s", p.dir);
	port = p.port;
	expect_active(port, "2026-01-01.1", "api", 21.0);

	/* a second upload, then snapshot + restart: the newest one is kept */
	replace(&vat, "DE\t-\tdefault\t21\t", "DE\t-\tdefault\t20.5\t");
	body = upload("2026-02-01.1", vat);
	json_decref(call(port, "POST", "/v1/admin/reference-data", NULL, body, 200));
	free(body);
	expect_active(port, "2026-02-01.1", "api", 20.5);
	json_decref(call(port, "POST", "/v1/admin/snapshots", NULL, NULL, 202));
	for (int i = 0; i < 50; i++) {
		j = call(port, "GET", "/v1/admin/snapshots", NULL, NULL, 200);
		int done = json_integer_value(json_object_get(j, "taken")) >= 1;
		json_decref(j);
		if (done)
			break;
		usleep(100000);
	}
	cr_assert_eq(wm_stop(&p), 0);
	cr_assert_eq(wm_start(&p, NULL, NULL), 0, "logs in %s", p.dir);
	port = p.port;
	expect_active(port, "2026-02-01.1", "api", 20.5);
	cr_assert_eq(count_events(port, "reference_data.loaded"), 2);
	/* and once more by kill -9 on top of the snapshot */
	wm_kill9(&p);
	cr_assert_eq(wm_start(&p, NULL, NULL), 0, "logs in %s", p.dir);
	expect_active(p.port, "2026-02-01.1", "api", 20.5);
	free(vat);
	wm_proc_cleanup(&p);
}
