#!/bin/bash
# Cost of observing a syscall-heavy process: a getppid loop run plain, under
# `iolab observe` with each backend (bpf; bpf timing 1 call in $SAMPLE, default 16;
# tracefs), under `strace -c -f` and under
# `perf trace -s`. Prints the median wall time of RUNS runs of each and the slowdown
# against plain, and checks that iolab counted every call with zero lost events.
# Runs alternate (plain, bpf, tracefs, plain, ...) so load changes hit all alike.
#   usage: bench/observe_overhead.sh [CALLS] [RUNS]     (root; builds iolab --release)
#   PEERS=0 skips strace and perf (minutes each at the default CALLS).
set -euo pipefail
CALLS=${1:-2000000}
RUNS=${2:-5}
SAMPLE=${SAMPLE:-16}
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

# once NAME CMD...: one wall time of CMD appended to $TMP/NAME
once() {
    local name=$1; shift
    local t0 t1
    t0=$(now); "$@" > "$TMP/$name.out" 2> "$TMP/$name.err"; t1=$(now)
    echo "$t1 - $t0" | bc -l >> "$TMP/$name"
}
# check NAME: iolab's count of getppid must be exact with nothing lost
check() {
    python3 - "$TMP/$1.json" "$CALLS" "$1" <<'PY'
import json, sys
r = json.loads(open(sys.argv[1]).read().splitlines()[-1])
n = next(s["calls"] for s in r["syscalls"] if s["name"] == "getppid")
ok = n == int(sys.argv[2]) and r["lost_events"] == 0
print(f"{sys.argv[3]}: backend={r['backend']} getppid={n} (expected {sys.argv[2]}) lost={r['lost_events']}")
sys.exit(0 if ok else 1)
PY
}
: > "$TMP/plain"; : > "$TMP/bpf"; : > "$TMP/sampled"; : > "$TMP/tracefs"
fail=0
for _ in $(seq "$RUNS"); do
    once plain "$TMP/loop" "$CALLS" 0 0
    once bpf "$IOLAB" observe --json --backend=bpf -o "$TMP/bpf.json" -- "$TMP/loop" "$CALLS" 0 0
    check bpf > "$TMP/bpf.check" || fail=1
    once sampled "$IOLAB" observe --json --backend=bpf --time-sample="$SAMPLE" -o "$TMP/sampled.json" -- "$TMP/loop" "$CALLS" 0 0
    check sampled > "$TMP/sampled.check" || fail=1
    once tracefs "$IOLAB" observe --json --backend=tracefs -o "$TMP/tracefs.json" -- "$TMP/loop" "$CALLS" 0 0
    check tracefs > "$TMP/tracefs.check" || fail=1
done
have_strace=0; have_perf=0
if [ "${PEERS:-1}" = 1 ] && command -v strace > /dev/null; then time_it strace strace -c -f -o /dev/null "$TMP/loop" "$CALLS" 0 0; have_strace=1; fi
if [ "${PEERS:-1}" = 1 ] && command -v perf > /dev/null && perf trace -s -o /dev/null true > /dev/null 2>&1; then
    time_it perf perf trace -s -o /dev/null "$TMP/loop" "$CALLS" 0 0; have_perf=1
elif [ "${PEERS:-1}" = 1 ]; then
    echo "note: perf trace unavailable here: $(perf trace -s true 2>&1 | head -1)"
fi

base=$(median < "$TMP/plain")
printf '%d getppid calls, median of %d runs\n' "$CALLS" "$RUNS"
printf '%-22s %10s %10s\n' tool "time (s)" slowdown
report() { local m; m=$(median < "$TMP/$1"); printf '%-22s %10.3f %9.2fx\n' "$2" "$m" "$(echo "$m / $base" | bc -l)"; }
report plain "plain"
report bpf "iolab observe (bpf)"
report sampled "  --time-sample=$SAMPLE"
report tracefs "iolab observe (tracefs)"
[ $have_strace = 1 ] && report strace "strace -c -f"
[ $have_perf = 1 ] && report perf "perf trace -s"
cat "$TMP/bpf.check" "$TMP/sampled.check" "$TMP/tracefs.check"
[ $fail = 0 ] || { echo "FAIL: inexact count or lost events in some run"; exit 1; }
