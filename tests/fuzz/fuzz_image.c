/*
 * fuzz_image.c -- libFuzzer target for the image header reader, which reads
 * the bytes of every upload before anything else looks at them.  Checks: no
 * crash, no read past the input (an exact-size copy, so ASan sees it), and
 * the documented contract: an accepted image has a known type and
 * dimensions within 1..IMAGE_MAX_DIM; an error names what failed; a result
 * is the same when the input is probed twice.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/catalogue/image.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *copy = malloc(size ? size : 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	struct image_info a, b;
	enum image_err e = image_probe(copy, size, &a);
	if ((unsigned)e >= IMG_ERR_COUNT_ || !a.detail)
		abort();
	if (e == IMG_OK) {
		if (a.type == IMG_NONE || !image_mime(a.type) || a.width < 1 || a.height < 1 ||
		    a.width > IMAGE_MAX_DIM || a.height > IMAGE_MAX_DIM || a.detail[0])
			abort();
		if (image_type_from_mime(image_mime(a.type), strlen(image_mime(a.type))) != a.type)
			abort();
	} else if (!a.detail[0] || (e == IMG_ERR_UNKNOWN_TYPE && a.type != IMG_NONE)) {
		abort();
	}
	if (image_probe(copy, size, &b) != e || b.type != a.type || b.width != a.width || b.height != a.height)
		abort();
	(void)image_err_name(e);
	free(copy);
	return 0;
}
