#!/usr/bin/env python3
"""Study 000's goals, measured with iolab (and fio as the peer where one exists).

(1) poll overhead over device time on the null device: p50 lat - device time.
(2) hybrid / adaptive vs poll across device latencies: CPU share and p50 ratio.
(3) zram QD1 4 KiB random reads: iolab adaptive (io_uring) and iolab psync vs
    fio's default io_uring, in one run, with O_DIRECT and buffered (the same job
    options for both tools; fio's io_uring with its defaults: interrupt-driven,
    no fixed buffers, no SQPOLL).

Run as root from the repository: `python3 bench/completion_goals.py [--rounds N]`.
"""
import argparse, json, os, statistics, subprocess, sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IOLAB = os.path.join(ROOT, "target", "release", "iolab")


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{p.stderr}")
    return json.loads(p.stdout[p.stdout.index("{"):])


def job(doc):
    j = doc["jobs"][0]
    r = j["read"]
    return {
        "iops": r["iops"],
        "p50": r["clat_ns"]["percentile"]["50.000000"],
        "cpu": (j["usr_cpu"] + j["sys_cpu"]) / 100.0,
    }


def iolab(args, rt):
    return job(run([IOLAB, "run", "--output-format=json", "--name=g", f"--runtime={rt}", "--time_based"] + args))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runtime", type=int, default=2)
    ap.add_argument("--parts", default="123", help="which goals to measure, e.g. 3")
    a = ap.parse_args()
    rt = a.runtime
    if not os.path.exists(IOLAB):
        subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
    null = ["--ioengine=null", "--size=1g", "--rw=randread", "--bs=4k"]
    if "1" in a.parts:
        poll_overhead(a, null)
    if "2" in a.parts:
        sweep(a, null)
    if "3" in a.parts:
        zram(a)


def poll_overhead(a, null):
    rt = a.runtime
    # (1) clat p50 on a 4 us device, polling; lat includes the whole device time.
    over = []
    for _ in range(a.rounds):
        d = run([IOLAB, "run", "--output-format=json", "--name=o", f"--runtime={rt}", "--time_based",
                 "--null_lat=4us", "--completion=poll"] + null)
        r = d["jobs"][0]["read"]
        over.append((r["clat_ns"]["percentile"]["50.000000"] - 4000, r["slat_ns"]["mean"]))
    print(f"(1) poll on a 4 us null device: clat p50 - device time: median {statistics.median(o[0] for o in over):.0f} ns, "
          f"slat mean {statistics.median(o[1] for o in over):.0f} ns "
          f"(rounds: {', '.join(str(int(x[0])) for x in over)})")


def sweep(a, null):
    rt = a.runtime
    # (2) hybrid / adaptive vs poll across device latencies.
    for lat in (10, 50, 200, 1000):
        res = {}
        for model in ("poll", "hybrid", "adaptive", "interrupt"):
            runs = [iolab(null + [f"--null_lat={lat}us", f"--completion={model}"], rt) for _ in range(a.rounds)]
            res[model] = (statistics.median(r["cpu"] for r in runs), statistics.median(r["p50"] for r in runs))
        pc, pl = res["poll"]
        cells = "  ".join(f"{m} cpu {res[m][0]/pc*100:4.0f}% p50 {res[m][1]/pl*100:4.0f}%" for m in ("hybrid", "adaptive", "interrupt"))
        print(f"(2) device {lat:>4} us: poll cpu {pc:.2f} p50 {pl/1e3:.1f} us | vs poll: {cells}")


def zram(a):
    rt = a.runtime
    # (3) zram: synchronous in the caller's context vs io-wq.
    with open("/sys/class/zram-control/hot_add") as f:
        n = int(f.read())
    dev = f"/dev/zram{n}"
    try:
        with open(f"/sys/block/zram{n}/disksize", "w") as f:
            f.write(str(1 << 30))
        subprocess.run(["fio", "--name=fill", f"--filename={dev}", "--rw=write", "--bs=1m", "--direct=1",
                        "--size=1g", "--output=/dev/null"], check=True)
        for direct in (1, 0):
            common = [f"--filename={dev}", "--rw=randread", "--bs=4k", "--size=1g", f"--direct={direct}"]
            fio, ad, ps, fps = [], [], [], []
            for _ in range(a.rounds):
                fio.append(job(run(["fio", "--output-format=json", "--name=f", "--ioengine=io_uring",
                                    f"--runtime={rt}", "--time_based"] + common))["iops"])
                fps.append(job(run(["fio", "--output-format=json", "--name=f", "--ioengine=psync",
                                    f"--runtime={rt}", "--time_based"] + common))["iops"])
                ad.append(iolab(common + ["--ioengine=io_uring", "--completion=adaptive"], rt)["iops"])
                ps.append(iolab(common + ["--ioengine=psync"], rt)["iops"])
            f, i, p, fp = (statistics.median(x) for x in (fio, ad, ps, fps))
            print(f"(3) zram QD1 direct={direct}: fio io_uring {f:.0f} IOPS, fio psync {fp:.0f} ({fp/f:.2f}x), "
                  f"iolab adaptive (io_uring) {i:.0f} ({i/f:.2f}x), iolab psync {p:.0f} ({p/f:.2f}x)"
                  f"  [adaptive rounds: {', '.join(f'{x/1e3:.0f}k' for x in ad)}]")
    finally:
        with open(f"/sys/block/zram{n}/reset", "w") as f:
            f.write("1")
        with open("/sys/class/zram-control/hot_remove", "w") as f:
            f.write(str(n))


if __name__ == "__main__":
    main()
