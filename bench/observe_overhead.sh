#!/bin/bash
# Cost of observing a syscall-heavy process: a getppid loop run plain, under
# `iolab observe`, under `strace -c -f` and under `perf trace -s`. Prints the median
# wall time of RUNS runs of each and the slowdown against plain, and checks that
# iolab counted every call with zero lost events.
#   usage: bench/observe_overhead.sh [CALLS] [RUNS]     (root; builds iolab --release)
set -euo pipefail
CALLS=${1:-2000000}
RUNS=${2:-5}
cd "$(dirname "$0")/.."
cargo build --release --quiet
IOLAB=$PWD/target/release/iolab
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cc -O2 -pthread -o "$TMP/loop" tests/helpers/syscalls.c

now() { date +%s.%N; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

# time_it NAME CMD...: RUNS wall times of CMD (seconds), one per line, in $TMP/NAME
time_it() {
    local name=$1; shift
    : > "$TMP/$name"
    for _ in $(seq "$RUNS"); do
        local t0 t1
        t0=$(now); "$@" > "$TMP/$name.out" 2> "$TMP/$name.err"; t1=$(now)
        echo "$t1 - $t0" | bc -l >> "$TMP/$name"
    done
}

time_it plain "$TMP/loop" "$CALLS" 0 0
time_it iolab "$IOLAB" observe --json -- "$TMP/loop" "$CALLS" 0 0
counted=$(tail -n1 "$TMP/iolab.out" | python3 -c 'import json,sys; r=json.load(sys.stdin); print(next(s["calls"] for s in r["syscalls"] if s["name"]=="getppid"), r["lost_events"])')
have_strace=0; have_perf=0
if command -v strace > /dev/null; then time_it strace strace -c -f -o /dev/null "$TMP/loop" "$CALLS" 0 0; have_strace=1; fi
if command -v perf > /dev/null && perf trace -s -o /dev/null true > /dev/null 2>&1; then
    time_it perf perf trace -s -o /dev/null "$TMP/loop" "$CALLS" 0 0; have_perf=1
else
    echo "note: perf trace unavailable here: $(perf trace -s true 2>&1 | head -1)"
fi

base=$(median < "$TMP/plain")
printf '%d getppid calls, median of %d runs\n' "$CALLS" "$RUNS"
printf '%-22s %10s %10s\n' tool "time (s)" slowdown
report() { local m; m=$(median < "$TMP/$1"); printf '%-22s %10.3f %9.2fx\n' "$2" "$m" "$(echo "$m / $base" | bc -l)"; }
report plain "plain"
report iolab "iolab observe"
[ $have_strace = 1 ] && report strace "strace -c -f"
[ $have_perf = 1 ] && report perf "perf trace -s"
read -r n lost <<< "$counted"
echo "iolab observe counted getppid=$n (expected $CALLS), lost events=$lost"
[ "$n" = "$CALLS" ] && [ "$lost" = 0 ] || { echo "FAIL: inexact count"; exit 1; }
