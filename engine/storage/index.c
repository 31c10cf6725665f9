/*
 * index.c -- the hash index (hidx) and the ordered index (oidx) that every
 * table is served from.  See engine/storage/index.h for the public contract.
 *
 * Why two structures: lookups by id / uniqueness checks want O(1) and no
 * ordering, so they go to an open-addressing hash; cursor pagination and
 * ranges want "first key >= k, then the next 50 in order", which a B+tree
 * with linked leaves gives in O(log n + page) without ever allocating.
 *
 * ---- hidx -----------------------------------------------------------------
 *
 * Linear probing over a power-of-two array of slots.  A slot is 16 bytes,
 * a tag word and the value; the tag encodes the slot state:
 *     HIDX_EMPTY (0)  never used since the last rehash; ends a probe chain
 *     HIDX_TOMB  (1)  deleted; probe chains continue through it
 *     >= 2            live: the key's address in its upper 48 bits, the
 *                     top byte of the key's XXH3-64 hash in bits 8..15, the
 *                     key's length (<= IDX_MAX_KEY = 255) in the low byte.
 *                     A probe compares that check (hash byte and length)
 *                     and only then the key's bytes: a slot of another key
 *                     passes it one time in 256 (the old slot kept the
 *                     whole hash and the key's address apart: 24 bytes, so
 *                     a hash index at its usual load of ~0.5 cost ~48 B an
 *                     entry; now ~32 -- 1M offers: by id and by natural key,
 *                     -34 B each).  The home slot comes from the hash's bits
 *                     8 and up, so a rehash, which needs it for every entry
 *                     it moves, hashes the key's bytes again.
 * An index whose values hold their keys at a fixed offset (made with
 * hidx_init_in_value: a table's rows by id, offers by natural key) keeps
 * the tag word alone, 8 bytes a slot: the value is the key's address less
 * that offset.  Nothing else differs, so one body of code serves both,
 * naming a slot by the address of its tag word (hidx_at); 1M offers: by
 * id and by natural key, ~-16 B each.
 * Invariants (checked by assert where cheap):
 *   - cap is 0 (no array yet) or a power of two >= HIDX_MIN_CAP;
 *   - count - moving + tombstones == number of non-empty slots of the
 *     current array (moving: live entries still in the previous one);
 *   - (count + tombstones) <= cap * 7/10 after every insert: before an
 *     insert that would pass that load we rehash into a table sized so the
 *     live load is <= 1/2 (the same size when tombstones were the problem,
 *     otherwise doubled), which drops every tombstone;
 *   - the rehash is incremental: the previous array stays (lookups probe
 *     both; a key is in exactly one) and every insert or delete moves
 *     HIDX_MOVE_STEP of its slots, so no single operation pays for a whole
 *     table -- a 1M-entry table took ~57 ms to rehash at once, a stall of
 *     every request behind it.  The same holds for faulting in the new
 *     array's pages: a few per step past HIDX_TOUCH_AT_ONCE (touching a
 *     96 MB array at once took 93 ms), all at once only in a bulk load;
 *   - every live key is reachable from its home slot without crossing an
 *     empty slot.
 * Keys are not copied (the row owns them); a slot keeps the caller's pointer.
 * A deletion whose successor slot is empty turns itself, and the tombstones
 * just before it, back into empty slots, so delete-heavy tables at the end
 * of probe chains do not accumulate tombstones.
 *
 * ---- oidx -----------------------------------------------------------------
 *
 * A B+tree.  Every key lives in exactly one leaf; leaves are linked both ways
 * (prev/next) in key order, so a walk is pointer chasing with no allocation
 * and no re-descent.  Inner nodes hold separators: for an inner node with
 * keys s[0..n) and children c[0..n], every key k in c[i] satisfies
 * s[i-1] <= k < s[i].  Order is memcmp over the common length, then the
 * shorter key first.
 *
 * Leaves store their keys inline.  The tree used to keep every key as its
 * own malloc'd blob behind a pointer array: an entry for a 26-byte id cost
 * ~74 B (malloc header + rounding + pointer + blob), every insert called
 * malloc, and every step of a binary search dereferenced a pointer into a
 * different cache line (key_cmp, leaf_lower, kb_new and oidx_insert were
 * 10-16 % of order capture and snapshot recovery).  Now a leaf is one
 * fixed block laid out as a slotted page (as SQLite's and PostgreSQL's
 * pages are):
 *
 *     [n, is_leaf][prev][next][top][used][fill][last][vfill][plen][pfx]
 *     [slots -> free <- heap]
 *
 * The slots are uint16 offsets in key order growing up from the start of
 * d[]; the heap grows down from its end and holds the entries, each
 * [len: 1 byte][key after the leaf's prefix: len bytes][value: a void *,
 * unaligned -- read and written with memcpy].  An entry for a 26-byte id
 * takes at most 2 + 1 + 26 + 8 = 37 B (less its share of the prefix, see
 * "Prefixes" below), an insert into a leaf with room allocates nothing, and a search
 * stays inside one block.  A delete closes its hole in the heap at once
 * (one memmove of the heap below it: deletes are mostly half of a row's
 * update, and the insert that follows wants contiguous room).  Entries
 * moved out by a split or a redistribution leave holes (`used` counts only
 * live bytes) unless they sat at the bottom of the heap, as a tail
 * appended in key order does; the heap is compacted, once, when an insert
 * finds the holes between it and the room it needs.
 *
 * Prefixes.  Keys that sit together in a leaf share their first bytes:
 * time-ordered ids their type and the upper digits of their clock, the
 * composite keys of a secondary index (owner NUL id, location NUL offer NUL
 * id) their first part as well.  So a leaf keeps the bytes all its keys
 * share once, in its header (plen bytes in pfx[], at most OIDX_LEAF_PFX =
 * 60), and each entry only the bytes after them: [len][suffix][value].  A
 * leaf built from a run of keys (a split, a merge, a redistribution) takes
 * the prefix its first and last keys share (they are sorted, so every key
 * between shares it); a leaf started by an append takes what its key
 * shares with the key before it.  An insert that parts from the prefix
 * earlier (a key below or above every key of the leaf) cuts the prefix
 * back to what they share, each entry taking the dropped bytes in front
 * of its own (leaf_recut), or goes through a split.  A delete keeps the
 * prefix (it is still shared).  Measured at 1M offers and 500k levels
 * (perf/bench_scale): the offers' B+tree by id 42 -> 27 B an entry, their
 * secondary indexes 217 -> 127 B an offer, the levels' 324 -> 200 B.  A
 * search compares the key with the prefix once, then only suffixes; a
 * key read through an iterator is copied out whole (oidx_iter_key).
 *
 * Tail-keyed trees (oidx_init_tail).  A table's secondary index files a
 * row under head | row id, and the row keeps its id already.  In such a
 * tree a leaf is marked OIDX_LEAF_TAIL and stores each key's head only;
 * the rest is the id its value starts with (a const char *, struct row's
 * id).  Everything that decides space -- an entry's bytes, its charge,
 * vfill (the head counted whole), a leaf's prefix (never longer than a
 * head: run_prefix, leaf_insert_split) -- goes by the head; everything
 * that decides order -- the binary searches (ent_cmp_key), separators
 * (built from runs of whole keys), oidx_check -- by the whole key.  A
 * comparison reads the id only when the key searched is equal to an
 * entry's head and goes on, so a seek by a head reads none; an insert
 * under a head whose keys arrive in id order reads two (leaf_after_last)
 * instead of one per step of a binary search.  Runs hold
 * whole keys, at most IDX_MAX_KEY each (OIDX_RUN_BYTES_TAIL), with each one's
 * head length (hlen[]).  Measured (perf/bench_scale, 1M offers and 500k
 * levels, 2026-12-01): the offers' secondary indexes 107 -> 69 B an
 * offer, the levels' 137 -> 70 B; an offer 312 -> 275 B, a level 351 ->
 * 285 B.
 *
 * Size: 2040 bytes, with glibc's 8-byte chunk header exactly one 2048-byte
 * chunk (no rounding): a 96-byte header (links, counters, the prefix),
 * d[] = 1944 bytes.  That holds 7 maximum-size (255-byte) entries, ~80
 * ids of one type made close in time, and at most OIDX_LEAF_NMAX = 121
 * entries (below).  A 4 KiB leaf was tried (before prefixes): the same
 * memory per entry for ids (the rounding at a leaf's end is under one
 * entry either way), no faster on perf/bench_index, and its ~220 short
 * keys a leaf made the tree one level flatter than the tests that walk
 * inner-node splits and merges expected; 2 KiB also halves what a split
 * and a compaction (through a stack copy of d[]) touch.
 *
 * Charges.  Each entry is charged its bytes as stored (2 + 1 + suffix
 * length + 8) but at least OIDX_CHARGE_MIN = 16, and a leaf's `fill` is
 * the sum of its entries' charges, fill <= OIDX_LEAF_DATA.  Since the
 * charge is at least the bytes, whatever is charged fits; since it is at
 * least 16, a leaf holds at most 121 entries whatever their size (binary
 * searches of <= 7 steps, slot moves of <= 242 bytes).  A key fits when
 * fill + its charge <= OIDX_LEAF_DATA.  The lower bounds are in a second
 * measure, `vfill`: the same charges with every key counted whole, which
 * no prefix changes -- so a leaf's minimum (below) says how many keys it
 * holds, however well they compress, and moving keys between leaves of
 * different prefixes never makes one fall under it.  Stored, a key is
 * never charged more than whole (fill <= vfill).  Every rule below is in
 * charges, because counts say nothing about space when keys run from 0 to
 * 255 bytes.
 *
 * Inner nodes keep malloc'd separator copies (fan-out 64, ~1 KiB a node):
 * with ~50 entries per leaf there is one separator per ~50 keys, so they
 * are a rounding error of the memory and of the inserts, and the
 * count-based inner code (split, rotation through the parent, which needs
 * no allocation) stays as it was.  A separator is a private copy (never a
 * pointer into a leaf, whose bytes move), truncated to the shortest prefix
 * of the right-hand neighbour's first key that still sorts above the
 * left-hand neighbour's last key.
 *
 * Descent prefetch.  A lookup's descent (descend: oidx_get, the seeks)
 * starts loading each node it enters whole -- an inner node's heads and
 * children, a leaf's slots and entries -- before searching it
 * (node_prefetch), so the lines of one node arrive together instead of one
 * binary-search step after another.  In a catalogue of a million offers
 * most nodes below the root are not in the cache: perf/bench_scale, 5-line
 * quote p50 41.2-41.6 -> 38.0-38.7 us (small catalogue 20.8-21.7 ->
 * 20.4-20.7), and with offer_wine_any prefetching its rows ahead as well
 * 34.2-35.3 us.  It used to read the node's header first, to prefetch
 * only the bytes in use: a miss of its own before the others started.
 * Prefetching the node's bytes blind (whatever its kind) and only then
 * reading it, in one process alternating the two ways (PGO=0, 20 rounds
 * of 2,000 5-line quotes each): big p50 38.0 -> 34.0 us, p99 59.0 -> 53.8;
 * small p50 21.0 -> 20.6.  Inserts and deletes (descend_path) do not
 * prefetch: recovery's ascending runs find their nodes in the cache.
 *
 * Fill invariant (verified by oidx_check):
 *   - all leaves are at depth height-1;
 *   - the root is a leaf with >= 1 entry, or an inner node with >= 2
 *     children, or NULL when the tree is empty (height 0);
 *   - every key of a leaf starts with its prefix (plen <= OIDX_LEAF_PFX);
 *   - a leaf's fill <= OIDX_LEAF_DATA, and off the rightmost spine its
 *     vfill >= OIDX_LEAF_MIN = (OIDX_LEAF_DATA - OIDX_ENT_MAX) / 4 = 419,
 *     where OIDX_ENT_MAX = 266 is the largest charge: a quarter full with
 *     its keys whole, less a quarter of the largest entry (why a quarter
 *     and not a half: below);
 *   - an inner node off the rightmost spine has >= OIDX_INNER_MAX / 2
 *     children;
 *   - nodes on the rightmost spine only need >= 1 entry (leaf) / >= 2
 *     children (inner).
 * Where a split cuts, with E = OIDX_ENT_MAX, C = OIDX_LEAF_DATA >= 7E and
 * M = OIDX_LEAF_MIN (so 2M + E < C).  A split is of a leaf that cannot take
 * one more entry.  Its n + 1 entries (the new one included) are charged
 * T under np, the prefix the leaf and the key share (the leaf's own,
 * unless the key parts from it earlier); each side of a cut is rebuilt
 * under the prefix its own first and last keys share, at least np, so
 * it is charged at most its part of T, and its vfill is at least that
 * part.  When np is the leaf's prefix, C < T <= C + E.
 *   - Append: the key goes past the end of the last leaf (time-ordered ids,
 *     a snapshot loaded in id order).  The full leaf is kept as it is and
 *     the new key starts a new leaf, instead of leaving two half-empty
 *     leaves behind: such loads fill leaves to the byte.  The leaf left
 *     behind could not take a charge of at most E, so it has vfill > C - E
 *     >= M.  Only the rightmost spine can be thin, so the height stays
 *     O(log n).
 *   - Ascending: the key goes past the end of another leaf, right after
 *     the leaf's previous insert (`last`), or at the end of a run of keys
 *     that share more with the key before it than with the key after.
 *     That is how a secondary index grows: its keys are prefix|row id,
 *     rows are created over time, so each prefix's keys arrive in
 *     ascending order at the end of its run, in the middle of the tree.
 *     A cut at the midpoint leaves every leaf behind half full (measured
 *     before prefixes: 56 % for 200 prefixes, against 77 % with this rule).
 *     So cut right after the new key (cut_near), moved only as far as
 *     needed for both sides to fit (stored) and hold M (whole): the run's
 *     next keys go to the right side, and the left side keeps nearly all.
 *     This is why M is a quarter: with M near a half the left side could
 *     keep little more than a half.
 *   - Otherwise, when np is the leaf's prefix: the cut between the two
 *     entries where the left part's charges are closest to T / 2
 *     (split_point), so each side is within E / 2 of T / 2: at least
 *     (C + 1 - E) / 2 >= M and at most (C + 2E) / 2 <= C.
 *   - Otherwise (np shorter: the key is below or above every key of the
 *     leaf, and the old keys under np may be charged far more than C + E):
 *     cut_near from the key's place.  The cut that gives the key's side
 *     the fewest old keys that bring it to M is one: that side is charged
 *     under M + E even whole, the other holds old keys only (no more than
 *     the leaf held, under a prefix at least as long) with a vfill of at
 *     least T - M - 2E > M.
 * Delete: a leaf whose vfill falls under M is merged with a sibling (the
 * left one preferred) when both fit in one leaf under the prefix all
 * their keys share.  Else the under-full one takes keys from the other
 * until its vfill reaches min(V / 2, C - E), V the two vfills' sum (> C:
 * stored they did not fit in one leaf): it is then charged under C even
 * whole, and >= M; the other keeps a vfill of more than V / 2 - E > C / 2
 * - E > M, stored under a prefix at least as long as before (fewer keys),
 * so in no more room than it had.  The price of the lower minimum: a leaf
 * drained by deletes may sit at a quarter full before it is merged.
 *
 * Insert: descend recording the path, then count how many nodes on the path
 * will split and allocate everything needed (new leaf, separator, new inner
 * nodes, maybe a new root) BEFORE touching the tree; on OOM the tree is
 * unchanged and -1 is returned.  An insert into a leaf with room allocates
 * nothing.
 *
 * Delete: remove from the leaf; while the node is under its minimum and not
 * the root, merge it with a sibling if both fit in one node, else
 * redistribute (leaves by bytes as above, inner nodes by count).
 * Redistributing two leaves needs a new separator copy; if that allocation
 * fails the node is simply left under-full (still a correct tree, only less
 * compact).  An inner root left with one child is replaced by that child.
 * No node is ever empty except that an empty tree has no root at all.
 *
 * Single-threaded, no internal locking.  Iterators are (leaf, pos) pairs
 * and are invalidated by any modification; oidx_iter_key copies the key
 * whole into the iterator (a leaf keeps it in two pieces), so it lives
 * until that iterator's next oidx_iter_key.  oidx_iter_has_prefix checks
 * a key's first bytes in place.
 */
