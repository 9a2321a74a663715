#!/usr/bin/env python3
"""iolab vs fio on the same jobs, in one run, alternating, medians of N rounds.

(a) fio ioengine=null vs iolab's null device (zero latency, polling), 4 KiB
    randread at QD1 and QD32: IOPS per core (IOPS / (usr+sys CPU fraction)).
(b) psync 4 KiB randread QD1 on a zram device this script hot-adds and removes.
(c) io_uring 4 KiB randread QD32 on a file on the root disk with direct=1:
    IOPS and CPU per I/O.
(d) libaio 4 KiB randread direct=1 at QD1 and QD32, on zram and on a file on
    the root disk: IOPS and CPU per I/O (issue 14's goal: >= 1.0x fio's IOPS at
    <= fio's CPU per I/O). iolab reaps completions from the AIO ring in user
    space with its default completion model (interrupt); fio runs its default
    libaio settings.
(e) sync (lseek + read) 4 KiB randread QD1, on zram and on a file on the root
    disk (a synchronous engine has no deeper queue).

Run as root from the repository: `python3 bench/engine_vs_fio.py [--rounds N]
[--runtime S] [--only a,b,c,d,e]`; `IOLAB_BIN=path` runs another iolab build.
Prints one table row per case and the ratios.
"""
import argparse, json, os, statistics, subprocess, sys, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# IOLAB_BIN names another build (e.g. the one before a change, for before/after rows).
IOLAB = os.environ.get("IOLAB_BIN") or os.path.join(ROOT, "target", "release", "iolab")


def run_json(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{p.stderr}")
    out = p.stdout
    # fio may print warnings before the JSON document.
    return json.loads(out[out.index("{"):])


def summarize(doc):
    j = doc["jobs"][0]
    r = j["read"]
    runtime_s = max(r["runtime"], 1) / 1000.0
    cpu_frac = (j["usr_cpu"] + j["sys_cpu"]) / 100.0
    ios = r["total_ios"]
    return {
        "iops": r["iops"],
        "cpu": cpu_frac,
        "iops_per_core": r["iops"] / cpu_frac if cpu_frac > 0 else float("nan"),
        "cpu_us_per_io": cpu_frac * runtime_s * 1e6 / ios if ios else float("nan"),
        "p50_ns": r["clat_ns"].get("percentile", {}).get("50.000000", 0),
    }


def compare(name, fio_args, iolab_args, rounds, metric):
    fio_res, iolab_res = [], []
    for _ in range(rounds):
        fio_res.append(summarize(run_json(["fio", "--output-format=json"] + fio_args)))
        iolab_res.append(summarize(run_json([IOLAB, "run", "--output-format=json"] + iolab_args)))
    f = statistics.median(x[metric] for x in fio_res)
    i = statistics.median(x[metric] for x in iolab_res)
    f_iops = statistics.median(x["iops"] for x in fio_res)
    i_iops = statistics.median(x["iops"] for x in iolab_res)
    f_cpu = statistics.median(x["cpu_us_per_io"] for x in fio_res)
    i_cpu = statistics.median(x["cpu_us_per_io"] for x in iolab_res)
    ratio = i / f if metric != "cpu_us_per_io" else f / i
    print(f"{name:<40} fio IOPS {f_iops:>11.0f}  iolab IOPS {i_iops:>11.0f}  "
          f"fio cpu/io {f_cpu:6.2f}us  iolab cpu/io {i_cpu:6.2f}us  "
          f"{metric} ratio iolab/fio {ratio:5.2f}x")
    return ratio


class Zram:
    def __enter__(self):
        with open("/sys/class/zram-control/hot_add") as f:
            self.n = int(f.read())
        with open(f"/sys/block/zram{self.n}/disksize", "w") as f:
            f.write(str(1 << 30))
        self.dev = f"/dev/zram{self.n}"
        # Fill it so reads hit stored (compressed) pages, as a used disk would.
        subprocess.run(["fio", "--name=fill", f"--filename={self.dev}", "--rw=write",
                        "--bs=1m", "--direct=1", "--size=1g", "--output=/dev/null"], check=True)
        return self

    def __exit__(self, *a):
        with open(f"/sys/block/zram{self.n}/reset", "w") as f:
            f.write("1")
        with open("/sys/class/zram-control/hot_remove", "w") as f:
            f.write(str(self.n))


class VdaFile:
    """A 1 GiB file laid out on the root disk (vda), removed afterwards."""

    def __enter__(self):
        self.dir = tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_DIR", "/var/tmp"))
        path = os.path.join(self.dir.name, "bench.dat")
        subprocess.run(["fio", "--name=lay", f"--filename={path}", "--rw=write", "--bs=1m",
                        "--size=1g", "--output=/dev/null"], check=True)
        return path

    def __exit__(self, *a):
        self.dir.cleanup()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--runtime", type=int, default=3)
    ap.add_argument("--only", default="a,b,c")
    a = ap.parse_args()
    if not os.path.exists(IOLAB):
        subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
    rt = [f"--runtime={a.runtime}", "--time_based"]
    only = set(a.only.split(","))
    print(f"fio: {subprocess.run(['fio', '--version'], capture_output=True, text=True).stdout.strip()}, "
          f"rounds={a.rounds}, runtime={a.runtime}s, medians")
    if "a" in only:
        for qd in (1, 32):
            common = ["--name=null", "--rw=randread", "--bs=4k", f"--iodepth={qd}", "--size=1g"] + rt
            compare(f"(a) null 4k randread QD{qd}", common + ["--ioengine=null"],
                    common + ["--ioengine=null", "--completion=poll"], a.rounds, "iops_per_core")
    if "b" in only:
        with Zram() as z:
            common = ["--name=zram", f"--filename={z.dev}", "--rw=randread", "--bs=4k",
                      "--iodepth=1", "--ioengine=psync", "--size=1g"] + rt
            compare("(b) psync 4k randread QD1 zram", common, common, a.rounds, "iops")
    if "c" in only:
        with VdaFile() as path:
            common = ["--name=uring", f"--filename={path}", "--rw=randread", "--bs=4k",
                      "--iodepth=32", "--ioengine=io_uring", "--direct=1", "--size=1g"] + rt
            compare("(c) io_uring 4k randread QD32 vda direct", common, common, a.rounds, "iops")
    if "d" in only or "e" in only:
        with Zram() as z, VdaFile() as path:
            for where, target in (("zram", z.dev), ("vda", path)):
                base = ["--name=eng", f"--filename={target}", "--rw=randread", "--bs=4k",
                        "--direct=1", "--size=1g"] + rt
                if "d" in only:
                    for qd in (1, 32):
                        common = base + ["--ioengine=libaio", f"--iodepth={qd}"]
                        compare(f"(d) libaio 4k randread QD{qd} {where} direct", common, common,
                                a.rounds, "iops")
                if "e" in only:
                    common = base + ["--ioengine=sync", "--iodepth=1"]
                    compare(f"(e) sync 4k randread QD1 {where} direct", common, common,
                            a.rounds, "iops")


if __name__ == "__main__":
    main()
