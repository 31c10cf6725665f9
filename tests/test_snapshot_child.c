/*
 * test_snapshot_child.c -- a snapshot child never outlives its shard nor
 * blocks its restart (issue 21, item 6).
 *
 * The child forked by POST /v1/admin/snapshots inherited the data
 * directory's LOCK descriptor (an flock belongs to the open file, which
 * the child shared), so after a kill -9 of the shard the restart was
 * refused ("in use by another process") until the orphan had finished.
 * Here the child is made slow on purpose (errinj snapshot_child_stall: it
 * sleeps SNAP_TEST_STALL_S after opening its temp file), the shard is
 * killed while the child runs, and the restart must succeed at once; the
 * child must be gone, its half-written temp file removed by start-up (with
 * a log line), and every acknowledged write still there.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/api_client.h"
#include "tests/wm_test.h"

static void sleep_ms(int ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

/* Whole file into a malloc'd string (caller frees), or NULL. */
static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	char *s = calloc(1, 1 << 20);
	size_t n = s ? fread(s, 1, (1 << 20) - 1, f) : 0;
	(void)n;
	fclose(f);
	return s;
}

/* How many *.snap.inprogress files the snapshot directory holds. */
static int temp_files(const struct wm_proc *p)
{
	char dir[400];
	snprintf(dir, sizeof(dir), "%s/snap", p->data_dir);
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	int n = 0;
	for (struct dirent *e; (e = readdir(d));)
		n += strstr(e->d_name, ".snap.inprogress") != NULL;
	closedir(d);
	return n;
}

/* A process that exists and is not a zombie. */
static int alive_pid(pid_t pid)
{
	char path[64], st = 0;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	int ok = fscanf(f, "%*d (%*[^)]) %c", &st) == 1;
	fclose(f);
	return ok && st != 'Z' && st != 'X';
}

WM_TEST(snapshot_child, kill9_while_child_runs_then_immediate_restart, .timeout = 90)
{
	struct wm_proc p;
	wm_proc_init(&p);
	const char *env[] = {"WM_ERRINJ=snapshot_child_stall", NULL};
	cr_assert_eq(wm_start(&p, NULL, env), 0, "wm-shard did not start (logs in %s)", p.dir);
	char ids[20][64];
	for (int i = 0; i < 20; i++)
		tc_partner_live(p.port, "Snap Co", "FR", "[\"seller\"]", NULL, ids[i]);

	json_decref(tc_expect(p.port, "POST", "/v1/admin/snapshots", NULL, NULL, 202));
	int waited = 0;
	while (temp_files(&p) == 0 && waited < 10000) {
		sleep_ms(20);
		waited += 20;
	}
	cr_assert_eq(temp_files(&p), 1, "the snapshot child did not start writing");
	/* the child's pid, from the shard's log */
	char logp[400];
	snprintf(logp, sizeof(logp), "%s/shard-%d.log", p.dir, p.starts);
	char *log = slurp(logp);
	cr_assert_not_null(log);
	const char *m = strstr(log, "msg=\"snapshot started\"");
	cr_assert_not_null(m, "no snapshot started line");
	const char *pp = strstr(m, "pid=");
	cr_assert_not_null(pp);
	pid_t child = (pid_t)atoi(pp + 4);
	free(log);
	cr_assert(child > 1 && alive_pid(child), "the snapshot child %d is not running", (int)child);

	wm_kill9(&p);
	/* immediately: no waiting for the orphan */
	cr_assert_eq(wm_start(&p, NULL, NULL), 0, "restart refused while the snapshot child of the killed shard ran "
						  "(logs in %s)", p.dir);
	for (waited = 0; alive_pid(child) && waited < 3000; waited += 10)
		sleep_ms(10);
	cr_assert(!alive_pid(child), "the snapshot child %d outlived its shard", (int)child);
	cr_assert_eq(temp_files(&p), 0, "the half-written snapshot was left behind");
	snprintf(logp, sizeof(logp), "%s/shard-%d.log", p.dir, p.starts);
	log = slurp(logp);
	cr_assert_not_null(log);
	cr_assert(strstr(log, "msg=\"half-written snapshot removed\"") != NULL, "start-up did not log the removal");
	free(log);
	for (int i = 0; i < 20; i++) {
		char path[128];
		snprintf(path, sizeof(path), "/v1/partners/%s", ids[i]);
		json_decref(tc_expect(p.port, "GET", path, NULL, NULL, 200));
	}
	/* and a snapshot can be taken again */
	json_decref(tc_expect(p.port, "POST", "/v1/admin/snapshots", NULL, NULL, 202));
	wm_proc_cleanup(&p);
}