#include "engine/storage/index.h"
#include "net/buf.h"

#ifdef WM_TESTING
unsigned long idx_test_deletions;
#endif

#include <assert.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

uint64_t idx_probes;

/* ======================================================================= */
/* hidx                                                                    */
/* ======================================================================= */

#define HIDX_EMPTY 0u
#define HIDX_TOMB 1u
#define HIDX_MIN_CAP 16u
/* Rehash when (live + tombstones) would exceed cap * LOAD_NUM / LOAD_DEN. */
#define HIDX_LOAD_NUM 7u
#define HIDX_LOAD_DEN 10u
/* Incremental rehash: slots of the previous array moved per insert/delete,
 * and the size below which a rehash moves everything at once. */
#define HIDX_MOVE_STEP 64u
#define HIDX_MOVE_AT_ONCE 4096u

/* A new slot array is written once a page before use (touch_pages below):
 * at once up to HIDX_TOUCH_AT_ONCE bytes (index.h), and for a bulk load (hidx_reserve);
 * past that, HIDX_TOUCH_STEP pages per incremental move step, so that the
 * touching is done well before the move (each step moves HIDX_MOVE_STEP
 * slots of the old array into an array twice its size: ~0.75 of a page).
 * Touching a whole growing array at once stalled the event loop: a shard
 * taking orders at -c16 grew its event index to 4M slots (96 MB) in one
 * insert that took 93 ms, and five order tables crossing 262,144 slots
 * together held one loop iteration 50 ms (the orders' max latency). */
#define HIDX_TOUCH_STEP 2u
#define HIDX_PAGE 4096u
/* Write one byte of every 4 KiB page of a fresh zeroed block (calloc).  A
 * big calloc is fresh mmap'd memory whose pages a first read (a probe) maps
 * to the shared zero page; the write that follows (a place) then faults
 * again to replace it and flushes the TLB of every CPU running one of our
 * threads (recovery runs two).  Writing first faults each page once.  A
 * 1.7M-row snapshot load spent ~8 % of its samples in those second faults.
 * (A plain memset after malloc would do, but the compiler turns that pair
 * back into calloc.)  Pages [from, to) of p, which may hold entries. */
static void touch_pages(void *p, size_t from, size_t to)
{
	/* an atomic "or 0": a write access that changes nothing, so a page
	 * already holding entries (touched late, while they move) keeps them,
	 * and a page not yet mapped takes one write fault, not a read fault
	 * (the zero page) and then a write fault */
	unsigned char *b = p;
	for (size_t off = from; off < to; off += HIDX_PAGE)
		(void)__atomic_fetch_or(b + off, 0, __ATOMIC_RELAXED);
}

/* hidx_bulk: set while this thread loads in bulk (hidx_bulk_load). */
static _Thread_local bool hidx_bulk_thread;

void hidx_bulk_load(bool on) { hidx_bulk_thread = on; }

/* Touch the next `pages` pages of h's current array not yet touched (all
 * of them for pages >= what is left). */
static void hidx_touch_more(struct hidx *h, size_t pages)
{
	size_t bytes = h->cap << h->slot_shift;
	if (h->touched >= bytes)
		return;
	size_t room = bytes - h->touched;
	size_t to = h->touched + (pages >= room / HIDX_PAGE ? room : pages * HIDX_PAGE);
	touch_pages(h->slots, h->touched, to);
	h->touched = to;
}

_Static_assert(IDX_MAX_KEY <= 0xff, "a key's length fits the hash word's low byte");

/* The hash word of a key (key_len <= IDX_MAX_KEY): its hash above the low
 * byte, its length in it. */
static uint64_t hidx_hash(const char *key, uint32_t key_len)
{
	return (XXH3_64bits(key_len ? key : "", key_len) & ~(uint64_t)0xff) | key_len;
}

/* The home slot of a hash word in a table of mask + 1 slots. */
static inline size_t hidx_home(uint64_t hash, size_t mask) { return (size_t)(hash >> 8) & mask; }

/* What a live tag says of a key besides its address: the top byte of its
 * hash word and its length. */
static inline uint64_t hidx_check(uint64_t hash) { return (hash >> 56) << 8 | (hash & 0xff); }

#define HIDX_ADDR_BITS 48u
/* The empty key's bytes (a key of length 0 may come as NULL: a live tag
 * needs an address, and a nonzero one). */
static const char hidx_empty_key[1];

/* A live tag for key (at an address below 2^HIDX_ADDR_BITS) of that hash
 * word. */
static inline uint64_t hidx_tag(const char *key, uint64_t hash)
{
	if (!key)
		key = hidx_empty_key;
	return (uint64_t)(uintptr_t)key << 16 | hidx_check(hash);
}

/* Can a slot keep key's address? */
static inline bool hidx_addr_ok(const char *key)
{
	return !key || ((uintptr_t)key >> HIDX_ADDR_BITS) == 0;
}

static inline const char *hidx_tag_key(uint64_t tag) { return (const char *)(uintptr_t)(tag >> 16); }

static inline uint32_t hidx_tag_len(uint64_t tag) { return (uint32_t)(tag & 0xff); }

/*
 * Slots.  A slot is named by the address of its tag word (every layout
 * starts with it); slot i of an array is i << slot_shift bytes in.  The
 * 16-byte layout keeps the value in the word after the tag (struct
 * hidx_slot); an index in_value derives it from the key's address.
 */
static inline uint64_t *hidx_at(const struct hidx *h, void *arr, size_t i)
{
	return (uint64_t *)((char *)arr + (i << h->slot_shift));
}

/* The value of live slot s. */
static inline void *hidx_val(const struct hidx *h, const uint64_t *s)
{
	if (h->in_value)
		return (void *)(uintptr_t)((uintptr_t)hidx_tag_key(*s) - h->key_at);
	return *(void *const *)(s + 1);
}

/* Make s live with tag and val (val is the key's value: in_value, the
 * tag's address already says it). */
static inline void hidx_fill(const struct hidx *h, uint64_t *s, uint64_t tag, void *val)
{
	*s = tag;
	if (!h->in_value)
		*(void **)(s + 1) = val;
}

/* The hash word of the key in live slot s, hashed again from its bytes. */
static uint64_t hidx_slot_hash(const uint64_t *s) { return hidx_hash(hidx_tag_key(*s), hidx_tag_len(*s)); }

static bool hidx_key_eq(uint64_t tag, uint64_t check, const char *key, uint32_t key_len)
{
	return tag >= 2 && (tag & 0xffff) == check && (key_len == 0 || memcmp(hidx_tag_key(tag), key, key_len) == 0);
}

/* Arguments usable at all: length in bounds, bytes present when needed. */
static bool hidx_key_ok(const char *key, uint32_t key_len)
{
	return key_len <= IDX_MAX_KEY && (key != NULL || key_len == 0);
}

void hidx_prefetch(const struct hidx *h, const char *key, uint32_t key_len)
{
	if (h->cap && hidx_key_ok(key, key_len))
		__builtin_prefetch(hidx_at(h, h->slots, hidx_home(hidx_hash(key, key_len), h->cap - 1)), 1, 1);
}

/* hidx_peek: the value of key's home slot when the slot's check (hash
 * byte and length) matches key's; no key compared, so another key's value
 * one time in 256, and NULL for a key that sits further along its chain.
 * For a prefetch address, never for a lookup. */
const void *hidx_peek(const struct hidx *h, const char *key, uint32_t key_len)
{
	if (!h->cap || !hidx_key_ok(key, key_len))
		return NULL;
	uint64_t hash = hidx_hash(key, key_len);
	const uint64_t *s = hidx_at(h, h->slots, hidx_home(hash, h->cap - 1));
	return *s >= 2 && (*s & 0xffff) == hidx_check(hash) ? hidx_val(h, s) : NULL;
}

/* hidx_init: an empty index that owns no memory yet.  Never fails. */
void hidx_init(struct hidx *h)
{
	memset(h, 0, sizeof(*h));
	h->slot_shift = 4;
}

_Static_assert(sizeof(struct hidx_slot) == 16 && offsetof(struct hidx_slot, tag) == 0 &&
		       offsetof(struct hidx_slot, val) == sizeof(uint64_t),
	       "a 16-byte slot is its tag word, then its value");

/* hidx_init_in_value: see index.h.  Never fails. */
void hidx_init_in_value(struct hidx *h, size_t key_at)
{
	memset(h, 0, sizeof(*h));
	h->slot_shift = 3;
	h->in_value = true;
	h->key_at = key_at;
}

/* hidx_free: releases the slot arrays (not the keys or values, which belong
 * to the caller) and leaves an empty, reusable index of the same kind. */
void hidx_free(struct hidx *h)
{
	free(h->slots);
	free(h->old);
	bool in_value = h->in_value;
	size_t key_at = h->key_at;
	if (in_value)
		hidx_init_in_value(h, key_at);
	else
		hidx_init(h);
}

/* Index of the live slot holding key in arr[0..cap), or SIZE_MAX. */
static size_t hidx_probe(const struct hidx *h, void *arr, size_t cap, uint64_t hash, const char *key,
			 uint32_t key_len)
{
	if (cap == 0)
		return SIZE_MAX;
	size_t mask = cap - 1;
	uint64_t check = hidx_check(hash);
	for (size_t i = hidx_home(hash, mask);; i = (i + 1) & mask) {
		uint64_t tag = *hidx_at(h, arr, i);
		if (tag == HIDX_EMPTY)
			return SIZE_MAX;
		if (hidx_key_eq(tag, check, key, key_len))
			return i;
	}
}

/* The live slot holding key, in the current array or (while a rehash is
 * moving entries) the previous one; *in_old says which.  NULL if absent. */
static uint64_t *hidx_find(const struct hidx *h, uint64_t hash, const char *key, uint32_t key_len, int *in_old)
{
	size_t at = hidx_probe(h, h->slots, h->cap, hash, key, key_len);
	*in_old = 0;
	if (at != SIZE_MAX)
		return hidx_at(h, h->slots, at);
	at = h->old ? hidx_probe(h, h->old, h->old_cap, hash, key, key_len) : SIZE_MAX;
	*in_old = at != SIZE_MAX;
	return at == SIZE_MAX ? NULL : hidx_at(h, h->old, at);
}

/* Put a live entry (tag, val; hash: its key's hash word) whose key is in
 * neither array into the current array: the first empty slot or tombstone
 * of its probe chain. */
static void hidx_place(struct hidx *h, uint64_t tag, void *val, uint64_t hash)
{
	size_t mask = h->cap - 1;
	size_t i = hidx_home(hash, mask);
	while (*hidx_at(h, h->slots, i) >= 2)
		i = (i + 1) & mask;
	uint64_t *s = hidx_at(h, h->slots, i);
	if (*s == HIDX_TOMB) {
		assert(h->tombstones > 0);
		h->tombstones--;
	}
	hidx_fill(h, s, tag, val);
}

/* Move the live entries of up to n slots of the previous array into the
 * current one; free it when it is empty. */
static void hidx_move(struct hidx *h, size_t n)
{
	if (h->old)
		hidx_touch_more(h, n == SIZE_MAX ? SIZE_MAX : HIDX_TOUCH_STEP);
	for (; h->old && n > 0 && h->move_pos < h->old_cap; n--, h->move_pos++) {
		uint64_t *e = hidx_at(h, h->old, h->move_pos);
		if (*e >= 2) {
			hidx_place(h, *e, hidx_val(h, e), hidx_slot_hash(e));
			/* gone from here: a tombstone keeps the chains of the keys
			 * still to move intact */
			*e = HIDX_TOMB;
			h->moving--;
		}
	}
	if (h->old && (h->moving == 0 || h->move_pos == h->old_cap)) {
		assert(h->moving == 0);
		free(h->old);
		h->old = NULL;
		h->old_cap = h->move_pos = 0;
	}
}

/*
 * Start a rehash into a table of new_cap slots (power of two, > count):
 * the current array becomes the previous one and its entries move over
 * HIDX_MOVE_STEP slots per later insert or delete (incremental, as Redis's
 * dict does: no single operation pays for the whole table; a lookup
 * probes both arrays meanwhile).  A rehash still moving is finished first.
 * Small tables are moved at once.  The new array is touched at once
 * (bulk: hidx_reserve, or a thread in hidx_bulk_load; or up to
 * HIDX_TOUCH_AT_ONCE bytes), else while the entries move.  -1 on OOM with
 * the table unchanged.
 */
static int hidx_rehash(struct hidx *h, size_t new_cap, bool bulk)
{
	assert(new_cap >= HIDX_MIN_CAP && (new_cap & (new_cap - 1)) == 0 && new_cap > h->count);
	void *ns = calloc(new_cap, hidx_slot_bytes(h));
	if (!ns)
		return -1;
	bulk = bulk || hidx_bulk_thread;
	size_t bytes = new_cap << h->slot_shift, now = bulk || bytes <= HIDX_TOUCH_AT_ONCE ? bytes : 0;
	touch_pages(ns, 0, now);
	hidx_move(h, SIZE_MAX);
	assert(!h->old);
	h->old = h->slots;
	h->old_cap = h->cap;
	h->moving = h->count;
	h->move_pos = 0;
	h->slots = ns;
	h->cap = new_cap;
	h->touched = now;
	h->tombstones = 0;
	if (!h->old || h->moving <= HIDX_MOVE_AT_ONCE)
		hidx_move(h, SIZE_MAX);
	return 0;
}

