//! `iolab run`'s job logs (`write_lat_log` and friends): the percentiles of a
//! per-I/O log agree with the JSON's within the histogram's stated error
//! bound, file names and columns are fio's (compared with fio itself when it
//! is installed), and bad log options fail before the first I/O.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::run_common::{iolab_run, run_json};
use crate::support::needs::{Need, ready};

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Column `col` of every row.
fn column(text: &str, col: usize) -> Vec<u64> {
    text.lines()
        .map(|l| {
            l.split(',')
                .nth(col)
                .unwrap()
                .trim()
                .parse()
                .unwrap_or_else(|_| panic!("{l}"))
        })
        .collect()
}

/// Every percentile the JSON reports for `stats` (e.g. `clat_ns`) must be the
/// value of that rank among `samples`, rounded up by at most the histogram's
/// relative error.
fn check_percentiles(what: &str, samples: &mut [u64], stats: &Value, own: &Value, max_rel: f64) {
    samples.sort_unstable();
    let n = samples.len();
    let pcts = own.as_object().expect("percentiles");
    assert!(pcts.len() >= 10, "{what}: {own}");
    for (p, reported) in pcts {
        let q: f64 = p.parse::<f64>().unwrap() / 100.0;
        let reported = reported.as_u64().unwrap();
        // The rank of a percentile is ceil(q * n); allow either side of an
        // exact product, where float rounding may land.
        let ranks = [(q * n as f64 - 1e-6).ceil(), (q * n as f64 + 1e-6).ceil()];
        let ok = ranks.iter().any(|&r| {
            let true_v = samples[(r as usize).clamp(1, n) - 1];
            reported >= true_v && reported as f64 <= true_v as f64 * (1.0 + max_rel) + 1.0
        });
        assert!(
            ok,
            "{what} p{p}: JSON says {reported}, the log's sample of that rank is {} (n={n}, \
             bound {max_rel})",
            samples[((q * n as f64).ceil() as usize).clamp(1, n) - 1]
        );
    }
    // fio's `percentile` is the middle of fio's bin holding that rank (64
    // bins per power of two): within a bin's width of the sample.
    for (p, reported) in stats["percentile"].as_object().expect("fio's percentiles") {
        let q: f64 = p.parse::<f64>().unwrap() / 100.0;
        let true_v = samples[((q * n as f64).ceil() as usize).clamp(1, n) - 1] as f64;
        let reported = reported.as_u64().unwrap() as f64;
        assert!(
            (reported - true_v).abs() <= true_v / 32.0 + 1.0,
            "{what} p{p}: fio's percentile {reported} is not in the bin of the log's {true_v}"
        );
    }
    assert_eq!(stats["min"].as_u64().unwrap(), samples[0], "{what} min");
    assert_eq!(stats["max"].as_u64().unwrap(), samples[n - 1], "{what} max");
    let mean = samples.iter().sum::<u64>() as f64 / n as f64;
    let jmean = stats["mean"].as_f64().unwrap();
    assert!(
        (mean - jmean).abs() <= 1e-6 * jmean.max(1.0),
        "{what} mean {mean} vs {jmean}"
    );
}

