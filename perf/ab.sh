#!/usr/bin/env bash
# ab.sh -- two shard builds side by side on the same request, in
# alternating rounds, for A/B of a change on a box whose neighbours come
# and go.
#
#   perf/ab.sh A_BINARY B_BINARY [KIND] [ROUNDS] [SECONDS]
#
# Why: this box is a shared VM.  Its steal time moves from nothing to half
# a core within minutes, and a quote's CPU time moves by a third with it
# (issue 15: the same binary measured 17 and 27 us a quote five minutes
# apart).  One bench.sh run per build compares two different boxes.  Here
# both builds run at once, each round sends the same load to one and then
# the other (the order flips every round, so neither always goes first),
# and what is reported is per round plus the median and the best of each:
# the median says what a typical moment gives, the best what the build
# gives when the neighbours are quiet.  perf/ir_per_request.sh counts
# instructions, which noise does not move, but it does not see the
# kernel, the caches or the disk; this does.
#
# KIND: quote1 (default), quote5 (quote-calculate with 1 or 5 lines, wrk
# -c64, as bench.sh section k2) or orders (POST /v1/orders, the flash
# buy-sell saga, wal-mode fsync, wrk -c16, as section k).  ROUNDS (default
# 6) pairs of SECONDS (default 4) each.  Each shard has its own mktemp
# data dir and the order world of perf/world.sh; traffic goes to 127.0.0.1
# only.  Per run: wrk's requests/s and p99, and the shard's CPU per
# request (user + system from /proc, every thread, over wrk's count),
# split into user and system time, and the shard's minor page faults per
# request (an order adds ~17 KB of rows: ~4 fresh pages, ~9 % of its CPU
# under perf record on 2026-11-30).
# Orders grow the tables round after round, so compare rounds pairwise.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

[ $# -ge 2 ] || { echo "usage: perf/ab.sh A_BINARY B_BINARY [quote1|quote5|orders] [ROUNDS] [SECONDS]" >&2; exit 2; }
A=$1 B=$2 KIND=${3:-quote1} ROUNDS=${4:-6} SECS=${5:-4}
die() { echo "ab.sh: $*" >&2; exit 1; }
for tool in wrk curl awk; do command -v "$tool" >/dev/null || die "$tool not found"; done
for bin in "$A" "$B"; do [ -x "$bin" ] || die "$bin not found"; done
case "$KIND" in
quote1 | quote5) conns=64 script=perf/post_quote.lua ;;
orders) conns=16 script=perf/post_order.lua ;;
*) die "unknown kind $KIND (quote1, quote5, orders)" ;;
esac

. perf/world.sh # listening_port, world_setup, quote_world

roots=() pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	for r in "${roots[@]}"; do rm -rf "$r"; done
}
trap cleanup EXIT

# start SIDE BINARY: a shard with the order world; sets port_SIDE, pid_SIDE,
# args_SIDE (wrk's script arguments) and key_SIDE
start() {
	local side=$1 bin=$2 root
	root=$(mktemp -d -t wm-ab.XXXXXX)
	roots+=("$root")
	WM_BOOTSTRAP_KEY="ab-$(od -An -N24 -tx1 /dev/urandom | tr -d ' \n')"
	export WM_BOOTSTRAP_KEY
	"$bin" --listen 127.0.0.1:0 --data-dir "$root/data" --access-log 0 --snapshot-interval 0 \
		--wal-mode fsync --documents 0 --key-rate-rps 1000000 --key-rate-burst 1000000 \
		>"$root/shard.out" 2>"$root/shard.err" &
	local pid=$!
	pids+=("$pid")
	local port
	port=$(listening_port wm-shard "$root/shard.out" "$root/shard.err" "$pid" 100)
	api_base="http://127.0.0.1:$port"
	world_setup >/dev/null
	quote_world >/dev/null
	local args
	case "$KIND" in
	quote1) args=${qwines[0]} ;;
	quote5) args="${qwines[*]:0:5}" ;;
	orders) args=$wine ;;
	esac
	printf -v "port_$side" '%s' "$port"
	printf -v "pid_$side" '%s' "$pid"
	printf -v "args_$side" '%s' "$args"
	printf -v "key_$side" '%s' "$WM_ORDER_KEY"
}
start A "$A"
start B "$B"

tck=$(getconf CLK_TCK)
res=$(mktemp -t wm-ab-res.XXXXXX)
roots+=("$res")
echo "ab.sh: $KIND, $ROUNDS rounds of ${SECS}s each, wrk -t1 -c$conns; A = $A, B = $B"
for r in $(seq 1 "$ROUNDS"); do
	order="A B"
	[ $((r % 2)) = 0 ] && order="B A"
	for side in $order; do
		pv=pid_$side pt=port_$side av=args_$side kv=key_$side
		read -r u0 s0 f0 < <(awk '{ print $14, $15, $10 }' "/proc/${!pv}/stat")
		# shellcheck disable=SC2086 # the wine ids are separate arguments
		out=$(WM_ORDER_KEY=${!kv} wrk -t1 -c"$conns" -d"${SECS}s" --latency -s "$script" \
			"http://127.0.0.1:${!pt}" -- ${!av} 2>&1) || die "wrk failed: $out"
		read -r u1 s1 f1 < <(awk '{ print $14, $15, $10 }' "/proc/${!pv}/stat")
		line=$(grep '^BENCH_RESULT ' <<<"$out" | tail -n 1) || die "no BENCH_RESULT from wrk: $out"
		rps=$(sed -n 's/.* rps=\([0-9.]*\).*/\1/p' <<<"$line")
		n=$(sed -n 's/.* requests=\([0-9]*\).*/\1/p' <<<"$line")
		p99=$(sed -n 's/.* p99_us=\([0-9]*\).*/\1/p' <<<"$line")
		bad=$(sed -n 's/.* non2xx=\([0-9]*\).*/\1/p' <<<"$line")
		[ "${bad:-0}" = 0 ] || die "$side: $bad non-2xx answers"
		per() { awk -v c="$1" -v n="$n" -v hz="$tck" 'BEGIN { printf "%.1f", (n > 0 ? c * 1e6 / hz / n : 0) }'; }
		cpu=$(per $((u1 + s1 - u0 - s0)))
		printf 'round %d %s: %8.0f req/s  p99 %6d us  CPU %6.1f us/request (user %s, system %s; %s page faults)\n' \
			"$r" "$side" "$rps" "$p99" "$cpu" "$(per $((u1 - u0)))" "$(per $((s1 - s0)))" \
			"$(awk -v f=$((f1 - f0)) -v n="$n" 'BEGIN { printf "%.2f", (n > 0 ? f / n : 0) }')"
		echo "$side $rps $cpu $p99" >>"$res"
	done
done
# median and best of each side: req/s (higher is better), CPU and p99 (lower)
med() { sort -n | awk '{ v[NR] = $1 } END { printf "%s %s\n", (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2), v[1] }'; }
for side in A B; do
	read -r rmed _ < <(awk -v s="$side" '$1 == s { print $2 }' "$res" | med)
	rbest=$(awk -v s="$side" '$1 == s { print $2 }' "$res" | sort -n | tail -n 1)
	read -r cmed cbest < <(awk -v s="$side" '$1 == s { print $3 }' "$res" | med)
	read -r pmed pbest < <(awk -v s="$side" '$1 == s { print $4 }' "$res" | med)
	printf '%s: median %.0f req/s, best %.0f req/s; CPU median %.1f, best %.1f us/request; p99 median %.0f, best %.0f us\n' \
		"$side" "$rmed" "$rbest" "$cmed" "$cbest" "$pmed" "$pbest"
done
