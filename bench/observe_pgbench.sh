#!/bin/bash
# What `iolab observe --pid POSTMASTER` costs pgbench, per backend: a throwaway
# PostgreSQL cluster in a tmpfs directory (pgbench vacuums before each run, so
# runs do not slow down as tables bloat) (no device I/O: the most syscall-bound
# case), pgbench -c 16 -j 2 for SECS seconds per run, rounds of plain / bpf /
# bpf timing 1 call in $SAMPLE (default 16) / floor (BPF programs that do nothing
# on the same syscall and sched_switch hooks: what any tracer built on them pays) /
# tracefs runs in rotating order (so load drifts hit all alike). Prints the median
# TPS of each and the cost against plain, and fails if an observed run lost events.
# TPS on a shared 2-CPU machine swings with the neighbours' load, so it also prints
# the CPU time per transaction (PostgreSQL server tree + pgbench, from
# /proc/POSTMASTER/stat including reaped backends, and getrusage of pgbench), which
# the neighbours do not change: observing costs what it adds there.
#   usage: bench/observe_pgbench.sh [ROUNDS] [SECS]   (root; PostgreSQL installed)
set -euo pipefail
ROUNDS=${1:-6}
SECS=${2:-5}
SAMPLE=${SAMPLE:-16}
cd "$(dirname "$0")/.."
cargo build --release --quiet
IOLAB=$PWD/target/release/iolab
HOOKS=$(cargo bench --bench observe_hooks --no-run --message-format=json 2> /dev/null |
    python3 -c 'import json, sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "observe_hooks" and m.get("executable"):
        print(m["executable"])')
[ -x "$HOOKS" ] || { echo "could not build benches/observe_hooks.rs"; exit 1; }
PGBIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
[ -x "$PGBIN/pg_ctl" ] || { echo "PostgreSQL not found under /usr/lib/postgresql"; exit 1; }
PORT=5499
D=$(mktemp -d /dev/shm/iolab-pgbench.XXXXXX)
chown postgres: "$D"
as_pg() { runuser -u postgres -- "$@"; }
cleanup() { as_pg "$PGBIN/pg_ctl" -D "$D/data" -m immediate stop > /dev/null 2>&1 || true; rm -rf "$D"; }
trap cleanup EXIT
as_pg "$PGBIN/initdb" -D "$D/data" -A trust -U postgres > /dev/null
as_pg "$PGBIN/pg_ctl" -D "$D/data" -l "$D/log" -w \
    -o "-k $D -p $PORT -c listen_addresses='' -c max_connections=40" start > /dev/null
PM=$(head -1 "$D/data/postmaster.pid")
PGB=("$PGBIN/pgbench" -h "$D" -p "$PORT" -U postgres)
"${PGB[@]}" -i -q -s 4 postgres > /dev/null 2>&1

TCK=$(getconf CLK_TCK)
# server CPU seconds so far: utime + stime + cutime + cstime of the postmaster
server_cpu() { awk -v t="$TCK" '{ sub(/.*\) /, ""); print ($12 + $13 + $14 + $15) / t }' "/proc/$PM/stat"; }
# plain: one pgbench run; prints "TPS CPU_US_PER_TRANSACTION TRANSACTIONS"
plain() {
    local c0 c1
    c0=$(server_cpu)
    /usr/bin/time -f '%U %S' -o "$D/time" "${PGB[@]}" -c 16 -j 2 -T "$SECS" postgres \
        > "$D/pgb.out" 2> /dev/null
    sleep 0.3   # let the postmaster reap the backends (their CPU moves to cutime)
    c1=$(server_cpu)
    local tps n
    tps=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' "$D/pgb.out" | head -1)
    n=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$D/pgb.out")
    read -r u s < <(tail -1 "$D/time")
    echo "$tps $(echo "1000000 * ($c1 - $c0 + $u + $s) / $n" | bc -l) $n"
}
# floor: pgbench while empty programs sit on the hooks observe uses
floor() {
    "$HOOKS" --hold 3600 > "$D/hold.out" 2> "$D/hold.err" &
    local hp=$!
    until grep -q attached "$D/hold.out" 2> /dev/null; do
        kill -0 $hp 2> /dev/null || { echo "observe_hooks --hold failed: $(cat "$D/hold.err")" >&2; exit 1; }
        sleep 0.05
    done
    plain
    kill $hp; wait $hp 2> /dev/null || true
}
# observed SERIES: pgbench while iolab observes the server tree (SERIES: bpf,
# sampled = bpf timing 1 call in $SAMPLE, or tracefs)
observed() {
    local b=$1 out="$D/obs-$1.json" extra=()
    [ "$b" = sampled ] && { b=bpf; extra=(--time-sample="$SAMPLE"); }
    # iolab's own CPU (the tracefs reader's drains) is part of the cost.
    "$IOLAB" observe --json --backend="$b" "${extra[@]}" --pid "$PM" -o "$out" 2> "$D/obs-$1.err" &
    local ip=$!
    # Attached when its first syscalls on the server side count: give it a moment.
    sleep 0.5
    local t; t=$(plain)
    local icpu
    icpu=$(awk -v t="$TCK" '{ sub(/.*\) /, ""); print ($12 + $13) / t }' "/proc/$ip/stat")
    kill -INT $ip; wait $ip || { echo "iolab observe ($1) failed: $(cat "$D/obs-$1.err")" >&2; exit 1; }
    python3 - "$out" "$b" >&2 <<'PY'
import json, sys
r = json.loads(open(sys.argv[1]).read().splitlines()[-1])
assert r["backend"] == sys.argv[2], r["backend"]
if r["lost_events"] != 0:
    sys.exit(f"{sys.argv[2]}: {r['lost_events']} events lost")
PY
    local tps cpu n
    read -r tps cpu n <<< "$t"
    echo "$tps $(echo "$cpu + 1000000 * $icpu / $n" | bc -l) $n"
}
: > "$D/plain"; : > "$D/bpf"; : > "$D/sampled"; : > "$D/floor"; : > "$D/tracefs"
plain > /dev/null   # warm the cache and the server
series=(plain bpf sampled floor tracefs)
for r in $(seq "$ROUNDS"); do
    # Rotate the order each round.
    for i in 0 1 2 3 4; do
        k=${series[$(((i + r) % 5))]}
        case $k in
            plain | floor) $k >> "$D/$k" ;;
            *) observed "$k" >> "$D/$k" ;;
        esac
    done
    printf 'round %d (TPS, CPU us/transaction):' "$r"
    for k in "${series[@]}"; do printf '  %s %s' "$k" "$(cut -d' ' -f1-2 < <(tail -1 "$D/$k"))"; done
    echo