#[test]
fn percentiles_of_a_per_io_log_match_the_json_within_the_stated_bound() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("f");
    let prefix = dir.path().join("t");
    let json = run_json(&[
        "--name=t",
        &format!("--filename={}", target.display()),
        "--size=8m",
        "--rw=randrw",
        "--iodepth=4",
        "--ioengine=io_uring",
        "--number_ios=20000",
        "--time_based",
        "--runtime=30",
        &format!("--write_lat_log={}", prefix.display()),
    ]);
    let job = &json["jobs"][0];
    let max_rel = job["iolab"]["histogram"]["max_relative_error"]
        .as_f64()
        .expect("the JSON states the histogram's error bound");
    assert!(max_rel > 0.0 && max_rel < 0.01);
    let clat = read(&dir.path().join("t_clat.1.log"));
    let lat = read(&dir.path().join("t_lat.1.log"));
    let slat = read(&dir.path().join("t_slat.1.log"));
    for (ddir, name) in [(0, "read"), (1, "write")] {
        let dir_json = &job[name];
        let pick = |text: &str| -> Vec<u64> {
            text.lines()
                .filter(|l| l.split(',').nth(2).unwrap().trim() == ddir.to_string())
                .map(|l| l.split(',').nth(1).unwrap().trim().parse().unwrap())
                .collect()
        };
        let mut c = pick(&clat);
        assert_eq!(
            c.len() as u64,
            dir_json["total_ios"].as_u64().unwrap(),
            "{name}: one row per measured I/O"
        );
        assert!(c.len() > 1000, "{name}: enough I/Os to mean something");
        check_percentiles(
            &format!("{name} clat"),
            &mut c,
            &dir_json["clat_ns"],
            &job["iolab"]["clat_percentile"][name],
            max_rel,
        );
        let mut l = pick(&lat);
        assert_eq!(
            dir_json["lat_ns"]["min"].as_u64().unwrap(),
            *l.iter().min().unwrap()
        );
        assert_eq!(
            dir_json["lat_ns"]["max"].as_u64().unwrap(),
            *l.iter().max().unwrap()
        );
        l.sort_unstable();
        let mut s = pick(&slat);
        assert_eq!(
            s.len(),
            c.len(),
            "{name}: io_uring has a submission latency"
        );
        s.sort_unstable();
        assert_eq!(dir_json["slat_ns"]["max"].as_u64().unwrap(), s[s.len() - 1]);
    }
    // Times are ms since the job started, in order, within the run.
    let times = column(&clat, 0);
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "rows in time order");
    assert!(*times.last().unwrap() <= job["job_runtime"].as_u64().unwrap() + 1);
}

/// File names and the column count of each file's rows.
fn log_shapes(dir: &Path) -> BTreeSet<(String, BTreeSet<usize>)> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .map(|p| {
            let cols = read(&p).lines().map(|l| l.split(", ").count()).collect();
            (p.file_name().unwrap().to_string_lossy().into_owned(), cols)
        })
        .collect()
}

#[test]
fn file_names_and_columns_are_fios() {
    if !ready(&[Need::Fio]) {
        return;
    }
    let cases: &[&[&str]] = &[
        &[
            "--numjobs=2",
            "--write_lat_log=a",
            "--write_bw_log=a",
            "--write_iops_log=a",
        ],
        &[
            "--numjobs=2",
            "--write_lat_log=b",
            "--per_job_logs=0",
            "--log_offset=1",
        ],
        &["--write_iops_log=c", "--log_prio=1", "--log_offset=1"],
    ];
    for extra in cases {
        let ours = tempfile::tempdir().unwrap();
        let theirs = tempfile::tempdir().unwrap();
        for (d, is_fio) in [(ours.path(), false), (theirs.path(), true)] {
            let mut args: Vec<String> = [
                "--name=n",
                "--size=64k",
                "--rw=write",
                "--bs=4k",
                "--ioengine=psync",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect();
            args.push(format!("--filename={}", d.join("f").display()));
            args.extend(extra.iter().map(|s| s.to_string()));
            if is_fio {
                let s = Command::new("fio")
                    .args(&args)
                    .arg("--output=/dev/null")
                    .current_dir(d)
                    .status()
                    .expect("run fio");
                assert!(s.success(), "fio {args:?}");
            } else {
                let o = Command::new(env!("CARGO_BIN_EXE_iolab"))
                    .arg("run")
                    .args(&args)
                    .arg("--output=/dev/null")
                    .current_dir(d)
                    .output()
                    .expect("run iolab");
                assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            }
        }
        assert_eq!(
            log_shapes(ours.path()),
            log_shapes(theirs.path()),
            "{extra:?}"
        );
    }
}

#[test]
fn averaged_rows_cover_the_run_in_windows() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("w");
    let json = run_json(&[
        "--name=w",
        &format!("--filename={}", dir.path().join("f").display()),
        "--size=4m",
        "--rw=randread",
        "--time_based",
        "--runtime=1",
        "--log_avg_msec=100",
        &format!("--write_iops_log={}", p.display()),
        &format!("--write_lat_log={}", p.display()),
        "--log_max_value=1",
    ]);
    let iops = read(&dir.path().join("w_iops.1.log"));
    let times = column(&iops, 0);
    // One row per full window at its end, then the partial window the run
    // ended in, at the last completion.
    let (last, full) = times.split_last().expect("rows");
    assert!(full.len() >= 9, "a row per 100 ms window: {iops}");
    assert_eq!(
        full,
        (1..=full.len() as u64).map(|w| w * 100).collect::<Vec<_>>()
    );
    assert!(*last >= full[full.len() - 1]);
    // Windowed rows carry no block size (fio writes 0 there).
    assert!(column(&iops, 3).iter().all(|&bs| bs == 0));
    // Full windows' IOPS x 0.1 s add up to the I/Os completed in them.
    let ios_in_full: u64 = column(&iops, 1)[..full.len()].iter().map(|v| v / 10).sum();
    let total = json["jobs"][0]["read"]["total_ios"].as_u64().unwrap();
    assert!(ios_in_full <= total && ios_in_full + 10 * full.len() as u64 + 200 >= total * 9 / 10);
    // log_max_value: the largest window value is the run's maximum clat.
    let clat_max = column(&read(&dir.path().join("w_clat.1.log")), 1)
        .into_iter()
        .max()
        .unwrap();
    assert_eq!(
        clat_max,
        json["jobs"][0]["read"]["clat_ns"]["max"].as_u64().unwrap()
    );
}

