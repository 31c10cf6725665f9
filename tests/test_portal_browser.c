/*
 * test_portal_browser.c -- the partner portal in a real browser (issue 19):
 * Debian's headless Chromium, driven through chromedriver's W3C WebDriver
 * HTTP API on loopback, against a router and three shards this test starts
 * (tests/cluster_harness.h).  A partner's session, keyboard only (every
 * activation is an Enter on the focused element):
 *
 *   - a newcomer (status applied) signs in with its key and sees step 1
 *     done and step 2 waiting for the platform; the platform verifies it
 *     (the API, as an operator would); Refresh shows step 2 done;
 *   - a live seller signs in: onboarding; roles; keys -- mints a key,
 *     which is shown once and works with curl, renames it, sets its
 *     expiry, revokes it (curl is then refused), pages through 22 keys by
 *     cursor --; webhooks -- a refused URL shows the API's detail and the
 *     field error next to the field, then an endpoint is created with its
 *     secret shown once --; the catalogue (the fixture's wine listed, an
 *     empty listing form refused field by field); a test order that
 *     reaches `reserved` with its documents listed; the capability flags
 *     saved, and that event's delivery (dead: a test build sends nothing
 *     off loopback) in the endpoint's deliveries and dead letters, then
 *     replayed.
 *
 * Every page is photographed at 1280 and 360 px wide (full page) into
 * build/portal-shots/<page>-<width>.png, must not scroll sideways at 360,
 * must have a label (or aria-label) on every control, and must leave no
 * console error and no CSP violation (the browser log at
 * level SEVERE; portal.js also counts securitypolicyviolation events into
 * #csp-violations).  The only errors allowed are the network lines of the
 * two requests the test makes fail on purpose (a 422 each).
 *
 * Network safety: Chromium runs with every non-loopback request sent to a
 * dead proxy on 127.0.0.1:9 and every host name unresolvable except
 * 127.0.0.1, background networking off.  The driver and the browser are a
 * process group of their own, killed when the test's process exits.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>
#include <openssl/evp.h>

#include "tests/api_client.h"
#include "tests/cluster_harness.h"
#include "tests/order_world.h"
#include "tests/wm_test.h"

#define WD_BROWSER "/usr/bin/chromium"
#define WD_DRIVER "/usr/bin/chromedriver"
#define WD_ELEMENT "element-6066-11e4-a52e-4f735466cecf"
#define WD_ENTER "\xee\x80\x87" /* U+E007, WebDriver's Enter key */
#define WD_WAIT_MS 30000        /* a condition the page must reach */
#define WD_POLL_MS 100
#define SHOT_WIDE 1280
#define SHOT_NARROW 360
#define SHOT_HEIGHT 900
#define MAX_EXPECTED_ERRORS 4

struct wd {
	int port;
	pid_t pid;
	char sid[128];
	char dir[256];
	char shots[512];
	/* the SEVERE network lines the test causes on purpose: a URL part and
	 * the status, each allowed once */
	const char *expect_url[MAX_EXPECTED_ERRORS];
	int n_expect;
};

static pid_t wd_group; /* the driver's process group, killed at exit */

static void wd_kill_group(void)
{
	if (wd_group > 0) {
		kill(-wd_group, SIGKILL);
		waitpid(wd_group, NULL, 0);
		wd_group = 0;
	}
}

struct sink {
	char *p;
	size_t n;
};

static size_t sink_write(char *p, size_t sz, size_t n, void *u)
{
	struct sink *s = u;
	char *q = realloc(s->p, s->n + sz * n + 1);
	if (!q)
		return 0;
	memcpy(q + s->n, p, sz * n);
	s->n += sz * n;
	q[s->n] = 0;
	s->p = q;
	return sz * n;
}

/* One WebDriver call: path is "/status" or the part after /session/<id>
 * when it starts with '+'.  body (may be NULL) is not stolen.  The parsed
 * answer (caller decrefs) or NULL when the driver did not answer; the HTTP
 * status in *st. */
