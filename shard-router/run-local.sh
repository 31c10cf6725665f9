#!/usr/bin/env bash
# run-local.sh -- `make run`: a local cluster from one command (DESIGN.md 9).
#
#   a router on LISTEN (default 127.0.0.1:8080), the partners' only address;
#   shard 0, the catalogue home (every priced country not named below);
#   shard 1, owning FR and DE, the quick start's origin and destination, so
#     the README's order is served on one shard (cross-shard orders need the
#     two-phase commit of the next issue; until then they answer 409);
#   shard 2, owning IT and ES.
#
# Data lives under DATA_DIR (default ./var): cluster/ (the shard map and the
# cluster secret, made once), shard0..2/, router/, logs/.  The demo data is
# seeded by the home on its first start and reaches the others by
# replication; the operator key is printed once, on that first start.
# Ctrl-C (or SIGTERM) stops every process; the next run resumes the data.
set -euo pipefail

BIN=${BIN:-bin}
DATA_DIR=${DATA_DIR:-./var}
LISTEN=${LISTEN:-127.0.0.1:8080}
SHARD_BASE_PORT=${SHARD_BASE_PORT:-8181}
HOST=${LISTEN%:*}

mkdir -p "$DATA_DIR/cluster" "$DATA_DIR/logs"
MAP="$DATA_DIR/cluster/shard-map.conf"
SECRET="$DATA_DIR/cluster/secret"
if [ ! -s "$SECRET" ]; then
	umask 077
	head -c 48 /dev/urandom | base64 | tr -d '\n=' | head -c 64 >"$SECRET"
	chmod 600 "$SECRET"
fi
# every country the reference data prices must belong to a shard
priced=$(awk -F'\t' '$1 !~ /^#/ && $1 != "country" && NF > 1 {print $1}' data/vat.tsv | sort -u)
home=$(echo "$priced" | grep -v -x -e FR -e DE -e IT -e ES | tr '\n' ' ')
cat >"$MAP" <<EOF
# written by shard-router/run-local.sh (make run)
version 1
shard 0 $HOST:$SHARD_BASE_PORT $home
shard 1 $HOST:$((SHARD_BASE_PORT + 1)) FR DE
shard 2 $HOST:$((SHARD_BASE_PORT + 2)) IT ES
router 0 $LISTEN
EOF

pids=()
stop() {
	trap - INT TERM
	echo "stopping the cluster..."
	kill -TERM "${pids[@]}" 2>/dev/null || true
	wait "${pids[@]}" 2>/dev/null || true
	exit 0
}
trap stop INT TERM

for i in 0 1 2; do
	demo=""
	[ "$i" = 0 ] && demo="--demo"
	"$BIN/wm-shard" --listen "$HOST:$((SHARD_BASE_PORT + i))" --data-dir "$DATA_DIR/shard$i" \
		--shard-map "$MAP" --shard-id "$i" --cluster-secret-file "$SECRET" $demo \
		2>>"$DATA_DIR/logs/shard$i.log" &
	pids+=($!)
done
"$BIN/wm-router" --listen "$LISTEN" --router-id 0 --data-dir "$DATA_DIR/router" --shard-map "$MAP" \
	--cluster-secret-file "$SECRET" 2>>"$DATA_DIR/logs/router.log" &
pids+=($!)
echo "partner portal: http://$LISTEN/portal/ (sign in with a partner's secret key)"
echo "cluster: router http://$LISTEN, shards on $HOST:$SHARD_BASE_PORT..$((SHARD_BASE_PORT + 2)); logs in $DATA_DIR/logs; Ctrl-C stops it"
# one process gone means the cluster is not whole: stop the rest
wait -n "${pids[@]}" || true
echo "a process of the cluster exited (see $DATA_DIR/logs)"
stop
