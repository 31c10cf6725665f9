/*
 * refdata_fixture.h -- the repository's data/ as a reference-data version,
 * for tests that price against the published figures (found through
 * WM_SRC_DIR, which make test sets; the current directory otherwise).
 */
#ifndef WM_REFDATA_FIXTURE_H
#define WM_REFDATA_FIXTURE_H

struct refdata;

/* Load <WM_SRC_DIR>/data; fails the test if it does not load.  The caller
 * owns the version (refdata_free, or refdata_set_current). */
struct refdata *load_repo(void);

#endif
