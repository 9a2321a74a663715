//! iolab embedded in another program, through the front door only (`iolab::Job`,
//! `iolab::Jobs`, `iolab::RunResult`...): two runs in one process, no signal
//! handler left behind, and the result carries the keys the command's JSON has.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::run_common::run_json;

const JOB: [(&str, &str); 5] = [
    ("ioengine", "null"),
    ("rw", "randread"),
    ("bs", "4k"),
    ("size", "32m"),
    ("number_ios", "3000"),
];

fn job() -> iolab::Job {
    JOB.iter()
        .try_fold(iolab::Job::new("embedded"), |j, (k, v)| j.option(k, v))
        .expect("valid options")
}

/// The current disposition of `sig`, read without changing it.
fn disposition(sig: libc::c_int) -> libc::sighandler_t {
    // SAFETY: a zeroed sigaction is valid output space; a null new action
    // only queries.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        assert_eq!(libc::sigaction(sig, std::ptr::null(), &mut old), 0);
        old.sa_sigaction
    }
}

/// Every key path of a JSON document (`jobs[].read.clat_ns.percentile`),
/// array elements merged; the names of percentile keys kept, values ignored.
fn key_paths(v: &Value, at: &str, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                let p = format!("{at}.{k}");
                out.insert(p.clone());
                key_paths(v, &p, out);
            }
        }
        Value::Array(a) => {
            for v in a {
                key_paths(v, &format!("{at}[]"), out);
            }
        }
        _ => {}
    }
}

#[test]
fn a_job_runs_twice_in_one_process_without_signal_handlers() {
    // What the process had before (SIG_DFL, or SIG_IGN when the tests were
    // started in the background by a shell without job control).
    let before = [libc::SIGINT, libc::SIGTERM].map(disposition);
    let first = job().run().expect("first run");
    let second = job().run().expect("second run");
    for run in [&first, &second] {
        assert_eq!(run.jobs.len(), 1);
        let j = &run.jobs[0];
        assert_eq!(j.jobname, "embedded");
        assert_eq!(j.error, 0);
        assert_eq!(j.read.total_ios, 3000, "number_ios=3000 reads");
        let s = iolab::Summary::of(j);
        assert_eq!(s.ios, 3000);
        assert!(s.p50_ns > 0 && s.p50_ns <= s.p99_ns, "{s:?}");
    }
    // The library installed nothing: SIGINT and SIGTERM still kill a process
    // that embeds it, as they did before.
    for (sig, was) in [libc::SIGINT, libc::SIGTERM].into_iter().zip(before) {
        assert!(
            was == libc::SIG_DFL || was == libc::SIG_IGN,
            "signal {sig}: a handler was installed before the library ran"
        );
        assert_eq!(
            disposition(sig),
            was,
            "signal {sig}: the library must not install a handler"
        );
    }
}

#[test]
fn the_result_has_the_keys_of_the_commands_json() {
    let embedded = serde_json::to_value(job().run().expect("run")).expect("serialise");
    let mut args: Vec<String> = vec!["--name=embedded".into()];
    args.extend(JOB.iter().map(|(k, v)| format!("--{k}={v}")));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let cli = run_json(&args);
    let (mut a, mut b) = (BTreeSet::new(), BTreeSet::new());
    key_paths(&embedded, "", &mut a);
    key_paths(&cli, "", &mut b);
    let only_lib: Vec<_> = a.difference(&b).collect();
    let only_cli: Vec<_> = b.difference(&a).collect();
    assert!(
        only_lib.is_empty() && only_cli.is_empty(),
        "keys only in the library's result: {only_lib:?}\nkeys only in iolab run's JSON: {only_cli:?}"
    );
    assert!(a.contains(".jobs[].read.clat_ns.percentile.99.000000"));
    assert!(a.contains(".iolab.version"));
}

#[test]
fn a_misspelt_option_is_refused_with_the_nearest_name() {
    let e = iolab::Job::new("x").option("iodepht", 4).unwrap_err();
    assert!(matches!(e, iolab::Error::Job(_)), "{e:?}");
    let msg = e.to_string();
    assert!(msg.contains("iodepht") && msg.contains("iodepth"), "{msg}");
    // A bad value is caught when the job is checked as a whole.
    let e = iolab::Job::new("x")
        .option("ioengine", "null")
        .and_then(|j| j.option("bs", "4q"))
        .and_then(iolab::Job::into_jobs)
        .unwrap_err();
    assert!(e.to_string().contains("bs"), "{e}");
}

#[test]
fn job_text_and_the_builder_mean_the_same_job() {
    let text: String = std::iter::once("[embedded]\n".to_string())
        .chain(JOB.iter().map(|(k, v)| format!("{k}={v}\n")))
        .collect();
    let parsed = iolab::Jobs::parse(&text).expect("job text");
    let built = job().into_jobs().expect("builder");
    let strip = |s: &iolab::job::spec::JobSpec| {
        let mut s = s.clone();
        s.origin = Default::default();
        // The options as written: the command line names the job with `name`.
        s.options.retain(|(k, _)| k != "name");
        s
    };
    assert_eq!(
        parsed.specs().iter().map(strip).collect::<Vec<_>>(),
        built.specs().iter().map(strip).collect::<Vec<_>>()
    );
}
