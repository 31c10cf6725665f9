/*
 * test_media.c -- media assets against real wm-shard processes: declare,
 * upload to the signed URL, read metadata and bytes back (PNG, JPEG, WebP);
 * the signature checked with an independent HMAC over the documented
 * message; expired, forged and altered URLs; every create field; the size
 * limit and its clamp to the body limit; unsupported types, lying headers
 * and unreadable headers; a second upload; visibility of pending assets;
 * kill -9 and restart (row from the WAL, bytes and secret from disk);
 * content stored once; a corrupt file reported, never served.
 */
#include <dirent.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tests/api_client.h"
#include "tests/harness.h"
#include "tests/image_fixtures.h"
#include "tests/wm_test.h"
#include "wal/wal.h"

/* ---- helpers ------------------------------------------------------------------ */

static json_t *body_json(const struct http_resp *r)
{
	json_error_t e;
	json_t *j = json_loadb(r->body, r->body_len, 0, &e);
	cr_assert_not_null(j, "response body is not JSON: %s\n%s", e.text, r->body);
	return j;
}

static const char *problem_code(const struct http_resp *r, char *out, size_t size)
{
	out[0] = 0;
	json_t *j = json_loadb(r->body, r->body_len, 0, NULL);
	if (j && tc_jstr(j, "code"))
		snprintf(out, size, "%s", tc_jstr(j, "code"));
	json_decref(j);
	return out;
}

static void start_or_fail(struct wm_proc *p, const char *const *args)
{
	cr_assert_eq(wm_start(p, args, NULL), 0, "wm-shard did not start (logs in %s)", p->dir);
}

/* A request with an explicit key (NULL: the operator key). */
static void call(int port, const char *method, const char *path, const char *key, const char *body,
		 struct http_resp *r)
{
	char h[256] = "";
	if (key)
		snprintf(h, sizeof(h), "Authorization: Bearer %s\r\n", key);
	cr_assert_eq(http_do(port, method, path, key ? h : NULL, body, r), 0, "%s %s: no response", method, path);
}

/* A partner walked to `live` by the operator; its id into out. */
static void create_partner(int port, const char *name, const char *roles_json, char *out)
{
	char body[512];
	snprintf(body, sizeof(body), "{\"legal_name\":\"%s\",\"country\":\"FR\",\"roles\":%s%s}", name, roles_json,
		 strstr(roles_json, "originator") ? ",\"originator_type\":\"estate\"" : "");
	struct http_resp r;
	call(port, "POST", "/v1/partners", NULL, body, &r);
	cr_assert_eq(r.status, 201, "%s", r.body);
	json_t *j = body_json(&r);
	snprintf(out, 64, "%s", tc_jstr(j, "id"));
	json_decref(j);
	http_resp_free(&r);
	static const char *const steps[] = {"verified", "roles_enabled", "configured", "integrated", "live"};
	char path[128];
	snprintf(path, sizeof(path), "/v1/partners/%s", out);
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		snprintf(body, sizeof(body), "{\"status\":\"%s\"}", steps[i]);
		call(port, "PATCH", path, NULL, body, &r);
		cr_assert_eq(r.status, 200, "%s", r.body);
		http_resp_free(&r);
	}
}

/* A secret key with the partner defaults for entity; plaintext into out. */
static void mint_for(int port, const char *entity, char *out)
{
	char body[128];
	snprintf(body, sizeof(body), "{\"entity_id\":\"%s\"}", entity);
	struct http_resp r;
	call(port, "POST", "/api/keys", NULL, body, &r);
	cr_assert_eq(r.status, 201, "%s", r.body);
	json_t *j = body_json(&r);
	snprintf(out, 128, "%s", tc_jstr(j, "key"));
	json_decref(j);
	http_resp_free(&r);
}

struct created {
	char id[64];
	char url[300];    /* the signed upload URL */
	char expires[24]; /* its expires parameter */
	char sig[80];     /* its sig parameter */
};

/* POST /v1/media; the status is returned, the result parsed on 201. */
static int create_media(int port, const char *key, const char *mime, long size, const char *role,
			struct created *out)
{
	char body[512];
	snprintf(body, sizeof(body), "{\"mime\":\"%s\",\"size\":%ld,\"alt\":\"Front label of the 2019 cuvée\","
		 "\"role\":\"%s\",\"filename\":\"label.bin\"}", mime, size, role);
	struct http_resp r;
	call(port, "POST", "/v1/media", key, body, &r);
	int st = r.status;
	if (st == 201) {
		json_t *j = body_json(&r);
		json_t *up = json_object_get(j, "upload");
		cr_assert_str_eq(tc_jstr(j, "status"), "pending");
		cr_assert_str_eq(tc_jstr(j, "mime"), mime);
		cr_assert(json_is_null(json_object_get(j, "url")) && json_is_null(json_object_get(j, "width")));
		cr_assert_null(json_object_get(j, "entity_id"), "the owner is never shown");
		cr_assert_str_eq(tc_jstr(up, "method"), "PUT");
		cr_assert_str_eq(tc_jstr(up, "mime"), mime);
		cr_assert_eq(json_integer_value(json_object_get(up, "max_bytes")), size);
		snprintf(out->id, sizeof(out->id), "%s", tc_jstr(j, "id"));
		snprintf(out->url, sizeof(out->url), "%s", tc_jstr(up, "url"));
		const char *e = strstr(out->url, "expires="), *s = strstr(out->url, "&sig=");
		cr_assert(e && s && s > e, "%s", out->url);
		snprintf(out->expires, sizeof(out->expires), "%.*s", (int)(s - e - 8), e + 8);
		snprintf(out->sig, sizeof(out->sig), "%s", s + 5);
		char prefix[128];
		snprintf(prefix, sizeof(prefix), "/v1/media/%s/content?expires=", out->id);
		cr_assert_eq(strncmp(out->url, prefix, strlen(prefix)), 0, "%s", out->url);
		/* expires_at is the same instant as the signed expires */
		struct tm tm = {0};
		const char *ea = tc_jstr(up, "expires_at");
		cr_assert(ea && strptime(ea, "%Y-%m-%dT%H:%M:%S", &tm), "%s", ea ? ea : "(null)");
		cr_assert_eq((long long)timegm(&tm), atoll(out->expires));
		json_decref(j);
	}
	http_resp_free(&r);
	return st;
}

