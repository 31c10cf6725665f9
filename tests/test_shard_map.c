/*
 * test_shard_map.c -- wm-shard with --shard-map/--shard-id (DESIGN.md
 * section 9): a map is checked at start (FILE:LINE for a bad line, every
 * country the reference data prices owned by a shard, the shard's own id in
 * the map), its version is in /metrics, SIGHUP reloads it and a broken file
 * on reload leaves the one in force.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/base/iso.h"
#include "tests/harness.h"
#include "tests/wm_test.h"

/* Write a map of `version` to path: shard 0 owns every assigned country but
 * `except` (NULL: none), shard 1 owns `except` when `two` is set. */
static void write_map(const char *path, int version, const char *except, int two, const char *extra_line)
{
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f);
	fprintf(f, "# test map\nversion %d\nshard 0 127.0.0.1:9100", version);
	char cc[3] = "AA";
	for (cc[0] = 'A'; cc[0] <= 'Z'; cc[0]++)
		for (cc[1] = 'A'; cc[1] <= 'Z'; cc[1]++)
			if (iso_country_valid(cc, 2) && (!except || strcmp(cc, except)))
				fprintf(f, " %s", cc);
	fprintf(f, "\n");
	if (two && except)
		fprintf(f, "shard 1 127.0.0.1:9101 %s\n", except);
	if (extra_line)
		fprintf(f, "%s\n", extra_line);
	fclose(f);
}

static long metric(int port, const char *name)
{
	struct http_resp r;
	cr_assert_eq(http_do(port, "GET", "/metrics", NULL, NULL, &r), 0);
	cr_assert_eq(r.status, 200);
	const char *at = strstr(r.body, name);
	long v = at ? strtol(at + strlen(name), NULL, 10) : -1;
	http_resp_free(&r);
	return v;
}

WM_TEST(shard_map_proc, refused_maps_name_file_and_line, .timeout = 60)
{
	struct wm_proc p;
	wm_proc_init(&p);
	char path[400], msg[2048];
	snprintf(path, sizeof(path), "%s/map.conf", p.dir);
	const char *args[] = {"--shard-map", path, "--shard-id", "0", NULL};
	/* a priced country no shard owns */
	write_map(path, 1, "FR", 0, NULL);
	cr_assert_neq(wm_start_expect_fail(&p, args, msg, sizeof(msg)), 0);
	cr_assert(strstr(msg, "country FR has reference data but no shard owns it"), "%s", msg);
	/* a bad line */
	write_map(path, 1, NULL, 0, "shard 1 127.0.0.1:9101 FR");
	cr_assert_neq(wm_start_expect_fail(&p, args, msg, sizeof(msg)), 0);
	cr_assert(strstr(msg, "map.conf:4: country FR is already owned by shard 0 (line 3)"), "%s", msg);
	/* this shard's id is not in the map */
	write_map(path, 1, "FR", 1, NULL);
	const char *args2[] = {"--shard-map", path, "--shard-id", "2", NULL};
	cr_assert_neq(wm_start_expect_fail(&p, args2, msg, sizeof(msg)), 0);
	cr_assert(strstr(msg, "--shard-id 2 is not one of its shards (ids 0..1)"), "%s", msg);
	wm_proc_cleanup(&p);
}

WM_TEST(shard_map_proc, loaded_shown_and_reloaded_on_sighup, .timeout = 60)
{
	struct wm_proc p;
	wm_proc_init(&p);
	char path[400];
	snprintf(path, sizeof(path), "%s/map.conf", p.dir);
	write_map(path, 3, "FR", 1, NULL);
	const char *args[] = {"--shard-map", path, "--shard-id", "1", NULL};
	cr_assert_eq(wm_start(&p, args, NULL), 0, "did not start (logs in %s)", p.dir);
	cr_assert_eq(metric(p.port, "\nwm_shard_map_version "), 3);
	cr_assert_eq(metric(p.port, "\nwm_shard_id "), 1);
	/* a new version: reloaded */
	write_map(path, 4, "FR", 1, NULL);
	cr_assert_eq(kill(p.pid, SIGHUP), 0);
	long v = -1;
	for (int i = 0; i < 200 && (v = metric(p.port, "\nwm_shard_map_version ")) != 4; i++)
		usleep(20 * 1000);
	cr_assert_eq(v, 4, "SIGHUP did not reload the map");
	/* a broken file: the map in force stays, the shard serves on */
	write_map(path, 5, "FR", 1, "shard x bad");
	cr_assert_eq(kill(p.pid, SIGHUP), 0);
	usleep(300 * 1000);
	cr_assert_eq(metric(p.port, "\nwm_shard_map_version "), 4, "a broken map replaced the one in force");
	/* without the option: a cluster of one, no map metric */
	wm_stop(&p);
	cr_assert_eq(wm_start(&p, NULL, NULL), 0);
	cr_assert_eq(metric(p.port, "\nwm_shard_map_version "), -1);
	wm_proc_cleanup(&p);
}
