/*
 * test_quickstart.c -- the README's quick start runs (issue 21 item 12), so
 * the guide cannot rot: a newcomer copies those blocks against `make run`
 * and must end with a cancelled test order.
 *
 * How: read README.md ($WM_SRC_DIR), take every ```sh block between the
 * <!-- quickstart:begin --> and <!-- quickstart:end --> markers, in order,
 * point its `WM=` line at a fresh wm-shard started like `make run` (with
 * --demo data) and give it the operator key in KEY (the variable the guide
 * asks the reader to set), then run it with `bash` under `set -euo
 * pipefail` (every call is curl --fail-with-body: any error status stops
 * it).  The guide's own output is checked step by step, and the end state
 * through the API: exactly one order for the guide's seller (the replay
 * made none), cancelled, through the guide's sales channel, its stock back.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "tests/api_client.h"
#include "tests/cluster_harness.h"
#include "tests/harness.h"
#include "tests/wm_test.h"

#define QS_MAX_README (256 * 1024) /* bytes of README.md read */
#define QS_MAX_OUT (64 * 1024)     /* bytes of the guide's output kept */

/* The whole file into a malloc'd NUL-terminated string (the test fails if unreadable). */
static char *slurp(const char *path, size_t max)
{
	FILE *f = fopen(path, "rb");
	cr_assert_not_null(f, "cannot open %s", path);
	char *s = malloc(max + 1);
	cr_assert_not_null(s);
	size_t n = fread(s, 1, max, f);
	cr_assert(feof(f), "%s is larger than %zu bytes", path, max);
	fclose(f);
	s[n] = 0;
	return s;
}

/*
 * The shell of the quick start: the lines of every ```sh fence between the
 * markers, with the `WM=` line replaced by `wm`.  Written to `out`; returns
 * how many blocks it took (the test fails on a missing marker, an unclosed
 * fence or a missing WM= line).
 */
static int extract(const char *readme, const char *wm, FILE *out)
{
	const char *b = strstr(readme, "<!-- quickstart:begin -->");
	const char *e = b ? strstr(b, "<!-- quickstart:end -->") : NULL;
	cr_assert(b && e, "README.md lacks the quickstart markers");
	int blocks = 0, in = 0, wm_lines = 0;
	for (const char *p = b; p < e;) {
		const char *nl = memchr(p, '\n', (size_t)(e - p));
		size_t len = nl ? (size_t)(nl - p) : (size_t)(e - p);
		if (!in && len >= 5 && !strncmp(p, "```sh", 5)) {
			in = 1;
			blocks++;
		} else if (in && len == 3 && !strncmp(p, "```", 3)) {
			in = 0;
		} else if (in && len >= 3 && !strncmp(p, "WM=", 3)) {
			fprintf(out, "WM=%s\n", wm);
			wm_lines++;
		} else if (in) {
			fprintf(out, "%.*s\n", (int)len, p);
		}
		p += len + (nl ? 1 : 0);
	}
	cr_assert(!in, "a quick-start block is not closed");
	cr_assert_eq(wm_lines, 1, "the quick start defines WM= once");
	return blocks;
}

/* The value after "prefix" up to the end of its line, in the guide's output. */
static void after(const char *out, const char *prefix, char *val, size_t size)
{
	const char *p = strstr(out, prefix);
	cr_assert_not_null(p, "no \"%s\" in the guide's output:\n%s", prefix, out);
	p += strlen(prefix);
	size_t n = strcspn(p, ",\r\n");
	snprintf(val, size, "%.*s", (int)n, p);
}

/* Run the guide against the service at port (scratch files in dir) and
 * check what it printed and the state it left. */