/* PUT raw bytes (no API key), with a Content-Type line unless ct is NULL. */
static void put_bytes(int port, const char *url, const char *ct, const void *data, size_t len,
		      struct http_resp *r)
{
	int fd = tcp_connect(port);
	cr_assert_geq(fd, 0);
	char head[1024];
	int n = snprintf(head, sizeof(head), "PUT %s HTTP/1.1\r\nHost: test\r\nConnection: close\r\n%s%s%s"
			 "Content-Length: %zu\r\n\r\n", url, ct ? "Content-Type: " : "", ct ? ct : "", ct ? "\r\n" : "",
			 len);
	cr_assert(send(fd, head, (size_t)n, MSG_NOSIGNAL) == n);
	const char *p = data;
	size_t off = 0;
	while (off < len) {
		ssize_t w = send(fd, p + off, len - off, MSG_NOSIGNAL);
		if (w <= 0)
			break; /* the server may answer and close first */
		off += (size_t)w;
	}
	cr_assert_geq(http_read_response(fd, r, 30000), 0, "PUT %s: no response", url);
	close(fd);
}

/* PUT and return the status; the problem code (if any) into code. */
static int put_status(int port, const char *url, const char *ct, const void *data, size_t len, char *code)
{
	struct http_resp r;
	put_bytes(port, url, ct, data, len, &r);
	problem_code(&r, code, 64);
	int st = r.status;
	http_resp_free(&r);
	return st;
}

static void sha256_hex(const void *p, size_t n, char out[65])
{
	unsigned char d[32];
	unsigned int dl = 0;
	cr_assert(EVP_Digest(p, n, d, &dl, EVP_sha256(), NULL));
	for (int i = 0; i < 32; i++)
		sprintf(out + 2 * i, "%02x", d[i]);
}

/* The data directory's signing secret (exactly 32 bytes, mode 0600). */
static void read_secret(const struct wm_proc *p, uint8_t secret[32])
{
	char path[400];
	snprintf(path, sizeof(path), "%s/media/secret.key", p->data_dir);
	struct stat st;
	cr_assert_eq(stat(path, &st), 0, "%s missing", path);
	cr_assert_eq(st.st_size, 32);
	cr_assert_eq(st.st_mode & 0777, 0600, "mode %o", (unsigned)(st.st_mode & 0777));
	FILE *f = fopen(path, "rb");
	cr_assert_not_null(f);
	cr_assert_eq(fread(secret, 1, 32, f), 32u);
	fclose(f);
}

/* HMAC-SHA256 over "id|max_bytes|mime|expires", lower-case hex: the
 * documented scheme, computed here without the module. */
static void forge_sig(const uint8_t secret[32], const char *id, long max_bytes, const char *mime,
		      const char *expires, char out[65])
{
	char msg[256];
	int n = snprintf(msg, sizeof(msg), "%s|%ld|%s|%s", id, max_bytes, mime, expires);
	unsigned char mac[32];
	unsigned int ml = 0;
	cr_assert_not_null(HMAC(EVP_sha256(), secret, 32, (unsigned char *)msg, (size_t)n, mac, &ml));
	for (int i = 0; i < 32; i++)
		sprintf(out + 2 * i, "%02x", mac[i]);
}

/* Count regular content files under media/ (not the secret), and temp files. */
static void count_files(const struct wm_proc *p, int *content, int *tmp)
{
	char root[400];
	snprintf(root, sizeof(root), "%s/media", p->data_dir);
	*content = *tmp = 0;
	DIR *d = opendir(root);
	cr_assert_not_null(d);
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.' || strlen(e->d_name) != 2)
			continue;
		char sub[700];
		snprintf(sub, sizeof(sub), "%s/%s", root, e->d_name);
		DIR *s = opendir(sub);
		cr_assert_not_null(s);
		struct dirent *f;
		while ((f = readdir(s))) {
			if (!strcmp(f->d_name, ".") || !strcmp(f->d_name, ".."))
				continue;
			if (!strncmp(f->d_name, ".tmp", 4))
				(*tmp)++;
			else
				(*content)++;
		}
		closedir(s);
	}
	closedir(d);
}

/* GET the content; asserts 200, the bytes and the content type. */
static void expect_content(int port, const char *key, const char *id, const char *mime, const void *bytes,
			   size_t len)
{
	char path[128], ct[64], etag[80], sha[65], want_etag[80];
	snprintf(path, sizeof(path), "/v1/media/%s/content", id);
	struct http_resp r;
	call(port, "GET", path, key, NULL, &r);
	cr_assert_eq(r.status, 200, "%s: %d %s", path, r.status, r.body);
	cr_assert_eq(r.body_len, len);
	cr_assert_eq(memcmp(r.body, bytes, len), 0, "the bytes differ");
	cr_assert_geq(http_header(&r, "Content-Type", ct, sizeof(ct)), 0);
	cr_assert_str_eq(ct, mime);
	sha256_hex(bytes, len, sha);
	snprintf(want_etag, sizeof(want_etag), "\"%s\"", sha);
	cr_assert_geq(http_header(&r, "ETag", etag, sizeof(etag)), 0);
	cr_assert_str_eq(etag, want_etag);
	http_resp_free(&r);
}

/* ---- the happy path ---------------------------------------------------------------- */

struct sample {
	const char *mime;
	const uint8_t *bytes;
	size_t len;
	unsigned w, h;
};

