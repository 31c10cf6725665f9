/*
 * test_cluster_auth_units.c -- signatures of internal requests
 * (engine/cluster/cluster_auth.c): known vectors computed independently,
 * tampering with each signed part, the skew bound at and past its edge,
 * malformed headers, and the secret file's rules.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/cluster/cluster_auth.h"
#include "tests/wm_test.h"

#define SECRET "0123456789abcdef0123456789abcdef"

static struct cluster_key key(void)
{
	struct cluster_key k;
	memcpy(k.secret, SECRET, 32);
	k.len = 32;
	return k;
}

static int verify(const struct cluster_key *k, const char *m, const char *p, const char *body, const char *hdr,
		  int64_t now)
{
	return ck_verify(k, m, strlen(m), p, strlen(p), body, strlen(body), hdr, strlen(hdr), now, 30);
}

/* Expected values from Python's hmac/hashlib, not from this code:
 *   msg = b"POST\n/internal/holds\n1764000000\n" + sha256(b'{"qty":1}').hexdigest()
 *   hmac.new(b"0123456789abcdef0123456789abcdef", msg, sha256).hexdigest() */
WM_TEST(cluster_auth, known_vectors)
{
	struct cluster_key k = key();
	char h[CK_HEADER_MAX];
	const char *body = "{\"qty\":1}";
	cr_assert_eq(ck_sign(&k, "POST", 4, "/internal/holds", 15, 1764000000, body, strlen(body), h), 0);
	cr_assert_str_eq(h, "t=1764000000,v1=6d04b819499708c4161e5dff051475c8a7fb8264bb3f1651e30f959a5c015a58");
	cr_assert_eq(ck_sign(&k, "GET", 3, "/internal/x", 11, 1, NULL, 0, h), 0);
	cr_assert_str_eq(h, "t=1,v1=96280d7e14df2ff0545946d56c6181046162e9591d05217b2bf3ce240896c67e");
	cr_assert_eq(verify(&k, "POST", "/internal/holds", body,
			    "t=1764000000,v1=6d04b819499708c4161e5dff051475c8a7fb8264bb3f1651e30f959a5c015a58",
			    1764000000),
		     CK_OK);
	cr_assert_eq(verify(&k, "POST", "/internal/holds", body,
			    "t=1764000000,v1=6D04B819499708C4161E5DFF051475C8A7FB8264BB3F1651E30F959A5C015A58",
			    1764000000),
		     CK_E_MALFORMED, "one spelling: lower-case hex");
}

/* The HMAC context keeps the last key (cluster_auth.c ck_hmac): a call
 * with another key, of another length, and the first one again, each signs
 * with its own.  Vectors from Python's hmac/hashlib:
 *   msg = b"GET\n/internal/x\n1\n" + sha256(b"").hexdigest()
 *   secrets: SECRET, SECRET with its first byte ^ 1, SECRET + b"01234567" */
WM_TEST(cluster_auth, each_call_signs_with_its_own_key_whatever_came_before)
{
	struct cluster_key k = key(), k2 = key(), k3 = key();
	k2.secret[0] ^= 1;
	memcpy(k3.secret + 32, "01234567", 8);
	k3.len = 40;
	static const char *const want[] = {
		"t=1,v1=96280d7e14df2ff0545946d56c6181046162e9591d05217b2bf3ce240896c67e",
		"t=1,v1=ce3eb449d821e85ba293e518ada7cf3fb17496614096b1665a4223d49e323226",
		"t=1,v1=a1418951f17387f07af386f7e010ac7280a358160c23b5657c55c490b8f3e73c",
	};
	const struct cluster_key *order[] = {&k, &k, &k2, &k3, &k, &k3, &k2, &k2, &k};
	const int which[] = {0, 0, 1, 2, 0, 2, 1, 1, 0};
	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		char h[CK_HEADER_MAX];
		cr_assert_eq(ck_sign(order[i], "GET", 3, "/internal/x", 11, 1, NULL, 0, h), 0);
		cr_assert_str_eq(h, want[which[i]], "call %zu", i);
		cr_assert_eq(verify(order[i], "GET", "/internal/x", "", h, 1), CK_OK, "call %zu", i);
		cr_assert_eq(verify(order[(i + 2) % 9], "GET", "/internal/x", "", h, 1),
			     which[(i + 2) % 9] == which[i] ? CK_OK : CK_E_MISMATCH, "call %zu with another key", i);
	}
}

