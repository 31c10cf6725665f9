#!/usr/bin/env bash
# ir_per_request.sh -- the shard's user-space instructions per request,
# counted by valgrind (callgrind), for A/B of two builds on a noisy box.
#
#   perf/ir_per_request.sh [SHARD_BINARY] [SECONDS]
#
# Why: this box is shared, and the same binary's CPU per quote in
# perf/bench.sh moves by a third between runs (nginx's own req/s by as
# much).  An instruction count does not: it is the same for the same
# work whatever the neighbours do, so a change's effect on the engine's
# own work can be read from one run of each build.  It does not see the
# kernel (send/recv, fsync) or the cache, so it complements the wrk
# figures of bench.sh, it does not replace them.
#
# What: the shard (SHARD_BINARY, default bin/wm-shard) runs under
# callgrind with collection off; the order world of section k is built
# over HTTP (perf/world.sh: 10 originators x 5 wines, 10 candidate offers
# per wine); then for each request kind, collection is switched on,
# wrk sends that request on 4 keep-alive connections for SECONDS
# (default 10), collection is switched off and the counts dumped.
# Printed per kind: requests (wrk's count), instructions per request over
# every thread of the shard (event loop, WAL writer, compression), and
# the share of the event loop.  Kinds: quote-calculate with 1 and 5
# lines, and POST /v1/orders (wal-mode write: an fsync costs no
# instructions worth counting, and the disk's variance stays out).
# wrk counts requests it saw answered; the up to 4 still in flight at
# its deadline are served after it and land in the next dump's window or
# in none (under 0.1 % of a run).
#
# IRQ_KEEP=DIR keeps the dumps of each kind in DIR/<kind> for
# callgrind_annotate.  Needs valgrind (callgrind_control), wrk and curl.  Traffic goes to
# 127.0.0.1 only; the data dir is a mktemp dir removed on exit.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

SHARD=${1:-bin/wm-shard}
SECS=${2:-10}
die() { echo "ir_per_request.sh: $*" >&2; exit 1; }
for tool in valgrind callgrind_control wrk curl awk; do
	command -v "$tool" >/dev/null || die "$tool not found"
done
[ -x "$SHARD" ] || die "$SHARD not found (run: make)"

root=$(mktemp -d -t wm-irq.XXXXXX)
pid=""
cleanup() {
	[ -z "$pid" ] || kill "$pid" 2>/dev/null || true
	[ -z "$pid" ] || wait "$pid" 2>/dev/null || true
	rm -rf "$root"
}
trap cleanup EXIT

WM_BOOTSTRAP_KEY="irq-$(od -An -N24 -tx1 /dev/urandom | tr -d ' \n')"
export WM_BOOTSTRAP_KEY
valgrind --tool=callgrind --instr-atstart=no --separate-threads=yes \
	--callgrind-out-file="$root/cg.out" \
	"$SHARD" --listen 127.0.0.1:0 --data-dir "$root/data" --access-log 0 --snapshot-interval 0 \
	--wal-mode write --documents 0 --key-rate-rps 1000000 --key-rate-burst 1000000 \
	>"$root/shard.out" 2>"$root/shard.err" &
pid=$!
. perf/world.sh
port=$(listening_port wm-shard "$root/shard.out" "$root/shard.err" "$pid" 600) # valgrind starts slowly
api_base="http://127.0.0.1:$port"
world_setup >/dev/null
quote_world >/dev/null

# measure LABEL WRK_ARGS... : collect over one wrk run; prints the figures
measure() {
	local label=$1 n out
	shift
	callgrind_control -i on "$pid" >/dev/null
	out=$(wrk -t1 -c4 -d"${SECS}s" "$@" 2>&1)
	callgrind_control -i off "$pid" >/dev/null
	n=$(awk '/requests in/ { print $1 }' <<<"$out")
	[ -n "$n" ] && [ "$n" -gt 0 ] || die "$label: wrk answered nothing: $out"
	grep -q "Non-2xx" <<<"$out" && die "$label: non-2xx answers: $out"
	rm -f "$root"/cg.out*
	callgrind_control -d "$pid" >/dev/null
	# one file per thread (--separate-threads); "summary:" is its total
	local total=0 loop=0 f ir
	for f in "$root"/cg.out*; do
		# the sum of the self costs: every cost line but the one after a
		# calls= line (that is a call's inclusive cost)
		ir=$(awk '/^calls=/ { skip = 1; next }
			/^([0-9]|[+*-])/ { if (!skip) s += $2; skip = 0; next }
			{ skip = 0 }
			END { printf "%.0f", s }' "$f")
		total=$((total + ${ir:-0}))
		grep -q '^thread: 1$' "$f" && loop=${ir:-0}
	done
	# IRQ_KEEP=DIR keeps each kind's dumps there (callgrind_annotate by hand)
	if [ -n "${IRQ_KEEP:-}" ]; then
		mkdir -p "$IRQ_KEEP/${label//[^a-z0-9]/_}"
		cp "$root"/cg.out* "$IRQ_KEEP/${label//[^a-z0-9]/_}/"
	fi
	awk -v l="$label" -v n="$n" -v t="$total" -v e="$loop" 'BEGIN {
		printf "%-34s %7d requests  %9.0f instructions/request (all threads), event loop %.0f %%\n",
			l, n, t / n, (t > 0 ? 100 * e / t : 0) }'
}

echo "# $SHARD: callgrind, wrk -t1 -c4 -d${SECS}s per kind"
measure "quote-calculate, 1 line" -s perf/post_quote.lua "$api_base" -- "${qwines[0]}"
measure "quote-calculate, 5 lines" -s perf/post_quote.lua "$api_base" -- "${qwines[@]:0:5}"
measure "POST /v1/orders (wal-mode write)" -s perf/post_order.lua "$api_base" -- "$wine"