WM_TEST(media, upload_png_jpeg_webp_and_read_back)
{
	struct wm_proc p;
	wm_proc_init(&p);
	start_or_fail(&p, NULL);
	char ptn[64], key[128];
	create_partner(p.port, "Domaine Label", "[\"originator\"]", ptn);
	mint_for(p.port, ptn, key);
	uint8_t secret[32];
	read_secret(&p, secret);
	struct img png, jpg, big;
	fix_png(&png, 3, 2, 8, 0, 0);
	fix_jpeg(&jpg, 0xc0, 17, 9, 3, 8);
	fix_png(&big, 640, 480, 8, 6, 1); /* headers-only fixture: dimensions from the header */
	const struct sample samples[] = {
		{"image/png", png.b, png.n, 3, 2},
		{"image/jpeg", jpg.b, jpg.n, 17, 9},
		{"image/webp", fix_webp_lossy_1x1, fix_webp_lossy_1x1_len, 1, 1},
		{"image/webp", fix_webp_lossless_1x1, fix_webp_lossless_1x1_len, 1, 1},
		{"image/webp", fix_webp_alpha_1x1, fix_webp_alpha_1x1_len, 1, 1},
		{"image/png", big.b, big.n, 640, 480},
	};
	for (size_t i = 0; i < sizeof(samples) / sizeof(samples[0]); i++) {
		const struct sample *s = &samples[i];
		struct created c;
		cr_assert_eq(create_media(p.port, key, s->mime, 4096, "label_front", &c), 201);
		/* the signature is the documented HMAC, recomputed independently */
		char want[65];
		forge_sig(secret, c.id, 4096, s->mime, c.expires, want);
		cr_assert_str_eq(c.sig, want);
		struct http_resp r;
		put_bytes(p.port, c.url, s->mime, s->bytes, s->len, &r);
		cr_assert_eq(r.status, 200, "%s: %s", s->mime, r.body);
		json_t *j = body_json(&r);
		char sha[65], url[128];
		sha256_hex(s->bytes, s->len, sha);
		snprintf(url, sizeof(url), "/v1/media/%s/content", c.id);
		cr_assert_str_eq(tc_jstr(j, "status"), "ready");
		cr_assert_str_eq(tc_jstr(j, "sha256"), sha);
		cr_assert_str_eq(tc_jstr(j, "url"), url);
		cr_assert_eq(json_integer_value(json_object_get(j, "bytes")), (json_int_t)s->len);
		json_decref(j);
		http_resp_free(&r);
		/* metadata, as the spec lists it, to the partner and to the operator */
		char path[128];
		snprintf(path, sizeof(path), "/v1/media/%s", c.id);
		for (int who = 0; who < 2; who++) {
			call(p.port, "GET", path, who ? NULL : key, NULL, &r);
			cr_assert_eq(r.status, 200, "%s", r.body);
			j = body_json(&r);
			cr_assert_str_eq(tc_jstr(j, "id"), c.id);
			cr_assert_str_eq(tc_jstr(j, "url"), url);
			cr_assert_str_eq(tc_jstr(j, "mime"), s->mime);
			cr_assert_eq(json_integer_value(json_object_get(j, "width")), s->w, "%s", r.body);
			cr_assert_eq(json_integer_value(json_object_get(j, "height")), s->h, "%s", r.body);
			cr_assert_str_eq(tc_jstr(j, "alt"), "Front label of the 2019 cuvée");
			cr_assert_str_eq(tc_jstr(j, "role"), "label_front");
			cr_assert_str_eq(tc_jstr(j, "filename"), "label.bin");
			cr_assert_str_eq(tc_jstr(j, "sha256"), sha);
			cr_assert_null(json_object_get(j, "entity_id"));
			json_decref(j);
			http_resp_free(&r);
		}
		expect_content(p.port, key, c.id, s->mime, s->bytes, s->len);
	}
	wm_proc_cleanup(&p);
}

/* ---- create: every field ------------------------------------------------------------- */

/* POST body -> 422 with an error for each of `fields` (NULL-terminated). */
static void expect_field_errors(int port, const char *body, const char *const *fields)
{
	struct http_resp r;
	call(port, "POST", "/v1/media", NULL, body, &r);
	cr_assert_eq(r.status, 422, "%s -> %d %s", body, r.status, r.body);
	json_t *j = body_json(&r);
	cr_assert_str_eq(tc_jstr(j, "code"), "validation_failed");
	json_t *errs = json_object_get(j, "errors");
	size_t n = 0;
	for (; fields[n]; n++) {
		int found = 0;
		for (size_t i = 0; i < json_array_size(errs); i++)
			found |= !strcmp(tc_jstr(json_array_get(errs, i), "field"), fields[n]);
		cr_assert(found, "%s: no error for %s in %s", body, fields[n], r.body);
	}
	cr_assert_eq(json_array_size(errs), n, "%s: %s", body, r.body);
	json_decref(j);
	http_resp_free(&r);
}

/* A valid create body's members, for tests that vary one more. */
#define BASE "\"mime\":\"image/png\",\"size\":10,\"alt\":\"a\",\"role\":\"bottle\""

