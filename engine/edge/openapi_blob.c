/*
 * openapi_blob.c -- embeds api/openapi.json into the binary at build time
 * (assembler .incbin, path relative to the repository root where make runs),
 * so the served document is always the one the binary was built with.
 * The Makefile makes this object depend on the JSON file.
 */
__asm__(".section .rodata\n"
	".global openapi_json\n"
	".type openapi_json, @object\n"
	"openapi_json:\n"
	".incbin \"api/openapi.json\"\n"
	".byte 0\n"
	".previous\n");