static json_t *wd_http(struct wd *w, const char *method, const char *path, json_t *body, long *st)
{
	char url[1024];
	if (path[0] == '+')
		snprintf(url, sizeof(url), "http://127.0.0.1:%d/session/%s%s", w->port, w->sid, path + 1);
	else
		snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", w->port, path);
	CURL *c = curl_easy_init();
	cr_assert_not_null(c);
	struct sink s = {0};
	char *js = body ? json_dumps(body, JSON_COMPACT) : NULL;
	struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink_write);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &s);
	if (js)
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, js);
	else if (!strcmp(method, "POST"))
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, "{}");
	CURLcode rc = curl_easy_perform(c);
	*st = 0;
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, st);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	free(js);
	json_t *j = NULL;
	if (rc == CURLE_OK && s.p)
		j = json_loads(s.p, 0, NULL);
	free(s.p);
	return j;
}

/* A call that must succeed: its "value" (caller decrefs). */
static json_t *wd(struct wd *w, const char *method, const char *path, json_t *body)
{
	long st;
	json_t *j = wd_http(w, method, path, body, &st);
	cr_assert_not_null(j, "%s %s: the driver did not answer", method, path);
	if (st != 200) {
		char *d = json_dumps(j, JSON_COMPACT);
		cr_assert_fail("%s %s: %ld %s", method, path, st, d);
		free(d);
	}
	json_t *v = json_incref(json_object_get(j, "value"));
	json_decref(j);
	return v;
}

static void wd_void(struct wd *w, const char *method, const char *path, json_t *body)
{
	json_decref(wd(w, method, path, body));
}

/* Run script (a function body) in the page; its return value. */
static json_t *wd_js(struct wd *w, const char *script)
{
	json_t *b = json_pack("{s:s, s:[]}", "script", script, "args");
	json_t *v = wd(w, "POST", "+/execute/sync", b);
	json_decref(b);
	return v;
}

/* 1 when the expression is truthy now. */
static int wd_true(struct wd *w, const char *expr)
{
	char s[2048];
	snprintf(s, sizeof(s), "return !!(%s);", expr);
	json_t *v = wd_js(w, s);
	int t = json_is_true(v);
	json_decref(v);
	return t;
}

/* The string the expression evaluates to, into out. */
static void wd_str(struct wd *w, const char *expr, char *out, size_t n)
{
	char s[2048];
	snprintf(s, sizeof(s), "var v = (%s); return v === null || v === undefined ? '' : String(v);", expr);
	json_t *v = wd_js(w, s);
	snprintf(out, n, "%s", json_is_string(v) ? json_string_value(v) : "");
	json_decref(v);
}

/* Wait until the expression is truthy (at most WD_WAIT_MS). */
static void wd_wait(struct wd *w, const char *expr, const char *what)
{
	for (int t = 0; t < WD_WAIT_MS / WD_POLL_MS; t++) {
		if (wd_true(w, expr))
			return;
		usleep(WD_POLL_MS * 1000);
	}
	char alert[1024];
	wd_str(w, "document.getElementById('alert').hidden ? '' : document.getElementById('alert').textContent", alert,
	       sizeof(alert));
	cr_assert_fail("timed out waiting for %s (%s); the page's alert: %s", what, expr, alert);
}

/* The element the CSS selector names (its WebDriver id into id). */
static void wd_find(struct wd *w, const char *css, char id[128])
{
	json_t *b = json_pack("{s:s, s:s}", "using", "css selector", "value", css);
	json_t *v = wd(w, "POST", "+/element", b);
	json_decref(b);
	const char *e = json_string_value(json_object_get(v, WD_ELEMENT));
	if (!e) {
		char *d = json_dumps(v, JSON_COMPACT);
		cr_assert_fail("no element %s: %s", css, d);
	}
	snprintf(id, 128, "%s", e);
	json_decref(v);
}