WM_TEST(media, create_validates_every_field)
{
	struct wm_proc p;
	wm_proc_init(&p);
	const char *const args[] = {"--media-max-kb", "1", NULL};
	start_or_fail(&p, args);
	struct created c;
	const char *const all[] = {"mime", "size", "alt", "role", NULL};
	expect_field_errors(p.port, "{}", all);
	expect_field_errors(p.port, "{\"mime\":null,\"size\":null,\"alt\":null,\"role\":null}", all);
	const char *const bad_all[] = {"mime", "size", "alt", "role", "filename", "width", NULL};
	expect_field_errors(p.port, "{\"mime\":\"image/gif\",\"size\":0,\"alt\":\"\",\"role\":\"poster\","
			    "\"filename\":7,\"width\":10}", bad_all);
	const char *const mime[] = {"mime", NULL};
	expect_field_errors(p.port, "{\"mime\":\"image/PNG\",\"size\":10,\"alt\":\"a\",\"role\":\"bottle\"}", mime);
	expect_field_errors(p.port, "{\"mime\":\"image/jpg\",\"size\":10,\"alt\":\"a\",\"role\":\"bottle\"}", mime);
	/* size: 1 .. --media-max-kb KiB, integers only */
	const char *const size[] = {"size", NULL};
	expect_field_errors(p.port, "{\"mime\":\"image/png\",\"size\":1025,\"alt\":\"a\",\"role\":\"bottle\"}", size);
	expect_field_errors(p.port, "{\"mime\":\"image/png\",\"size\":-1,\"alt\":\"a\",\"role\":\"bottle\"}", size);
	expect_field_errors(p.port, "{\"mime\":\"image/png\",\"size\":10.5,\"alt\":\"a\",\"role\":\"bottle\"}", size);
	expect_field_errors(p.port, "{\"mime\":\"image/png\",\"size\":\"10\",\"alt\":\"a\",\"role\":\"bottle\"}", size);
	cr_assert_eq(create_media(p.port, NULL, "image/png", 1024, "bottle", &c), 201);
	cr_assert_eq(create_media(p.port, NULL, "image/png", 1, "bottle", &c), 201);
	/* alt: 1..500 bytes, no control characters */
	char body[1400], alt[600];
	memset(alt, 'a', 501);
	alt[501] = 0;
	const char *const altf[] = {"alt", NULL};
	snprintf(body, sizeof(body), "{\"mime\":\"image/png\",\"size\":10,\"alt\":\"%s\",\"role\":\"bottle\"}", alt);
	expect_field_errors(p.port, body, altf);
	alt[500] = 0;
	snprintf(body, sizeof(body), "{\"mime\":\"image/png\",\"size\":10,\"alt\":\"%s\",\"role\":\"bottle\"}", alt);
	struct http_resp r;
	call(p.port, "POST", "/v1/media", NULL, body, &r);
	cr_assert_eq(r.status, 201, "alt of 500 bytes: %s", r.body);
	http_resp_free(&r);
	expect_field_errors(p.port, "{\"mime\":\"image/png\",\"size\":10,\"alt\":\"a\\nb\",\"role\":\"bottle\"}", altf);
	/* filename: optional, 1..255 bytes */
	char name[300];
	memset(name, 'f', 256);
	name[256] = 0;
	const char *const fname[] = {"filename", NULL};
	snprintf(body, sizeof(body), "{" BASE ",\"filename\":\"%s\"}", name);
	expect_field_errors(p.port, body, fname);
	name[255] = 0;
	snprintf(body, sizeof(body), "{" BASE ",\"filename\":\"%s\"}", name);
	call(p.port, "POST", "/v1/media", NULL, body, &r);
	cr_assert_eq(r.status, 201, "filename of 255 bytes: %s", r.body);
	http_resp_free(&r);
	call(p.port, "POST", "/v1/media", NULL, "{" BASE ",\"filename\":null}", &r);
	cr_assert_eq(r.status, 201, "%s", r.body);
	json_t *j = body_json(&r);
	cr_assert(json_is_null(json_object_get(j, "filename")));
	json_decref(j);
	http_resp_free(&r);
	/* every documented role */
	static const char *const roles[] = {"label_front", "label_back", "bottle", "case", "producer", "gallery"};
	for (size_t i = 0; i < sizeof(roles) / sizeof(roles[0]); i++)
		cr_assert_eq(create_media(p.port, NULL, "image/webp", 100, roles[i], &c), 201, "%s", roles[i]);
	/* read-only members are not fields of the request */
	const char *const ro[] = {"id", "status", "sha256", NULL};
	expect_field_errors(p.port, "{" BASE ",\"id\":\"med_x\",\"status\":\"ready\",\"sha256\":\"00\"}", ro);
	/* no body */
	call(p.port, "POST", "/v1/media", NULL, NULL, &r);
	cr_assert_eq(r.status, 400);
	http_resp_free(&r);
	wm_proc_cleanup(&p);
}

WM_TEST(media, size_limit_is_clamped_to_the_body_limit)
{
	struct wm_proc p;
	wm_proc_init(&p);
	const char *const args[] = {"--max-body-kb", "2", "--media-max-kb", "8", NULL};
	start_or_fail(&p, args);
	struct created c;
	cr_assert_eq(create_media(p.port, NULL, "image/png", 2048, "bottle", &c), 201);
	cr_assert_eq(create_media(p.port, NULL, "image/png", 2049, "bottle", &c), 422);
	cr_assert_eq(wm_stop(&p), 0);
	char log[400], buf[8192];
	snprintf(log, sizeof(log), "%s/shard-1.log", p.dir);
	FILE *f = fopen(log, "r");
	cr_assert_not_null(f);
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = 0;
	fclose(f);
	cr_assert(strstr(buf, "--media-max-kb clamped to --max-body-kb") && strstr(buf, "media_max_kb=8"),
		  "the clamp is logged: %s", buf);
	/* an option out of range refuses to start */
	char msg[2048];
	const char *const bad[] = {"--media-max-kb", "0", NULL};
	cr_assert_neq(wm_start_expect_fail(&p, bad, msg, sizeof(msg)), 0);
	const char *const bad_ttl[] = {"--media-url-ttl-s", "604801", NULL};
	cr_assert_neq(wm_start_expect_fail(&p, bad_ttl, msg, sizeof(msg)), 0);
	wm_proc_cleanup(&p);
}

/* ---- the signed URL ------------------------------------------------------------------ */

