//! The hybrid polling policies (`completion=hybrid-uring`, `pas`, `dpas`) on the
//! null device: no request completes before its device time, the sleeps and
//! their outcomes are counted, more polling threads than CPUs neither hang nor
//! starve a thread. Assertions are on counts and rules, never on speed (the
//! machine may be busy).

use std::time::{Duration, Instant};

use iolab::engine::{EngineOptions, JobRun, run_jobs};
use iolab::job::plan::parse_run_args;

/// Jobs here run one at a time: DPAS's per-CPU switches are shared by the runs
/// alive at once. (That no policy allocates per request is checked with the
/// other models in tests/engine_noalloc.rs.)
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

const POLICIES: [&str; 3] = ["hybrid-uring", "pas", "dpas"];
/// The overloaded case also runs adaptive (its CPU-contention rule).
const OVERLOADED: [&str; 4] = ["hybrid-uring", "pas", "dpas", "adaptive"];

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

fn run(a: &[String]) -> Vec<JobRun> {
    let plan = parse_run_args(a, &|_| None).expect("job parses");
    let groups = run_jobs(&plan.jobs, &EngineOptions::default()).expect("job runs");
    groups.into_iter().flat_map(|g| g.jobs).collect()
}

fn ios(j: &JobRun) -> u64 {
    j.rec.dirs[..2].iter().map(|d| d.total_ios).sum()
}

fn min_lat_ns(j: &JobRun) -> u64 {
    j.rec.dirs[..2]
        .iter()
        .filter(|d| d.total_ios > 0)
        .map(|d| d.lat.min())
        .min()
        .unwrap_or(0)
}

#[test]
fn policies_never_complete_before_the_device_and_count_their_sleeps() {
    let _one = serial();
    for irq in ["timer", "thread"] {
        for model in POLICIES {
            let runs = run(&args(&[
                "--name=p",
                "--ioengine=null",
                "--size=64m",
                "--rw=randread",
                "--bs=4k",
                "--iodepth=1",
                "--null_lat=200us",
                &format!("--null_irqmode={irq}"),
                "--number_ios=400",
                &format!("--completion={model}"),
            ]));
            let j = &runs[0];
            assert!(j.error.is_none(), "{model}/{irq}: {:?}", j.error);
            let c = &j.completion;
            let what = format!("{model}/{irq}: {c:?}");
            assert_eq!(ios(j), 400, "{what}");
            assert_eq!(c.completions, 400, "{what}");
            assert!(
                min_lat_ns(j) >= 200_000,
                "{what}: a request completed after {} ns, before the device's 200 us",
                min_lat_ns(j)
            );
            // Every sleep that ended in a completion was judged once.
            assert!(c.nap.oversleeps + c.nap.undersleeps <= c.sleeps, "{what}");
            assert!(c.sleeps > 0, "{what}: the policy never slept");
            match model {
                "hybrid-uring" => {
                    // Its first request polls (nothing observed yet), then
                    // every request sleeps half the smallest running time.
                    assert!(c.sleeps >= 300, "{what}");
                    assert!(c.nap.last_nap_ns > 0, "{what}");
                    assert_eq!(c.dpas.mode_switches, 0, "{what}");
                }
                "pas" => {
                    assert!(c.nap.oversleeps + c.nap.undersleeps > 0, "{what}");
                    // From 100 ns, waking early against a 200 us device grows
                    // the sleep: it cannot still be at its floor.
                    assert!(c.nap.last_nap_ns > 1_000, "{what}");
                }
                _ => {
                    // DPAS starts in PAS; at QD1 every wait serves one request
                    // in exactly one mode.
                    assert!(c.dpas.pas > 0, "{what}");
                    assert_eq!(
                        c.dpas.int + c.dpas.cp + c.dpas.pas + c.dpas.ol,
                        c.completions,
                        "{what}"
                    );
                    let kept = c
                        .dpas
                        .recent_switches
                        .iter()
                        .filter(|m| !m.to.is_empty())
                        .count();
                    assert_eq!(kept as u64, c.dpas.mode_switches.min(4), "{what}");
                }
            }
            // The text report's line says what the policy did.
            let line = c
                .describe_policy(j.model)
                .expect("policies describe themselves");
            assert!(
                line.contains("sleeps") && line.contains("woke late"),
                "{line}"
            );
        }
    }
}