/* Make room for one more live entry so the load rule still holds after the
 * insert, counting the entries still to move (they land here too).  -1 on
 * OOM (table unchanged). */
static int hidx_reserve_one(struct hidx *h)
{
	size_t used = h->count + h->tombstones + 1;
	if (h->cap != 0 && used * HIDX_LOAD_DEN <= h->cap * HIDX_LOAD_NUM)
		return 0;
	size_t nc = h->cap < HIDX_MIN_CAP ? HIDX_MIN_CAP : h->cap;
	while ((h->count + 1) * 2 > nc) {
		if (nc > SIZE_MAX / 2 / hidx_slot_bytes(h))
			return -1;
		nc *= 2;
	}
	return hidx_rehash(h, nc, false);
}

/* hidx_reserve: make room for `n` live entries in all, so that inserting
 * keys until the index holds n never rehashes (a bulk load that knows its
 * size: snapshot recovery).  The array chosen is the one growing one insert
 * at a time would have reached at n entries (the load rule above, at most
 * 7/10 full), so it costs no memory that growth would not.  A rehash still
 * moving is finished first (also when there is room already).  0, or -1 on
 * OOM or a size past the address space, the entries unchanged. */
int hidx_reserve(struct hidx *h, size_t n)
{
	if (n > SIZE_MAX / 2 / hidx_slot_bytes(h) / HIDX_LOAD_DEN)
		return -1;
	hidx_move(h, SIZE_MAX); /* finish a rehash still moving */
	if (n < h->count)
		n = h->count;
	if (h->cap != 0 && (n + h->tombstones) * HIDX_LOAD_DEN <= h->cap * HIDX_LOAD_NUM)
		return 0;
	size_t nc = HIDX_MIN_CAP;
	while (n * HIDX_LOAD_DEN > nc * HIDX_LOAD_NUM || nc <= h->count)
		nc *= 2;
	if (nc < h->cap)
		nc = h->cap; /* here only to drop tombstones: never shrink */
	if (hidx_rehash(h, nc, true) != 0)
		return -1;
	hidx_move(h, SIZE_MAX); /* nothing left to move during the load */
	assert(!h->old);
	return 0;
}

/* Can an entry key -> val go into h at all?  An index in_value takes only
 * a key that sits key_at bytes into its value. */
static bool hidx_entry_ok(const struct hidx *h, const char *key, uint32_t key_len, const void *val)
{
	if (!hidx_key_ok(key, key_len) || !hidx_addr_ok(key))
		return false;
	return !h->in_value || (key && (uintptr_t)key - (uintptr_t)val == h->key_at);
}

/* Shared body of put, set, swap and swap_unless.  replace: overwrite an
 * existing entry, unless keep (may be NULL) says to keep it (then 1);
 * prev (may be NULL): the value it had, NULL if the key was absent. */
static int hidx_insert(struct hidx *h, const char *key, uint32_t key_len, void *val, bool replace, void **prev,
		       bool (*keep)(const void *old, const void *arg), const void *arg)
{
	if (prev)
		*prev = NULL;
	if (!hidx_entry_ok(h, key, key_len, val))
		return -1;
	hidx_move(h, HIDX_MOVE_STEP);
	uint64_t hash = hidx_hash(key, key_len);
	int in_old;
	uint64_t *at = hidx_find(h, hash, key, key_len, &in_old);
	if (at) {
		void *had = hidx_val(h, at);
		if (keep && keep(had, arg)) {
			if (prev)
				*prev = had;
			return 1;
		}
		if (!replace)
			return 1;
		if (prev)
			*prev = had;
		hidx_fill(h, at, hidx_tag(key, hash), val);
		return 0;
	}
	if (hidx_reserve_one(h) != 0)
		return -1;
	hidx_place(h, hidx_tag(key, hash), val, hash);
	h->count++;
	assert((h->count + h->tombstones) * HIDX_LOAD_DEN <= h->cap * HIDX_LOAD_NUM);
	return 0;
}

/* hidx_put: insert key -> val unless the key is present.  0 inserted, 1 key
 * already present (nothing changed), -1 key too long / NULL with length, or
 * OOM (nothing changed).  The key bytes must outlive the entry. */
int hidx_put(struct hidx *h, const char *key, uint32_t key_len, void *val)
{
	return hidx_insert(h, key, key_len, val, false, NULL, NULL, NULL);
}

/* hidx_set: insert, or replace the value and key pointer of the equal key.
 * 0 or -1 (bad key / OOM, nothing changed). */
int hidx_set(struct hidx *h, const char *key, uint32_t key_len, void *val)
{
	return hidx_insert(h, key, key_len, val, true, NULL, NULL, NULL);
}

/* hidx_swap: hidx_set that also gives the value it replaced (NULL when the
 * key was absent) -- one probe where a get and a set take two. */
int hidx_swap(struct hidx *h, const char *key, uint32_t key_len, void *val, void **prev)
{
	return hidx_insert(h, key, key_len, val, true, prev, NULL, NULL);
}

/* hidx_swap_unless: see index.h. */
int hidx_swap_unless(struct hidx *h, const char *key, uint32_t key_len, void *val, void **prev,
		     bool (*keep)(const void *old, const void *arg), const void *arg)
{
	return hidx_insert(h, key, key_len, val, true, prev, keep, arg);
}

/* hidx_get: the value for key, or NULL (also for a bad key).  No allocation. */
void *hidx_get_untracked(const struct hidx *h, const char *key, uint32_t key_len)
{
	if (!hidx_key_ok(key, key_len))
		return NULL;
	int in_old;
	const uint64_t *at = hidx_find(h, hidx_hash(key, key_len), key, key_len, &in_old);
	return at ? hidx_val(h, at) : NULL;
}

void *hidx_get(const struct hidx *h, const char *key, uint32_t key_len)
{
	idx_probes++;
	return hidx_get_untracked(h, key, key_len);
}

/* Remove the live slot `at` of the current array.  Leaves a tombstone
 * unless the chain ends right after the slot (see the top). */
static void hidx_unlink(struct hidx *h, size_t at)
{
	size_t mask = h->cap - 1;
	if (*hidx_at(h, h->slots, (at + 1) & mask) == HIDX_EMPTY) {
		/* End of a chain: this slot and the tombstones before it are
		 * no longer needed by any probe. */
		size_t i = at;
		*hidx_at(h, h->slots, i) = HIDX_EMPTY;
		for (i = (i - 1) & mask; *hidx_at(h, h->slots, i) == HIDX_TOMB; i = (i - 1) & mask) {
			*hidx_at(h, h->slots, i) = HIDX_EMPTY;
			h->tombstones--;
		}
	} else {
		*hidx_at(h, h->slots, at) = HIDX_TOMB;
		h->tombstones++;
	}
}

/* hidx_del: remove key; returns its value, or NULL if absent. */
void *hidx_del(struct hidx *h, const char *key, uint32_t key_len)
{
	if (!hidx_key_ok(key, key_len))
		return NULL;
	hidx_move(h, HIDX_MOVE_STEP);
	int in_old;
	uint64_t *at = hidx_find(h, hidx_hash(key, key_len), key, key_len, &in_old);
	if (!at)
		return NULL;
	void *val = hidx_val(h, at);
	h->count--;
#ifdef WM_TESTING
	idx_test_deletions++;
#endif
	if (in_old) {
		/* the previous array is only read and drained: a tombstone keeps
		 * its chains intact until it is freed */
		*at = HIDX_TOMB;
		h->moving--;
		hidx_move(h, 0); /* frees it if that was its last entry */
	} else {
		hidx_unlink(h, (size_t)((char *)at - (char *)h->slots) >> h->slot_shift);
	}
	return val;
}

/* hidx_next: the next live entry at or after position *pos (start at 0:
 * the current array's slots, then the previous array's while a rehash is
 * moving); sets *key / *key_len, advances *pos past it and returns its
 * value; NULL at the end.  The index must not change during a walk.  A
 * NULL value would read as the end (and as "absent" to get), so values
 * must not be NULL; callers store rows, which never are. */
void *hidx_next(const struct hidx *h, size_t *pos, const char **key, uint32_t *key_len)
{
	idx_probes++;
	for (size_t i = *pos; i < h->cap + h->old_cap; i++) {
		const uint64_t *s = i < h->cap ? hidx_at(h, h->slots, i) : hidx_at(h, h->old, i - h->cap);
		if (*s >= 2) {
			*pos = i + 1;
			if (key)
				*key = hidx_tag_key(*s);
			if (key_len)
				*key_len = hidx_tag_len(*s);
			return hidx_val(h, s);
		}
	}
	*pos = h->cap + h->old_cap;
	return NULL;
}

/* ======================================================================= */
/* oidx                                                                    */
/* ======================================================================= */

/*
 * Leaf geometry (see the top).  A leaf is one malloc of OIDX_LEAF_BYTES:
 * with glibc's 8-byte chunk header that is exactly a 2048-byte chunk, no
 * rounding.  Its header keeps the prefix every key of the leaf shares
 * (plen bytes in pfx[], at most OIDX_LEAF_PFX).  Within d[], the slot
 * array (uint16 offsets, growing up from 0) and the entry heap (growing
 * down from OIDX_LEAF_DATA).  An entry is [len (1 byte)][the key's bytes
 * after the prefix (len bytes)][value (sizeof(void *), unaligned)].  Its
 * charge against the leaf's capacity is its bytes, slot included, but at
 * least OIDX_CHARGE_MIN, which caps a leaf at OIDX_LEAF_NMAX entries
 * however short the keys.
 */
#define OIDX_LEAF_BYTES 2040u
#define OIDX_LEAF_PFX 60u                       /* prefix bytes a leaf keeps, at most */
#define OIDX_LEAF_HDR (36u + OIDX_LEAF_PFX)     /* h, prev, next, top, used, fill, last, vfill, plen, pfx */
#define OIDX_LEAF_DATA (OIDX_LEAF_BYTES - OIDX_LEAF_HDR) /* d[]: slots + heap */
#define OIDX_CHARGE_MIN 16u                     /* an entry's charge, at least */
#define OIDX_LEAF_NMAX (OIDX_LEAF_DATA / OIDX_CHARGE_MIN) /* entries per leaf, at most: 121 */
#define OIDX_VAL_SIZE ((uint32_t)sizeof(void *))
#define OIDX_ENT_BYTES(len) (1u + (len) + OIDX_VAL_SIZE) /* heap bytes */
#define OIDX_ENT_COST(len) (2u + OIDX_ENT_BYTES(len))     /* slot + heap */
#define OIDX_CHARGE(cost) ((cost) > OIDX_CHARGE_MIN ? (cost) : OIDX_CHARGE_MIN)
#define OIDX_ENT_MAX OIDX_ENT_COST(IDX_MAX_KEY)            /* 266 */
/* A leaf off the right spine is charged at least this much, counting its
 * keys whole (vfill): see the top. */
#define OIDX_LEAF_MIN ((OIDX_LEAF_DATA - OIDX_ENT_MAX) / 4)
#define OIDX_INNER_MAX 64u                      /* children per inner node */
/* Bytes of an inner node's shared prefix kept in the node itself: a
 * descent compares a key with them without reading a separator's blob (a
 * cache miss per level in a tree of a million keys).  Ids are 26 bytes,
 * and keys that join two share at most one and a separator byte more. */
#define OIDX_PFX_INLINE 32u
#define OIDX_INNER_MIN (OIDX_INNER_MAX / 2)     /* non-root, non-spine inner */
#define OIDX_MAX_HEIGHT 32u                     /* path arrays; unreachable */

struct oidx_node {
	uint32_t n;       /* leaf: entries; inner: separators (children = n+1) */
	uint32_t is_leaf; /* 0 inner; OIDX_LEAF, or OIDX_LEAF_TAIL in a tail-keyed tree */
};
#define OIDX_LEAF 1u
#define OIDX_LEAF_TAIL 2u /* oidx_init_tail: an entry keeps its key's head, its value the rest */

struct oidx_leaf {
	struct oidx_node h;
	struct oidx_leaf *prev, *next;
	uint16_t top;   /* the heap is d[top, OIDX_LEAF_DATA); the slots d[0, 2n) */
	uint16_t used;  /* heap bytes of live entries (the rest of the heap: holes) */
	uint16_t fill;  /* the entries' charges as stored: >= 2n + used, <= OIDX_LEAF_DATA */
	uint16_t last;  /* where the last insert into it went (a hint: may be stale) */
	uint16_t vfill; /* the entries' charges were their keys stored whole: >= fill */
	uint8_t plen;   /* every key of the leaf starts with pfx[0, plen) */
	uint8_t pfx[OIDX_LEAF_PFX + 1];
	uint8_t d[OIDX_LEAF_DATA];
};

_Static_assert(sizeof(struct oidx_leaf) == OIDX_LEAF_BYTES && offsetof(struct oidx_leaf, d) == OIDX_LEAF_HDR,
	       "a leaf is one 2048-byte malloc chunk");
_Static_assert(OIDX_LEAF_DATA <= UINT16_MAX && OIDX_LEAF_NMAX * OIDX_ENT_MAX <= UINT16_MAX,
	       "slot offsets and fill counters are 16-bit");
_Static_assert(IDX_MAX_KEY <= UINT8_MAX && OIDX_LEAF_PFX <= IDX_MAX_KEY, "an entry's length is one byte");
/* The split and redistribution proofs at the top need two maximum-size
 * entries to fit in half a leaf; in fact a leaf holds 7 of them. */
_Static_assert(OIDX_LEAF_DATA >= 7 * OIDX_ENT_MAX, "a leaf holds several maximum-size keys");
_Static_assert(OIDX_CHARGE_MIN >= OIDX_ENT_COST(0) && OIDX_CHARGE_MIN < OIDX_ENT_MAX, "charge bounds");
_Static_assert(OIDX_LEAF_MIN > 0 && 2 * OIDX_LEAF_MIN + OIDX_ENT_MAX < OIDX_LEAF_DATA, "fill bounds");
/* a redistribution leaves both sides >= OIDX_LEAF_MIN (leaf_rebalance) */
_Static_assert(OIDX_LEAF_DATA / 2 >= OIDX_ENT_MAX + OIDX_LEAF_MIN, "redistribution bounds");

/*
 * An inner node's separators are malloc'd blobs; a descent's binary search
 * would dereference one per step, a cache miss each.  So the node also
 * keeps, per separator, its 8 bytes after the prefix all its separators
 * share (head[], big-endian, zero-padded): the search compares those and
 * reads a blob only when two heads are equal.  inner_heads() rebuilds them
 * after every change of keys[] (only splits and merges change them).  The
 * shared prefix itself, compared first, is kept in the node too when it is
 * at most OIDX_PFX_INLINE bytes (pfx[]), else read from keys[0]: a blob
 * read per level saved (a 5-line quote against 1M offers descends ~100
 * times).  Any separator's first plen bytes are the prefix, so pfx[] only
 * changes where plen does (heads_from).
 */