WM_TEST(media, expired_forged_and_altered_urls_are_403)
{
	struct wm_proc p;
	wm_proc_init(&p);
	start_or_fail(&p, NULL);
	uint8_t secret[32];
	read_secret(&p, secret);
	struct img png;
	fix_png(&png, 4, 4, 8, 2, 0);
	struct created c, other;
	cr_assert_eq(create_media(p.port, NULL, "image/png", 1000, "bottle", &c), 201);
	cr_assert_eq(create_media(p.port, NULL, "image/png", 1000, "bottle", &other), 201);
	char url[400], code[64], sig[65];
	/* a correctly signed URL whose time has passed */
	char past[24];
	snprintf(past, sizeof(past), "%lld", (long long)time(NULL) - 5);
	forge_sig(secret, c.id, 1000, "image/png", past, sig);
	snprintf(url, sizeof(url), "/v1/media/%s/content?expires=%s&sig=%s", c.id, past, sig);
	cr_assert_eq(put_status(p.port, url, "image/png", png.b, png.n, code), 403);
	cr_assert_str_eq(code, "upload_url_expired");
	/* one hex digit of the signature changed */
	char bad[80];
	snprintf(bad, sizeof(bad), "%s", c.sig);
	bad[10] = bad[10] == '0' ? '1' : '0';
	snprintf(url, sizeof(url), "/v1/media/%s/content?expires=%s&sig=%s", c.id, c.expires, bad);
	cr_assert_eq(put_status(p.port, url, "image/png", png.b, png.n, code), 403);
	cr_assert_str_eq(code, "invalid_signature");
	/* the expiry moved later, the signature kept */
	snprintf(url, sizeof(url), "/v1/media/%s/content?expires=%lld&sig=%s", c.id, atoll(c.expires) + 3600, c.sig);
	cr_assert_eq(put_status(p.port, url, "image/png", png.b, png.n, code), 403);
	cr_assert_str_eq(code, "invalid_signature");
	/* signed for another size or another type */
	forge_sig(secret, c.id, 2000, "image/png", c.expires, sig);
	snprintf(url, sizeof(url), "/v1/media/%s/content?expires=%s&sig=%s", c.id, c.expires, sig);
	cr_assert_eq(put_status(p.port, url, "image/png", png.b, png.n, code), 403);
	forge_sig(secret, c.id, 1000, "image/jpeg", c.expires, sig);
	snprintf(url, sizeof(url), "/v1/media/%s/content?expires=%s&sig=%s", c.id, c.expires, sig);
	cr_assert_eq(put_status(p.port, url, "image/png", png.b, png.n, code), 403);
	/* another asset's URL on this asset's path */
	snprintf(url, sizeof(url), "/v1/media/%s/content?expires=%s&sig=%s", c.id, other.expires, other.sig);
	cr_assert_eq(put_status(p.port, url, "image/png", png.b, png.n, code), 403);
	cr_assert_str_eq(code, "invalid_signature");
	/* upper-case hex, missing or malformed parameters, unknown id */
	char upper[80];
	snprintf(upper, sizeof(upper), "%s", c.sig);
	for (char *q = upper; *q; q++)
		if (*q >= 'a' && *q <= 'f')
			*q = (char)(*q - 32);
	char qs[6][300];
	snprintf(qs[0], sizeof(qs[0]), "?expires=%s&sig=", c.expires);
	snprintf(qs[1], sizeof(qs[1]), "?sig=%s", c.sig);
	snprintf(qs[2], sizeof(qs[2]), "?expires=-1&sig=%s", c.sig);
	snprintf(qs[3], sizeof(qs[3]), "%s", "");
	snprintf(qs[4], sizeof(qs[4]), "?expires=%s&sig=%sff", c.expires, c.sig);
	snprintf(qs[5], sizeof(qs[5]), "?expires=%s&sig=%s", c.expires, upper);
	for (size_t i = 0; i < 6; i++) {
		snprintf(url, sizeof(url), "/v1/media/%s/content%s", c.id, qs[i]);
		cr_assert_eq(put_status(p.port, url, "image/png", png.b, png.n, code), 403, "%s", url);
		cr_assert_str_eq(code, "invalid_signature", "%s", url);
	}
	snprintf(url, sizeof(url), "/v1/media/med_01M7YBCE3F0000ZA4B9Z/content?expires=%s&sig=%s", c.expires, c.sig);
	cr_assert_eq(put_status(p.port, url, "image/png", png.b, png.n, code), 403);
	cr_assert_str_eq(code, "invalid_signature", "an unknown id looks like a bad signature");
	/* expires has at most 19 digits: 20 are refused even when signed */
	struct created edge;
	cr_assert_eq(create_media(p.port, NULL, "image/png", 1000, "bottle", &edge), 201);
	forge_sig(secret, edge.id, 1000, "image/png", "99999999999999999999", sig);
	snprintf(url, sizeof(url), "/v1/media/%s/content?expires=99999999999999999999&sig=%s", edge.id, sig);
	cr_assert_eq(put_status(p.port, url, "image/png", png.b, png.n, code), 403);
	cr_assert_str_eq(code, "invalid_signature");
	forge_sig(secret, edge.id, 1000, "image/png", "9999999999999999999", sig);
	snprintf(url, sizeof(url), "/v1/media/%s/content?expires=9999999999999999999&sig=%s", edge.id, sig);
	cr_assert_eq(put_status(p.port, url, "image/png", png.b, png.n, code), 200, "%s", code);
	/* a forged signature with the real secret and a future time works:
	 * the documented scheme is the whole check */
	char future[24];
	snprintf(future, sizeof(future), "%lld", (long long)time(NULL) + 60);
	forge_sig(secret, c.id, 1000, "image/png", future, sig);
	snprintf(url, sizeof(url), "/v1/media/%s/content?expires=%s&sig=%s", c.id, future, sig);
	cr_assert_eq(put_status(p.port, url, "image/png", png.b, png.n, code), 200, "%s", code);
	/* the asset was untouched by every refusal before: the untampered URL
	 * of the other asset still works */
	cr_assert_eq(put_status(p.port, other.url, NULL, png.b, png.n, code), 200, "%s", code);
	wm_proc_cleanup(&p);
}

WM_TEST(media, url_lifetime_is_configured)
{
	struct wm_proc p;
	wm_proc_init(&p);
	const char *const args[] = {"--media-url-ttl-s", "1", NULL};
	start_or_fail(&p, args);
	struct img png;
	fix_png(&png, 4, 4, 8, 2, 0);
	struct created c;
	cr_assert_eq(create_media(p.port, NULL, "image/png", 1000, "bottle", &c), 201);
	cr_assert_leq(atoll(c.expires), (long long)time(NULL) + 1, "expires = now + 1 s");
	sleep(2); /* past the expiry by at least a second */
	char code[64];
	cr_assert_eq(put_status(p.port, c.url, "image/png", png.b, png.n, code), 403);
	cr_assert_str_eq(code, "upload_url_expired");
	wm_proc_cleanup(&p);
}

/* ---- what the bytes are ----------------------------------------------------------------- */

