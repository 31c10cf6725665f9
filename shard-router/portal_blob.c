/*
 * portal_blob.c -- embeds the partner portal's static files
 * (shard-router/portal/index.html, portal.css, portal.js) into the binary at
 * build time, as openapi_blob.c embeds api/openapi.json: assembler .incbin,
 * paths relative to the repository root where make runs, so the portal a
 * router serves is always the one it was built with and nothing is read
 * from disk or fetched at run time.  Each file gets a start and an end
 * symbol (its length is their difference; the files may hold any byte).
 * The Makefile makes this object depend on the three files.
 */
#define PORTAL_BLOB(sym, path)                                                                                     \
	__asm__(".section .rodata\n"                                                                               \
		".global " #sym "\n"                                                                               \
		".type " #sym ", @object\n" #sym ":\n"                                                             \
		".incbin \"" path "\"\n"                                                                           \
		".global " #sym "_end\n" #sym "_end:\n"                                                            \
		".byte 0\n"                                                                                        \
		".previous\n");

PORTAL_BLOB(portal_index_html, "shard-router/portal/index.html")
PORTAL_BLOB(portal_css, "shard-router/portal/portal.css")
PORTAL_BLOB(portal_js, "shard-router/portal/portal.js")