#[test]
fn an_unwritable_log_directory_fails_before_the_first_io_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("target");
    let (code, out, err) = iolab_run(&[
        "--name=u",
        &format!("--filename={}", target.display()),
        "--size=1m",
        "--rw=write",
        &format!("--write_bw_log={}/ok", dir.path().display()),
        &format!("--write_lat_log={}/missing/x", dir.path().display()),
    ]);
    assert_ne!(code, 0, "{out}");
    assert!(
        err.contains("write_lat_log") && err.contains("missing/x_") && err.contains("directory"),
        "names the option, the file and what to do: {err}"
    );
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert!(left.is_empty(), "nothing left behind: {left:?}");
}

#[test]
fn bad_log_options_are_refused_with_what_is_valid() {
    for (opt, needle) in [
        ("--log_avg_msec=-1", "0 to 3600000"),
        ("--log_avg_msec=fast", "0 to 3600000"),
        ("--log_hist_coarseness=7", "0 to 6"),
        ("--write_lat_log=", "prefix"),
        ("--write_bw_log=logs/", "prefix"),
        ("--log_compression=fast", "size"),
    ] {
        let (code, _, err) =
            iolab_run(&["--name=b", "--ioengine=null", "--size=1m", "--rw=read", opt]);
        assert_ne!(code, 0, "{opt}");
        let name = opt.trim_start_matches("--").split('=').next().unwrap();
        assert!(err.contains(name) && err.contains(needle), "{opt}: {err}");
    }
}

#[test]
fn the_run_report_draws_the_logs() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("r");
    let report = dir.path().join("report");
    let (code, _, err) = iolab_run(&[
        "--name=r",
        &format!("--filename={}", dir.path().join("f").display()),
        "--size=4m",
        "--rw=randrw",
        "--number_ios=4000",
        &format!("--write_lat_log={}", p.display()),
        &format!("--write_bw_log={}", p.display()),
        &format!("--write_iops_log={}", p.display()),
        "--report",
        &report.display().to_string(),
        "--output=/dev/null",
    ]);
    assert_eq!(code, 0, "{err}");
    let html = read(&report.join("index.html"));
    for what in [
        "completion latency over time",
        "bandwidth over time",
        "IOPS over time (log",
    ] {
        let at = html
            .find(what)
            .unwrap_or_else(|| panic!("no '{what}' chart"));
        // Drawn: its figure holds a line for reads and one for writes.
        let figure = &html[at..at + html[at..].find("</svg>").unwrap()];
        assert!(
            figure.matches("<path d=\"M").count() >= 2,
            "{what}: {figure}"
        );
    }
}

#[test]
fn scratch_dir_takes_the_logs_too() {
    let dir = tempfile::tempdir().unwrap();
    let (code, _, err) = iolab_run(&[
        "--name=s",
        "--ioengine=null",
        "--size=1m",
        "--rw=read",
        "--write_iops_log=/nonexistent/elsewhere/s",
        &format!("--scratch-dir={}", dir.path().display()),
        "--output=/dev/null",
    ]);
    assert_eq!(code, 0, "{err}");
    let rows = read(&dir.path().join("s_iops.1.log"));
    assert_eq!(rows.lines().count(), 256, "one row per 4k read of 1m");
}

/// Rows of a per-I/O log file.
fn rows(p: &Path) -> usize {
    read(p).lines().filter(|l| !l.trim().is_empty()).count()
}