WM_TEST(media, size_type_and_lying_header_refusals)
{
	struct wm_proc p;
	wm_proc_init(&p);
	start_or_fail(&p, NULL);
	struct img png, jpg, crc, wide, zero;
	fix_png(&png, 3, 2, 8, 0, 0);
	fix_jpeg(&jpg, 0xc0, 8, 8, 1, 8);
	fix_png(&crc, 3, 2, 8, 0, 0);
	crc.b[30] ^= 0x55;
	fix_png(&wide, 16385, 10, 8, 0, 0);
	fix_jpeg(&zero, 0xc0, 8, 0, 1, 8);
	char code[64];
	struct created c;
	/* size: the URL's max_bytes exactly, and one byte more */
	cr_assert_eq(create_media(p.port, NULL, "image/png", (long)png.n - 1, "bottle", &c), 201);
	cr_assert_eq(put_status(p.port, c.url, "image/png", png.b, png.n, code), 413);
	cr_assert_str_eq(code, "media_too_large");
	cr_assert_eq(create_media(p.port, NULL, "image/png", (long)png.n, "bottle", &c), 201);
	cr_assert_eq(put_status(p.port, c.url, "image/png", png.b, png.n, code), 200, "%s", code);
	/* one pending PNG asset takes every refusal and stays uploadable */
	cr_assert_eq(create_media(p.port, NULL, "image/png", 4096, "label_back", &c), 201);
	static const char gif[] = "GIF89a\x01\x00\x01\x00\x80\x00\x00\xff\xff\xff\x00\x00\x00!\xf9\x04\x01\x00\x00\x00\x00,"
				  "\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02\x44\x01\x00;";
	cr_assert_eq(put_status(p.port, c.url, NULL, gif, sizeof(gif) - 1, code), 415);
	cr_assert_str_eq(code, "unsupported_image_type");
	cr_assert_eq(put_status(p.port, c.url, "image/png", "<svg/>", 6, code), 415);
	cr_assert_eq(put_status(p.port, c.url, "text/plain", png.b, png.n, code), 415);
	cr_assert_str_eq(code, "unsupported_media_type");
	cr_assert_eq(put_status(p.port, c.url, "image/gif", png.b, png.n, code), 415);
	/* lying headers: the declared type against the magic bytes */
	cr_assert_eq(put_status(p.port, c.url, NULL, jpg.b, jpg.n, code), 422);
	cr_assert_str_eq(code, "lying_header");
	cr_assert_eq(put_status(p.port, c.url, "image/jpeg", jpg.b, jpg.n, code), 422);
	cr_assert_str_eq(code, "lying_header");
	cr_assert_eq(put_status(p.port, c.url, "image/jpeg", png.b, png.n, code), 422);
	cr_assert_str_eq(code, "lying_header");
	cr_assert_eq(put_status(p.port, c.url, "image/webp", fix_webp_lossy_1x1, fix_webp_lossy_1x1_len, code), 422);
	cr_assert_str_eq(code, "lying_header");
	/* headers that cannot be read */
	cr_assert_eq(put_status(p.port, c.url, "image/png", crc.b, crc.n, code), 422);
	cr_assert_str_eq(code, "image_bad_checksum");
	cr_assert_eq(put_status(p.port, c.url, "image/png", wide.b, wide.n, code), 422);
	cr_assert_str_eq(code, "image_dimensions_too_large");
	cr_assert_eq(put_status(p.port, c.url, "image/png", png.b, 20, code), 422);
	cr_assert_str_eq(code, "image_truncated");
	cr_assert_eq(put_status(p.port, c.url, "image/png", "", 0, code), 400);
	cr_assert_str_eq(code, "body_required");
	/* a JPEG whose height is left to a DNL marker */
	struct created cj;
	cr_assert_eq(create_media(p.port, NULL, "image/jpeg", 4096, "bottle", &cj), 201);
	cr_assert_eq(put_status(p.port, cj.url, "image/jpeg", zero.b, zero.n, code), 422);
	cr_assert_str_eq(code, "image_zero_dimension");
	/* still pending after all that: upload for real (octet-stream declares nothing) */
	char path[128];
	snprintf(path, sizeof(path), "/v1/media/%s", c.id);
	struct http_resp r;
	call(p.port, "GET", path, NULL, NULL, &r);
	json_t *j = body_json(&r);
	cr_assert_str_eq(tc_jstr(j, "status"), "pending");
	json_decref(j);
	http_resp_free(&r);
	cr_assert_eq(put_status(p.port, c.url, "application/octet-stream", png.b, png.n, code), 200, "%s", code);
	/* a second upload, even of the same bytes */
	cr_assert_eq(put_status(p.port, c.url, "image/png", png.b, png.n, code), 409);
	cr_assert_str_eq(code, "already_uploaded");
	cr_assert_eq(put_status(p.port, c.url, "image/png", jpg.b, jpg.n, code), 409);
	wm_proc_cleanup(&p);
}

/* ---- who sees what ------------------------------------------------------------------------ */

WM_TEST(media, pending_media_is_visible_to_its_owner_only)
{
	struct wm_proc p;
	wm_proc_init(&p);
	start_or_fail(&p, NULL);
	char a[64], b[64], ka[128], kb[128], code[64], path[128], cpath[128];
	create_partner(p.port, "Estate A", "[\"originator\"]", a);
	create_partner(p.port, "Shop B", "[\"seller\"]", b);
	mint_for(p.port, a, ka);
	mint_for(p.port, b, kb);
	struct created c;
	cr_assert_eq(create_media(p.port, ka, "image/png", 4096, "bottle", &c), 201);
	snprintf(path, sizeof(path), "/v1/media/%s", c.id);
	snprintf(cpath, sizeof(cpath), "/v1/media/%s/content", c.id);
	struct http_resp r;
	/* B: exactly what an unknown id gets */
	call(p.port, "GET", path, kb, NULL, &r);
	cr_assert_eq(r.status, 404);
	cr_assert_str_eq(problem_code(&r, code, sizeof(code)), "not_found");
	http_resp_free(&r);
	call(p.port, "GET", cpath, kb, NULL, &r);
	cr_assert_eq(r.status, 404);
	http_resp_free(&r);
	call(p.port, "GET", "/v1/media/med_01M7YBCE3F0000ZA4B9Z", kb, NULL, &r);
	cr_assert_eq(r.status, 404);
	http_resp_free(&r);
	/* A and the operator see it pending; its content is not there yet */
	for (int who = 0; who < 2; who++) {
		call(p.port, "GET", path, who ? NULL : ka, NULL, &r);
		cr_assert_eq(r.status, 200, "%s", r.body);
		json_t *j = body_json(&r);
		cr_assert_str_eq(tc_jstr(j, "status"), "pending");
		cr_assert(json_is_null(json_object_get(j, "url")));
		json_decref(j);
		http_resp_free(&r);
		call(p.port, "GET", cpath, who ? NULL : ka, NULL, &r);
		cr_assert_eq(r.status, 409);
		cr_assert_str_eq(problem_code(&r, code, sizeof(code)), "media_not_ready");
		http_resp_free(&r);
	}
	/* B may not declare media at all: sellers do not write wines */
	char body[] = "{\"mime\":\"image/png\",\"size\":10,\"alt\":\"a\",\"role\":\"bottle\"}";
	call(p.port, "POST", "/v1/media", kb, body, &r);
	cr_assert_eq(r.status, 403);
	cr_assert_str_eq(problem_code(&r, code, sizeof(code)), "action_not_allowed");
	http_resp_free(&r);
	/* once ready, every reader with read:wines sees it (wines reference it) */
	struct img png;
	fix_png(&png, 3, 2, 8, 0, 0);
	cr_assert_eq(put_status(p.port, c.url, "image/png", png.b, png.n, code), 200);
	call(p.port, "GET", path, kb, NULL, &r);
	cr_assert_eq(r.status, 200, "%s", r.body);
	json_t *j = body_json(&r);
	cr_assert_null(json_object_get(j, "entity_id"), "the owner is not revealed");
	json_decref(j);
	http_resp_free(&r);
	expect_content(p.port, kb, c.id, "image/png", png.b, png.n);
	/* events: A's media events are A's */
	call(p.port, "GET", "/v1/events?type=media.ready", ka, NULL, &r);
	j = body_json(&r);
	cr_assert_eq(json_array_size(json_object_get(j, "data")), 1, "%s", r.body);
	json_decref(j);
	http_resp_free(&r);
	call(p.port, "GET", "/v1/events?type=media.created", kb, NULL, &r);
	j = body_json(&r);
	cr_assert_eq(json_array_size(json_object_get(j, "data")), 0, "%s", r.body);
	json_decref(j);
	http_resp_free(&r);
	wm_proc_cleanup(&p);
}