WM_TEST(cluster_auth, every_signed_part_is_bound)
{
	struct cluster_key k = key();
	char h[CK_HEADER_MAX];
	const char *body = "{\"qty\":1}";
	cr_assert_eq(ck_sign(&k, "POST", 4, "/internal/holds", 15, 1000, body, strlen(body), h), 0);
	cr_assert_eq(verify(&k, "POST", "/internal/holds", body, h, 1000), CK_OK);
	cr_assert_eq(verify(&k, "PUT", "/internal/holds", body, h, 1000), CK_E_MISMATCH, "method");
	cr_assert_eq(verify(&k, "POST", "/internal/hold", body, h, 1000), CK_E_MISMATCH, "path");
	cr_assert_eq(verify(&k, "POST", "/internal/holds", "{\"qty\":2}", h, 1000), CK_E_MISMATCH, "body");
	char other[CK_HEADER_MAX];
	memcpy(other, h, sizeof(other));
	other[2] = '2'; /* t=2000...: the timestamp is signed too */
	cr_assert_eq(verify(&k, "POST", "/internal/holds", body, other, 2000), CK_E_MISMATCH, "timestamp");
	struct cluster_key k2 = key();
	k2.secret[0] ^= 1;
	cr_assert_eq(verify(&k2, "POST", "/internal/holds", body, h, 1000), CK_E_MISMATCH, "another secret");
	memcpy(other, h, sizeof(other));
	other[strlen(other) - 1] ^= 1; /* the last hex digit */
	cr_assert_eq(verify(&k, "POST", "/internal/holds", body, other, 1000), CK_E_MISMATCH);
}

WM_TEST(cluster_auth, skew_at_and_past_its_edge)
{
	struct cluster_key k = key();
	char h[CK_HEADER_MAX];
	cr_assert_eq(ck_sign(&k, "GET", 3, "/internal/x", 11, 5000, NULL, 0, h), 0);
	cr_assert_eq(verify(&k, "GET", "/internal/x", "", h, 5030), CK_OK, "30 s late: the edge");
	cr_assert_eq(verify(&k, "GET", "/internal/x", "", h, 4970), CK_OK, "30 s early: the edge");
	cr_assert_eq(verify(&k, "GET", "/internal/x", "", h, 5031), CK_E_SKEW);
	cr_assert_eq(verify(&k, "GET", "/internal/x", "", h, 4969), CK_E_SKEW);
}

