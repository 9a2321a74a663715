#!/bin/bash
# What `iolab run --trace` costs on the fastest target here: a zram device this
# script hot-adds (and removes), QD1 4 KiB random reads, psync, O_DIRECT. Runs the
# same job plain and with --trace, alternating, PAIRS times, both on the default
# engine clock; prints every run, the medians and the cost of tracing in percent.
# Also checks that every traced run joined its requests (the trace is not empty).
#   usage: bench/trace_overhead.sh [PAIRS] [RUNTIME]    (root; builds iolab --release)
#   env:   IOLAB=path/to/iolab (skip the build), EXTRA="--opt=v ..." (both runs)
set -euo pipefail
PAIRS=${1:-5}
RUNTIME=${2:-2s}
cd "$(dirname "$0")/.."
if [ "$(id -u)" != 0 ]; then
    echo "trace_overhead: needs root (zram hot-add and tracefs)" >&2
    exit 2
fi
if [ ! -w /sys/class/zram-control/hot_add ]; then
    echo "trace_overhead: no /sys/class/zram-control (modprobe zram)" >&2
    exit 2
fi
if [ -z "${IOLAB:-}" ]; then
    cargo build --release --quiet
    IOLAB=$PWD/target/release/iolab
fi
TMP=$(mktemp -d)
Z=$(cat /sys/class/zram-control/hot_add)
cleanup() {
    rm -rf "$TMP"
    # zram refuses removal while open; a killed iolab may need a moment to go.
    for _ in 1 2 3 4 5; do
        echo "$Z" > /sys/class/zram-control/hot_remove 2> /dev/null && return
        sleep 0.2
    done
    echo "trace_overhead: could not remove /dev/zram$Z (echo $Z > /sys/class/zram-control/hot_remove)" >&2
}
trap cleanup EXIT
echo 256M > "/sys/block/zram$Z/disksize"
# Incompressible data so reads do real decompression work, as on a used zram.
dd if=/dev/urandom of="/dev/zram$Z" bs=1M count=128 oflag=direct status=none

# shellcheck disable=SC2206
J=(--name=ovh "--filename=/dev/zram$Z" --ioengine=psync --rw=randread --bs=4k --direct=1
   --size=128m "--runtime=$RUNTIME" --time_based --output-format=json ${EXTRA:-})
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

: > "$TMP/plain"; : > "$TMP/trace"
printf '%-5s %12s %12s %10s\n' pair "plain IOPS" "trace IOPS" joined
for i in $(seq "$PAIRS"); do
    p=$("$IOLAB" run "${J[@]}" | jq '.jobs[0].read.iops')
    "$IOLAB" run --trace "${J[@]}" > "$TMP/t.json"
    t=$(jq '.jobs[0].read.iops' "$TMP/t.json")
    joined=$(jq '.jobs[0].iolab.engine.trace.joined // 0' "$TMP/t.json")
    ios=$(jq '.jobs[0].read.total_ios' "$TMP/t.json")
    echo "$p" >> "$TMP/plain"; echo "$t" >> "$TMP/trace"
    printf '%-5s %12.0f %12.0f %10s\n' "$i" "$p" "$t" "$joined/$ios"
    if [ "$joined" = 0 ]; then
        echo "trace_overhead: traced run $i joined no request:" >&2
        jq '.jobs[0].iolab.engine.trace' "$TMP/t.json" >&2
        exit 1
    fi
done
mp=$(median < "$TMP/plain"); mt=$(median < "$TMP/trace")
clk=$(jq -r '.jobs[0].iolab.engine.trace.clock // "?"' "$TMP/t.json")
printf 'median of %d pairs (%s runs): plain %.0f IOPS, --trace %.0f IOPS, cost %.1f%% (trace clock %s)\n' \
    "$PAIRS" "$RUNTIME" "$mp" "$mt" "$(echo "($mp - $mt) * 100 / $mp" | bc -l)" "$clk"