done
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
col() { awk -v c="$2" '{print $c}' "$D/$1" | median; }
# cost B COL: median over rounds of the round's cost against that round's plain run
cost() {
    paste "$D/plain" "$D/$1" | awk -v c="$2" -v n=3 \
        '{ p = $c; o = $(c + n); print (c == 1) ? 100 * (p - o) / p : 100 * (o - p) / p }' | median
}
tb=$(col plain 1); cb=$(col plain 2)
printf 'pgbench -c 16 -j 2 -T %s on tmpfs, %d rounds; medians, costs paired per round\n' \
    "$SECS" "$ROUNDS"
printf '%-24s %9s %9s %14s %9s\n' run TPS "TPS cost" "CPU us/trans" "CPU cost"
printf '%-24s %9.1f %9s %14.1f %9s\n' plain "$tb" - "$cb" -
for b in bpf sampled floor tracefs; do
    name="iolab observe ($b)"
    [ "$b" = sampled ] && name="  --time-sample=$SAMPLE"
    [ "$b" = floor ] && name="empty hooks (floor)"
    printf '%-24s %9.1f %8.1f%% %14.1f %8.1f%%\n' "$name" "$(col "$b" 1)" \
        "$(cost "$b" 1)" "$(col "$b" 2)" "$(cost "$b" 2)"
done