struct oidx_inner {
	struct oidx_node h;
	uint32_t plen;                     /* bytes every separator shares */
	uint8_t pfx[OIDX_PFX_INLINE];      /* the first min(plen, OIDX_PFX_INLINE) of them */
	uint64_t head[OIDX_INNER_MAX - 1]; /* separator i's bytes [plen, plen + 8) */
	uint8_t *keys[OIDX_INNER_MAX - 1]; /* malloc'd blobs: [len][bytes...] */
	struct oidx_node *kids[OIDX_INNER_MAX];
};

/* n as the leaf it is (asserted). */
static inline struct oidx_leaf *as_leaf(struct oidx_node *n)
{
	assert(n->is_leaf);
	return (struct oidx_leaf *)n;
}

/* n as the inner node it is (asserted). */
static inline struct oidx_inner *as_inner(struct oidx_node *n)
{
	assert(!n->is_leaf);
	return (struct oidx_inner *)n;
}

/* A blob or a leaf entry: both start [len][bytes...]. */
static inline uint32_t kb_len(const uint8_t *kb) { return kb[0]; }
static inline const uint8_t *kb_bytes(const uint8_t *kb) { return kb + 1; }

/* memcmp over the common length, then shorter first.  Pointers may be NULL
 * when their length is 0.  Only the sign of the result means anything.
 * Compared inline 8 bytes at a time as big-endian words, then byte by byte
 * (a call to memcmp per step of every binary search was a visible share of
 * an index build: keys are short and share long prefixes). */
static int key_cmp(const void *a, uint32_t alen, const void *b, uint32_t blen)
{
	const uint8_t *pa = a, *pb = b;
	uint32_t m = alen < blen ? alen : blen;
	uint32_t i = 0;
	for (; i + 8 <= m; i += 8) {
		uint64_t x, y;
		memcpy(&x, pa + i, 8);
		memcpy(&y, pb + i, 8);
		if (x != y) {
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
			x = __builtin_bswap64(x);
			y = __builtin_bswap64(y);
#endif
			return x < y ? -1 : 1;
		}
	}
	for (; i < m; i++)
		if (pa[i] != pb[i])
			return pa[i] < pb[i] ? -1 : 1;
	return (alen > blen) - (alen < blen);
}

/* Compare a blob or leaf entry with a caller's key (key_cmp's sign). */
static int kb_cmp_key(const uint8_t *kb, const void *key, uint32_t key_len)
{
	return key_cmp(kb_bytes(kb), kb_len(kb), key, key_len);
}

/* A malloc'd blob [len][bytes] of key; NULL on OOM.  key_len <= 255. */
static uint8_t *kb_new(const void *key, uint32_t key_len)
{
	assert(key_len <= IDX_MAX_KEY);
	uint8_t *kb = malloc(1u + key_len);
	if (!kb)
		return NULL;
	kb[0] = (uint8_t)key_len;
	if (key_len)
		memcpy(kb + 1, key, key_len);
	return kb;
}

/* A malloc'd separator blob: the shortest prefix of hi that sorts strictly
 * above lo (lo < hi), so lo < sep <= hi.  NULL on OOM. */
static uint8_t *sep_new(const uint8_t *lo, uint32_t ll, const uint8_t *hi, uint32_t hl)
{
	uint32_t m = ll < hl ? ll : hl, p = 0;
	while (p < m && lo[p] == hi[p])
		p++;
	assert(p < hl); /* lo < hi, so hi is not a prefix of lo */
	return kb_new(hi, p + 1);
}

/* ---- leaf slots and heap -------------------------------------------------
 * Multi-byte fields inside d[] (offsets, values) are read and written with
 * memcpy: d[] is a byte heap and they sit at any alignment. */

/* Offset in d[] of entry i's heap bytes. */
static inline uint32_t slot_get(const struct oidx_leaf *l, uint32_t i)
{
	uint16_t o;
	memcpy(&o, l->d + 2u * i, sizeof(o));
	return o;
}

/* Set entry i's offset (< OIDX_LEAF_DATA). */
static inline void slot_put(struct oidx_leaf *l, uint32_t i, uint32_t off)
{
	uint16_t o = (uint16_t)off;
	memcpy(l->d + 2u * i, &o, sizeof(o));
}

/* Entry i ([len][key after the prefix][value]); i < n. */
static inline const uint8_t *leaf_ent(const struct oidx_leaf *l, uint32_t i)
{
	assert(i < l->h.n);
	return l->d + slot_get(l, i);
}

/* The heap bytes of entry e: length byte, key suffix, value. */
static inline uint32_t ent_bytes(const uint8_t *e) { return OIDX_ENT_BYTES(e[0]); }

/* What an entry of sz heap bytes is charged against the leaf (slot too). */
static inline uint32_t ent_charge(uint32_t sz) { return OIDX_CHARGE(2u + sz); }

/* What a key of len bytes is charged stored whole (vfill's measure). */
static inline uint32_t key_vcharge(uint32_t len) { return OIDX_CHARGE(OIDX_ENT_COST(len)); }

/* The value stored in entry e (unaligned: copied out). */
static inline void *ent_val(const uint8_t *e)
{
	void *v;
	memcpy(&v, e + 1 + e[0], sizeof(v));
	return v;
}

/* The sum of the entries' charges as stored: the measure of what fits.
 * At most OIDX_LEAF_DATA, and at least the bytes of d[] they take (slots
 * and heap entries, not holes), so whatever is charged also fits. */
static inline uint32_t leaf_fill(const struct oidx_leaf *l) { return l->fill; }

/* Does l belong to a tail-keyed tree (oidx_init_tail)? */
static inline bool leaf_tailed(const struct oidx_leaf *l) { return l->h.is_leaf == OIDX_LEAF_TAIL; }

/* The id a tail-keyed tree's value starts with (index.h oidx_init_tail). */
static inline const char *val_tail(const void *val)
{
	const char *id;
	memcpy(&id, val, sizeof(id));
	return id;
}

/* A tail (NUL-terminated, no NUL inside) against q[0, ql), as key_cmp:
 * bytes, then the shorter first.  (Its length first, then key_cmp's 8
 * bytes at a time: ids share their first dozen bytes, and a byte loop
 * was most of a tail-keyed insert's compares.) */
static int tail_cmp(const char *tail, const uint8_t *q, uint32_t ql)
{
	return key_cmp(tail, (uint32_t)strlen(tail), q, ql);
}

/* Entry e of l after the leaf's prefix (its stored bytes, then in a
 * tail-keyed leaf its value's id) against sk[0, sl), as key_cmp.  A
 * tail-keyed entry reads its value only when sk goes on past its head:
 * a key that ends within the head, or with it, sorts first (the tail is
 * never empty). */
static inline __attribute__((always_inline)) int ent_cmp_as(bool tailed, const uint8_t *e, const uint8_t *sk,
							  uint32_t sl)
{
	if (!tailed)
		return kb_cmp_key(e, sk, sl);
	uint32_t hl = e[0];
	if (sl <= hl) {
		int c = sl ? memcmp(e + 1, sk, sl) : 0;
		return c ? c : 1;
	}
	int c = hl ? memcmp(e + 1, sk, hl) : 0;
	return c ? c : tail_cmp(val_tail(ent_val(e)), sk + hl, sl - hl);
}

static int ent_cmp_key(const struct oidx_leaf *l, const uint8_t *e, const uint8_t *sk, uint32_t sl)
{
	return ent_cmp_as(leaf_tailed(l), e, sk, sl);
}

/* Entry i's whole key (prefix + suffix, + the value's id in a tail-keyed
 * leaf) into out[IDX_MAX_KEY]; its length. */
static uint32_t leaf_key(const struct oidx_leaf *l, uint32_t i, uint8_t *out)
{
	const uint8_t *e = leaf_ent(l, i);
	uint32_t n = l->plen + (uint32_t)e[0];
	memcpy(out, l->pfx, l->plen);
	memcpy(out + l->plen, e + 1, e[0]);
	if (leaf_tailed(l)) {
		const char *tail = val_tail(ent_val(e));
		size_t tl = strlen(tail);
		assert(tl >= 1 && n + tl <= IDX_MAX_KEY); /* checked by oidx_insert */
		memcpy(out + n, tail, tl);
		n += (uint32_t)tl;
	}
	return n;
}

/* Replace the value of entry i in place (the key and its place stay). */
static void leaf_set_val(struct oidx_leaf *l, uint32_t i, void *val)
{
	uint8_t *e = l->d + slot_get(l, i);
	memcpy(e + 1 + e[0], &val, sizeof(val));
}

/* Rewrite the heap without holes, entries in slot order from the end down:
 * afterwards top - 2n is all the free space there is. */
static void leaf_compact(struct oidx_leaf *l)
{
	uint8_t tmp[OIDX_LEAF_DATA];
	memcpy(tmp + l->top, l->d + l->top, OIDX_LEAF_DATA - l->top);
	uint32_t top = OIDX_LEAF_DATA;
	for (uint32_t i = 0; i < l->h.n; i++) {
		const uint8_t *e = tmp + slot_get(l, i);
		uint32_t sz = ent_bytes(e);
		top -= sz;
		assert(top >= 2u * l->h.n);
		memcpy(l->d + top, e, sz);
		slot_put(l, i, top);
	}
	assert(OIDX_LEAF_DATA - top == l->used);
	l->top = (uint16_t)top;
}

/* Open a new slot at position p (entries p.. move up one) for an entry of
 * sz heap bytes and return where its bytes go; the caller writes them.
 * Precondition: the entry fits, leaf_fill + ent_charge(sz) <=
 * OIDX_LEAF_DATA (compacts the heap when the holes are in the way). */
static uint8_t *leaf_open(struct oidx_leaf *l, uint32_t p, uint32_t sz)
{
	uint32_t n = l->h.n;
	assert(p <= n && leaf_fill(l) + ent_charge(sz) <= OIDX_LEAF_DATA);
	if (l->top < 2u * (n + 1) + sz)
		leaf_compact(l);
	assert(l->top >= 2u * (n + 1) + sz);
	l->top = (uint16_t)(l->top - sz);
	l->used = (uint16_t)(l->used + sz);
	l->fill = (uint16_t)(l->fill + ent_charge(sz));
	l->vfill = (uint16_t)(l->vfill + ent_charge(sz + l->plen));
	memmove(l->d + 2u * (p + 1), l->d + 2u * p, 2u * (n - p));
	slot_put(l, p, l->top);
	l->h.n = n + 1;
	return l->d + l->top;
}

/* Insert key -> val at position p, storing key[0, hlen) after the leaf's
 * prefix: the whole key (hlen = its length), or in a tail-keyed leaf the
 * head before val's id.  key starts with the prefix (hlen >= plen) and
 * fits (leaf_open).  Notes p as the leaf's last insert. */
static void leaf_insert(struct oidx_leaf *l, uint32_t p, const uint8_t *key, uint32_t hlen, void *val)
{
	uint32_t pl = l->plen, sl = hlen - pl;
	assert(hlen >= pl && (!pl || !memcmp(key, l->pfx, pl)));
	l->last = (uint16_t)p;
	uint8_t *e = leaf_open(l, p, OIDX_ENT_BYTES(sl));
	e[0] = (uint8_t)sl;
	if (sl)
		memcpy(e + 1, key + pl, sl);
	memcpy(e + 1 + sl, &val, sizeof(val));
}

/* Remove entries [p, p+k).  Their heap bytes become holes, except that an
 * entry at the bottom of the heap gives its bytes back at once, and an
 * empty leaf starts its heap over. */
static void leaf_remove(struct oidx_leaf *l, uint32_t p, uint32_t k)
{
	uint32_t n = l->h.n;
	assert(p + k <= n);
	for (uint32_t i = p + k; i-- > p;) {
		uint32_t off = slot_get(l, i), sz = ent_bytes(l->d + off);
		l->used = (uint16_t)(l->used - sz);
		l->fill = (uint16_t)(l->fill - ent_charge(sz));
		l->vfill = (uint16_t)(l->vfill - ent_charge(sz + l->plen));
		if (off == l->top)
			l->top = (uint16_t)(l->top + sz);
	}
	memmove(l->d + 2u * p, l->d + 2u * (p + k), 2u * (n - p - k));
	l->h.n = n - k;
	if (l->h.n == 0) {
		assert(l->used == 0 && l->fill == 0 && l->vfill == 0);
		l->top = OIDX_LEAF_DATA;
	}
}

/* Remove entry p and close its hole at once: the heap bytes below it move
 * up by its size (one memmove, < OIDX_LEAF_DATA bytes) and the slots of
 * the entries that were below it follow.  A delete is usually followed by
 * an insert (a row's update replaces its index keys); left as a hole, the
 * insert would find no contiguous room in a full leaf and compact all of
 * it, once per update. */
static void leaf_delete(struct oidx_leaf *l, uint32_t p)
{
	uint32_t off = slot_get(l, p), sz = ent_bytes(l->d + off), top = l->top;
	assert(off >= top);
	leaf_remove(l, p, 1);
	if (l->h.n == 0 || off == top)
		return; /* the heap started over, or gave the bytes back itself */
	memmove(l->d + top + sz, l->d + top, off - top);
	for (uint32_t i = 0; i < l->h.n; i++) {
		uint32_t o = slot_get(l, i);
		if (o < off)
			slot_put(l, i, o + sz);
	}
	l->top = (uint16_t)(top + sz);
}

/* Shorten the leaf's prefix to its first np bytes (np < plen): each entry
 * takes the prefix's bytes [np, plen) in front of its own.  The caller
 * has checked that the longer entries fit (their charges, which the heap
 * and slots never exceed). */
static void leaf_recut(struct oidx_leaf *l, uint32_t np)
{
	uint32_t d = l->plen - np, n = l->h.n, top = OIDX_LEAF_DATA, used = 0, fill = 0;
	assert(np < l->plen);
	uint8_t tmp[OIDX_LEAF_DATA];
	memcpy(tmp + l->top, l->d + l->top, OIDX_LEAF_DATA - l->top);
	for (uint32_t i = 0; i < n; i++) {
		const uint8_t *e = tmp + slot_get(l, i);
		uint32_t sz = ent_bytes(e), nsz = sz + d;
		top -= nsz;
		assert(top >= 2u * n);
		uint8_t *o = l->d + top;
		o[0] = (uint8_t)(e[0] + d);
		memcpy(o + 1, l->pfx + np, d);
		memcpy(o + 1 + d, e + 1, sz - 1);
		slot_put(l, i, top);
		used += nsz;
		fill += ent_charge(nsz);
	}
	assert(fill <= OIDX_LEAF_DATA);
	l->top = (uint16_t)top;
	l->used = (uint16_t)used;
	l->fill = (uint16_t)fill;
	l->plen = (uint8_t)np; /* vfill stays: the keys are the same */
}

