#!/usr/bin/env bash
# profile.sh -- where a running process spends its CPU, for the notes of the
# speed issue (bench.sh calls it when BENCH_PERF_DIR is set).
#
#   perf/profile.sh PID SECONDS OUT
#
# Samples PID (every thread) at 999 Hz for SECONDS with perf record, then
# writes OUT: the top 40 symbols by self time (perf report --no-children),
# the same by shared object, and who calls strcmp, strlen, memset and
# memmove and of the kernel's page clearing (clear_page_erms: memory first
# touched) (call graphs), and the top 40 by inclusive time (a function
# and everything it calls: where a request's time goes).  Release builds
# keep no frame pointers, so the call graphs are unwound from DWARF
# (--call-graph dwarf; PROFILE_CALLGRAPH=fp for the cheaper frame-pointer
# walk).  Needs perf (linux-perf) and the right to
# read the process's samples (root, or kernel.perf_event_paranoid <= 1).
set -euo pipefail
[ $# -eq 3 ] || { echo "usage: perf/profile.sh PID SECONDS OUT" >&2; exit 2; }
pid=$1 secs=$2 out=$3
command -v perf >/dev/null || { echo "perf not installed: no profile" >"$out"; exit 0; }
# PROFILE_DATA=FILE keeps the perf.data there (for perf report by hand)
if [ -n "${PROFILE_DATA:-}" ]; then
	data=$PROFILE_DATA
else
	data=$(mktemp /tmp/wm-perf.XXXXXX)
	trap 'rm -f "$data"' EXIT
fi
perf record -q --call-graph "${PROFILE_CALLGRAPH:-dwarf}" -F 999 -p "$pid" -o "$data" -- sleep "$secs" >/dev/null 2>&1 || {
	echo "perf record failed (permissions?)" >"$out"
	exit 0
}
set +o pipefail # head closes the pipe early: not an error
{
	echo "# perf record -F 999 -p $pid for ${secs}s; self time by symbol (top 40)"
	perf report -i "$data" --stdio --no-children --sort symbol -g none 2>/dev/null | grep -v '^#' | grep -v '^$' |
		head -n 40
	echo
	echo "# self time by shared object"
	perf report -i "$data" --stdio --no-children --sort dso -g none 2>/dev/null | grep -v '^#' | grep -v '^$' | head -n 12
	echo
	echo "# inclusive time by symbol (children; top 40)"
	perf report -i "$data" --stdio --children --sort symbol -g none 2>/dev/null | grep -v '^#' | grep -v '^$' |
		head -n 40
	echo
	echo "# who calls the C library's string functions (callers, >= 0.5 %)"
	for f in strcmp strlen memset memmove clear_page_erms; do
		perf report -i "$data" --stdio --no-children --sort symbol --symbol-filter="$f" -g caller,0.5,callee \
			2>/dev/null | grep -v '^#' | grep -v '^$' | head -n 25
	done
} >"$out"