#[test]
fn more_polling_threads_than_cpus_neither_hang_nor_starve() {
    let _one = serial();
    let ncpu = std::thread::available_parallelism().map_or(1, |n| n.get());
    let cpus = ncpu.min(2);
    let threads = 2 * cpus;
    let allowed = (0..cpus)
        .map(|c| c.to_string())
        .collect::<Vec<_>>()
        .join(",");
    for model in OVERLOADED {
        let t0 = Instant::now();
        let runs = run(&args(&[
            "--name=o",
            "--ioengine=null",
            "--size=64m",
            "--rw=randread",
            "--bs=4k",
            "--iodepth=1",
            "--null_lat=20us",
            "--null_channels=8",
            &format!("--numjobs={threads}"),
            &format!("--cpus_allowed={allowed}"),
            "--time_based",
            "--runtime=400ms",
            &format!("--completion={model}"),
        ]));
        assert_eq!(runs.len(), threads, "{model}");
        for j in &runs {
            assert!(j.error.is_none(), "{model}: {:?}", j.error);
            assert!(
                ios(j) > 0,
                "{model}: thread {} of {threads} on {cpus} CPUs completed no I/O",
                j.jobnum
            );
        }
        // A 400 ms run; a generous bound that only a hang would cross.
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "{model}: took {:?}",
            t0.elapsed()
        );
    }
}

#[test]
fn adaptive_at_depth_short_of_cpu_runs_a_trial_asleep() {
    let _one = serial();
    // Four adaptive pollers at depth 4 on one CPU: every contention window is
    // at depth (Little's law over real latencies) and short of CPU (each
    // thread waits for the CPU about three quarters of the time), and a 100 us
    // device is longer than any sleep that blocks, so a trial window waiting
    // for the interrupt must run in each thread, whichever way it ends.
    let runs = run(&args(&[
        "--name=d",
        "--ioengine=null",
        "--size=64m",
        "--rw=randread",
        "--bs=4k",
        "--iodepth=4",
        "--null_lat=100us",
        "--null_channels=16",
        "--numjobs=4",
        "--cpus_allowed=0",
        "--time_based",
        "--runtime=500ms",
        "--completion=adaptive",
    ]));
    assert_eq!(runs.len(), 4);
    for j in &runs {
        assert!(j.error.is_none(), "{:?}", j.error);
        assert!(ios(j) > 0, "thread {} completed no I/O", j.jobnum);
        let why = j
            .adaptive
            .iter()
            .map(|d| d.why.as_str())
            .collect::<Vec<_>>()
            .join(" | ");
        assert!(
            why.contains("at depth (mean ") && why.contains("trial windows"),
            "thread {}: no depth trial reported: {why}",
            j.jobnum
        );
    }
}

#[test]
fn unknown_policy_names_are_refused_with_the_list() {
    let e = parse_run_args(
        &args(&["--name=x", "--ioengine=null", "--completion=hybird"]),
        &|_| None,
    )
    .expect_err("a misspelt model is refused");
    let msg = format!("{e:#}");
    assert!(
        msg.contains("completion") && msg.contains("hybrid-uring") && msg.contains("dpas"),
        "{msg}"
    );
}

