# perf/world.sh -- the benchmarks' order world, built over HTTP (sourced by
# perf/bench.sh and perf/ir_per_request.sh).  Needs api_base (the shard's
# http://127.0.0.1:PORT), WM_BOOTSTRAP_KEY (the operator key), a die
# function, and curl; sets the globals named below.

# listening_port PROGRAM OUT ERR PID TRIES : the port that PROGRAM (wm-shard,
# wm-router) printed to OUT as "PROGRAM listening on http://127.0.0.1:PORT",
# polled every 0.1 s up to TRIES times; dies, showing ERR, when PID exits
# first or the line never comes.  Use as port=$(listening_port ...) under
# set -e: a death in the substitution stops the caller too.
listening_port() {
	local prog=$1 out=$2 err=$3 pid=$4 tries=$5 port=""
	for _ in $(seq 1 "$tries"); do
		port=$(sed -n "s#^$prog listening on http://127\.0\.0\.1:\([0-9][0-9]*\).*#\1#p" "$out")
		[ -n "$port" ] && { printf '%s' "$port"; return 0; }
		kill -0 "$pid" 2>/dev/null || { cat "$err" >&2; die "$prog exited during start-up"; }
		sleep 0.1
	done
	die "$prog did not print its listening line within $((tries / 10)) s"
}

# loopback_port : a TCP port on 127.0.0.1 the kernel just had free (bound
# to port 0 and released), for a process that must be told its port in
# advance (a shard in a shard map).
loopback_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# world_setup: over HTTP at $api_base with the operator key, the order
# world of sections k and l (see k); sets estate seller wine offer loc level
# and exports WM_ORDER_KEY.
# bench_wine_json VINTAGE LOT : the body of the benchmarks' wine (Bench Rouge
# of $producer, a complete EU label) for that vintage and lot L2020-LOT
bench_wine_json() {
	printf '%s' "{\"title\":\"Bench Rouge\",\"producer\":\"$producer\",\"vintage\":$1,\"abv\":13,\
\"volume_in_liters\":0.75,\"colour\":\"red\",\"category\":\"wine\",\"country\":\"FR\",\"region\":\"Bourgogne\",\
\"bottler\":{\"name\":\"Domaine Bench\",\"address\":\"21000 Dijon, France\"},\"lot_number\":\"L2020-$2\",\
\"allergens\":[\"sulphites\"],\"ingredients\":\"grapes, preservative: sulphites\",\"energy_kj_per_100ml\":297,\
\"energy_kcal_per_100ml\":71}"
}

world_setup() {
	# oapi METHOD PATH [BODY] : the response body of a 2xx as the operator, else die
	oapi() {
		local out
		out=$(curl -sS -w '\n%{http_code}' -X "$1" -H "Authorization: Bearer $WM_BOOTSTRAP_KEY" \
			-H 'Content-Type: application/json' ${3:+--data-binary "$3"} "$api_base$2") ||
			die "orders setup: $1 $2: curl failed"
		local code=${out##*$'\n'}
		out=${out%$'\n'*}
		case "$code" in 2??) ;; *) die "orders setup: $1 $2 answered $code: ${out:0:400}" ;; esac
		printf '%s' "$out"
	}
	# jstr KEY : the first "KEY":"value" of the JSON on stdin
	jstr() { grep -o "\"$1\":\"[^\"]*\"" | head -n 1 | sed 's/^"[^"]*":"//; s/"$//'; }
	# partner_live NAME COUNTRY ROLES [EXTRA] : create and onboard to live; prints the id
	partner_live() {
		local id
		id=$(oapi POST /v1/partners "{\"legal_name\":\"$1\",\"country\":\"$2\",\"roles\":$3${4:+,$4}}" | jstr id)
		[ -n "$id" ] || die "orders setup: no partner id for $1"
		for st in verified roles_enabled configured integrated live; do
			oapi PATCH "/v1/partners/$id" "{\"status\":\"$st\"}" >/dev/null
		done
		printf '%s' "$id"
	}
	estate=$(partner_live "Bench Estate" FR '["originator"]' '"originator_type":"estate"')
	seller=$(partner_live "Bench Shop" DE '["seller"]')
	producer=$(oapi POST /v1/producers "{\"name\":\"Domaine Bench${WORLD_TAG:-}\",\"partner_id\":\"$estate\"}" | jstr id)
	wine=$(oapi POST /v1/wines "$(bench_wine_json 2020 1)" | jstr id)
	[ -n "$producer" ] && [ -n "$wine" ] || die "orders setup: no producer or wine id"
	oapi POST "/v1/wines/$wine/publish" >/dev/null
	offer=$(oapi POST /v1/offers "{\"wine_id\":\"$wine\",\"originator_id\":\"$estate\",\"seller_price\":10.00,\
\"currency\":\"EUR\",\"qty_available\":0,\"incoterm\":\"EXW\",\"status\":\"active\",\"network_shareable\":true}" | jstr id)
	[ -n "$offer" ] || die "orders setup: no offer id"
	# the cellar: in France, or (WORLD_CELLAR=DE, AT) a bonded warehouse in Germany or Austria
	local cellar='"line1":"1 rue du Vin","city":"Beaune","postal_code":"21200","country":"FR"'
	[ "${WORLD_CELLAR:-FR}" = DE ] && cellar='"line1":"1 Weinstrasse","city":"Berlin","postal_code":"10115","country":"DE"'
	[ "${WORLD_CELLAR:-FR}" = AT ] && cellar='"line1":"1 Weingasse","city":"Wien","postal_code":"1010","country":"AT"'
	loc=$(oapi POST /v1/stock-locations "{\"owner_entity_id\":\"$estate\",\"location_type\":\"BONDED_WAREHOUSE\",\
\"name\":\"Bench cellar\",\"address\":{$cellar}}" | jstr id)
	[ -n "$loc" ] || die "orders setup: no stock location id"
	level=$(oapi POST /v1/inventory "{\"sku\":\"SKU-BENCH\",\"offer_id\":\"$offer\",\"location_id\":\"$loc\",\
\"on_hand\":100000000}" | jstr id)
	[ -n "$level" ] || die "orders setup: no inventory level id"
	WM_ORDER_KEY=$(oapi POST /api/keys "{\"name\":\"bench-orders\",\"entity_id\":\"$seller\",\
\"rate_limit\":{\"requests_per_second\":1000000,\"burst\":1000000}}" | jstr key)
	[ -n "$WM_ORDER_KEY" ] || die "orders setup: could not mint the seller's key"
	export WM_ORDER_KEY
	echo "estate $estate (FR), seller $seller (DE), wine $wine, offer $offer, level $level (on_hand 100000000)"
}

