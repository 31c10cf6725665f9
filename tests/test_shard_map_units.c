/*
 * test_shard_map_units.c -- the shard map loader (engine/cluster/shard_map.c):
 * a good map, then each kind of error with its FILE:LINE, and every bound at
 * and past its edge.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/base/iso.h"
#include "engine/cluster/shard_map.h"
#include "tests/wm_test.h"

static struct shard_map map;
static char err[512];

static int parse(const char *text, const char *const *req, size_t n_req)
{
	err[0] = 0;
	return smap_parse(text, strlen(text), "map.conf", req, n_req, &map, err, sizeof(err));
}

/* The text must be refused with exactly this message. */
static void refused(const char *text, const char *want)
{
	cr_assert_eq(parse(text, NULL, 0), -1, "accepted: %s", text);
	cr_assert_str_eq(err, want);
}

WM_TEST(shard_map, a_good_map)
{
	static const char *const req[] = {"FR", "DE", "GB"};
	const char *text = "# three shards\n"
			   "version 7\n"
			   "\n"
			   "shard 0 127.0.0.1:9100 FR BE   # the catalogue home\r\n"
			   "shard 2 [::1]:9102 GB\n"
			   "\tshard 1 localhost:9101 DE AT\n";
	cr_assert_eq(parse(text, req, 3), 0, "%s", err);
	cr_assert_eq(map.version, 7);
	cr_assert_eq(map.n, 3);
	cr_assert_str_eq(map.shards[0].addr, "127.0.0.1:9100");
	cr_assert_str_eq(map.shards[1].addr, "localhost:9101");
	cr_assert_str_eq(map.shards[2].addr, "[::1]:9102");
	cr_assert_eq(map.shards[1].n_countries, 2);
	cr_assert_eq(smap_owner(&map, "FR"), 0);
	cr_assert_eq(smap_owner(&map, "BE"), 0);
	cr_assert_eq(smap_owner(&map, "AT"), 1);
	cr_assert_eq(smap_owner(&map, "GB"), 2);
	cr_assert_eq(smap_owner(&map, "IT"), -1, "unowned");
	cr_assert_eq(smap_owner(&map, "fr"), -1, "lower case is not a code");
	cr_assert_eq(smap_owner(&map, "FRA"), -1);
	/* the home alone may own nothing */
	cr_assert_eq(parse("version 1\nshard 0 h:1\nshard 1 h:2 FR\n", NULL, 0), 0, "%s", err);
}