/* The bytes a and b share at their start (at most `max`). */
static uint32_t common_prefix(const uint8_t *a, uint32_t al, const uint8_t *b, uint32_t bl, uint32_t max)
{
	uint32_t m = al < bl ? al : bl, p = 0;
	if (m > max)
		m = max;
	for (; p + 8 <= m; p += 8) { /* 8 bytes at a time: the first that differs */
		uint64_t x, y;
		memcpy(&x, a + p, 8);
		memcpy(&y, b + p, 8);
		if (x != y) {
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
			return p + (uint32_t)__builtin_ctzll(x ^ y) / 8;
#else
			return p + (uint32_t)__builtin_clzll(x ^ y) / 8;
#endif
		}
	}
	while (p < m && a[p] == b[p])
		p++;
	return p;
}

/* Where to cut a sequence of m >= 2 entries with costs cost[0..m) summing
 * to total: the k in [1, m) whose left part sum(cost[0..k)) is closest to
 * half of total.  With every cost <= OIDX_ENT_MAX that puts both parts
 * within OIDX_ENT_MAX / 2 of total / 2. */
static uint32_t split_point(const uint16_t *cost, uint32_t m, uint32_t total)
{
	assert(m >= 2);
	uint32_t best = 1, s = cost[0];
	uint32_t best_d = 2 * s > total ? 2 * s - total : total - 2 * s;
	for (uint32_t k = 2; k < m; k++) {
		s += cost[k - 1];
		uint32_t d = 2 * s > total ? 2 * s - total : total - 2 * s;
		if (d < best_d) {
			best_d = d;
			best = k;
		}
	}
	return best;
}

/* ---- runs: the entries of a split, a merge or a redistribution ------------
 * A split, a merge and a redistribution rebuild the leaves they touch from
 * a run: the entries whole (prefix + suffix), in key order, copied out of
 * the leaves first.  Each rebuilt leaf takes the prefix its first and last
 * keys share (they are sorted, so every key between shares it), so entries
 * moved between leaves of different prefixes are re-cut on the way. */
#define OIDX_RUN_MAX (2u * OIDX_LEAF_NMAX + 1u)
/* Room for the whole keys of two leaves and one more key: each entry's
 * stored bytes plus the prefix; in a tail-keyed tree, whose leaves' keys
 * whole are far more than the bytes they store, IDX_MAX_KEY a key.  A run
 * is malloc'd with the room its tree needs (oidx_run_new). */
#define OIDX_RUN_BYTES_PLAIN (2u * (OIDX_LEAF_DATA + OIDX_LEAF_NMAX * OIDX_LEAF_PFX) + IDX_MAX_KEY)
#define OIDX_RUN_BYTES_TAIL (OIDX_RUN_MAX * IDX_MAX_KEY)
_Static_assert(OIDX_RUN_BYTES_TAIL <= UINT16_MAX && OIDX_RUN_BYTES_PLAIN <= OIDX_RUN_BYTES_TAIL,
	       "run offsets are 16-bit");

/* hlen[i]: the bytes of key i a leaf stores (with its prefix): len[i], or
 * in a tail-keyed tree the head before the value's id; charges, prefixes
 * and leaf_build go by it. */
struct oidx_run {
	uint32_t n, bytes, cap; /* cap: b[]'s room */
	bool tailed;
	uint16_t off[OIDX_RUN_MAX];
	uint8_t len[OIDX_RUN_MAX];
	uint8_t hlen[OIDX_RUN_MAX];
	void *val[OIDX_RUN_MAX];
	uint8_t b[];
};

/* An empty run for a tree of the kind `tailed` says, or NULL on OOM. */
static struct oidx_run *oidx_run_new(bool tailed)
{
	uint32_t cap = tailed ? OIDX_RUN_BYTES_TAIL : OIDX_RUN_BYTES_PLAIN;
	struct oidx_run *r = malloc(sizeof(*r) + cap);
	if (r) {
		r->n = r->bytes = 0;
		r->cap = cap;
		r->tailed = tailed;
	}
	return r;
}

/* Append key -> val to the run, its first hlen bytes stored (room is the
 * caller's bound). */
static void run_add(struct oidx_run *r, const uint8_t *key, uint32_t key_len, uint32_t hlen, void *val)
{
	assert(r->n < OIDX_RUN_MAX && r->bytes + key_len <= r->cap && hlen <= key_len);
	r->off[r->n] = (uint16_t)r->bytes;
	r->len[r->n] = (uint8_t)key_len;
	r->hlen[r->n] = (uint8_t)hlen;
	r->val[r->n] = val;
	if (key_len)
		memcpy(r->b + r->bytes, key, key_len);
	r->bytes += key_len;
	r->n++;
}

/* Append entries [from, to) of l. */
static void run_add_leaf(struct oidx_run *r, const struct oidx_leaf *l, uint32_t from, uint32_t to)
{
	for (uint32_t i = from; i < to; i++) {
		assert(r->n < OIDX_RUN_MAX && r->bytes + IDX_MAX_KEY <= r->cap);
		r->off[r->n] = (uint16_t)r->bytes;
		uint32_t kl = leaf_key(l, i, r->b + r->bytes);
		r->len[r->n] = (uint8_t)kl;
		r->hlen[r->n] = (uint8_t)(l->plen + leaf_ent(l, i)[0]);
		r->val[r->n] = ent_val(leaf_ent(l, i));
		r->bytes += kl;
		r->n++;
	}
}

static inline const uint8_t *run_key(const struct oidx_run *r, uint32_t i) { return r->b + r->off[i]; }

/* Entry i's charge in a leaf whose prefix is pl bytes long. */
static inline uint32_t run_charge(const struct oidx_run *r, uint32_t i, uint32_t pl)
{
	assert(r->hlen[i] >= pl);
	return OIDX_CHARGE(OIDX_ENT_COST(r->hlen[i] - pl));
}

/* The prefix entries [from, to) of the run share (to > from), as a leaf
 * of them would keep it: at most OIDX_LEAF_PFX bytes, and in a tail-keyed
 * tree no longer than any of their heads (a leaf's prefix is stored
 * bytes).  Otherwise every key between the first and the last is at
 * least as long as what those two share (they are sorted). */
static uint32_t run_prefix(const struct oidx_run *r, uint32_t from, uint32_t to)
{
	assert(to > from);
	uint32_t p = common_prefix(run_key(r, from), r->len[from], run_key(r, to - 1), r->len[to - 1], OIDX_LEAF_PFX);
	if (r->tailed)
		for (uint32_t i = from; i < to && p; i++)
			if (r->hlen[i] < p)
				p = r->hlen[i];
	return p;
}

/* Make l (links kept) hold exactly entries [from, to) of the run, under
 * their first pl bytes (which they all share: at most run_prefix), the
 * heap compact.  They must fit: the caller has bounded their charges. */
static void leaf_build(struct oidx_leaf *l, const struct oidx_run *r, uint32_t from, uint32_t to, uint32_t pl)
{
	assert(to > from && to - from <= OIDX_LEAF_NMAX && pl <= run_prefix(r, from, to));
	l->h.n = 0;
	l->top = OIDX_LEAF_DATA;
	l->used = l->fill = l->vfill = 0;
	l->plen = (uint8_t)pl;
	memcpy(l->pfx, run_key(r, from), pl);
	for (uint32_t i = from; i < to; i++) {
		assert(leaf_fill(l) + run_charge(r, i, pl) <= OIDX_LEAF_DATA);
		leaf_insert(l, i - from, run_key(r, i), r->hlen[i], r->val[i]);
	}
	l->last = UINT16_MAX; /* no insert of its own yet (the caller may name one) */
}

/* The charges of a leaf of run entries [from, to) (to > from), under the
 * prefix they share. */
static uint32_t run_fill(const struct oidx_run *r, uint32_t from, uint32_t to)
{
	uint32_t pl = run_prefix(r, from, to), f = 0;
	for (uint32_t i = from; i < to; i++)
		f += run_charge(r, i, pl);
	return f;
}

/* Can the run be cut before entry k (0 < k < r->n) into two leaves?  Each
 * is charged at most OIDX_LEAF_DATA under its own prefix, and at least
 * OIDX_LEAF_MIN with its keys whole (vsum[i]: the whole-key charges of
 * entries [0, i)). */
static bool cut_ok(const struct oidx_run *r, const uint32_t *vsum, uint32_t k)
{
	return vsum[k] >= OIDX_LEAF_MIN && vsum[r->n] - vsum[k] >= OIDX_LEAF_MIN &&
	       run_fill(r, 0, k) <= OIDX_LEAF_DATA && run_fill(r, k, r->n) <= OIDX_LEAF_DATA;
}

/* The cut nearest k0 (in [1, r->n]) that cut_ok allows, the smaller on a
 * tie; `known` is one it allows, or 0 (none known: then 0 when there is
 * none, which leaf_insert_split shows cannot happen). */
static uint32_t cut_near(const struct oidx_run *r, const uint32_t *vsum, uint32_t k0, uint32_t known)
{
	assert(!known || cut_ok(r, vsum, known));
	for (uint32_t d = 0; d < r->n; d++) {
		if (k0 > d && k0 - d < r->n && cut_ok(r, vsum, k0 - d))
			return k0 - d;
		if (d && k0 + d < r->n && cut_ok(r, vsum, k0 + d))
			return k0 + d;
	}
	return known;
}

/* Compare entry i's whole key with key (key_cmp's sign). */
static int leaf_cmp_key(const struct oidx_leaf *l, uint32_t i, const void *key, uint32_t key_len)
{
	uint32_t pl = l->plen;
	if (pl) {
		if (key_len < pl) {
			int c = key_len ? memcmp(l->pfx, key, key_len) : 0;
			return c ? c : 1; /* key is shorter than every key of the leaf */
		}
		int c = memcmp(l->pfx, key, pl);
		if (c)
			return c;
	}
	return ent_cmp_key(l, leaf_ent(l, i), pl ? (const uint8_t *)key + pl : key, key_len - pl);
}

/* Where key stands against the leaf's prefix: -1 below every key of the
 * leaf, 1 above every one, 0 when it starts with the prefix (then the
 * search goes on in the suffixes). */
static int leaf_side(const struct oidx_leaf *l, const void *key, uint32_t key_len)
{
	uint32_t pl = l->plen;
	if (!pl)
		return 0;
	uint32_t m = key_len < pl ? key_len : pl;
	int c = m ? memcmp(key, l->pfx, m) : 0;
	if (c < 0 || (c == 0 && key_len < pl))
		return -1; /* below the prefix, or a proper prefix of it */
	return c > 0;
}

/* The binary search of leaf_lower (!upper: the first entry >= the key
 * whose suffix after the leaf's prefix is sk[0, sl), *found if equal) and
 * leaf_upper (the first entry > it), for leaves of one kind: inlined
 * with `tailed` a constant, a plain leaf's loop is what it was before
 * tail-keyed leaves. */