WM_TEST(cluster_auth, malformed_headers)
{
	struct cluster_key k = key();
	static const char *const bad[] = {
		"",
		"t=",
		"t=1",
		"t=1,v1=",
		"t=x,v1=96280d7e14df2ff0545946d56c6181046162e9591d05217b2bf3ce240896c67e",
		"t=1,v1=96280d7e14df2ff0545946d56c6181046162e9591d05217b2bf3ce240896c67",   /* 63 hex */
		"t=1,v1=96280d7e14df2ff0545946d56c6181046162e9591d05217b2bf3ce240896c67e0", /* 65 hex */
		"t=1,v1=96280d7e14df2ff0545946d56c6181046162e9591d05217b2bf3ce240896c67g",
		"t=1,v2=96280d7e14df2ff0545946d56c6181046162e9591d05217b2bf3ce240896c67e",
		"T=1,v1=96280d7e14df2ff0545946d56c6181046162e9591d05217b2bf3ce240896c67e",
		" t=1,v1=96280d7e14df2ff0545946d56c6181046162e9591d05217b2bf3ce240896c67e",
		"t=-1,v1=96280d7e14df2ff0545946d56c6181046162e9591d05217b2bf3ce240896c67e",
		"t=1234567890123456789,v1=96280d7e14df2ff0545946d56c6181046162e9591d05217b2bf3ce240896c67e",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_eq(verify(&k, "GET", "/internal/x", "", bad[i], 1), CK_E_MALFORMED, "accepted: \"%s\"", bad[i]);
	cr_assert_eq(ck_verify(&k, "GET", 3, "/internal/x", 11, NULL, 0, NULL, 0, 1, 30), CK_E_MALFORMED);
	/* 18 digits is the longest timestamp */
	char h[CK_HEADER_MAX];
	cr_assert_eq(ck_sign(&k, "GET", 3, "/internal/x", 11, 123456789012345678, NULL, 0, h), 0);
	cr_assert_eq(verify(&k, "GET", "/internal/x", "", h, 123456789012345678), CK_OK);
}

static void write_secret(const char *path, const char *text, size_t len, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, text, len), (ssize_t)len);
	close(fd);
	cr_assert_eq(chmod(path, mode), 0);
}

