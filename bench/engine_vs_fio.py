#!/usr/bin/env python3
"""iolab vs fio on the same jobs, in one run, alternating, medians of N rounds.

(a) fio ioengine=null vs iolab's null device (zero latency, polling), 4 KiB
    randread at QD1 and QD32: IOPS per core (IOPS / (usr+sys CPU fraction)).
(b) psync 4 KiB randread QD1 on a zram device this script hot-adds and removes.
(c) io_uring 4 KiB randread QD32 on a file on the root disk with direct=1:
    IOPS and CPU per I/O.
(d) libaio 4 KiB randread direct=1 at QD1 and QD32, on zram and on a file on
    the root disk: IOPS and CPU per I/O (the goal: >= 1.0x fio's IOPS at
    <= fio's CPU per I/O). iolab reaps completions from the AIO ring in user
    space with its default completion model (interrupt); fio runs its default
    libaio settings.
(e) sync (lseek + read) 4 KiB randread QD1, on zram and on a file on the root
    disk (a synchronous engine has no deeper queue).
(m) the matrix: every engine iolab shares with fio (null, psync,
    pvsync2, sync, io_uring, libaio) at QD 1, 4, 32, 128 (synchronous engines:
    QD1 only, fio ignores a deeper iodepth for them) and numjobs 1 and 2, on a
    zram device and on a file on the root disk (null: no target), 4 KiB
    randread, direct=1 on the block targets. Per case the medians of IOPS, CPU
    per I/O, p50 and p99 of both tools and the ratios, and the spread (min-max)
    of the per-round IOPS ratio. `--markdown` prints the table for BENCHMARKS.md.

Run as root from the repository: `python3 bench/engine_vs_fio.py [--rounds N]
[--runtime S] [--only a,b,c,d,e,m] [--markdown] [--match REGEX] [--iolab-args '...']`;
`--iolab-args` adds options to iolab's side of the matrix only (a completion
model fio does not have, say); `IOLAB_BIN=path` runs another
iolab build. Prints one table row per case and the ratios.
"""
import argparse, json, os, re, statistics, subprocess, sys, tempfile

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