static void run_guide(int port, const char *dir)
{
	const char *src = getenv("WM_SRC_DIR");
	char path[512], wm[64], script[512], cmd[1200];
	snprintf(path, sizeof(path), "%s/README.md", src ? src : ".");
	char *readme = slurp(path, QS_MAX_README);
	snprintf(wm, sizeof(wm), "http://127.0.0.1:%d", port);
	snprintf(script, sizeof(script), "%s/quickstart.sh", dir);
	FILE *f = fopen(script, "w");
	cr_assert_not_null(f);
	fputs("set -euo pipefail\n", f);
	int blocks = extract(readme, wm, f);
	fclose(f);
	free(readme);
	cr_assert_geq(blocks, 8, "the quick start has its steps (%d blocks)", blocks);

	snprintf(cmd, sizeof(cmd), "cd '%s' && KEY='%s' bash quickstart.sh 2>&1", dir, WM_TEST_KEY);
	FILE *sh = popen(cmd, "r");
	cr_assert_not_null(sh);
	char *out = calloc(1, QS_MAX_OUT + 1);
	cr_assert_not_null(out);
	size_t n = fread(out, 1, QS_MAX_OUT, sh);
	out[n] = 0;
	int st = pclose(sh);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the quick start failed (status %d; script %s):\n%s", st,
		  script, out);

	/* each step said what the guide says it says */
	char seller[64], order[64], buf[128];
	after(out, "estate ptn_", buf, sizeof(buf));
	after(out, "seller ", seller, sizeof(seller));
	cr_assert(!strncmp(seller, "ptn_", 4), "%s", out);
	cr_assert(strstr(out, "\nlive\n"), "the ladder reached live:\n%s", out);
	cr_assert(strstr(out, "(404 for the seller: the wine is a draft)"), "a draft is hidden from sellers:\n%s", out);
	cr_assert(strstr(out, "\npublished\n"), "%s", out);
	cr_assert(strstr(out, "\"total\":"), "the quote printed its total:\n%s", out);
	after(out, "order ", order, sizeof(order));
	cr_assert(!strncmp(order, "ord_", 4), "%s", out);
	cr_assert(strstr(out, "Idempotent-Replayed: true"), "the retry is a replay:\n%s", out);
	snprintf(buf, sizeof(buf), "Location: /v1/orders/%s", order);
	cr_assert(strstr(out, buf), "the replay names the same order:\n%s", out);
	size_t ol = strlen(out);
	while (ol && (out[ol - 1] == '\n' || out[ol - 1] == '\r'))
		out[--ol] = 0;
	cr_assert(ol >= 20 && !strcmp(out + ol - 20, "\ncancelled\ncancelled"), "ends cancelled:\n%s", out);
	free(out);

	/* and the service agrees */
	snprintf(path, sizeof(path), "/v1/orders?partner=%s", seller);
	json_t *l = tc_expect(port, "GET", path, NULL, NULL, 200);
	json_t *data = json_object_get(l, "data");
	cr_assert_eq(json_array_size(data), 1, "one order, the replay made none: %s", json_dumps(l, JSON_COMPACT));
	json_t *o = json_array_get(data, 0);
	cr_assert_str_eq(tc_jstr(o, "id"), order);
	cr_assert_str_eq(tc_jstr(o, "status"), "cancelled");
	cr_assert(tc_jstr(o, "channel_id") && !strncmp(tc_jstr(o, "channel_id"), "chn_", 4), "through its channel");
	json_t *legs = json_object_get(o, "fulfillments");
	cr_assert_eq(json_array_size(legs), 1);
	cr_assert_str_eq(tc_jstr(json_array_get(legs, 0), "status"), "released", "the stock went back");
	json_decref(l);
}

WM_TEST(quickstart, readme_guide_runs_to_a_cancelled_order, .timeout = 120)
{
	struct wm_proc p;
	wm_proc_init(&p);
	const char *args[] = {"--demo", NULL};
	cr_assert_eq(wm_start(&p, args, NULL), 0, "wm-shard did not start (logs in %s)", p.dir);
	run_guide(p.port, p.dir);
	wm_proc_cleanup(&p);
}

/* The same guide against what `make run` starts (shard-router/run-local.sh):
 * a router, the home, a shard owning FR and DE (the guide's origin and
 * destination), one owning IT and ES; demo data at the home. */
WM_TEST(quickstart, readme_guide_runs_through_the_local_cluster, .timeout = 180)
{
	struct wm_cluster c;
	wm_cluster_init(&c, 3);
	static const char *const own[] = {NULL, "FR DE", "IT ES"};
	wm_cluster_set_countries(&c, own);
	c.extra[0] = "--demo";
	wm_cluster_start_all(&c);
	cr_assert_eq(wm_cluster_router_start(&c), 0, "the router did not start (logs in %s)", c.router_dir);
	run_guide(c.router_port, c.root);
	wm_cluster_cleanup(&c);
}