# quote_world: after world_setup, at $api_base: 9 more FR originators (stock
# type, live) besides the estate, 4 more wines of the estate's producer, and
# every originator's active network-shareable EXW offer of every wine
# (prices 10.00..10.90 EUR), each with a level of 1,000,000 units in its own
# warehouse: 10 candidate offers per wine.  Sets qwines (the 5 wine ids).
quote_world() {
	local origs=("$estate") i j w o l off
	for i in 1 2 3 4 5 6 7 8 9; do
		origs+=("$(partner_live "Bench Stock $i" FR '["originator"]' '"originator_type":"stock"')")
	done
	qwines=("$wine")
	for i in 2 3 4 5; do
		# another vintage: the natural key (producer, title, vintage, ...) makes a new wine
		w=$(oapi POST /v1/wines "$(bench_wine_json "201$i" "$i")" | jstr id)
		[ -n "$w" ] || die "quote setup: no wine id"
		oapi POST "/v1/wines/$w/publish" >/dev/null
		qwines+=("$w")
	done
	for i in "${!origs[@]}"; do
		o=${origs[$i]}
		l=$(oapi POST /v1/stock-locations "{\"owner_entity_id\":\"$o\",\"location_type\":\"BONDED_WAREHOUSE\",\
\"name\":\"Bench warehouse $i\",\"address\":{\"line1\":\"$i rue du Vin\",\"city\":\"Beaune\",\"postal_code\":\"21200\",\
\"country\":\"FR\"}}" | jstr id)
		[ -n "$l" ] || die "quote setup: no location id"
		for j in "${!qwines[@]}"; do
			w=${qwines[$j]}
			[ "$i" = 0 ] && [ "$j" = 0 ] && continue # world_setup made the estate's offer of the first wine
			off=$(oapi POST /v1/offers "{\"wine_id\":\"$w\",\"originator_id\":\"$o\",\"seller_price\":10.${i}0,\
\"currency\":\"EUR\",\"qty_available\":0,\"incoterm\":\"EXW\",\"status\":\"active\",\"network_shareable\":true}" | jstr id)
			[ -n "$off" ] || die "quote setup: no offer id"
			oapi POST /v1/inventory "{\"sku\":\"SKU-Q$i-$j\",\"offer_id\":\"$off\",\"location_id\":\"$l\",\
\"on_hand\":1000000}" >/dev/null
		done
	done
	echo "quote world: ${#origs[@]} originators x ${#qwines[@]} wines = $(( ${#origs[@]} * ${#qwines[@]} )) offers"
}
