/*
 * fuzz_http_client.c -- the outbound client's response parser
 * (net/client.c, hc_parse_response) on arbitrary bytes from a peer: it must
 * answer 1, 0 or -1, never read past the input, and a complete response it
 * accepts must lie inside the input with the declared body length.  Then
 * the same bytes as a stream of pipelined answers (hc_parse_next): each
 * one accepted lies inside what is left and takes at least one byte.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "net/client.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hc_response r;
	int close_after = 0;
	const char *err = NULL;
	const char *d = (const char *)data;
	int rc = hc_parse_response(d, size, 1024, &r, &close_after, &err);
	if (rc == 1) {
		if (r.head != d || r.head_len + r.body_len != size || r.body != d + r.head_len || r.body_len > 1024 ||
		    r.status < 100 || r.status > 599)
			abort();
	} else if (rc == -1) {
		if (!err)
			abort();
	} else if (rc != 0) {
		abort();
	}
	for (size_t pos = 0; pos < size;) {
		size_t used = 0;
		err = NULL;
		rc = hc_parse_next(d + pos, size - pos, 1024, &r, &close_after, &err, &used);
		if (rc == -1 && !err)
			abort();
		if (rc != 1)
			break;
		if (used == 0 || used > size - pos || r.head != d + pos || r.head_len + r.body_len != used ||
		    r.body_len > 1024)
			abort();
		pos += used;
	}
	return 0;
}