static inline __attribute__((always_inline)) uint32_t leaf_search(const struct oidx_leaf *l, const uint8_t *sk,
								   uint32_t sl, bool tailed, bool upper, bool *found)
{
	uint32_t lo = 0, hi = l->h.n;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		int c = ent_cmp_as(tailed, leaf_ent(l, mid), sk, sl);
		if (upper ? c <= 0 : c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = !upper && lo < l->h.n && ent_cmp_as(tailed, leaf_ent(l, lo), sk, sl) == 0;
	return lo;
}

/* First index in the leaf whose key is >= key; *found if equal. */
static uint32_t leaf_lower(const struct oidx_leaf *l, const void *key, uint32_t key_len, bool *found)
{
	*found = false;
	int side = leaf_side(l, key, key_len);
	if (side)
		return side < 0 ? 0 : l->h.n;
	uint32_t pl = l->plen, sl = key_len - pl;
	const uint8_t *sk = pl ? (const uint8_t *)key + pl : key;
	return leaf_tailed(l) ? leaf_search(l, sk, sl, true, false, found) : leaf_search(l, sk, sl, false, false, found);
}

/* First index in the leaf whose key is > key. */
static uint32_t leaf_upper(const struct oidx_leaf *l, const void *key, uint32_t key_len)
{
	int side = leaf_side(l, key, key_len);
	if (side)
		return side < 0 ? 0 : l->h.n;
	uint32_t pl = l->plen, sl = key_len - pl;
	const uint8_t *sk = pl ? (const uint8_t *)key + pl : key;
	bool found;
	return leaf_tailed(l) ? leaf_search(l, sk, sl, true, true, &found) : leaf_search(l, sk, sl, false, true, &found);
}

/* Bytes [p, p + 8) of a key of len bytes as a big-endian word, zeros
 * past its end: two keys that share their first p bytes compare as their
 * words do whenever the words differ (a zero of padding sorts a key that
 * ended before one that goes on, as the byte order does). */
static inline uint64_t head_at(const uint8_t *k, uint32_t len, uint32_t p)
{
	uint8_t t[8] = {0};
	if (len > p)
		memcpy(t, k + p, len - p < 8 ? len - p : 8);
	return buf_be64(t);
}

/* The bytes every separator of in shares: those its first and last share
 * (they are sorted).  0 for a node without separators. */
static uint32_t shared_prefix(const struct oidx_inner *in)
{
	uint32_t n = in->h.n, p = 0;
	if (n == 0)
		return 0;
	const uint8_t *a = in->keys[0], *b = in->keys[n - 1];
	uint32_t m = kb_len(a) < kb_len(b) ? kb_len(a) : kb_len(b);
	while (p < m && kb_bytes(a)[p] == kb_bytes(b)[p])
		p++;
	return p;
}

/* Set in's plen to p and rebuild every head after it. */
static void heads_from(struct oidx_inner *in, uint32_t p)
{
	in->plen = p;
	if (p) /* p > 0: there is a first separator, and it has p bytes */
		memcpy(in->pfx, kb_bytes(in->keys[0]), p < OIDX_PFX_INLINE ? p : OIDX_PFX_INLINE);
	for (uint32_t i = 0; i < in->h.n; i++)
		in->head[i] = head_at(kb_bytes(in->keys[i]), kb_len(in->keys[i]), p);
}

/* Rebuild in's plen and head[] from its separators. */
static void inner_heads(struct oidx_inner *in) { heads_from(in, shared_prefix(in)); }

/* inner_heads after keys[ci] was inserted (the rest moved up by one):
 * when the shared prefix is unchanged, only the new head is computed. */
static void inner_heads_inserted(struct oidx_inner *in, uint32_t ci)
{
	uint32_t n = in->h.n, p = shared_prefix(in);
	if (n == 1 || p != in->plen) {
		heads_from(in, p);
		return;
	}
	memmove(&in->head[ci + 1], &in->head[ci], (n - 1 - ci) * sizeof(in->head[0]));
	in->head[ci] = head_at(kb_bytes(in->keys[ci]), kb_len(in->keys[ci]), p);
}

/* The child of an inner node that may hold key: first separator > key.
 * A key outside the separators' shared prefix is below or above all of
 * them; inside it, the heads decide but for equal ones. */
static uint32_t inner_child(const struct oidx_inner *in, const void *key, uint32_t key_len)
{
	uint32_t n = in->h.n, p = in->plen;
	if (n == 0)
		return 0;
	uint32_t m = key_len < p ? key_len : p;
	/* the prefix from the node itself when it is short enough */
	const uint8_t *pb = p <= OIDX_PFX_INLINE ? in->pfx : kb_bytes(in->keys[0]);
	int c = m ? memcmp(key, pb, m) : 0;
	if (c < 0 || (c == 0 && key_len < p))
		return 0; /* below the prefix, or a proper prefix of it */
	if (c > 0)
		return n;
	uint64_t hk = head_at(key, key_len, p);
	uint32_t lo = 0, hi = n;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		uint64_t hm = in->head[mid];
		if (hm < hk || (hm == hk && kb_cmp_key(in->keys[mid], key, key_len) <= 0))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* An empty, unlinked leaf of t, or NULL on OOM. */
static struct oidx_leaf *leaf_new(const struct oidx *t)
{
	struct oidx_leaf *l = malloc(sizeof(*l));
	if (l) {
		l->h.n = 0;
		l->h.is_leaf = t->tail ? OIDX_LEAF_TAIL : OIDX_LEAF;
		l->prev = l->next = NULL;
		l->top = OIDX_LEAF_DATA;
		l->used = 0;
		l->fill = 0;
		l->vfill = 0;
		l->plen = 0;
		l->last = UINT16_MAX;
	}
	return l;
}

/* An empty inner node, or NULL on OOM. */
static struct oidx_inner *inner_new(void)
{
	struct oidx_inner *in = malloc(sizeof(*in));
	if (in) {
		in->h.n = 0;
		in->h.is_leaf = 0;
	}
	return in;
}

/* Start loading the lines a search of node n reads: an inner node's
 * heads (its binary search) or a leaf's slots and heap (leaf_lower reads
 * entries all over it), all at once instead of one miss after another. */
/* Start loading the lines [from, to) (a hint: changes nothing). */
static inline void prefetch_range(const void *from, const void *to)
{
	for (const char *q = from; q < (const char *)to; q += 64)
		__builtin_prefetch(q);
}

/* The bytes of the biggest node: what node_prefetch loads. */
#define OIDX_NODE_BYTES (sizeof(struct oidx_leaf) > sizeof(struct oidx_inner) ? sizeof(struct oidx_leaf) \
										: sizeof(struct oidx_inner))

/* Start loading, at once, every line a search of node n may read --
 * the node whole, whatever its kind (a leaf's slots and the entries all
 * over its heap, for leaf_lower; an inner node's heads, separator
 * pointers and children, for inner_child) -- before reading any of it:
 * reading its header first to size the ranges was one miss, and the
 * search's reads a second one after it.  The compiler barrier keeps the
 * caller's first read of n after the prefetches.  See "Descent prefetch"
 * at the top. */
static inline void node_prefetch(const struct oidx_node *n)
{
	prefetch_range(n, (const char *)n + OIDX_NODE_BYTES);
	__asm__ volatile("" ::: "memory");
}

/* Descent to the leaf that may hold key (t->root non-NULL). */
static struct oidx_leaf *descend(const struct oidx *t, const void *key, uint32_t key_len)
{
	struct oidx_node *n = t->root;
	while (!n->is_leaf) {
		struct oidx_inner *in = as_inner(n);
		n = in->kids[inner_child(in, key, key_len)];
		node_prefetch(n);
	}
	return as_leaf(n);
}

/* Arguments usable at all: length in bounds, bytes present when needed. */
static bool oidx_key_ok(const void *key, uint32_t key_len)
{
	return key_len <= IDX_MAX_KEY && (key != NULL || key_len == 0);
}

/* The tree empty, of its kind. */
static void oidx_empty(struct oidx *t)
{
	t->root = NULL;
	t->count = 0;
	t->height = 0;
}

/* oidx_init: an empty tree owning no memory.  Never fails. */
void oidx_init(struct oidx *t)
{
	oidx_empty(t);
	t->tail = 0;
}

/* oidx_init_tail: oidx_init, tail-keyed (index.h). */
void oidx_init_tail(struct oidx *t)
{
	oidx_empty(t);
	t->tail = 1;
}

/* Free the subtree under n: its nodes and separator copies. */
static void node_free(struct oidx_node *n)
{
	if (!n->is_leaf) {
		struct oidx_inner *in = as_inner(n);
		for (uint32_t i = 0; i < in->h.n; i++)
			free(in->keys[i]);
		for (uint32_t i = 0; i <= in->h.n; i++)
			node_free(in->kids[i]);
	}
	free(n);
}

/* oidx_free: releases every node and separator (not the values) and leaves
 * an empty, reusable tree.  Recursion depth is the height. */
void oidx_free(struct oidx *t)
{
	if (t->root)
		node_free(t->root);
	oidx_empty(t);
}

/* The leaf where key belongs, from the root (t->root non-NULL), with the
 * inner nodes passed through in path[0..*depth) and the child taken from
 * each in pidx[]. */
static struct oidx_leaf *descend_path(const struct oidx *t, const void *key, uint32_t key_len,
				      struct oidx_inner **path, uint32_t *pidx, uint32_t *depth)
{
	struct oidx_node *n = t->root;
	*depth = 0;
	while (!n->is_leaf) {
		assert(*depth < OIDX_MAX_HEIGHT);
		struct oidx_inner *in = as_inner(n);
		uint32_t ci = inner_child(in, key, key_len);
		path[*depth] = in;
		pidx[*depth] = ci;
		(*depth)++;
		n = in->kids[ci];
	}
	return as_leaf(n);
}

/* Insert key -> val into t: key is valid and absent, belongs at position p
 * of `leaf`, which was reached through path/pidx (depth inner nodes); a
 * leaf stores its first hlen bytes (leaf_insert).
 * Into the leaf if it fits, else split the leaf (and the full ancestors,
 * maybe growing a new root) as the top describes.  Allocates everything
 * first: 0, or -1 on OOM with the tree unchanged. */
static int leaf_insert_split(struct oidx *t, struct oidx_leaf *leaf, uint32_t p, const void *key,
			     uint32_t key_len, uint32_t hlen, void *val, struct oidx_inner **path, uint32_t *pidx,
			     uint32_t depth)
{
	uint32_t n = leaf->h.n, pl = leaf->plen;
	/* the prefix the leaf and key share: the leaf's own unless key is
	 * below or above all of its keys and parts from it earlier (or, in
	 * a tail-keyed tree, its head is shorter) */
	uint32_t np = common_prefix(leaf->pfx, pl, key, hlen, pl);
	uint32_t cost = OIDX_CHARGE(OIDX_ENT_COST(hlen - np)), fill = leaf_fill(leaf);
	if (np < pl) /* the leaf's entries re-cut under the shorter prefix */
		for (uint32_t i = 0; i < n; i++)
			fill += ent_charge(ent_bytes(leaf_ent(leaf, i)) + pl - np) - ent_charge(ent_bytes(leaf_ent(leaf, i)));
	if (fill + cost <= OIDX_LEAF_DATA) {
		if (np < pl)
			leaf_recut(leaf, np);
		leaf_insert(leaf, p, key, hlen, val);
		t->count++;
		return 0;
	}

	/* The leaf splits.  Count the full ancestors that split with it. */
	uint32_t nsplit = 0;
	for (uint32_t j = depth; j-- > 0 && path[j]->h.n == OIDX_INNER_MAX - 1;)
		nsplit++;
	bool new_root = nsplit == depth;

	/* The n + 1 entries whole, key at p, and their charges under the
	 * prefix they all share (np): each side of the cut is then rebuilt
	 * under its own prefix, at least as long, so charged at most that. */
	bool append = leaf->next == NULL && p == n;
	struct oidx_run *r = oidx_run_new(t->tail);
	if (!r)
		return -1;
	/* (an append needs the leaf's last key only: the run is entries
	 * n - 1 and n of the sequence, the cut between them) */
	uint32_t base = append ? n - 1 : 0;
	run_add_leaf(r, leaf, base, p);
	run_add(r, key, key_len, hlen, val);
	run_add_leaf(r, leaf, p, n);

	/* Append split: past the end of the last leaf, the full leaf stays full
	 * and key starts the new one (k = n: everything stays left).  An
	 * ascending insert (past the end of another leaf, or right after the
	 * leaf's previous insert: ids arriving in order under one prefix of a
	 * secondary index) is cut right after the new key, as far as both
	 * sides' minimum allows.  Otherwise cut the n + 1 entries (key at p) at
	 * the midpoint of their charges.  See the top. */
	uint32_t k = n;
	if (!append) {
		/* When key shares the leaf's whole prefix, the n + 1 entries are
		 * charged T <= OIDX_LEAF_DATA + OIDX_ENT_MAX under it, and the cut
		 * nearest half of T is one (see the top).  When it parts from
		 * it earlier (np < pl: key below or above every key of the
		 * leaf), the old keys re-cut under np may be charged far more,
		 * so halves of T may not fit; but the cut that gives key's side
		 * the fewest old keys that make it reach OIDX_LEAF_MIN does: that
		 * side is charged under OIDX_LEAF_MIN + OIDX_ENT_MAX even whole,
		 * and the other holds old keys only (no more than the leaf
		 * held, under a prefix at least as long), at least T -
		 * OIDX_LEAF_MIN - 2 OIDX_ENT_MAX > OIDX_LEAF_MIN of them whole.
		 * cut_near from key's place finds it or a nearer one. */
		uint32_t known = 0;
		if (np == pl) {
			uint16_t costs[OIDX_LEAF_NMAX + 1];
			uint32_t total = 0;
			for (uint32_t i = 0; i <= n; i++) {
				costs[i] = (uint16_t)run_charge(r, i, np);
				total += costs[i];
			}
			assert(total > OIDX_LEAF_DATA);
			known = split_point(costs, n + 1, total);
		}
		k = known;
		/* ascending: past the leaf's end, right after its previous
		 * insert, or at the end of a run of keys that share more with
		 * the key before than with the one after (a secondary index's
		 * prefix: the rows' ids ascend under it) */
		bool ascending = p == n || (leaf->last != UINT16_MAX && p == leaf->last + 1u) ||
				 (p > 0 && common_prefix(run_key(r, p), r->len[p], run_key(r, p - 1), r->len[p - 1], IDX_MAX_KEY) >
						   common_prefix(run_key(r, p), r->len[p], run_key(r, p + 1), r->len[p + 1], IDX_MAX_KEY));
		if (ascending || !known) { /* as near the new key as each side's own prefix allows */
			uint32_t vsum[OIDX_LEAF_NMAX + 2];
			vsum[0] = 0;
			for (uint32_t i = 0; i <= n; i++)
				vsum[i + 1] = vsum[i] + key_vcharge(r->hlen[i]);
			k = cut_near(r, vsum, p + 1, known);
		}
		assert(k >= 1 && k <= n);
		if (!k) { /* unreachable (above); refused rather than overfilled */
			free(r);
			return -1;
		}
	}

	/* Allocate everything before touching the tree. */
	struct oidx_leaf *nleaf = leaf_new(t);
	uint8_t *sep = sep_new(run_key(r, k - 1 - base), r->len[k - 1 - base], run_key(r, k - base), r->len[k - base]);
	struct oidx_inner *spare[OIDX_MAX_HEIGHT + 1];
	uint32_t nspare = nsplit + (new_root ? 1 : 0);
	bool oom = !nleaf || !sep;
	for (uint32_t i = 0; i < nspare; i++) {
		spare[i] = oom ? NULL : inner_new();
		if (!spare[i])
			oom = true;
	}
	if (oom) {
		for (uint32_t i = 0; i < nspare; i++)
			free(spare[i]);
		free(nleaf);
		free(sep);
		free(r);
		return -1;
	}

	if (!append) { /* (an append leaves the full leaf as it is) */
		leaf_build(leaf, r, 0, k, run_prefix(r, 0, k));
		leaf_build(nleaf, r, k, n + 1, run_prefix(r, k, n + 1));
	} else { /* key alone: the prefix it shares with the key before, which
		  * the keys appended after it are likely to share too (a prefix
		  * of all of key would be cut again at the next append) */
		leaf_build(nleaf, r, 1, 2, run_prefix(r, 0, 2));
	}
	if (p < k)
		leaf->last = (uint16_t)p;
	else
		nleaf->last = (uint16_t)(p - k);
	free(r);
	assert(leaf->h.n == k && nleaf->h.n == n + 1 - k);
	assert(leaf->vfill >= OIDX_LEAF_MIN && (append || nleaf->vfill >= OIDX_LEAF_MIN));
	nleaf->next = leaf->next;
	if (nleaf->next)
		nleaf->next->prev = nleaf;
	nleaf->prev = leaf;
	leaf->next = nleaf;
	t->count++;

	/* Push (sep, right node) up the path. */
	uint8_t *up_key = sep;
	struct oidx_node *up_node = &nleaf->h;
	uint32_t used = 0;
	for (uint32_t j = depth; j-- > 0;) {
		struct oidx_inner *in = path[j];
		uint32_t ci = pidx[j], cn = in->h.n;
		if (cn < OIDX_INNER_MAX - 1) {
			memmove(&in->keys[ci + 1], &in->keys[ci], (cn - ci) * sizeof(in->keys[0]));
			memmove(&in->kids[ci + 2], &in->kids[ci + 1], (cn - ci) * sizeof(in->kids[0]));
			in->keys[ci] = up_key;
			in->kids[ci + 1] = up_node;
			in->h.n++;
			inner_heads_inserted(in, ci);
			assert(used == nspare);
			return 0;
		}
		/* Split a full inner node: OIDX_INNER_MAX keys, +1 children. */
		uint8_t *ik[OIDX_INNER_MAX];
		struct oidx_node *ic[OIDX_INNER_MAX + 1];
		memcpy(ik, in->keys, ci * sizeof(ik[0]));
		ik[ci] = up_key;
		memcpy(&ik[ci + 1], &in->keys[ci], (cn - ci) * sizeof(ik[0]));
		memcpy(ic, in->kids, (ci + 1) * sizeof(ic[0]));
		ic[ci + 1] = up_node;
		memcpy(&ic[ci + 2], &in->kids[ci + 1], (cn - ci) * sizeof(ic[0]));
		uint32_t total = cn + 1;                     /* keys */
		uint32_t ml = append ? total - 2 : total / 2; /* keys kept left */
		struct oidx_inner *right = spare[used++];
		memcpy(in->keys, ik, ml * sizeof(ik[0]));
		memcpy(in->kids, ic, (ml + 1) * sizeof(ic[0]));
		in->h.n = ml;
		memcpy(right->keys, &ik[ml + 1], (total - ml - 1) * sizeof(ik[0]));
		memcpy(right->kids, &ic[ml + 1], (total - ml) * sizeof(ic[0]));
		right->h.n = total - ml - 1;
		inner_heads(in);
		inner_heads(right);
		up_key = ik[ml];
		up_node = &right->h;
	}
	assert(new_root && used + 1 == nspare);
	struct oidx_inner *root = spare[used];
	root->keys[0] = up_key;
	root->kids[0] = t->root;
	root->kids[1] = up_node;
	root->h.n = 1;
	inner_heads(root);
	t->root = &root->h;
	t->height++;
	assert(t->height < OIDX_MAX_HEIGHT);
	return 0;
}

/* leaf_lower for an insert: first whether key goes right after the
 * leaf's last insert (two comparisons instead of a binary search).  A
 * table's rows arrive in id order under each head of a secondary index
 * (a snapshot's load, new rows): an originator's offers, a location's
 * levels, each after the one before.  In a tail-keyed tree, where such
 * heads are equal, every step of the binary search reads a row's id.
 * `last` is a hint, checked here: a stale one costs the two comparisons. */
static uint32_t leaf_after_last(const struct oidx_leaf *l, const void *key, uint32_t key_len, bool *found)
{
	uint32_t h = l->last, n = l->h.n;
	if (h < n && leaf_cmp_key(l, h, key, key_len) < 0) {
		int c = h + 1 < n ? leaf_cmp_key(l, h + 1, key, key_len) : 1;
		if (c >= 0) {
			*found = c == 0;
			return h + 1;
		}
	}
	return leaf_lower(l, key, key_len, found);
}

/* Shared body of put and set: find key's place, then replace (replace) or
 * report it present, or insert it.  0, 1 (present, !replace) or -1. */
static int oidx_insert(struct oidx *t, const void *key, uint32_t key_len, void *val, bool replace)
{
	if (!oidx_key_ok(key, key_len))
		return -1;
	uint32_t hlen = key_len;
	if (t->tail) { /* key must end with val's id, which the leaf then leaves out */
		const char *tail = val ? val_tail(val) : NULL;
		size_t tl = tail ? strlen(tail) : 0;
		if (!tl || tl > key_len || memcmp((const uint8_t *)key + key_len - tl, tail, tl))
			return -1;
		hlen = key_len - (uint32_t)tl;
	}
	if (!t->root) {
		struct oidx_leaf *l = leaf_new(t);
		if (!l)
			return -1;
		/* a leaf of one key keeps all of it as its prefix (up to
		 * OIDX_LEAF_PFX, and its head only in a tail-keyed tree): the
		 * next insert re-cuts it if need be */
		l->plen = (uint8_t)(hlen < OIDX_LEAF_PFX ? hlen : OIDX_LEAF_PFX);
		if (l->plen)
			memcpy(l->pfx, key, l->plen);
		leaf_insert(l, 0, key, hlen, val);
		t->root = &l->h;
		t->height = 1;
		t->count = 1;
		return 0;
	}

	struct oidx_inner *path[OIDX_MAX_HEIGHT];
	uint32_t pidx[OIDX_MAX_HEIGHT];
	uint32_t depth = 0;
	/* Append fast path (ids are time-ordered, and a snapshot is loaded in id
	 * order): first the rightmost spine.  If key sorts above the largest key
	 * (the rightmost leaf's last), that spine IS key's descent: every
	 * separator is <= some key of its right subtree <= the largest < key, so
	 * inner_child picks the last child at every level -- and key goes at the
	 * end of that leaf.  One comparison instead of a binary search per
	 * level; otherwise the ordinary descent below. */
	struct oidx_node *n = t->root;
	while (!n->is_leaf) {
		assert(depth < OIDX_MAX_HEIGHT);
		struct oidx_inner *in = as_inner(n);
		path[depth] = in;
		pidx[depth] = in->h.n;
		depth++;
		n = in->kids[in->h.n];
	}
	struct oidx_leaf *leaf = as_leaf(n);
	assert(leaf->h.n > 0);
	bool found = false;
	uint32_t p = leaf->h.n;
	if (leaf_cmp_key(leaf, leaf->h.n - 1, key, key_len) >= 0) {
		leaf = descend_path(t, key, key_len, path, pidx, &depth);
		p = leaf_after_last(leaf, key, key_len, &found);
	}
	assert(depth + 1 == t->height);
	if (found) {
		if (!replace)
			return 1;
		/* a tail-keyed entry stays whole only with an id as long as
		 * its own: the same key, cut elsewhere, is refused */
		if (t->tail && leaf->plen + (uint32_t)leaf_ent(leaf, p)[0] != hlen)
			return -1;
		leaf_set_val(leaf, p, val);
		return 0;
	}
	return leaf_insert_split(t, leaf, p, key, key_len, hlen, val, path, pidx, depth);
}

/* oidx_put: insert a copy of key -> val.  0 inserted, 1 already present
 * (nothing changed), -1 bad key (too long, NULL with length) or OOM
 * (nothing changed).  O(log n). */
int oidx_put(struct oidx *t, const void *key, uint32_t key_len, void *val)
{
	return oidx_insert(t, key, key_len, val, false);
}

/* oidx_set: replace the value of key, or insert it.  0 or -1 (as put). */
int oidx_set(struct oidx *t, const void *key, uint32_t key_len, void *val)
{
	return oidx_insert(t, key, key_len, val, true);
}

/* oidx_get: the value stored for key, or NULL.  O(log n), no allocation. */
void *oidx_get(const struct oidx *t, const void *key, uint32_t key_len)
{
	idx_probes++;
	if (!t->root || !oidx_key_ok(key, key_len))
		return NULL;
	struct oidx_leaf *l = descend(t, key, key_len);
	bool found;
	uint32_t p = leaf_lower(l, key, key_len, &found);
	return found ? ent_val(leaf_ent(l, p)) : NULL;
}

/* Merge leaf kid ci of parent with a sibling (the left one preferred) if
 * both fit in one leaf, else even out their bytes (see the top).  Returns
 * true if the parent lost a child (merge), false otherwise -- also when
 * the separator the redistribution needs could not be allocated (nothing
 * changed then: an under-full leaf is still a correct tree). */
static bool leaf_rebalance(struct oidx_inner *parent, uint32_t ci)
{
	uint32_t si = ci > 0 ? ci - 1 : ci; /* separator between L and R */
	struct oidx_leaf *L = as_leaf(parent->kids[si]);
	struct oidx_leaf *R = as_leaf(parent->kids[si + 1]);
	bool under_left = ci == si; /* the under-full one is L (else R) */
	struct oidx_run *r = oidx_run_new(leaf_tailed(L));
	if (!r)
		return false; /* OOM: leave the node under-full; still correct */
	uint32_t nl = L->h.n;
	run_add_leaf(r, L, 0, nl);
	run_add_leaf(r, R, 0, R->h.n);
	uint32_t m = r->n, np = run_prefix(r, 0, m), merged = 0;
	for (uint32_t i = 0; i < m; i++)
		merged += run_charge(r, i, np);
	if (merged <= OIDX_LEAF_DATA) {
		leaf_build(L, r, 0, m, np);
		free(r);
		L->next = R->next;
		if (L->next)
			L->next->prev = L;
		free(R);
		free(parent->keys[si]);
		uint32_t pn = parent->h.n;
		memmove(&parent->keys[si], &parent->keys[si + 1], (pn - si - 1) * sizeof(parent->keys[0]));
		memmove(&parent->kids[si + 1], &parent->kids[si + 2], (pn - si - 1) * sizeof(parent->kids[0]));
		parent->h.n--;
		inner_heads(parent);
		return true;
	}
	/* They do not fit in one leaf, so their whole-key charges total
	 * T > OIDX_LEAF_DATA.  The under-full one takes entries from the other
	 * until its own reach min(T / 2, OIDX_LEAF_DATA - OIDX_ENT_MAX): then
	 * it is charged less than OIDX_LEAF_DATA (stored, it is charged at
	 * most its whole keys), and the other keeps more than T / 2 -
	 * OIDX_ENT_MAX > OIDX_LEAF_MIN of whole-key charges, stored under a
	 * prefix at least as long as before (fewer keys), so in no more bytes
	 * than it had. */
	uint32_t total = L->vfill + (uint32_t)R->vfill, target = total / 2, k = nl, got;
	if (target > OIDX_LEAF_DATA - OIDX_ENT_MAX)
		target = OIDX_LEAF_DATA - OIDX_ENT_MAX;
	if (under_left) {
		for (got = L->vfill; got < target; k++)
			got += key_vcharge(r->hlen[k]);
	} else {
		for (got = R->vfill; got < target; k--)
			got += key_vcharge(r->hlen[k - 1]);
	}
	assert(k >= 1 && k < m);
	uint8_t *sep = k == nl ? NULL : sep_new(run_key(r, k - 1), r->len[k - 1], run_key(r, k), r->len[k]);
	if (!sep) {
		free(r);
		return false; /* OOM (or nothing to move): leave the node under-full; still correct */
	}
	leaf_build(L, r, 0, k, run_prefix(r, 0, k));
	leaf_build(R, r, k, m, run_prefix(r, k, m));
	free(r);
	assert(L->vfill >= OIDX_LEAF_MIN && R->vfill >= OIDX_LEAF_MIN);
	free(parent->keys[si]);
	parent->keys[si] = sep;
	inner_heads(parent);
	return false;
}

/* Same for an inner kid (by count); separators rotate through the parent,
 * so this never allocates. */
static bool inner_rebalance(struct oidx_inner *parent, uint32_t ci)
{
	uint32_t si = ci > 0 ? ci - 1 : ci;
	struct oidx_inner *L = as_inner(parent->kids[si]);
	struct oidx_inner *R = as_inner(parent->kids[si + 1]);
	uint32_t tkeys = L->h.n + 1 + R->h.n;
	if (tkeys + 1 <= OIDX_INNER_MAX) {
		L->keys[L->h.n] = parent->keys[si];
		memcpy(&L->keys[L->h.n + 1], R->keys, R->h.n * sizeof(R->keys[0]));
		memcpy(&L->kids[L->h.n + 1], R->kids, (R->h.n + 1) * sizeof(R->kids[0]));
		L->h.n = tkeys;
		free(R);
		uint32_t pn = parent->h.n;
		memmove(&parent->keys[si], &parent->keys[si + 1], (pn - si - 1) * sizeof(parent->keys[0]));
		memmove(&parent->kids[si + 1], &parent->kids[si + 2], (pn - si - 1) * sizeof(parent->kids[0]));
		parent->h.n--;
		inner_heads(L);
		inner_heads(parent);
		return true;
	}
	uint8_t *ik[2 * OIDX_INNER_MAX];
	struct oidx_node *ic[2 * OIDX_INNER_MAX];
	memcpy(ik, L->keys, L->h.n * sizeof(ik[0]));
	ik[L->h.n] = parent->keys[si];
	memcpy(&ik[L->h.n + 1], R->keys, R->h.n * sizeof(ik[0]));
	memcpy(ic, L->kids, (L->h.n + 1) * sizeof(ic[0]));
	memcpy(&ic[L->h.n + 1], R->kids, (R->h.n + 1) * sizeof(ic[0]));
	uint32_t ml = (tkeys - 1) / 2;
	memcpy(L->keys, ik, ml * sizeof(ik[0]));
	memcpy(L->kids, ic, (ml + 1) * sizeof(ic[0]));
	L->h.n = ml;
	parent->keys[si] = ik[ml];
	memcpy(R->keys, &ik[ml + 1], (tkeys - ml - 1) * sizeof(ik[0]));
	memcpy(R->kids, &ic[ml + 1], (tkeys - ml) * sizeof(ic[0]));
	R->h.n = tkeys - ml - 1;
	inner_heads(L);
	inner_heads(R);
	inner_heads(parent);
	return false;
}

/* oidx_del: remove key; returns its value or NULL if absent.  Rebalances on
 * the way up (see the top); O(log n). */
void *oidx_del(struct oidx *t, const void *key, uint32_t key_len)
{
	if (!t->root || !oidx_key_ok(key, key_len))
		return NULL;
	struct oidx_inner *path[OIDX_MAX_HEIGHT];
	uint32_t pidx[OIDX_MAX_HEIGHT];
	uint32_t depth;
	struct oidx_leaf *leaf = descend_path(t, key, key_len, path, pidx, &depth);
	bool found;
	uint32_t p = leaf_lower(leaf, key, key_len, &found);
	if (!found)
		return NULL;
	void *val = ent_val(leaf_ent(leaf, p));
#ifdef WM_TESTING
	idx_test_deletions++;
#endif
	leaf_delete(leaf, p);
	t->count--;

	if (depth == 0) {
		if (leaf->h.n == 0) {
			assert(t->count == 0);
			free(leaf);
			oidx_empty(t);
		}
		return val;
	}

	/* Walk up while the current node is under-full. */
	bool under = leaf->vfill < OIDX_LEAF_MIN;
	bool is_leaf = true;
	for (uint32_t j = depth; under && j-- > 0;) {
		bool merged = is_leaf ? leaf_rebalance(path[j], pidx[j]) : inner_rebalance(path[j], pidx[j]);
		if (!merged)
			break;
		is_leaf = false;
		under = path[j]->h.n + 1 < OIDX_INNER_MIN;
	}
	struct oidx_node *r = t->root;
	if (!r->is_leaf && r->n == 0) {
		t->root = as_inner(r)->kids[0];
		free(r);
		t->height--;
	}
	return val;
}

/* Position *it on the first key >= key of leaf l, where a descent for key
 * ended, or past l's end onto the next leaf; 1, or 0 past the last key
 * (oidx_seek_ge's last step). */
static int seek_in_leaf(struct oidx_leaf *l, const void *key, uint32_t key_len, struct oidx_iter *it)
{
	bool found;
	uint32_t p = leaf_lower(l, key, key_len, &found);
	if (p == l->h.n) {
		l = l->next;
		p = 0;
		if (!l)
			return 0;
	}
	assert(p < l->h.n);
	it->leaf = &l->h;
	it->pos = p;
	return 1;
}

/* oidx_seek_ge: position on the first key >= key (NULL/0: the first key).
 * 1 if positioned, 0 if there is none (it->leaf is then NULL). */
int oidx_seek_ge(const struct oidx *t, const void *key, uint32_t key_len, struct oidx_iter *it)
{
	idx_probes++;
	it->leaf = NULL;
	it->pos = 0;
	if (!t->root)
		return 0;
	if (!key)
		key_len = 0; /* lengths beyond IDX_MAX_KEY compare fine: no copy */
	return seek_in_leaf(descend(t, key, key_len), key, key_len, it);
}

/* oidx_seek_ge_many: the descents level by level (every leaf is at depth
 * height - 1), then each key's place in its leaf. */
void oidx_seek_ge_many(const struct oidx *t, unsigned n, const void *const keys[], const uint32_t lens[],
		       struct oidx_iter its[], int ok[])
{
	assert(n <= OIDX_SEEK_MANY_MAX);
	struct oidx_node *at[OIDX_SEEK_MANY_MAX];
	uint32_t len[OIDX_SEEK_MANY_MAX];
	idx_probes += n;
	for (unsigned i = 0; i < n; i++) {
		its[i].leaf = NULL;
		its[i].pos = 0;
		ok[i] = 0;
		at[i] = t->root;
		len[i] = keys[i] ? lens[i] : 0; /* as oidx_seek_ge: lengths beyond IDX_MAX_KEY compare fine */
	}
	if (!t->root)
		return;
	for (uint32_t depth = 1; depth < t->height; depth++)
		for (unsigned i = 0; i < n; i++) {
			struct oidx_inner *in = as_inner(at[i]);
			at[i] = in->kids[inner_child(in, keys[i], len[i])];
			node_prefetch(at[i]);
		}
	for (unsigned i = 0; i < n; i++)
		ok[i] = seek_in_leaf(as_leaf(at[i]), keys[i], len[i], &its[i]);
}

/* oidx_first: position on the first key, without counting a probe.  1 if
 * positioned, 0 if the tree is empty. */
int oidx_first(const struct oidx *t, struct oidx_iter *it)
{
	it->leaf = NULL;
	it->pos = 0;
	struct oidx_node *n = t->root;
	if (!n)
		return 0;
	while (!n->is_leaf)
		n = as_inner(n)->kids[0];
	assert(n->n > 0);
	it->leaf = n;
	return 1;
}

/* oidx_seek_le: position on the last key <= key (key NULL: the last key).
 * 1 if positioned, 0 if there is none. */
int oidx_seek_le(const struct oidx *t, const void *key, uint32_t key_len, struct oidx_iter *it)
{
	idx_probes++;
	it->leaf = NULL;
	it->pos = 0;
	if (!t->root)
		return 0;
	struct oidx_leaf *l;
	uint32_t p;
	if (!key) {
		struct oidx_node *n = t->root;
		while (!n->is_leaf)
			n = as_inner(n)->kids[n->n];
		l = as_leaf(n);
		p = l->h.n;
	} else {
		l = descend(t, key, key_len);
		p = leaf_upper(l, key, key_len);
	}
	if (p == 0) {
		l = l->prev;
		if (!l)
			return 0;
		p = l->h.n;
	}
	assert(p > 0 && p <= l->h.n);
	it->leaf = &l->h;
	it->pos = p - 1;
	return 1;
}

/* oidx_iter_val: the value under a valid iterator. */
void *oidx_iter_val(const struct oidx_iter *it)
{
	struct oidx_leaf *l = as_leaf(it->leaf);
	return ent_val(leaf_ent(l, it->pos));
}

/* oidx_iter_key: the key under a valid iterator, whole (the leaf keeps
 * the prefix its keys share apart from their suffixes): copied into the
 * iterator, so valid until the iterator moves; not NUL-terminated.
 * *key_len set if key_len is not NULL. */
const void *oidx_iter_key(struct oidx_iter *it, uint32_t *key_len)
{
	uint32_t kl = leaf_key(as_leaf(it->leaf), it->pos, it->key);
	if (key_len)
		*key_len = kl;
	return it->key;
}

/* oidx_iter_has_prefix: does the key under a valid iterator start with
 * pfx[0, len)?  Compared in place, without copying the key out. */
bool oidx_iter_has_prefix(const struct oidx_iter *it, const void *pfx, uint32_t len)
{
	const struct oidx_leaf *l = as_leaf(it->leaf);
	const uint8_t *e = leaf_ent(l, it->pos), *q = pfx;
	uint32_t pl = l->plen, hl = pl + (uint32_t)e[0];
	if (len > hl && !leaf_tailed(l))
		return false;
	uint32_t a = len < pl ? len : pl;
	if (a && memcmp(l->pfx, q, a))
		return false;
	if (len <= pl)
		return true;
	if (len <= hl)
		return !memcmp(e + 1, q + pl, len - pl);
	/* past the head (a tail-keyed leaf): the value's id goes on */
	if (e[0] && memcmp(e + 1, q + pl, e[0]))
		return false;
	const char *tail = val_tail(ent_val(e));
	for (uint32_t i = hl; i < len; i++, tail++)
		if (!*tail || (uint8_t)*tail != q[i])
			return false;
	return true;
}

/* oidx_iter_cmp: the key under a valid iterator (the leaf's shared
 * prefix, then the entry's suffix) against key[0, len), in place. */
int oidx_iter_cmp(const struct oidx_iter *it, const void *key, uint32_t len)
{
	const struct oidx_leaf *l = as_leaf(it->leaf);
	const uint8_t *e = leaf_ent(l, it->pos), *q = key;
	uint32_t pl = l->plen;
	uint32_t a = len < pl ? len : pl;
	int c = a ? memcmp(l->pfx, q, a) : 0;
	if (c || len < pl)
		return c ? c : 1; /* the prefix alone covers key, and goes on */
	return ent_cmp_key(l, e, pl ? q + pl : q, len - pl);
}

/* oidx_next: step to the following key.  1 if on an entry, 0 when walked
 * off the end (the iterator then stays off: further steps return 0). */
int oidx_next(struct oidx_iter *it)
{
	if (!it->leaf)
		return 0;
	struct oidx_leaf *l = as_leaf(it->leaf);
	if (it->pos + 1 < l->h.n) {
		it->pos++;
		return 1;
	}
	l = l->next;
	it->pos = 0;
	it->leaf = l ? &l->h : NULL;
	return l != NULL;
}

/* oidx_prev: step to the preceding key; 1, or 0 when walked off the start. */
int oidx_prev(struct oidx_iter *it)
{
	if (!it->leaf)
		return 0;
	if (it->pos > 0) {
		it->pos--;
		return 1;
	}
	struct oidx_leaf *l = as_leaf(it->leaf)->prev;
	if (!l) {
		it->leaf = NULL;
		return 0;
	}
	it->leaf = &l->h;
	it->pos = l->h.n - 1;
	return 1;
}

#ifdef WM_TESTING
/* ---- oidx_check ------------------------------------------------------- */

struct check_state {
	const struct oidx *t;
	struct oidx_leaf *prev_leaf; /* previous leaf in key order */
	size_t count;
	const char *err;
};

#define CHECK(cond, msg)                                                       \
	do {                                                                   \
		if (!(cond)) {                                                 \
			st->err = (msg);                                       \
			return;                                                \
		}                                                              \
	} while (0)

/* The slots and heap of leaf l: offsets inside the heap, entries inside d[]
 * and not overlapping, used == the sum of their sizes, fill == the sum of
 * their charges and in bounds. */
static void check_leaf_layout(struct check_state *st, const struct oidx_leaf *l)
{
	uint8_t mark[OIDX_LEAF_DATA];
	memset(mark, 0, sizeof(mark));
	CHECK(l->top <= OIDX_LEAF_DATA && 2u * l->h.n <= l->top, "leaf slots run into the heap");
	CHECK(l->plen <= OIDX_LEAF_PFX, "leaf prefix too long");
	uint32_t sum = 0, charged = 0, vcharged = 0;
	for (uint32_t i = 0; i < l->h.n; i++) {
		uint32_t off = slot_get(l, i);
		CHECK(off >= l->top && off < OIDX_LEAF_DATA, "leaf slot offset outside the heap");
		CHECK(off + OIDX_ENT_BYTES(l->d[off]) <= OIDX_LEAF_DATA, "leaf entry runs past the node");
		uint32_t sz = ent_bytes(l->d + off);
		for (uint32_t b = off; b < off + sz; b++) {
			CHECK(!mark[b], "leaf entries overlap");
			mark[b] = 1;
		}
		CHECK(l->plen + (uint32_t)l->d[off] <= IDX_MAX_KEY, "leaf key longer than IDX_MAX_KEY");
		sum += sz;
		charged += ent_charge(sz);
		vcharged += key_vcharge(l->plen + (uint32_t)l->d[off]);
	}
	CHECK(sum == l->used, "leaf used bytes differ from its entries");
	CHECK(charged == l->fill, "leaf fill differs from its entries' charges");
	CHECK(vcharged == l->vfill, "leaf vfill differs from its whole keys' charges");
	CHECK(2u * l->h.n + l->used <= l->fill, "leaf fill below the bytes it takes");
	CHECK(leaf_fill(l) <= OIDX_LEAF_DATA, "leaf overfull");
}

/* Keys of n lie in [lo, hi) (NULL: unbounded).  spine: n is on the rightmost
 * path from the root. */
static void check_node(struct check_state *st, struct oidx_node *n, uint32_t depth, const uint8_t *lo,
		       const uint8_t *hi, bool spine)
{
	bool root = n == st->t->root;
	CHECK(depth < st->t->height, "node deeper than height");
	if (n->is_leaf) {
		struct oidx_leaf *l = as_leaf(n);
		CHECK(depth == st->t->height - 1, "leaf above the bottom level");
		CHECK(l->h.n >= 1 && l->h.n <= OIDX_LEAF_NMAX, "leaf entry count out of range");
		CHECK(l->h.is_leaf == (st->t->tail ? OIDX_LEAF_TAIL : OIDX_LEAF), "leaf of the other kind");
		for (uint32_t i = 0; leaf_tailed(l) && i < l->h.n; i++) {
			const uint8_t *e = leaf_ent(l, i);
			size_t tl = strlen(val_tail(ent_val(e)));
			CHECK(tl >= 1 && l->plen + e[0] + tl <= IDX_MAX_KEY, "tail-keyed entry's id empty or too long");
		}
		check_leaf_layout(st, l);
		if (st->err)
			return;
		CHECK(root || spine || l->vfill >= OIDX_LEAF_MIN, "leaf under its minimum off the right spine");
		uint8_t k[IDX_MAX_KEY], pk[IDX_MAX_KEY];
		uint32_t kl, pkl = 0;
		for (uint32_t i = 0; i < l->h.n; i++, memcpy(pk, k, kl), pkl = kl) {
			kl = leaf_key(l, i, k);
			if (i > 0)
				CHECK(key_cmp(pk, pkl, k, kl) < 0, "leaf keys not strictly ascending");
			if (lo)
				CHECK(kb_cmp_key(lo, k, kl) <= 0, "leaf key below its separator");
			if (hi)
				CHECK(kb_cmp_key(hi, k, kl) > 0, "leaf key at/above its separator");
		}
		CHECK(l->prev == st->prev_leaf, "leaf prev link wrong");
		if (st->prev_leaf) {
			CHECK(st->prev_leaf->next == l, "leaf next link wrong");
			uint8_t a[IDX_MAX_KEY];
			uint32_t al = leaf_key(st->prev_leaf, st->prev_leaf->h.n - 1, a);
			kl = leaf_key(l, 0, k);
			CHECK(key_cmp(a, al, k, kl) < 0, "keys not ascending across leaves");
		}
		st->prev_leaf = l;
		st->count += l->h.n;
		return;
	}
	struct oidx_inner *in = as_inner(n);
	CHECK(in->h.n + 1 >= 2 && in->h.n + 1 <= OIDX_INNER_MAX, "inner child count out of range");
	CHECK(root || spine || in->h.n + 1 >= OIDX_INNER_MIN, "inner node under half full off the right spine");
	for (uint32_t i = 0; i < in->h.n; i++) {
		const uint8_t *k = in->keys[i];
		CHECK(k != NULL, "NULL separator");
		if (i > 0)
			CHECK(kb_cmp_key(in->keys[i - 1], kb_bytes(k), kb_len(k)) < 0, "separators not ascending");
		if (lo)
			CHECK(kb_cmp_key(lo, kb_bytes(k), kb_len(k)) < 0, "separator not above the lower bound");
		if (hi)
			CHECK(kb_cmp_key(hi, kb_bytes(k), kb_len(k)) > 0, "separator not below the upper bound");
	}
	struct oidx_inner fresh;
	fresh.h.n = in->h.n;
	memcpy(fresh.keys, in->keys, in->h.n * sizeof(in->keys[0]));
	inner_heads(&fresh);
	CHECK(fresh.plen == in->plen, "inner shared prefix length stale");
	CHECK(!in->plen || !memcmp(fresh.pfx, in->pfx, in->plen < OIDX_PFX_INLINE ? in->plen : OIDX_PFX_INLINE),
	      "inner shared prefix bytes stale");
	for (uint32_t i = 0; i < in->h.n; i++)
		CHECK(fresh.head[i] == in->head[i], "inner separator head stale");
	for (uint32_t i = 0; i <= in->h.n; i++) {
		CHECK(in->kids[i] != NULL, "NULL child");
		check_node(st, in->kids[i], depth + 1, i == 0 ? lo : in->keys[i - 1], i == in->h.n ? hi : in->keys[i],
			   spine && i == in->h.n);
		if (st->err)
			return;
	}
}

/* oidx_check: verify every invariant listed at the top of this file.
 * Returns 0, or -1 after printing the first violation to stderr.  O(n). */
int oidx_check(const struct oidx *t)
{
	struct check_state cs = { .t = t };
	struct check_state *st = &cs;
	if (!t->root) {
		if (t->count != 0 || t->height != 0)
			st->err = "empty tree with count or height";
	} else {
		check_node(st, t->root, 0, NULL, NULL, true);
		if (!st->err && st->prev_leaf && st->prev_leaf->next != NULL)
			st->err = "last leaf has a next link";
		if (!st->err && st->count != t->count)
			st->err = "entry count differs from t->count";
	}
	if (st->err) {
		fprintf(stderr, "oidx_check: %s\n", st->err);
		return -1;
	}
	return 0;
}

/* oidx_iter_leaf_prefix: the prefix length of the iterator's leaf. */
uint32_t oidx_iter_leaf_prefix(const struct oidx_iter *it) { return as_leaf(it->leaf)->plen; }

/* oidx_leaf_stats: the leaves of t and the bytes their entries fill (see
 * index.h).  Walks the leaf chain from the leftmost leaf; O(leaves). */
void oidx_leaf_stats(const struct oidx *t, struct oidx_leaf_stats *s)
{
	memset(s, 0, sizeof(*s));
	s->cap = OIDX_LEAF_DATA;
	s->node_bytes = sizeof(struct oidx_leaf);
	s->entry_overhead = OIDX_ENT_COST(0);
	s->min_charge = OIDX_CHARGE_MIN;
	s->leaf_min = OIDX_LEAF_MIN;
	s->prefix_max = OIDX_LEAF_PFX;
	if (!t->root)
		return;
	struct oidx_node *n = t->root;
	while (!n->is_leaf)
		n = as_inner(n)->kids[0];
	for (const struct oidx_leaf *l = as_leaf(n); l; l = l->next) {
		s->leaves++;
		s->fill += leaf_fill(l);
		s->vfill += l->vfill;
		s->prefix_bytes += l->plen;
	}
}
#endif