WM_TEST(cluster_auth, the_secret_file)
{
	char dir[] = "/tmp/wm-ck-XXXXXX", path[64], err[256];
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/secret", dir);
	struct cluster_key k;
	static char big[CK_SECRET_MAX + 2];
	memset(big, 's', sizeof(big));
	write_secret(path, big, CK_SECRET_MIN, 0600);
	cr_assert_eq(ck_load(path, &k, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(k.len, CK_SECRET_MIN, "the minimum is accepted");
	write_secret(path, big, CK_SECRET_MIN - 1, 0600);
	cr_assert_eq(ck_load(path, &k, err, sizeof(err)), -1, "one byte short");
	write_secret(path, big, CK_SECRET_MAX, 0600);
	cr_assert_eq(ck_load(path, &k, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(k.len, CK_SECRET_MAX);
	big[CK_SECRET_MAX] = '\n';
	write_secret(path, big, CK_SECRET_MAX + 1, 0600);
	cr_assert_eq(ck_load(path, &k, err, sizeof(err)), 0, "a trailing newline is not part of it: %s", err);
	cr_assert_eq(k.len, CK_SECRET_MAX);
	big[CK_SECRET_MAX] = 's';
	write_secret(path, big, CK_SECRET_MAX + 1, 0600);
	cr_assert_eq(ck_load(path, &k, err, sizeof(err)), -1, "one byte past the maximum");
	cr_assert(strstr(err, "32 to 256 bytes"), "%s", err);
	write_secret(path, big, CK_SECRET_MIN, 0640);
	cr_assert_eq(ck_load(path, &k, err, sizeof(err)), -1, "group-readable");
	cr_assert(strstr(err, "chmod 600"), "%s", err);
	unlink(path);
	cr_assert_eq(ck_load(path, &k, err, sizeof(err)), -1);
	rmdir(dir);
}

/* ---- the forwarded principal (engine/edge/principal.h) ------------------ */

#include "engine/edge/principal.h"

WM_TEST(cluster_auth, the_signature_covers_the_principal)
{
	struct cluster_key k = key();
	const char *who = "v1 k=key_a e=ptn_b s=1f t=1 r=3 st=2 c=- q=10";
	char h[CK_HEADER_MAX], plain[CK_HEADER_MAX];
	cr_assert_eq(ck_sign_principal(&k, "GET", 3, "/v1/x", 5, 1000, NULL, 0, who, strlen(who), h), 0);
	cr_assert_eq(ck_sign(&k, "GET", 3, "/v1/x", 5, 1000, NULL, 0, plain), 0);
	cr_assert_str_neq(h, plain, "a principal changes the signature");
	cr_assert_eq(ck_verify_principal(&k, "GET", 3, "/v1/x", 5, NULL, 0, who, strlen(who), h, strlen(h), 1000, 30),
		     CK_OK);
	/* removed, altered, or added to a signature made without it */
	cr_assert_eq(ck_verify(&k, "GET", 3, "/v1/x", 5, NULL, 0, h, strlen(h), 1000, 30), CK_E_MISMATCH);
	const char *other = "v1 k=key_a e=platform s=1f t=1 r=3 st=2 c=- q=10";
	cr_assert_eq(ck_verify_principal(&k, "GET", 3, "/v1/x", 5, NULL, 0, other, strlen(other), h, strlen(h), 1000,
					 30), CK_E_MISMATCH);
	cr_assert_eq(ck_verify_principal(&k, "GET", 3, "/v1/x", 5, NULL, 0, who, strlen(who), plain, strlen(plain),
					 1000, 30), CK_E_MISMATCH);
	/* the bound: CK_PRINCIPAL_MAX bytes sign, one more does not */
	static char big[CK_PRINCIPAL_MAX + 2];
	memset(big, 'a', CK_PRINCIPAL_MAX + 1);
	cr_assert_eq(ck_sign_principal(&k, "GET", 3, "/v1/x", 5, 1000, NULL, 0, big, CK_PRINCIPAL_MAX, h), 0);
	cr_assert_eq(ck_sign_principal(&k, "GET", 3, "/v1/x", 5, 1000, NULL, 0, big, CK_PRINCIPAL_MAX + 1, h), -1);
}

WM_TEST(cluster_auth, a_principal_round_trips_in_one_wire_form)
{
	struct principal w;
	memset(&w, 0, sizeof(w));
	snprintf(w.key_id, sizeof(w.key_id), "key_01ABCDEF");
	snprintf(w.entity_id, sizeof(w.entity_id), "ptn_01XYZ");
	snprintf(w.channel_id, sizeof(w.channel_id), "chn_01Q");
	w.scopes = 0x80000001u;
	w.kind = 2;
	w.roles = 5;
	w.status = 3;
	char out[PRINCIPAL_MAX];
	int n = principal_encode(&w, 4294967295u, out);
	cr_assert_gt(n, 0);
	cr_assert_str_eq(out, "v1 k=key_01ABCDEF e=ptn_01XYZ s=80000001 t=2 r=5 st=3 c=chn_01Q q=4294967295");
	struct principal d;
	uint32_t q = 0;
	cr_assert_eq(principal_decode(out, (size_t)n, &d, &q), 0);
	cr_assert_str_eq(d.key_id, w.key_id);
	cr_assert_str_eq(d.entity_id, w.entity_id);
	cr_assert_str_eq(d.channel_id, w.channel_id);
	cr_assert_eq(d.scopes, w.scopes);
	cr_assert_eq(d.kind, 2);
	cr_assert_eq(d.roles, 5);
	cr_assert_eq(d.status, 3);
	cr_assert_eq(q, 4294967295u);
	cr_assert(d.authenticated);
	cr_assert_not(d.is_platform);
	const char *plat = "v1 k=key_a e=platform s=1 t=0 r=0 st=0 c=- q=0";
	cr_assert_eq(principal_decode(plat, strlen(plat), &d, &q), 0);
	cr_assert(d.is_platform);
	cr_assert_str_eq(d.channel_id, "");
}

/* principal_encode writes its fields piece by piece: the bytes printf's
 * format "v1 k=%s e=%s s=%x t=%u r=%u st=%u c=%s q=%u" writes, for zeros,
 * the largest values and the longest ids and channel. */
WM_TEST(cluster_auth, a_principal_is_written_as_its_printf_format_writes_it)
{
	for (int v = 0; v < 3; v++) {
		struct principal w;
		memset(&w, 0, sizeof(w));
		/* the longest id principal_encode takes: ID_MAX_LEN - 2 bytes */
		memset(w.key_id, v == 2 ? 'k' : 'a', v == 2 ? ID_MAX_LEN - 2 : 5);
		memset(w.entity_id, v == 2 ? 'e' : 'b', v == 2 ? ID_MAX_LEN - 2 : 3);
		if (v)
			memset(w.channel_id, 'c', v == 2 ? ID_MAX_LEN - 2 : 1);
		w.scopes = v ? (scope_set)~(scope_set)0 : 0;
		w.kind = v ? 255 : 0;
		w.roles = v ? 255 : 0;
		w.status = v ? 255 : 0;
		uint32_t q = v ? 4294967295u : 0;
		char out[PRINCIPAL_MAX], ref[PRINCIPAL_MAX];
		int n = principal_encode(&w, q, out);
		int rn = snprintf(ref, sizeof(ref), "v1 k=%s e=%s s=%x t=%u r=%u st=%u c=%s q=%u", w.key_id, w.entity_id,
				  (unsigned)w.scopes, w.kind, w.roles, w.status, w.channel_id[0] ? w.channel_id : "-", q);
		cr_assert(rn > 0 && rn < PRINCIPAL_MAX);
		cr_assert_eq(n, rn, "case %d: %d bytes, printf %d", v, n, rn);
		cr_assert_str_eq(out, ref, "case %d", v);
	}
}

WM_TEST(cluster_auth, a_principal_not_in_its_wire_form_is_refused)
{
	static const char *const bad[] = {
		"",
		"v2 k=key_a e=ptn_b s=1 t=0 r=0 st=0 c=- q=0",         /* version */
		"v1 e=ptn_b k=key_a s=1 t=0 r=0 st=0 c=- q=0",         /* order */
		"v1 k=key_a e=ptn_b s=1 t=0 r=0 st=0 c=- q=00",        /* leading zero */
		"v1 k=key_a e=ptn_b s=1 t=256 r=0 st=0 c=- q=0",       /* t past uint8 */
		"v1 k=key_a e=ptn_b s=100000000 t=0 r=0 st=0 c=- q=0", /* s past 32 bits */
		"v1 k=key_a e=ptn_b s=1 t=0 r=0 st=0 c=- q=4294967296", /* q past uint32 */
		"v1 k=key a e=ptn_b s=1 t=0 r=0 st=0 c=- q=0",         /* a space in an id */
		"v1 k= e=ptn_b s=1 t=0 r=0 st=0 c=- q=0",              /* empty id */
		"v1 k=key_a e=ptn_b s=1 t=0 r=0 st=0 c=- q=0 ",        /* trailing byte */
		"v1 k=key_a e=ptn_b s=1 t=0 r=0 st=0 c=- q=",          /* missing number */
		"v1 k=key_a e=ptn_b s=1 t=0 r=0 st=0 c=-",             /* truncated */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct principal d;
		uint32_t q;
		cr_assert_eq(principal_decode(bad[i], strlen(bad[i]), &d, &q), -1, "accepted \"%s\"", bad[i]);
	}
	/* an id at its bound (ID_MAX_LEN - 1 bytes) and past it */
	char id[ID_MAX_LEN + 1], v[PRINCIPAL_MAX];
	memset(id, 'a', ID_MAX_LEN - 1);
	id[ID_MAX_LEN - 1] = 0;
	snprintf(v, sizeof(v), "v1 k=%s e=ptn_b s=1 t=0 r=0 st=0 c=- q=0", id);
	struct principal d;
	uint32_t q;
	cr_assert_eq(principal_decode(v, strlen(v), &d, &q), 0);
	snprintf(v, sizeof(v), "v1 k=%sa e=ptn_b s=1 t=0 r=0 st=0 c=- q=0", id);
	cr_assert_eq(principal_decode(v, strlen(v), &d, &q), -1);
}
