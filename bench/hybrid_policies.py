#!/usr/bin/env python3
"""Study 000 (vi): the hybrid polling policies side by side, as medians of
alternating rounds.

Grid (as `iolab lab poll` section (vi)): null device latencies 5, 10, 20, 50,
100, 200, 1000 us plus two noisy devices at 50 us (2% spikes of +500 us; a
50/50 mix of 4 KiB and 128 KiB); loads: one QD1 thread alone, one QD1 thread on
CPU 0 with one compute co-runner per CPU, and two QD1 threads per CPU (more
pollers than CPUs). Policies: interrupt, poll, hybrid, hybrid-uring, pas, dpas,
adaptive.

Each round runs every policy of a point once, in an order rotated from round
to round, so a slow phase of a shared machine falls on every policy alike; the
script prints the median of the rounds per policy: IOPS, CPU per I/O (us),
p50 / p99 / p99.9 (us), context switches per I/O, what the policy did (sleeps
per I/O; DPAS's requests by mode; adaptive's requests by model), and whether
adaptive is on the CPU-per-I/O / p99 frontier (no policy better by >5% on both
at once). Per point it also prints adaptive's IOPS over each other policy's
*in the same round* (median, min-max over the rounds): on a shared machine
those ratios are what count, since a slow phase hits a round's runs alike.
For devices of 50 us and up under the `alone` load it checks the goal
"adaptive's CPU per I/O <= 30% of classic polling's, p50 within 5%".

Measure on a quiet machine only. Run from the repository after
`cargo build --release`:

    python3 bench/hybrid_policies.py [--rounds N] [--runtime 1] [--quick]
        [--lat 50,200] [--load alone,corunners,overloaded] [--match REGEX]
"""
import argparse, json, os, re, statistics, subprocess, sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IOLAB = os.path.join(ROOT, "target", "release", "iolab")
POLICIES = ["interrupt", "poll", "hybrid", "hybrid-uring", "pas", "dpas", "adaptive"]
LOADS = ["alone", "corunners", "overloaded"]


def ncpu():
    return len(os.sched_getaffinity(0))


def devices(lats, quick):
    out = [(f"{l} us", [f"--null_lat={l}us", "--bs=4k"]) for l in lats]
    out.append(("50 us, 2% spikes +500 us",
                ["--null_lat=50us", "--bs=4k", "--null_spike_rate=0.02", "--null_spike_lat=500us"]))
    if not quick and lats:
        # 128 KiB adds 3x the fixed latency through the channel's bandwidth.
        bw = 128 * 1024 * 1_000_000 // (3 * 50)
        out.append(("50 us + size, 4K/128K 50/50",
                    ["--null_lat=50us", f"--null_bw={bw}", "--bssplit=4k/50:128k/50"]))
    return out


def load_args(load):
    n = ncpu()
    if load == "alone":
        return []
    if load == "corunners":
        return ["--cpus_allowed=0", f"--corunners={n}"]
    return [f"--numjobs={2 * n}", "--group_reporting"]


def run_point(dev_args, load, policy, runtime):
    cmd = [IOLAB, "run", "--output-format=json", "--name=vi", "--ioengine=null",
           "--size=1g", "--rw=randread", "--iodepth=1", "--null_channels=64",
           f"--runtime={runtime}", "--time_based", f"--completion={policy}"]
    if load != "overloaded":
        cmd.append("--filename=vi-dev")
    cmd += dev_args + load_args(load)
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{p.stderr}")
    doc = json.loads(p.stdout[p.stdout.index("{"):])
    ios = iops = cpu_s = ctx = 0.0
    pct = {"50.000000": 0, "99.000000": 0, "99.900000": 0}
    for j in doc["jobs"]:
        r = j["read"]
        ios += r["total_ios"]
        iops += r["iops"]
        # usr/sys are percent of the job's runtime (ms).
        cpu_s += (j["usr_cpu"] + j["sys_cpu"]) / 100.0 * j["job_runtime"] / 1e3
        ctx += j["ctx"]
        for k in pct:
            # Completion latency (the null device has no submission delay);
            # several reports: the worst thread's tail.
            pct[k] = max(pct[k], r["clat_ns"]["percentile"][k])
    ios = max(ios, 1)
    c = {}
    for j in doc["jobs"]:
        for k, v in j.get("iolab", {}).get("engine", {}).get("completion", {}).items():
            if isinstance(v, (int, float)):
                c[k] = c.get(k, 0) + v
    return {
        "did": c,
        "iops": iops,
        "cpu_us": cpu_s * 1e6 / ios,
        "p50": pct["50.000000"] / 1e3,
        "p99": pct["99.000000"] / 1e3,
        "p999": pct["99.900000"] / 1e3,
        "ctx": ctx / ios,
    }


def did(policy, c):
    """What the policy did, short (from iolab.engine.completion)."""
    n = max(c.get("completions", 0), 1)
    s = f"{c.get('sleeps', 0) / n:.2f} sleeps/IO"
    if policy == "dpas":
        s += " modes int/cp/pas/ol {}/{}/{}/{}, {} switches".format(
            *(c.get(k, 0) for k in ("dpas_int", "dpas_cp", "dpas_pas", "dpas_ol", "mode_switches")))
    if policy == "adaptive":
        s += " poll/hybrid/int {}/{}/{}".format(
            *(c.get(k, 0) for k in ("adaptive_poll", "adaptive_hybrid", "adaptive_interrupt")))
    return s