/// fio's meaning of a per-I/O log: every I/O is in it. A null-device job
/// at full speed (no rate limit, far more I/Os than the log writer's ring
/// holds) logs exactly one row per I/O in each file, the JSON counts the
/// records and no drop, and — fio's synchronous null engine at iodepth=1 —
/// there is no submission latency: clat is the whole latency.
#[test]
fn a_null_job_at_full_speed_logs_every_io_and_has_no_slat_at_depth_1() {
    let dir = tempfile::tempdir().unwrap();
    let prefix = dir.path().join("n");
    let json = run_json(&[
        "--name=n",
        "--ioengine=null",
        "--size=16m",
        "--rw=randread",
        "--number_ios=300000",
        "--time_based",
        "--runtime=600",
        "--slat_percentiles=1",
        "--lat_percentiles=1",
        &format!("--write_lat_log={}", prefix.display()),
    ]);
    let job = &json["jobs"][0];
    let read_ = &job["read"];
    let n = read_["total_ios"].as_u64().unwrap();
    assert_eq!(n, 300_000);
    for ty in ["clat", "lat"] {
        let p = dir.path().join(format!("n_{ty}.1.log"));
        assert_eq!(rows(&p) as u64, n, "{ty}: one row per I/O");
    }
    let slat = dir.path().join("n_slat.1.log");
    assert_eq!(
        rows(&slat),
        0,
        "no slat rows: the file stays, empty, as fio's"
    );
    let logs = &job["iolab"]["engine"]["job_logs"];
    assert_eq!(logs["records"].as_u64(), Some(n), "{logs}");
    assert_eq!(logs["dropped"].as_u64(), Some(0), "{logs}");
    assert!(logs["waits"].as_u64().is_some() && logs["wait_ns"].as_u64().is_some());
    assert_eq!(read_["slat_ns"]["N"].as_u64(), Some(0), "no slat samples");
    assert!(read_["slat_ns"].get("percentile").is_none());
    for k in ["N", "min", "max"] {
        assert_eq!(read_["clat_ns"][k], read_["lat_ns"][k], "clat is lat: {k}");
    }
}

/// The emulated queue keeps iolab's split when a completion model is asked
/// for (what the lab's null-device studies do), and at depth > 1, where
/// fio's null engine queues too.
#[test]
fn a_null_job_with_a_completion_model_or_depth_keeps_its_slat() {
    for extra in ["--completion=poll", "--iodepth=4"] {
        let json = run_json(&[
            "--name=n",
            "--ioengine=null",
            "--size=16m",
            "--rw=randread",
            "--number_ios=2000",
            extra,
        ]);
        let slat = &json["jobs"][0]["read"]["slat_ns"];
        assert_eq!(slat["N"].as_u64(), Some(2000), "{extra}: {slat}");
    }
}

/// `log_drop_when_full=1`: the worker never waits for the log writer; what
/// did not fit is counted and reported, and the rows plus the drops are the
/// I/Os (how many drop depends on the machine's speed: only the sum is
/// asserted).
#[test]
fn log_drop_when_full_never_waits_and_counts_what_it_drops() {
    let dir = tempfile::tempdir().unwrap();
    let prefix = dir.path().join("d");
    let (code, out, err) = iolab_run(&[
        "--name=d",
        "--ioengine=null",
        "--size=16m",
        "--rw=randwrite",
        "--number_ios=300000",
        "--time_based",
        "--runtime=600",
        "--log_drop_when_full=1",
        "--output-format=json",
        &format!("--write_lat_log={}", prefix.display()),
    ]);
    assert_eq!(code, 0, "{err}");
    let json: Value = serde_json::from_str(&out).unwrap();
    let job = &json["jobs"][0];
    let n = job["write"]["total_ios"].as_u64().unwrap();
    let logs = &job["iolab"]["engine"]["job_logs"];
    assert_eq!(logs["waits"].as_u64(), Some(0), "{logs}");
    assert_eq!(logs["wait_ns"].as_u64(), Some(0), "{logs}");
    let dropped = logs["dropped"].as_u64().unwrap();
    assert_eq!(logs["records"].as_u64().unwrap() + dropped, n, "{logs}");
    let clat = rows(&dir.path().join("d_clat.1.log")) as u64;
    assert_eq!(clat + dropped, n, "rows and drops are the I/Os");
    assert_eq!(
        dropped > 0,
        err.contains("log records dropped"),
        "drops are reported on stderr: {err}"
    );
}
