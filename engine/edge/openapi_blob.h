/* openapi_blob.h -- the OpenAPI document embedded at build time
 * (api/openapi.json, NUL-terminated; openapi_blob.c). */
#ifndef WM_OPENAPI_BLOB_H
#define WM_OPENAPI_BLOB_H

extern const char openapi_json[];

#endif