def main():
    global POLICIES, IOLAB
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--runtime", default="1", help="seconds per run (fio time)")
    ap.add_argument("--quick", action="store_true", help="latencies 10,100 us, 3 rounds, 200 ms runs")
    ap.add_argument("--lat", help="comma-separated device latencies in us")
    ap.add_argument("--load", help="comma-separated loads: " + ",".join(LOADS))
    ap.add_argument("--match", help="only the devices whose label matches this regex "
                    "(e.g. '^20 us$', or 'spikes|4K/128K' for the noisy ones)")
    ap.add_argument("--iolab", default=IOLAB, help="the iolab binary (default: this tree's release build)")
    ap.add_argument("--policies", help="comma-separated subset (adaptive always runs): "
                    + ",".join(POLICIES))
    a = ap.parse_args()
    IOLAB = a.iolab
    if not os.path.exists(IOLAB):
        sys.exit(f"{IOLAB} not found: run `cargo build --release` first")
    lats = [5, 10, 20, 50, 100, 200, 1000]
    rounds, runtime = a.rounds, a.runtime
    if a.quick:
        lats, rounds, runtime = [10, 100], min(rounds, 3), "200ms"
    if a.lat:
        try:
            lats = [int(x) for x in a.lat.split(",")]
        except ValueError:
            sys.exit(f"--lat {a.lat!r}: give device latencies in us, e.g. --lat 10,50,200")
    loads = LOADS
    if a.load:
        loads = a.load.split(",")
        bad = [l for l in loads if l not in LOADS]
        if bad:
            sys.exit(f"--load: unknown {bad}; valid: {','.join(LOADS)}")
    if a.policies:
        want = a.policies.split(",")
        bad = [p for p in want if p not in POLICIES]
        if bad:
            sys.exit(f"--policies: unknown {bad}; valid: {','.join(POLICIES)}")
        POLICIES = [p for p in POLICIES if p in want or p == "adaptive"]
    print(f"{ncpu()} CPUs, {rounds} alternating rounds of {runtime} s per run; medians")
    gated = {f"{l} us" for l in lats if l >= 50}
    devs = devices(lats, a.quick)
    if a.match:
        try:
            pat = re.compile(a.match)
        except re.error as e:
            sys.exit(f"--match {a.match!r}: not a regex: {e}")
        devs = [d for d in devs if pat.search(d[0])]
        if not devs:
            sys.exit(f"--match {a.match!r}: no device label matches; labels: "
                     + "; ".join(d[0] for d in devices(lats, a.quick)))
    for dev, dev_args in devs:
        for load in loads:
            samples = {p: [] for p in POLICIES}
            for r in range(rounds):
                order = POLICIES[r % len(POLICIES):] + POLICIES[:r % len(POLICIES)]
                for pol in order:
                    samples[pol].append(run_point(dev_args, load, pol, runtime))
            print(f"\n{dev}, {load}")
            print(f"  {'policy':<13} {'IOPS':>9} {'CPU/IO us':>10} {'p50 us':>8} {'p99 us':>9} {'p99.9 us':>9} {'ctx/IO':>7}")
            med = {}
            for pol in POLICIES:
                m = {k: statistics.median(s[k] for s in samples[pol])
                     for k in samples[pol][0] if k != "did"}
                med[pol] = m
                # The round whose IOPS is the median's (or nearest) says what it did.
                rep = min(samples[pol], key=lambda s: abs(s["iops"] - m["iops"]))
                print(f"  {pol:<13} {m['iops']:>9.0f} {m['cpu_us']:>10.2f} {m['p50']:>8.1f} "
                      f"{m['p99']:>9.1f} {m['p999']:>9.1f} {m['ctx']:>7.2f}  {did(pol, rep['did'])}")
            ratios = []
            for pol in POLICIES:
                if pol == "adaptive":
                    continue
                r_ = [a["iops"] / max(o["iops"], 1e-9)
                      for a, o in zip(samples["adaptive"], samples[pol])]
                ratios.append(f"{pol} {statistics.median(r_):.2f} ({min(r_):.2f}-{max(r_):.2f}; "
                              f"by round {' '.join(f'{x:.2f}' for x in r_)})")
            print("  adaptive IOPS / policy, same round: " + ", ".join(ratios))
            if load == "alone" and dev in gated and "poll" in med:
                a_, p_ = med["adaptive"], med["poll"]
                cpu = a_["cpu_us"] / max(p_["cpu_us"], 1e-9)
                p50 = a_["p50"] / max(p_["p50"], 1e-9)
                ok = cpu <= 0.30 and abs(p50 - 1) <= 0.05
                print(f"  >= 50 us goal: adaptive CPU/IO {100 * cpu:.0f}% of poll's, p50 {100 * p50:.0f}% "
                      f"of poll's: {'met' if ok else 'NOT met'}")
                if "interrupt" in med:
                    # A policy that sleeps once per I/O pays at least one
                    # sleep and wakeup: interrupt's CPU per I/O is that floor.
                    floor = med["interrupt"]["cpu_us"] / max(p_["cpu_us"], 1e-9)
                    print(f"  floor: interrupt alone (one sleep per I/O, no polling) is {100 * floor:.0f}% "
                          f"of poll's CPU/IO")
            a_ = med["adaptive"]
            beat = [p for p in POLICIES if p != "adaptive"
                    and med[p]["cpu_us"] < 0.95 * a_["cpu_us"] and med[p]["p99"] < 0.95 * a_["p99"]]
            print("  adaptive on the frontier" if not beat else
                  f"  adaptive beaten by >5% on CPU/IO and p99 at once by: {', '.join(beat)}")


if __name__ == "__main__":
    main()