/* Type text into the element (it gets the focus first, as a keyboard user's Tab would give it). */
static void wd_type(struct wd *w, const char *css, const char *text)
{
	char id[128], path[256];
	wd_find(w, css, id);
	snprintf(path, sizeof(path), "+/element/%s/value", id);
	json_t *b = json_pack("{s:s}", "text", text);
	wd_void(w, "POST", path, b);
	json_decref(b);
}

/* Clear an input, then type. */
static void wd_fill(struct wd *w, const char *css, const char *text)
{
	char id[128], path[256];
	wd_find(w, css, id);
	snprintf(path, sizeof(path), "+/element/%s/clear", id);
	wd_void(w, "POST", path, NULL);
	wd_type(w, css, text);
}

/* Activate with the keyboard: Enter on the element. */
static void wd_enter(struct wd *w, const char *css) { wd_type(w, css, WD_ENTER); }

/* A Chrome DevTools command through the driver. */
static json_t *wd_cdp(struct wd *w, const char *cmd, json_t *params)
{
	json_t *b = json_pack("{s:s, s:O}", "cmd", cmd, "params", params);
	json_t *v = wd(w, "POST", "+/goog/cdp/execute", b);
	json_decref(b);
	json_decref(params);
	return v;
}

static void wd_width(struct wd *w, int width)
{
	json_decref(wd_cdp(w, "Emulation.setDeviceMetricsOverride",
			   json_pack("{s:i, s:i, s:i, s:b}", "width", width, "height", SHOT_HEIGHT, "deviceScaleFactor",
				     1, "mobile", width < 600)));
}

/* The browser log since the last read: any SEVERE line fails the test,
 * except the network lines the test announced (each once). */
static void assert_no_console_errors(struct wd *w, const char *page)
{
	json_t *b = json_pack("{s:s}", "type", "browser");
	json_t *log = wd(w, "POST", "+/se/log", b);
	json_decref(b);
	size_t i;
	json_t *e;
	json_array_foreach(log, i, e)
	{
		const char *lv = json_string_value(json_object_get(e, "level"));
		const char *msg = json_string_value(json_object_get(e, "message"));
		if (!lv || strcmp(lv, "SEVERE"))
			continue;
		int allowed = 0;
		for (int k = 0; k < w->n_expect && !allowed; k++)
			if (w->expect_url[k] && msg && strstr(msg, w->expect_url[k]) &&
			    strstr(msg, "the server responded with a status of 422")) {
				w->expect_url[k] = NULL;
				allowed = 1;
			}
		cr_assert(allowed, "page %s: console error: %s", page, msg ? msg : "?");
	}
	json_decref(log);
	char n[32];
	wd_str(w, "document.getElementById('csp-violations').dataset.count", n, sizeof(n));
	cr_assert_str_eq(n, "0", "page %s: %s CSP violation(s)", page, n);
}

/* Decode base64 into a file. */
static void write_png(const char *path, const char *b64)
{
	size_t n = strlen(b64);
	unsigned char *out = malloc(n / 4 * 3 + 4);
	cr_assert_not_null(out);
	int len = EVP_DecodeBlock(out, (const unsigned char *)b64, (int)n);
	cr_assert(len > 0, "the screenshot is not base64");
	while (n > 0 && b64[n - 1] == '=') {
		len--;
		n--;
	}
	cr_assert(len > 8 && !memcmp(out, "\x89PNG", 4), "the screenshot is not a PNG");
	FILE *f = fopen(path, "wb");
	cr_assert_not_null(f, "cannot write %s", path);
	cr_assert_eq(fwrite(out, 1, (size_t)len, f), (size_t)len);
	fclose(f);
	free(out);
}

/* Photograph the page at both widths (full page), check it does not
 * scroll sideways at either, then the log. */
