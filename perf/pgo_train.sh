#!/usr/bin/env bash
# pgo_train.sh -- the workload the release build is trained on (Makefile,
# PGO=1: profile-guided optimisation).
#
#   perf/pgo_train.sh INSTRUMENTED_SHARD [INSTRUMENTED_ROUTER]
#
# Why: the engine's hot paths are long chains of small functions (parse,
# authorise, route, price, render, stage, commit).  With the counts of a
# real run, gcc inlines and lays out by measurement.  Measured on
# 2026-11-30 against the same sources built plain -O2
# (perf/ir_per_request.sh): instructions a 1-line quote 86.2k -> 77.5k, a
# 5-line quote 349.6k -> 289.5k, an order 371k -> 334k.  Callgrind's cache
# and branch simulation (--cache-sim --branch-sim, misses and mispredicts
# weighed 10, 100 and 15 cycles) puts the cycles ~6 % lower a quote and ~4 %
# an order: fewer instructions, as many cache misses, a few more
# mispredicts by its simple predictor.  perf/ab.sh could not tell the two
# apart in real time: on this box the same binary moves by half between
# rounds.
#
# What: SHARD (built with -fprofile-generate) runs on a free loopback port
# with a mktemp data dir; the order world of perf/world.sh is built over
# HTTP (it also trains the catalogue's writes); then, each kind on one
# keep-alive curl connection: quote-calculate with 1 and 5 lines, POST
# /v1/orders (the flash saga, each order its own consumer), GET of orders,
# partners, offer and wine pages, inventory, a partner create; then SIGTERM,
# and the shard writes its counts (*.gcda, in the -fprofile-dir the build
# gave it) as it exits.  With ROUTER, the same through a router: two
# shards in cluster mode (shard 0 owning every priced country, shard 1
# MT, as perf/bench.sh l) behind ROUTER, the world built through it, then
# quotes, orders and reads through it; all three exit on SIGTERM and their
# counts add up (the router shares the net/ and edge code with the shard).
# About 20 s in all.  Traffic goes to 127.0.0.1 only.
# A request kind whose answers are not all 2xx (each within 60 s), or a
# process that does not exit within 30 s of SIGTERM, fails the training (the build then
# goes on without a profile, Makefile); curl, bash and coreutils only: the
# build's own dependencies (.ci/deps build).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

SHARD=${1:?usage: perf/pgo_train.sh INSTRUMENTED_SHARD [INSTRUMENTED_ROUTER]}
ROUTER=${2:-}
QUOTES=${PGO_QUOTES:-1500} ORDERS=${PGO_ORDERS:-600} READS=${PGO_READS:-300}
die() { echo "pgo_train.sh: $*" >&2; exit 1; }
[ -x "$SHARD" ] || die "$SHARD not found"
command -v curl >/dev/null || die "curl not found"

root=$(mktemp -d -t wm-pgo.XXXXXX)
pid="" pids=()
cleanup() {
	local p
	for p in $pid "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in $pid "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$root"
}
trap cleanup EXIT

WM_BOOTSTRAP_KEY="pgo-$(od -An -N24 -tx1 /dev/urandom | tr -d ' \n')"
export WM_BOOTSTRAP_KEY
"$SHARD" --listen 127.0.0.1:0 --data-dir "$root/data" --access-log 0 --snapshot-interval 0 \
	--wal-mode write --documents 0 --key-rate-rps 1000000 --key-rate-burst 1000000 \
	>"$root/shard.out" 2>"$root/shard.err" &
pid=$!
. perf/world.sh
port=$(listening_port wm-shard "$root/shard.out" "$root/shard.err" "$pid" 300)
api_base="http://127.0.0.1:$port"
world_setup >/dev/null
quote_world >/dev/null

# kind NAME KEY N METHOD PATH [BODY_FN]: N requests on one connection (a curl
# config), BODY_FN i printing request i's body; dies unless all are 2xx.
kind() {
	local name=$1 key=$2 n=$3 method=$4 path=$5 body_fn=${6:-} cfg="$root/$1.cfg" i
	: >"$cfg"
	for ((i = 0; i < n; i++)); do
		{
			[ "$i" -eq 0 ] || printf 'next\n'
			printf 'url = "%s%s"\nrequest = "%s"\n' "$api_base" "$path" "$method"
			printf 'header = "Authorization: Bearer %s"\n' "$key"
			if [ -n "$body_fn" ]; then
				printf 'header = "Content-Type: application/json"\ndata-binary = "'
				"$body_fn" "$i" | sed 's/["\\]/\\&/g'
				printf '"\n'
			fi
			printf 'output = "/dev/null"\nwrite-out = "%%{http_code}\\n"\n'
		} >>"$cfg"
	done
	local ok
	ok=$(curl -s --max-time 60 -K "$cfg" | grep -c '^2') || true
	[ "$ok" -eq "$n" ] || die "$name: $ok of $n requests answered 2xx"
	echo "pgo: $name x $n"
}

quote1() { printf '{"destination_country":"DE","lines":[{"sku":"%s","qty":6,"box_units":6}]}' "${qwines[0]}"; }
quote5() {
	local w lines=""
	for w in "${qwines[@]:0:5}"; do lines+="${lines:+,}{\"sku\":\"$w\",\"qty\":6,\"box_units\":6}"; done
	printf '{"destination_country":"DE","lines":[%s]}' "$lines"
}
order() {
	printf '{"channel":"webshop_connect","destination_country":"DE","consumer":{"name":"Erika Mustermann",'
	printf '"email":"erika+pgo%s@example.de","address":{"line1":"Weinstrasse 1","city":"Berlin",' "$1"
	printf '"postal_code":"10115"}},"lines":[{"sku":"%s","qty":1,"box_units":12}]}' "$wine"
}
partner() { printf '{"legal_name":"Training Shop %s","country":"DE","roles":["seller"]}' "$1"; }