def summarize(doc, numjobs=1):
    """One group's figures. With group_reporting both tools report usr/sys CPU
    as the average per job (percent of one CPU), so the cores used are that
    times numjobs."""
    j = doc["jobs"][0]
    r = j["read"]
    runtime_s = max(r["runtime"], 1) / 1000.0
    cpu_frac = (j["usr_cpu"] + j["sys_cpu"]) / 100.0 * numjobs
    ios = r["total_ios"]
    pct = r["clat_ns"].get("percentile", {})
    return {
        "iops": r["iops"],
        "cpu": cpu_frac,
        "iops_per_core": r["iops"] / cpu_frac if cpu_frac > 0 else float("nan"),
        "cpu_us_per_io": cpu_frac * runtime_s * 1e6 / ios if ios else float("nan"),
        "p50_ns": pct.get("50.000000", 0),
        "p99_ns": pct.get("99.000000", 0),
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


ENGINES_SYNC = ("psync", "pvsync2", "sync")
ENGINES_ASYNC = ("io_uring", "libaio")


def matrix_cases(zram_dev, vda_path):
    """(label, job arguments, numjobs) for every case of the matrix."""
    cases = []
    for nj in (1, 2):
        for qd in (1, 4, 32, 128):
            cases.append((f"null QD{qd} jobs{nj}", ["--ioengine=null", "--size=1g",
                          f"--iodepth={qd}", f"--numjobs={nj}"], nj))
        for where, target in (("zram", zram_dev), ("vda", vda_path)):
            base = [f"--filename={target}", "--direct=1", "--size=1g", f"--numjobs={nj}"]
            for eng in ENGINES_SYNC:
                cases.append((f"{eng} QD1 jobs{nj} {where}",
                              base + [f"--ioengine={eng}", "--iodepth=1"], nj))
            for eng in ENGINES_ASYNC:
                for qd in (1, 4, 32, 128):
                    cases.append((f"{eng} QD{qd} jobs{nj} {where}",
                                  base + [f"--ioengine={eng}", f"--iodepth={qd}"], nj))
    return cases


def matrix(rounds, runtime, markdown, match=None, iolab_extra=()):
    common = ["--name=m", "--rw=randread", "--bs=4k", "--group_reporting",
              f"--runtime={runtime}", "--time_based"]
    with Zram() as z, VdaFile() as path:
        cases = matrix_cases(z.dev, path)
        if match:
            # Only the cases whose label matches (e.g. "io_uring .* zram"): a
            # re-measure of some rows after a change, alternating as the whole.
            cases = [c for c in cases if re.search(match, c[0])]
            if not cases:
                sys.exit(f"--match {match!r} matches no case of the matrix")
        res = {c[0]: ([], []) for c in cases}
        # Rounds outermost and the two tools back to back per case, so a slow
        # minute of a noisy machine falls on both sides of a ratio.
        for _ in range(rounds):
            for label, args, nj in cases:
                res[label][0].append(summarize(run_json(
                    ["fio", "--output-format=json"] + common + args), nj))
                res[label][1].append(summarize(run_json(
                    [IOLAB, "run", "--output-format=json"] + common + args + list(iolab_extra)),
                    nj))
    med = statistics.median
    if markdown:
        print("| case | fio IOPS | iolab IOPS | IOPS ratio (spread) | fio CPU/IO us | "
              "iolab CPU/IO us | CPU ratio | fio p50/p99 us | iolab p50/p99 us |")
        print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for label, _, _ in cases:
        f, i = res[label]
        ratios = [b["iops"] / a["iops"] for a, b in zip(f, i) if a["iops"] > 0]
        fi, ii = med(x["iops"] for x in f), med(x["iops"] for x in i)
        fc, ic = med(x["cpu_us_per_io"] for x in f), med(x["cpu_us_per_io"] for x in i)
        fp50, ip50 = med(x["p50_ns"] for x in f) / 1e3, med(x["p50_ns"] for x in i) / 1e3
        fp99, ip99 = med(x["p99_ns"] for x in f) / 1e3, med(x["p99_ns"] for x in i) / 1e3
        spread = f"{min(ratios):.2f}-{max(ratios):.2f}" if ratios else "-"
        cpu_ratio = fc / ic if ic > 0 else float("nan")
        if markdown:
            print(f"| {label} | {fi:.0f} | {ii:.0f} | {ii / fi:.2f}x ({spread}) | {fc:.2f} | "
                  f"{ic:.2f} | {cpu_ratio:.2f}x | {fp50:.1f}/{fp99:.1f} | {ip50:.1f}/{ip99:.1f} |")
        else:
            print(f"{label:<28} IOPS fio {fi:>10.0f} iolab {ii:>10.0f} {ii / fi:5.2f}x "
                  f"[{spread}]  cpu/io fio {fc:6.2f} iolab {ic:6.2f}us (fio/iolab {cpu_ratio:4.2f}x)  "
                  f"p50 {fp50:7.1f}/{ip50:7.1f}us p99 {fp99:7.1f}/{ip99:7.1f}us")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--runtime", type=int, default=3)
    ap.add_argument("--only", default="a,b,c")
    ap.add_argument("--markdown", action="store_true", help="matrix as a markdown table")
    ap.add_argument("--match", help="matrix: only the cases whose label matches this regex")
    ap.add_argument("--iolab-args", default="",
                    help="matrix: extra options for iolab only, e.g. '--completion=adaptive' "
                         "(fio keeps its defaults; the header says the comparison is no "
                         "longer like for like)")
    a = ap.parse_args()
    if not os.path.exists(IOLAB):
        subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
    rt = [f"--runtime={a.runtime}", "--time_based"]
    only = set(a.only.split(","))
    print(f"fio: {subprocess.run(['fio', '--version'], capture_output=True, text=True).stdout.strip()}, "
          f"rounds={a.rounds}, runtime={a.runtime}s, medians")
    if "m" in only:
        extra = a.iolab_args.split()
        if extra:
            print(f"matrix: iolab runs with {' '.join(extra)}, fio with its defaults: "
                  "what iolab offers against fio's default, not the same job")
        matrix(a.rounds, a.runtime, a.markdown, a.match, extra)
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