static void shots(struct wd *w, const char *page)
{
	static const int widths[] = {SHOT_WIDE, SHOT_NARROW};
	for (size_t i = 0; i < sizeof(widths) / sizeof(widths[0]); i++) {
		wd_width(w, widths[i]);
		char sw[32];
		wd_str(w, "document.documentElement.scrollWidth", sw, sizeof(sw));
		cr_assert(atoi(sw) <= widths[i], "page %s scrolls sideways at %d px (%s px wide)", page, widths[i], sw);
		json_t *v = wd_cdp(w, "Page.captureScreenshot",
				   json_pack("{s:s, s:b}", "format", "png", "captureBeyondViewport", 1));
		char path[700];
		snprintf(path, sizeof(path), "%s/%s-%d.png", w->shots, page, widths[i]);
		write_png(path, json_string_value(json_object_get(v, "data")));
		json_decref(v);
	}
	wd_width(w, SHOT_WIDE);
	assert_no_console_errors(w, page);
	/* every control has a name a screen reader reads: a label, an
	 * aria-label, or (a button) its text */
	char unlabelled[512];
	wd_str(w,
	       "Array.prototype.filter.call(document.querySelectorAll('input, select, textarea, button'), function (e) {"
	       " if (e.type === 'hidden') return false;"
	       " if (e.getAttribute('aria-label')) return false;"
	       " if (e.tagName === 'BUTTON') return !e.textContent.trim();"
	       " return !(e.labels && e.labels.length); }).map(function (e) { return e.id || e.name || e.className; })"
	       ".join(' ')",
	       unlabelled, sizeof(unlabelled));
	cr_assert_str_eq(unlabelled, "", "page %s: controls without a label: %s", page, unlabelled);
}

static void wd_start(struct wd *w)
{
	memset(w, 0, sizeof(*w));
	cr_assert_eq(access(WD_DRIVER, X_OK), 0, WD_DRIVER " is missing (.ci/deps build installs chromium-driver)");
	cr_assert_eq(access(WD_BROWSER, X_OK), 0, WD_BROWSER " is missing (.ci/deps build installs chromium)");
	snprintf(w->dir, sizeof(w->dir), "/tmp/wm-portal-XXXXXX");
	cr_assert_not_null(mkdtemp(w->dir));
	wm_tmp_track_dir(w->dir);
	const char *src = getenv("WM_SRC_DIR");
	snprintf(w->shots, sizeof(w->shots), "%s/build/portal-shots", src ? src : ".");
	mkdir(w->shots, 0755);
	w->port = wm_cluster_free_port();
	wm_cluster_release_port(w->port); /* chromedriver binds it its own way */
	char port_arg[32], log[300];
	snprintf(port_arg, sizeof(port_arg), "--port=%d", w->port);
	snprintf(log, sizeof(log), "%s/chromedriver.log", w->dir);
	atexit(wd_kill_group);
	pid_t pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		setpgid(0, 0);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		FILE *f = freopen(log, "w", stdout);
		(void)f;
		dup2(STDOUT_FILENO, STDERR_FILENO);
		execl(WD_DRIVER, WD_DRIVER, port_arg, "--allowed-ips=127.0.0.1", (char *)NULL);
		_exit(127);
	}
	setpgid(pid, pid);
	w->pid = pid;
	wd_group = pid;
	long st = 0;
	for (int t = 0; t < 200; t++) {
		json_t *j = wd_http(w, "GET", "/status", NULL, &st);
		int ready = j && json_is_true(json_object_get(json_object_get(j, "value"), "ready"));
		json_decref(j);
		if (ready)
			break;
		usleep(50 * 1000);
	}
	cr_assert_eq(st, 200, "chromedriver did not start (log in %s)", log);
	char profile[320];
	snprintf(profile, sizeof(profile), "--user-data-dir=%s/profile", w->dir);
	json_t *caps = json_pack(
		"{s:{s:{s:s, s:{s:s, s:[s,s,s,s,s,s,s,s,s,s,s,s,s,s,s,s,s,s,s]}, s:{s:s}}}}", "capabilities", "alwaysMatch",
		"browserName", "chrome", "goog:chromeOptions", "binary", WD_BROWSER, "args", "--headless=new",
		"--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", profile, "--window-size=1280,900",
		"--no-first-run", "--no-default-browser-check", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--disable-extensions", "--disable-default-apps",
		"--no-pings", "--disable-domain-reliability", "--disable-client-side-phishing-detection",
		"--disable-features=Translate,OptimizationHints,MediaRouter,AutofillServerCommunication",
		/* nothing leaves loopback: a dead proxy for the rest, no name resolves */
		"--proxy-server=http://127.0.0.1:9", "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
		"goog:loggingPrefs", "browser", "ALL");
	json_t *v = wd(w, "POST", "/session", caps);
	json_decref(caps);
	const char *sid = json_string_value(json_object_get(v, "sessionId"));
	cr_assert_not_null(sid, "no session id");
	snprintf(w->sid, sizeof(w->sid), "%s", sid);
	json_decref(v);
}