WM_TEST(shard_map, each_kind_of_error_names_file_and_line)
{
	refused("version 1\nshard 0 a:1 FR\nshard 1 a:2 DE FR\n",
		"map.conf:3: country FR is already owned by shard 0 (line 2)");
	refused("version 1\nshard 0 a:1 FR\nshard 0 a:2 DE\n", "map.conf:3: shard 0 is already defined on line 2");
	refused("version 1\nshard 0 a:1 FR\nshard 2 a:2 DE\n",
		"map.conf: shard 1 is missing: shard ids must be 0..2 without gaps");
	refused("version 1\nshard 1 a:2 DE\n", "map.conf: shard 0 is missing: shard ids must be 0..1 without gaps");
	refused("version 1\nshard 0 a:1 FR\nshard 1 a:2\n",
		"map.conf:3: shard 1 owns no country (only shard 0, the catalogue home, may)");
	refused("shard 0 a:1 FR\n", "map.conf: no version line");
	refused("version 1\n", "map.conf: no shard line");
	refused("version 1\nversion 2\n", "map.conf:2: a second version line (the map has exactly one)");
	refused("version 0\n", "map.conf:1: expected \"version N\" with N a positive integer");
	refused("version 01\n", "map.conf:1: expected \"version N\" with N a positive integer");
	refused("version -1\n", "map.conf:1: expected \"version N\" with N a positive integer");
	refused("version 1 2\n", "map.conf:1: expected \"version N\" with N a positive integer");
	refused("version 18446744073709551616\n", "map.conf:1: expected \"version N\" with N a positive integer");
	refused("version 1\nshards 0 a:1 FR\n", "map.conf:2: unknown directive \"shards\" (expected version, shard or router)");
	refused("version 1\nshard 0\n", "map.conf:2: expected \"shard ID HOST:PORT COUNTRY...\"");
	refused("version 1\nshard x a:1 FR\n", "map.conf:2: shard id \"x\" is not an integer 0..63");
	refused("version 1\nshard 0 a:1 fr\n",
		"map.conf:2: shard 0: \"fr\" is not an ISO 3166-1 alpha-2 country code");
	refused("version 1\nshard 0 a:1 XX\n",
		"map.conf:2: shard 0: \"XX\" is not an ISO 3166-1 alpha-2 country code");
	refused("version 1\nshard 0 a:1 FRA\n",
		"map.conf:2: shard 0: \"FRA\" is not an ISO 3166-1 alpha-2 country code");
	static const char *const bad_addr[] = {"a", "a:", ":1", "a:0", "a:65536", "a:01", "a b:1", "a_b:1", "[::1:1",
					       "[]:1", "[zz]:1"};
	for (size_t i = 0; i < sizeof(bad_addr) / sizeof(bad_addr[0]); i++) {
		char text[128], want[160];
		snprintf(text, sizeof(text), "version 1\nshard 0 %s FR\n", bad_addr[i]);
		snprintf(want, sizeof(want), "map.conf:2: shard 0: address \"%s\" is not HOST:PORT", bad_addr[i]);
		if (strchr(bad_addr[i], ' ')) /* "a b:1": the address is "a", then "b:1" is no country */
			snprintf(want, sizeof(want), "map.conf:2: shard 0: address \"a\" is not HOST:PORT");
		refused(text, want);
	}
	cr_assert_eq(parse("version 1\nshard 0 a:65535 FR\n", NULL, 0), 0, "port 65535 is the edge: %s", err);
	/* a country the reference data prices must be owned */
	static const char *const req[] = {"FR", "NO"};
	cr_assert_eq(parse("version 1\nshard 0 a:1 FR\n", req, 2), -1);
	cr_assert_str_eq(err, "map.conf: country NO has reference data but no shard owns it");
	char nul[] = "version 1\nshard 0 a:1 FR\0\n";
	cr_assert_eq(smap_parse(nul, sizeof(nul) - 1, "map.conf", NULL, 0, &map, err, sizeof(err)), -1);
	cr_assert_str_eq(err, "map.conf:2: NUL byte in the line");
}

/* Every officially assigned country code, in order; how many (249). */
static size_t country_codes(char codes[][3])
{
	size_t n = 0;
	char cc[3] = "AA";
	for (cc[0] = 'A'; cc[0] <= 'Z'; cc[0]++)
		for (cc[1] = 'A'; cc[1] <= 'Z'; cc[1]++)
			if (iso_country_valid(cc, 2))
				memcpy(codes[n++], cc, 3);
	return n;
}