kind quote1 "$WM_ORDER_KEY" "$QUOTES" POST /v1/orders/quote-calculate quote1
kind quote5 "$WM_ORDER_KEY" $((QUOTES / 3)) POST /v1/orders/quote-calculate quote5
kind orders "$WM_ORDER_KEY" "$ORDERS" POST /v1/orders order
order_id=$(curl -sS -H "Authorization: Bearer $WM_ORDER_KEY" "$api_base/v1/orders?limit=1" |
	grep -o '"id":"ord_[^"]*"' | head -n 1 | sed 's/.*:"//; s/"$//')
[ -n "$order_id" ] || die "no order to read back"
kind order-get "$WM_ORDER_KEY" "$READS" GET "/v1/orders/$order_id"
kind orders-list "$WM_ORDER_KEY" $((READS / 3)) GET "/v1/orders?limit=50"
kind partner-get "$WM_BOOTSTRAP_KEY" "$READS" GET "/v1/partners/$estate"
kind offers-list "$WM_BOOTSTRAP_KEY" $((READS / 3)) GET "/v1/offers?limit=50"
kind wines-list "$WM_BOOTSTRAP_KEY" $((READS / 3)) GET "/v1/wines?limit=50"
kind inventory "$WM_BOOTSTRAP_KEY" $((READS / 3)) GET "/v1/inventory?offer=$offer"
kind partners-create "$WM_BOOTSTRAP_KEY" $((READS / 3)) POST /v1/partners partner

# stop PID NAME: SIGTERM and a clean exit, which writes the counts; one that
# has not exited within 30 s is killed and fails the training
stop() {
	kill -TERM "$1"
	for _ in $(seq 1 300); do
		kill -0 "$1" 2>/dev/null || break
		sleep 0.1
	done
	kill -0 "$1" 2>/dev/null && { kill -KILL "$1"; die "$2 did not exit within 30 s of SIGTERM"; }
	wait "$1" || die "$2 exited with status $? on SIGTERM"
}
stop "$pid" "the shard"
pid=""
[ -n "$ROUTER" ] || exit 0

# ---- the same through a router (perf/bench.sh l's cluster) ----
[ -x "$ROUTER" ] || die "$ROUTER not found"
cdir="$root/cluster"
mkdir -p "$cdir"
head -c 48 /dev/urandom | base64 | tr -d '\n=' | head -c 64 >"$cdir/secret"
chmod 600 "$cdir/secret"
p0=$(loopback_port) p1=$(loopback_port)
priced=$(awk -F'\t' '$1 !~ /^#/ && $1 != "country" && $1 != "MT" && NF > 1 {print $1}' data/vat.tsv | sort -u | tr '\n' ' ')
printf 'version 1\nshard 0 127.0.0.1:%s %s\nshard 1 127.0.0.1:%s MT\n' "$p0" "$priced" "$p1" >"$cdir/map.conf"
for i in 0 1; do
	port_i=$p0
	[ "$i" = 0 ] || port_i=$p1
	"$SHARD" --listen "127.0.0.1:$port_i" --data-dir "$cdir/shard$i" --access-log 0 --snapshot-interval 0 \
		--wal-mode write --documents 0 --key-rate-rps 1000000 --key-rate-burst 1000000 \
		--shard-map "$cdir/map.conf" --shard-id "$i" --cluster-secret-file "$cdir/secret" \
		>"$cdir/shard$i.out" 2>"$cdir/shard$i.err" &
	pids+=($!)
done
"$ROUTER" --listen 127.0.0.1:0 --data-dir "$cdir/router" --access-log 0 --shard-map "$cdir/map.conf" \
	--cluster-secret-file "$cdir/secret" >"$cdir/router.out" 2>"$cdir/router.err" &
pids+=($!)
rport=$(listening_port wm-router "$cdir/router.out" "$cdir/router.err" "${pids[2]}" 300)
api_base="http://127.0.0.1:$rport"
for _ in $(seq 1 100); do
	curl -fsS "$api_base/readyz" >/dev/null 2>&1 && break
	sleep 0.1
done
curl -fsS "$api_base/readyz" >/dev/null || die "the router never became ready: $(tail -n 3 "$cdir/router.err")"
world_setup >/dev/null
quote_world >/dev/null
kind router-quote1 "$WM_ORDER_KEY" "$QUOTES" POST /v1/orders/quote-calculate quote1
kind router-quote5 "$WM_ORDER_KEY" $((QUOTES / 3)) POST /v1/orders/quote-calculate quote5
kind router-orders "$WM_ORDER_KEY" "$ORDERS" POST /v1/orders order
# the router keeps its own keys and rates: an operator key whose rate never interferes
rkey=$(curl -fsS -H "Authorization: Bearer $WM_BOOTSTRAP_KEY" -H 'Content-Type: application/json' \
	-d '{"name":"pgo-router","rate_limit":{"requests_per_second":1000000,"burst":1000000}}' "$api_base/api/keys" |
	sed -n 's/.*"key":"\([^"]*\)".*/\1/p')
[ -n "$rkey" ] || die "could not mint a key through the router"
kind router-partner-get "$rkey" "$READS" GET "/v1/partners/$estate"
kind router-offers-list "$rkey" $((READS / 3)) GET "/v1/offers?limit=50"
kind router-wines-list "$rkey" $((READS / 3)) GET "/v1/wines?limit=50"
# the router first (its shards answer its last requests), then the shards
for i in 2 0 1; do
	stop "${pids[$i]}" "process $i of the cluster"
done
pids=()
