#!/usr/bin/env python3
"""LAQ bandwidth kept: study 003's null-device pair (bench/laq_pair.fio) under
noop and laq, alternating, for one or two iolab binaries.

    python3 bench/laq_pair.py [--rounds 5] [--runtime 1500ms] [--twait 1ms]
        [--completion interrupt] [BIN ...]

Each round runs, for every binary in turn, noop then laq. Per round it prints
the background MB/s of both, the share laq keeps (laq / noop of the same
binary and round) and the periodic read's lat p50 (from issue, so time held
in iolab's scheduler counts); then the medians and the spread (min-max) per
binary. Default binary: target/release/iolab.
"""
import argparse, json, os, statistics, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))


def run(binary, sched, args):
    env = dict(os.environ, LAQ_SCHED=sched, LAQ_RUNTIME=args.runtime,
               LAQ_COMPLETION=args.completion,
               # laq's options are refused under other schedulers.
               LAQ_EXTRA=f"t_wait={args.twait}" if sched == "laq" else f"description={sched}")
    out = subprocess.run([binary, "run", os.path.join(HERE, "laq_pair.fio"),
                          "--output-format=json"], env=env, check=True,
                         capture_output=True, text=True).stdout
    jobs = {j["jobname"]: j for j in json.loads(out)["jobs"]}
    fg = jobs["periodic"]["read"]
    p50 = fg["lat_ns"]["percentile"]["50.000000"] / 1e3
    return jobs["background"]["read"]["bw_bytes"] / 1e6, p50


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--runtime", default="1500ms")
    ap.add_argument("--twait", default="1ms")
    ap.add_argument("--completion", default="interrupt")
    ap.add_argument("bins", nargs="*", default=["target/release/iolab"])
    args = ap.parse_args()
    res = {b: [] for b in args.bins}
    for r in range(args.rounds):
        for b in args.bins:
            noop_bw, noop_p50 = run(b, "noop", args)
            laq_bw, laq_p50 = run(b, "laq", args)
            kept = laq_bw / noop_bw * 100
            cut = (1 - laq_p50 / noop_p50) * 100
            res[b].append((noop_bw, laq_bw, kept, noop_p50, laq_p50, cut))
            print(f"round {r + 1} {b}: noop {noop_bw:.0f} MB/s p50 {noop_p50:.0f} us | "
                  f"laq {laq_bw:.0f} MB/s p50 {laq_p50:.0f} us | kept {kept:.1f}% cut {cut:.0f}%",
                  flush=True)
    print(f"t_wait {args.twait}, completion {args.completion}, runtime {args.runtime}, "
          f"{args.rounds} rounds; load average {os.getloadavg()[0]:.1f}")
    for b, rows in res.items():
        col = lambda i: [x[i] for x in rows]
        med = lambda i: statistics.median(col(i))
        rng = lambda i: f"{min(col(i)):.1f}-{max(col(i)):.1f}"
        print(f"{b}: noop {med(0):.0f} MB/s, laq {med(1):.0f} MB/s, kept median {med(2):.1f}% "
              f"({rng(2)}), laq p50 median {med(4):.0f} us ({rng(4)}), cut median {med(5):.0f}% "
              f"({rng(5)})")


if __name__ == "__main__":
    sys.exit(main())