WM_TEST(shard_map, bounds_at_and_past_their_edge)
{
	static char codes[26 * 26][3];
	size_t nc = country_codes(codes);
	cr_assert_eq(nc, 249);
	/* 64 shards (ids 0..63) is the edge; id 64 is past it */
	static char text[SMAP_MAX_FILE + 64];
	size_t n = strlen("version 1\n");
	memcpy(text, "version 1\n", n);
	for (int id = 0; id < SMAP_MAX_SHARDS; id++)
		n += (size_t)snprintf(text + n, sizeof(text) - n, "shard %d 127.0.0.1:%d %s\n", id, 9000 + id, codes[id]);
	text[n] = 0;
	cr_assert_eq(parse(text, NULL, 0), 0, "%s", err);
	cr_assert_eq(map.n, SMAP_MAX_SHARDS);
	cr_assert_eq(smap_owner(&map, codes[63]), 63);
	refused("version 1\nshard 64 a:1 FR\n", "map.conf:2: shard id \"64\" is not an integer 0..63");

	/* every assigned country on one shard line: 252 words, under the bound */
	n = (size_t)snprintf(text, sizeof(text), "version 1\nshard 0 a:1");
	for (size_t i = 0; i < nc; i++)
		n += (size_t)snprintf(text + n, sizeof(text) - n, " %s", codes[i]);
	text[n] = 0;
	cr_assert_eq(parse(text, NULL, 0), 0, "%s", err);
	cr_assert_eq(map.shards[0].n_countries, 249);

	/* a line of SMAP_MAX_LINE bytes is the edge; one more is refused */
	n = (size_t)snprintf(text, sizeof(text), "version 1\nshard 0 a:1 FR");
	size_t start = strlen("version 1\n");
	while (n - start < SMAP_MAX_LINE)
		text[n++] = ' ';
	text[n++] = '\n';
	text[n] = 0;
	cr_assert_eq(parse(text, NULL, 0), 0, "a %d-byte line: %s", SMAP_MAX_LINE, err);
	memmove(text + n, text + n - 1, 2);
	text[n - 1] = ' ';
	refused(text, "map.conf:2: line longer than 4096 bytes");

	/* more than SMAP_MAX_TOKENS words */
	n = (size_t)snprintf(text, sizeof(text), "version 1\nshard 0 a:1");
	for (int i = 0; i < 300; i++)
		n += (size_t)snprintf(text + n, sizeof(text) - n, " FR");
	text[n] = 0;
	refused(text, "map.conf:2: more than 300 words on one line");

	/* the whole file: SMAP_MAX_FILE bytes of comments is fine, one more is not */
	memset(text, '\n', SMAP_MAX_FILE);
	memcpy(text, "version 1\nshard 0 a:1 FR\n#", 26);
	text[SMAP_MAX_FILE] = 0;
	cr_assert_eq(parse(text, NULL, 0), 0, "%s", err);
	text[SMAP_MAX_FILE] = '\n';
	text[SMAP_MAX_FILE + 1] = 0;
	refused(text, "map.conf: larger than 262144 bytes");
}

WM_TEST(shard_map, load_from_a_file)
{
	char path[] = "/tmp/wm-smap-XXXXXX";
	int fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	const char *text = "version 2\nshard 0 127.0.0.1:9100 FR\nshard 1 127.0.0.1:9101 DE\n";
	cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	cr_assert_eq(smap_load(path, NULL, 0, &map, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(map.version, 2);
	cr_assert_eq(smap_owner(&map, "DE"), 1);
	unlink(path);
	cr_assert_eq(smap_load(path, NULL, 0, &map, err, sizeof(err)), -1);
	cr_assert(strstr(err, "No such file"), "%s", err);
}

/* `router ID HOST:PORT`: the coordinators a participant in doubt asks. */
WM_TEST(shard_map, router_lines_name_the_coordinators)
{
	cr_assert_eq(parse("version 1\nshard 0 127.0.0.1:9100 FR\nrouter 0 127.0.0.1:9000\nrouter 15 127.0.0.1:9015\n",
			   NULL, 0), 0, "%s", err);
	cr_assert_str_eq(map.routers[0], "127.0.0.1:9000");
	cr_assert_str_eq(map.routers[15], "127.0.0.1:9015");
	cr_assert_str_eq(map.routers[1], "");
	refused("version 1\nshard 0 127.0.0.1:9100 FR\nrouter 16 127.0.0.1:9000\n", "map.conf:3: router id \"16\" is not an integer 0..15");
	refused("version 1\nshard 0 127.0.0.1:9100 FR\nrouter 0 127.0.0.1:9000\nrouter 0 127.0.0.1:9001\n",
		"map.conf:4: router 0 is already defined");
	refused("version 1\nshard 0 127.0.0.1:9100 FR\nrouter 0 nowhere\n", "map.conf:3: router 0: address \"nowhere\" is not HOST:PORT");
	refused("version 1\nshard 0 127.0.0.1:9100 FR\nrouter 0\n", "map.conf:3: expected \"router ID HOST:PORT\"");
}