WM_TEST(media, create_is_idempotent)
{
	struct wm_proc p;
	wm_proc_init(&p);
	start_or_fail(&p, NULL);
	const char *h = "Idempotency-Key: media-create-1\r\n";
	const char *body = "{\"mime\":\"image/webp\",\"size\":500,\"alt\":\"Bottle\",\"role\":\"bottle\"}";
	struct http_resp a, b;
	cr_assert_eq(http_do(p.port, "POST", "/v1/media", h, body, &a), 0);
	cr_assert_eq(a.status, 201, "%s", a.body);
	cr_assert_eq(http_do(p.port, "POST", "/v1/media", h, body, &b), 0);
	cr_assert_eq(b.status, 201, "%s", b.body);
	char v[16];
	cr_assert(http_header(&b, "Idempotent-Replayed", v, sizeof(v)) >= 0 && !strcmp(v, "true"));
	cr_assert_eq(a.body_len, b.body_len);
	cr_assert_eq(memcmp(a.body, b.body, a.body_len), 0, "the same asset and upload URL");
	json_t *j = body_json(&a);
	char url[300], code[64];
	snprintf(url, sizeof(url), "%s", tc_jstr(json_object_get(j, "upload"), "url"));
	json_decref(j);
	http_resp_free(&a);
	http_resp_free(&b);
	cr_assert_eq(put_status(p.port, url, "image/webp", fix_webp_lossless_1x1, fix_webp_lossless_1x1_len, code),
		     200, "%s", code);
	wm_proc_cleanup(&p);
}

/* ---- the secret file ---------------------------------------------------------------------- */

WM_TEST(media, secret_file_is_checked_at_start)
{
	struct wm_proc p;
	wm_proc_init(&p);
	start_or_fail(&p, NULL);
	struct created c;
	cr_assert_eq(create_media(p.port, NULL, "image/png", 1000, "bottle", &c), 201);
	cr_assert_eq(wm_stop(&p), 0);
	char path[400];
	snprintf(path, sizeof(path), "%s/media/secret.key", p.data_dir);
	/* readable by others: tightened back to 0600, with a warning */
	cr_assert_eq(chmod(path, 0644), 0);
	start_or_fail(&p, NULL);
	uint8_t secret[32];
	read_secret(&p, secret); /* asserts mode 0600 */
	cr_assert_eq(wm_stop(&p), 0);
	/* one byte short: the service refuses to start and says which file */
	FILE *f = fopen(path, "wb");
	cr_assert_not_null(f);
	cr_assert_eq(fwrite(secret, 1, 31, f), 31u);
	fclose(f);
	char msg[4096];
	cr_assert_neq(wm_start_expect_fail(&p, NULL, msg, sizeof(msg)), 0);
	cr_assert(strstr(msg, "secret.key") && strstr(msg, "32 bytes"), "%s", msg);
	/* one byte too many: the same */
	f = fopen(path, "wb");
	cr_assert_not_null(f);
	cr_assert_eq(fwrite(secret, 1, 32, f), 32u);
	fputc(0, f);
	fclose(f);
	cr_assert_neq(wm_start_expect_fail(&p, NULL, msg, sizeof(msg)), 0);
	/* removed: a new secret is made, and old URLs no longer verify */
	cr_assert_eq(unlink(path), 0);
	start_or_fail(&p, NULL);
	uint8_t fresh[32];
	read_secret(&p, fresh);
	cr_assert_neq(memcmp(fresh, secret, 32), 0);
	struct img png;
	fix_png(&png, 3, 2, 8, 0, 0);
	char code[64];
	cr_assert_eq(put_status(p.port, c.url, "image/png", png.b, png.n, code), 403);
	cr_assert_str_eq(code, "invalid_signature");
	wm_proc_cleanup(&p);
}

/* ---- durability and storage -------------------------------------------------------------- */

struct secret_scan {
	uint8_t raw[32];
	char hex[65];
	int found;
	unsigned long txns;
};

static int scan_wal(void *ctx, uint64_t lsn, const void *payload, size_t len)
{
	(void)lsn;
	struct secret_scan *s = ctx;
	s->txns++;
	s->found |= memmem(payload, len, s->raw, 32) != NULL || memmem(payload, len, s->hex, 64) != NULL;
	return 0;
}