#[test]
fn policies_run_on_io_uring_with_their_own_sleeps() {
    let _one = serial();
    let dir = tempfile::tempdir_in("/var/tmp").expect("temp dir in /var/tmp");
    let file = dir.path().join("f");
    for model in POLICIES {
        let a = args(&[
            "--name=u",
            "--ioengine=io_uring",
            &format!("--filename={}", file.display()),
            "--size=8m",
            "--direct=1",
            "--rw=randread",
            "--bs=4k",
            "--iodepth=1",
            "--number_ios=200",
            &format!("--completion={model}"),
        ]);
        let plan = parse_run_args(&a, &|_| None).expect("job parses");
        let groups = match run_jobs(&plan.jobs, &EngineOptions::default()) {
            Ok(g) => g,
            Err(e) => {
                crate::support::needs::skip(format_args!(
                    "io_uring with O_DIRECT on /var/tmp is not usable here: {e:#}"
                ));
                return;
            }
        };
        let j = &groups[0].jobs[0];
        if let Some(e) = &j.error {
            crate::support::needs::skip(format_args!(
                "io_uring with O_DIRECT on /var/tmp is not usable here: {e}"
            ));
            return;
        }
        let c = &j.completion;
        assert_eq!(c.completions, 200, "{model}: {c:?}");
        assert!(
            c.nap.oversleeps + c.nap.undersleeps <= c.sleeps,
            "{model}: {c:?}"
        );
        // The disk takes tens of microseconds per read: every policy naps
        // (hybrid-uring after its first completion). DPAS's mode is per CPU
        // and shared by every DPAS worker alive in the process, as the
        // paper's per-core switch is: another test's DPAS job running beside
        // this one may hold the CPU in a polling mode, so DPAS either napped
        // or served its requests in a mode that does not sleep.
        let napped = c.sleeps > 0;
        if model == "dpas" {
            assert!(
                napped || c.dpas.cp + c.dpas.int + c.dpas.ol > 0,
                "{model}: {c:?}"
            );
        } else {
            assert!(napped, "{model}: {c:?}");
        }
    }
}

/// The completer polls the null device by its own type (as the worker holds
/// it, device::worker_queue) and as a trait object alike: the same
/// completions, never before the device's time.
#[test]
fn the_completer_polls_the_null_device_by_its_type_or_as_a_trait_object_alike() {
    use iolab::completion::{Completer, InFlight};
    use iolab::device::Queue;
    use iolab::device::null::NullDevice;
    use iolab::job::CompletionModel;
    use iolab::job::spec::NullParams;
    use iolab::measure::clock;
    use iolab::request::{Class, Completion};
    let params = NullParams {
        lat: Duration::from_micros(20),
        ..NullParams::default()
    };
    let mut typed = NullDevice::new(&params, 1 << 20, 1, 0).unwrap();
    let mut boxed: Box<dyn Queue> = Box::new(NullDevice::new(&params, 1 << 20, 1, 0).unwrap());
    let mut c = Completer::new(CompletionModel::Poll);
    let mut out = [Completion::default(); 2];
    for slot in 0..3 {
        let read = crate::backend_common::null_read(slot, 4096 * slot as u64, Class::Read);
        // Stamped before the commit, which starts the device's time.
        let t0 = clock::now_ns();
        typed.queue(&read).unwrap();
        typed.commit().unwrap();
        let n = c
            .wait_for(&mut typed, &mut out, 1, InFlight::default(), 0)
            .unwrap();
        assert!(
            clock::now_ns() - t0 >= 20_000,
            "polled past the device time"
        );
        assert_eq!((n, out[0].slot, out[0].result), (1, slot, 4096));

        let t0 = clock::now_ns();
        boxed.queue(&read).unwrap();
        boxed.commit().unwrap();
        let n = c
            .wait_for(&mut *boxed, &mut out, 1, InFlight::default(), 0)
            .unwrap();
        assert!(
            clock::now_ns() - t0 >= 20_000,
            "polled past the device time"
        );
        assert_eq!((n, out[0].slot, out[0].result), (1, slot, 4096));
    }
    assert_eq!(c.stats.completions, 6);
    assert_eq!(c.stats.waits, 6);
}