static void wd_stop(struct wd *w)
{
	long st;
	json_decref(wd_http(w, "DELETE", "+", NULL, &st));
	wd_kill_group();
	wm_tmp_untrack_dir(w->dir);
	if (!getenv("WM_KEEP_TMP"))
		rm_rf(w->dir);
}

static void go(struct wd *w, int port)
{
	char url[128];
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/portal/", port);
	json_t *b = json_pack("{s:s}", "url", url);
	wd_void(w, "POST", "+/url", b);
	json_decref(b);
	wd_wait(w, "document.readyState === 'complete' && document.body.dataset.loaded === 'signin'", "the sign-in page");
}

/* Keyboard sign-in: type the key, Enter submits; wait for the onboarding page. */
static void sign_in(struct wd *w, const char *key)
{
	json_decref(wd_js(w, "document.body.dataset.loaded = ''; return 0;"));
	wd_fill(w, "#signin-key", key);
	wd_type(w, "#signin-key", WD_ENTER);
	wd_wait(w, "document.body.dataset.loaded === 'onboarding'", "the onboarding page after sign-in");
}

/* Follow a navigation link with Enter and wait for the page to load. */
static void nav(struct wd *w, const char *page)
{
	char css[64], cond[128];
	json_decref(wd_js(w, "document.body.dataset.loaded = ''; return 0;"));
	snprintf(css, sizeof(css), "#nav-%s", page);
	wd_enter(w, css);
	snprintf(cond, sizeof(cond), "document.body.dataset.loaded === '%s'", page);
	wd_wait(w, cond, page);
}

static struct wm_cluster cl;

static void up(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
	wm_cluster_for_orders(&cl, "10000", NULL);
}

static void down(void)
{
	wd_kill_group();
	wm_cluster_cleanup(&cl);
	curl_global_cleanup();
}

