#!/bin/bash
# What `iolab run --trace` costs on the fastest target here: a zram device this
# script hot-adds (and removes), QD1 4 KiB random reads, psync, O_DIRECT. Runs the
# same job plain and with --trace, alternating, PAIRS times, both on the default
# engine clock; prints every run, the medians and the cost of tracing in percent.
# A third series runs the plain job while a tracefs instance of this script's own
# has the same block events, filter, clock and buffer as --trace enabled but no
# reader: the kernel's share of the cost (tracepoints firing, filter, ring-buffer
# writes), apart from iolab's (reader thread, per-request log).
# Besides IOPS it prints CPU ns per I/O of the worker ((usr+sys) x runtime / I/Os),
# which time taken by other processes on this shared machine does not inflate.
# Checks that every traced run joined its requests (the trace is not empty).
#   usage: bench/trace_overhead.sh [PAIRS] [RUNTIME]    (root; builds iolab --release)
# A fourth series runs --trace-sample=SAMPLE (default 20): events on for that
# percent of every 100 ms, the sampled trace's cost.
#   env:   IOLAB=path/to/iolab (skip the build), EXTRA="--opt=v ..." (all runs),
#          EVENTS=0 (skip the kernel-only series), SAMPLE=PCT (0: skip the sampled one)
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
INST=/sys/kernel/tracing/instances/iolab-bench-$$
cleanup() {
    if [ -d "$INST" ]; then
        echo 0 > "$INST/tracing_on"; echo 0 > "$INST/events/enable"; rmdir "$INST"
    fi
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
KDEV=$(( ($(cut -d: -f1 "/sys/block/zram$Z/dev") << 20) | $(cut -d: -f2 "/sys/block/zram$Z/dev") ))
CLK=mono
grep -qw x86-tsc /sys/kernel/tracing/trace_clock && CLK=x86-tsc

# The events --trace enables on a bio-based device, as --trace sets them up.
events_on() {
    mkdir "$INST"
    echo 0 > "$INST/tracing_on"
    echo "$CLK" > "$INST/trace_clock"
    echo 0 > "$INST/options/overwrite"
    echo 131072 > "$INST/buffer_size_kb"   # as --trace sizes it here: holds the run
    for e in block_bio_queue block_bio_complete; do
        echo "dev == $KDEV" > "$INST/events/block/$e/filter"
        echo 1 > "$INST/events/block/$e/enable"
    done
    echo 1 > "$INST/tracing_on"
}
events_off() {
    echo 0 > "$INST/tracing_on"; echo 0 > "$INST/events/enable"; rmdir "$INST"
}

# shellcheck disable=SC2206
J=(--name=ovh "--filename=/dev/zram$Z" --ioengine=psync --rw=randread --bs=4k --direct=1
   --size=128m "--runtime=$RUNTIME" --time_based --output-format=json ${EXTRA:-})
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
iops() { jq '.jobs[0].read.iops' "$1"; }
cpu_per_io() { jq '.jobs[0] | (.usr_cpu + .sys_cpu) / 100 * .read.runtime * 1e6 / .read.total_ios' "$1"; }

series="plain trace"
[ "${EVENTS:-1}" = 1 ] && series="plain events trace"
SAMPLE=${SAMPLE:-20}
[ "$SAMPLE" != 0 ] && series="$series sampled"
for s in $series; do : > "$TMP/$s.iops"; : > "$TMP/$s.cpu"; echo '{}' > "$TMP/$s.json"; done
printf '%-5s %12s %12s %12s %14s %13s\n' pair "plain IOPS" "events IOPS" "trace IOPS" "trace joined" "sampled IOPS"
for i in $(seq "$PAIRS"); do
    "$IOLAB" run "${J[@]}" > "$TMP/plain.json"
    if [ "${EVENTS:-1}" = 1 ]; then
        events_on
        "$IOLAB" run "${J[@]}" > "$TMP/events.json"
        events_off
    fi
    "$IOLAB" run --trace "${J[@]}" > "$TMP/trace.json"
    if [ "$SAMPLE" != 0 ]; then
        "$IOLAB" run --trace-sample="$SAMPLE" "${J[@]}" > "$TMP/sampled.json"
    fi
    for s in $series; do
        iops "$TMP/$s.json" >> "$TMP/$s.iops"
        cpu_per_io "$TMP/$s.json" >> "$TMP/$s.cpu"
    done
    joined=$(jq '.jobs[0].iolab.engine.trace.joined // 0' "$TMP/trace.json")
    ios=$(jq '.jobs[0].read.total_ios' "$TMP/trace.json")
    ev=-; [ "${EVENTS:-1}" = 1 ] && ev=$(iops "$TMP/events.json")
    sm=-; [ "$SAMPLE" != 0 ] && sm=$(iops "$TMP/sampled.json")
    printf '%-5s %12.0f %12s %12.0f %14s %13s\n' "$i" "$(iops "$TMP/plain.json")" \
        "$(printf '%.0f' "$ev" 2> /dev/null || echo -)" "$(iops "$TMP/trace.json")" "$joined/$ios" \
        "$(printf '%.0f' "$sm" 2> /dev/null || echo -)"
    if [ "$SAMPLE" != 0 ] && [ "$(jq '.jobs[0].iolab.engine.trace.joined // 0' "$TMP/sampled.json")" = 0 ]; then
        echo "trace_overhead: sampled run $i joined no request:" >&2
        jq '.jobs[0].iolab.engine.trace' "$TMP/sampled.json" >&2
        exit 1
    fi
    if [ "$joined" = 0 ]; then
        echo "trace_overhead: traced run $i joined no request:" >&2
        jq '.jobs[0].iolab.engine.trace' "$TMP/trace.json" >&2
        exit 1
    fi
done
clk=$(jq -r '.jobs[0].iolab.engine.trace.clock // "?"' "$TMP/trace.json")
eclk=$(jq -r '.jobs[0].iolab.engine.trace.engine_clock // "?"' "$TMP/trace.json")
mp=$(median < "$TMP/plain.iops"); cp=$(median < "$TMP/plain.cpu")
echo "median of $PAIRS alternating runs of $RUNTIME each (engine clock: $eclk; trace clock: $clk)"
printf '%-32s %10s %8s %14s %10s\n' series IOPS cost "CPU ns/I/O" "+ns/I/O"
for s in $series; do
    m=$(median < "$TMP/$s.iops"); c=$(median < "$TMP/$s.cpu")
    case $s in
        plain) name="plain" ;;
        events) name="block events on, no reader" ;;
        trace) name="iolab run --trace" ;;
        sampled) name="iolab run --trace-sample=$SAMPLE" ;;
    esac
    printf '%-32s %10.0f %7.1f%% %14.0f %10.0f\n' "$name" "$m" \
        "$(echo "($mp - $m) * 100 / $mp" | bc -l)" "$c" "$(echo "$c - $cp" | bc -l)"
done