WM_TEST(media, content_survives_kill9_and_restart)
{
	struct wm_proc p;
	wm_proc_init(&p);
	start_or_fail(&p, NULL);
	uint8_t before[32], after[32];
	read_secret(&p, before);
	struct img jpg, png;
	fix_jpeg(&jpg, 0xc2, 33, 17, 3, 8);
	fix_png(&png, 5, 4, 8, 6, 1);
	struct created done, later;
	cr_assert_eq(create_media(p.port, NULL, "image/jpeg", 4096, "label_front", &done), 201);
	char code[64];
	cr_assert_eq(put_status(p.port, done.url, "image/jpeg", jpg.b, jpg.n, code), 200);
	cr_assert_eq(create_media(p.port, NULL, "image/png", 4096, "gallery", &later), 201);
	wm_kill9(&p);
	start_or_fail(&p, NULL);
	read_secret(&p, after);
	cr_assert_eq(memcmp(before, after, 32), 0, "the secret is made once per data directory");
	/* the ready row came back from the WAL, its bytes from disk */
	char path[128];
	snprintf(path, sizeof(path), "/v1/media/%s", done.id);
	struct http_resp r;
	call(p.port, "GET", path, NULL, NULL, &r);
	cr_assert_eq(r.status, 200, "%s", r.body);
	json_t *j = body_json(&r);
	cr_assert_str_eq(tc_jstr(j, "status"), "ready");
	cr_assert_eq(json_integer_value(json_object_get(j, "width")), 33);
	cr_assert_eq(json_integer_value(json_object_get(j, "height")), 17);
	json_decref(j);
	http_resp_free(&r);
	expect_content(p.port, NULL, done.id, "image/jpeg", jpg.b, jpg.n);
	/* a URL signed before the crash still works: same secret */
	cr_assert_eq(put_status(p.port, later.url, "image/png", png.b, png.n, code), 200, "%s", code);
	cr_assert_eq(put_status(p.port, done.url, "image/jpeg", jpg.b, jpg.n, code), 409);
	/* and once more after a clean stop, for the second upload */
	cr_assert_eq(wm_stop(&p), 0);
	start_or_fail(&p, NULL);
	expect_content(p.port, NULL, later.id, "image/png", png.b, png.n);
	cr_assert_eq(wm_stop(&p), 0);
	/* the secret is nowhere in the log, raw or as hex */
	struct secret_scan s = {.found = 0};
	memcpy(s.raw, before, 32);
	for (int i = 0; i < 32; i++)
		sprintf(s.hex + 2 * i, "%02x", before[i]);
	char dir[400];
	snprintf(dir, sizeof(dir), "%s/wal", p.data_dir);
	struct wal_recovery_report rep;
	memset(&rep, 0, sizeof(rep));
	cr_assert_eq(wal_recover(dir, 0, scan_wal, &s, 0, &rep), 0, "%s", rep.error);
	cr_assert_gt(s.txns, 5);
	cr_assert_eq(s.found, 0, "the signing secret is in the WAL");
	wm_proc_cleanup(&p);
}

WM_TEST(media, identical_bytes_are_stored_once)
{
	struct wm_proc p;
	wm_proc_init(&p);
	start_or_fail(&p, NULL);
	struct img png, other;
	fix_png(&png, 3, 2, 8, 0, 0);
	fix_png(&other, 2, 3, 8, 0, 0);
	char code[64], sha[65];
	sha256_hex(png.b, png.n, sha);
	struct created c[3];
	const struct img *bytes[3] = {&png, &png, &other};
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(create_media(p.port, NULL, "image/png", 4096, "gallery", &c[i]), 201);
		cr_assert_eq(put_status(p.port, c[i].url, "image/png", bytes[i]->b, bytes[i]->n, code), 200, "%s", code);
	}
	int content, tmp;
	count_files(&p, &content, &tmp);
	cr_assert_eq(content, 2, "two distinct contents, two files (got %d)", content);
	cr_assert_eq(tmp, 0, "no temporary files left");
	char file[600];
	snprintf(file, sizeof(file), "%s/media/%.2s/%s", p.data_dir, sha, sha);
	struct stat st;
	cr_assert_eq(stat(file, &st), 0, "content address %s", file);
	cr_assert_eq((size_t)st.st_size, png.n);
	for (int i = 0; i < 2; i++)
		expect_content(p.port, NULL, c[i].id, "image/png", png.b, png.n);
	expect_content(p.port, NULL, c[2].id, "image/png", other.b, other.n);
	wm_proc_cleanup(&p);
}

WM_TEST(media, corrupt_file_is_reported_never_served)
{
	struct wm_proc p;
	wm_proc_init(&p);
	start_or_fail(&p, NULL);
	struct img png;
	fix_png(&png, 3, 2, 8, 0, 0);
	char code[64], sha[65], file[600], path[128];
	sha256_hex(png.b, png.n, sha);
	struct created c;
	cr_assert_eq(create_media(p.port, NULL, "image/png", 4096, "bottle", &c), 201);
	cr_assert_eq(put_status(p.port, c.url, "image/png", png.b, png.n, code), 200);
	snprintf(file, sizeof(file), "%s/media/%.2s/%s", p.data_dir, sha, sha);
	/* one byte changed on disk */
	FILE *f = fopen(file, "r+b");
	cr_assert_not_null(f);
	fseek(f, 40, SEEK_SET);
	fputc(0x5a, f);
	fclose(f);
	snprintf(path, sizeof(path), "/v1/media/%s/content", c.id);
	struct http_resp r;
	call(p.port, "GET", path, NULL, NULL, &r);
	cr_assert_eq(r.status, 500);
	cr_assert_str_eq(problem_code(&r, code, sizeof(code)), "media_corrupt");
	cr_assert_null(memmem(r.body, r.body_len, "IHDR", 4), "no image bytes in the answer");
	http_resp_free(&r);
	/* truncated, then gone */
	cr_assert_eq(truncate(file, 10), 0);
	call(p.port, "GET", path, NULL, NULL, &r);
	cr_assert_eq(r.status, 500);
	http_resp_free(&r);
	cr_assert_eq(unlink(file), 0);
	call(p.port, "GET", path, NULL, NULL, &r);
	cr_assert_eq(r.status, 500);
	cr_assert_str_eq(problem_code(&r, code, sizeof(code)), "media_corrupt");
	http_resp_free(&r);
	/* the metadata still answers; the log names the file */
	snprintf(path, sizeof(path), "/v1/media/%s", c.id);
	call(p.port, "GET", path, NULL, NULL, &r);
	cr_assert_eq(r.status, 200);
	http_resp_free(&r);
	/* an identical upload to a new asset repairs the content address */
	struct created again;
	cr_assert_eq(create_media(p.port, NULL, "image/png", 4096, "bottle", &again), 201);
	cr_assert_eq(put_status(p.port, again.url, "image/png", png.b, png.n, code), 200);
	expect_content(p.port, NULL, c.id, "image/png", png.b, png.n);
	cr_assert_eq(wm_stop(&p), 0);
	char log[400], buf[16384];
	snprintf(log, sizeof(log), "%s/shard-1.log", p.dir);
	f = fopen(log, "r");
	cr_assert_not_null(f);
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = 0;
	fclose(f);
	cr_assert(strstr(buf, "media content missing or corrupt") && strstr(buf, sha), "logged: %s", buf);
	wm_proc_cleanup(&p);
}