WM_TEST(portal_browser, a_partner_walks_the_portal_in_chromium, .init = up, .fini = down, .timeout = 240)
{
	int port = cl.router_port;
	struct oworld x;
	memset(&x, 0, sizeof(x));
	ow_build(&x, port, 20, 20, "FR", "DE");
	/* a newcomer: applied, with a key of its own */
	char newcomer[64], knew[128];
	json_t *p = tc_expect(port, "POST", "/v1/partners", NULL,
			      "{\"legal_name\":\"Newcomer Weinhandel\",\"country\":\"DE\",\"roles\":[\"seller\"]}", 201);
	snprintf(newcomer, sizeof(newcomer), "%s", tc_jstr(p, "id"));
	json_decref(p);
	tc_key_for(port, newcomer, knew);

	struct wd w;
	wd_start(&w);
	go(&w, port);
	shots(&w, "signin");

	/* onboarding, walked: the platform's step shows as waiting, then done */
	sign_in(&w, knew);
	wd_wait(&w, "document.getElementById('step-1').className === 'done' && "
		    "document.getElementById('step-2').className === 'current' && "
		    "document.getElementById('step-2').textContent.indexOf('Waiting for the platform') >= 0",
		"step 1 done, step 2 waiting");
	shots(&w, "onboarding-newcomer");
	char path[128];
	snprintf(path, sizeof(path), "/v1/partners/%s", newcomer);
	json_decref(tc_expect(port, "PATCH", path, NULL, "{\"status\":\"verified\"}", 200));
	wd_enter(&w, "#onb-refresh");
	wd_wait(&w, "document.getElementById('step-2').className === 'done' && "
		    "document.getElementById('step-3').className === 'current'",
		"step 2 done after the platform verified");
	wd_enter(&w, "#signout");
	wd_wait(&w, "document.body.dataset.loaded === 'signin' && document.getElementById('nav').hidden", "signed out");

	/* the live seller */
	sign_in(&w, x.ksel);
	wd_wait(&w, "document.getElementById('onb-status').textContent === 'live' && "
		    "document.getElementById('step-6').className === 'done' && "
		    "document.getElementById('onb-checklist').children.length === 8",
		"a live partner's onboarding");
	shots(&w, "onboarding");

	nav(&w, "roles");
	wd_wait(&w, "document.getElementById('roles-list').textContent === 'seller' && "
		    "document.getElementById('cap-creates_orders').checked",
		"the seller role and its flags");
	shots(&w, "roles");

	/* keys: mint, shown once, used with curl */
	nav(&w, "keys");
	wd_wait(&w, "!document.getElementById('mint-form').hidden", "the mint form (the key holds write:keys)");
	wd_fill(&w, "#mint-name", "portal test key");
	wd_type(&w, "#mint-name", WD_ENTER);
	wd_wait(&w, "!document.getElementById('minted').hidden && "
		    "document.getElementById('minted-key').value.indexOf('wm_sk_') === 0 && "
		    "document.getElementById('keys-table').textContent.indexOf('portal test key') >= 0",
		"the minted key, shown once, and listed");
	char minted[160];
	wd_str(&w, "document.getElementById('minted-key').value", minted, sizeof(minted));
	shots(&w, "keys");
	char cmd[700], out[64] = "";
	snprintf(cmd, sizeof(cmd),
		 "curl -s --noproxy '*' -o /dev/null -w '%%{http_code}' -H 'Authorization: Bearer %s' "
		 "http://127.0.0.1:%d/v1/partners/%s",
		 minted, port, x.sel);
	FILE *c = popen(cmd, "r");
	cr_assert_not_null(c);
	cr_assert_not_null(fgets(out, sizeof(out), c));
	pclose(c);
	cr_assert_str_eq(out, "200", "the minted key with curl: %s", out);
	wd_enter(&w, "#minted-done");
	wd_wait(&w, "document.getElementById('minted').hidden && document.getElementById('minted-key').value === ''",
		"the key gone from the page");
	/* rename, expire and revoke it from its row; then curl is refused */
	char kid[64], css[160];
	wd_str(&w, "Array.prototype.filter.call(document.querySelectorAll('#keys-table tbody tr'), function (tr) { "
		   "return tr.textContent.indexOf('portal test key') >= 0; })[0].dataset.id",
	       kid, sizeof(kid));
	cr_assert(kid[0], "the minted key's row has no id");
	snprintf(css, sizeof(css), "#keys-table tr[data-id=\"%s\"] .k-name", kid);
	wd_fill(&w, css, "renamed in the portal");
	snprintf(css, sizeof(css), "#keys-table tr[data-id=\"%s\"] .k-rename", kid);
	wd_enter(&w, css);
	wd_wait(&w, "document.getElementById('keys-table').textContent.indexOf('renamed in the portal') >= 0",
		"the new name listed");
	snprintf(css, sizeof(css), "#keys-table tr[data-id=\"%s\"] .k-expiry", kid);
	wd_fill(&w, css, "2031-01-01T00:00:00Z");
	snprintf(css, sizeof(css), "#keys-table tr[data-id=\"%s\"] .k-setexp", kid);
	wd_enter(&w, css);
	wd_wait(&w, "document.getElementById('keys-table').textContent.indexOf('2031-01-01') >= 0",
		"the expiry listed");
	snprintf(css, sizeof(css), "#keys-table tr[data-id=\"%s\"] .k-revoke", kid);
	wd_enter(&w, css); /* arms */
	wd_enter(&w, css); /* confirms */
	snprintf(css, sizeof(css),
		 "document.querySelector('#keys-table tr[data-id=\"%s\"]').textContent.indexOf('revoked') >= 0", kid);
	wd_wait(&w, css, "the key revoked");
	shots(&w, "keys-revoked");
	for (int t = 0; t < 50; t++) { /* the router's replica of the keys learns it */
		c = popen(cmd, "r");
		cr_assert_not_null(c);
		cr_assert_not_null(fgets(out, sizeof(out), c));
		pclose(c);
		if (!strcmp(out, "401"))
			break;
		usleep(100 * 1000);
	}
	cr_assert_str_eq(out, "401", "the revoked key with curl: %s", out);
	/* cursor paging: 20 more keys make 22, two pages of the portal's 20 */
	for (int k = 0; k < 20; k++) {
		char spare[128];
		tc_key_for(port, x.sel, spare);
	}
	wd_enter(&w, "#keys-first");
	char first[64], cond0[256];
	wd_wait(&w, "document.querySelectorAll('#keys-table tbody tr[data-id]').length === 20 && "
		    "!document.getElementById('keys-next').disabled",
		"a full first page of keys and a next one");
	wd_str(&w, "document.querySelector('#keys-table tbody tr[data-id]').dataset.id", first, sizeof(first));
	wd_enter(&w, "#keys-next");
	snprintf(cond0, sizeof(cond0),
		 "document.querySelectorAll('#keys-table tbody tr[data-id]').length === 2 && "
		 "!document.querySelector('#keys-table tbody tr[data-id=\"%s\"]') && document.getElementById('keys-next').disabled",
		 first);
	wd_wait(&w, cond0, "the second page: the last 2 of 22 keys");
	wd_enter(&w, "#keys-first");
	snprintf(cond0, sizeof(cond0), "!!document.querySelector('#keys-table tbody tr[data-id=\"%s\"]')", first);
	wd_wait(&w, cond0, "the first page again");

	/* webhooks: a refused URL shows detail and field error; then created */
	nav(&w, "webhooks");
	w.expect_url[w.n_expect++] = "/v1/webhook-endpoints";
	wd_fill(&w, "#whe-url", "ftp://hooks.example.com/x");
	wd_type(&w, "#whe-url", WD_ENTER);
	wd_wait(&w, "!document.getElementById('alert').hidden && "
		    "document.querySelector('#whe-form .ferr[data-for=\"url\"]').textContent.length > 0 && "
		    "document.getElementById('whe-url').getAttribute('aria-invalid') === 'true'",
		"the API's refusal shown next to the URL field");
	shots(&w, "webhooks-error");
	wd_fill(&w, "#whe-events", "*");
	wd_fill(&w, "#whe-url", "https://hooks.example.com/portal");
	wd_type(&w, "#whe-url", WD_ENTER);
	wd_wait(&w, "!document.getElementById('whe-secret').hidden && "
		    "document.getElementById('whe-secret-value').value.indexOf('whsec_') === 0 && "
		    "document.getElementById('whe-table').textContent.indexOf('https://hooks.example.com/portal') >= 0",
		"the endpoint and its secret");
	shots(&w, "webhooks");

	/* the catalogue: the fixture's wine; an empty listing form refused per field */
	nav(&w, "catalogue");
	char cond[512];
	snprintf(cond, sizeof(cond), "document.getElementById('wines-table').textContent.indexOf('%s') >= 0", x.w1);
	wd_wait(&w, cond, "the fixture's wine listed");
	wd_wait(&w, "document.getElementById('wine-form').hidden && document.getElementById('offer-form').hidden && "
		    "!document.getElementById('listing-form').hidden",
		"a seller's forms: the listing's only");
	w.expect_url[w.n_expect++] = "/v1/listings";
	wd_enter(&w, "#listing-submit");
	wd_wait(&w, "document.querySelector('#listing-form .ferr[data-for=\"offer_id\"]').textContent.length > 0",
		"the offer_id's field error");
	shots(&w, "catalogue");

	/* a test order, followed to reserved and its documents */
	nav(&w, "order");
	snprintf(cond, sizeof(cond),
		 "var s = document.getElementById('order-sku'); s.value = '%s'; return s.value === '%s';", x.w1, x.w1);
	json_t *ok = wd_js(&w, cond);
	cr_assert(json_is_true(ok), "the wine is not offered in the order form");
	json_decref(ok);
	wd_enter(&w, "#order-submit");
	wd_wait(&w, "document.getElementById('order-status').textContent === 'reserved'", "the order reserved");
	wd_wait(&w, "document.body.dataset.orderDone === '1' && "
		    "document.querySelectorAll('#order-docs li[data-status=\"generated\"]').length > 0",
		"its documents");
	wd_wait(&w, "document.querySelectorAll('#order-states li.done').length === 5", "every state up to reserved");
	shots(&w, "order");

	/* the capability flags saved (an event of the partner on the catalogue
	 * home, whose events a cluster delivers), and the webhooks page again:
	 * the delivery died at the test build's non-loopback rule, so the
	 * dead-letter queue has it */
	nav(&w, "roles");
	wd_enter(&w, "#caps-save");
	wd_wait(&w, "document.getElementById('alert').textContent === 'Capability flags saved.'", "the flags saved");
	nav(&w, "webhooks");
	json_t *btn = wd_js(&w, "var b = document.querySelector('#whe-table button'); b.focus(); return !!b;");
	json_decref(btn);
	wd_type(&w, "#whe-table button", WD_ENTER);
	wd_wait(&w, "!document.getElementById('dlq').hidden", "the dead-letter queue");
	/* the deliveries die at once (a test build sends nothing outside
	 * 127.0.0.0/8), in the background: look again until they are there */
	int dead = 0;
	for (int t = 0; t < 100 && !dead; t++) {
		dead = wd_true(&w, "document.querySelectorAll('#dlq-table tbody button').length > 0");
		if (!dead) {
			usleep(200 * 1000);
			wd_type(&w, "#whe-table button", WD_ENTER);
		}
	}
	cr_assert(dead, "no dead letter of the order's events");
	wd_wait(&w, "document.querySelectorAll('#deliv-table tbody tr[data-id]').length > 0 && "
		    "document.getElementById('deliv-table').textContent.indexOf('dead') >= 0",
		"the endpoint's deliveries listed");
	shots(&w, "webhooks-dlq");
	wd_type(&w, "#dlq-table tbody button", WD_ENTER);
	wd_wait(&w, "document.getElementById('alert').className === 'alert ok' && "
		    "document.getElementById('alert').textContent.indexOf('Replay queued') === 0",
		"the replay accepted");

	cr_assert_eq(w.n_expect, 2);
	for (int k = 0; k < w.n_expect; k++)
		cr_assert_null(w.expect_url[k], "the refused request to %s left no console line (the log is not read?)",
			       w.expect_url[k]);
	wd_stop(&w);
}
