//! A saved fio-schema JSON reads back into the same typed `RunResult`: real
//! runs through the library (null device under several completion models and
//! hybrid policies, group_reporting, verification with injected faults,
//! placement with co-runners, io_uring on a file, `--trace` on zram), each
//! rendered with `report::json::render`, read back with serde, and then
//! (a) re-serialised to the identical text and (b) rendered as fio text
//! identically to the original.

use crate::support;

use support::needs::{Need, ready, skip};

use iolab::engine::EngineOptions;
use iolab::engine::cli::execute;
use iolab::job::plan::{RunPlan, parse_run_args};
use iolab::report::model::RunResult;
use iolab::report::{json, text};
use iolab::sys::zram::Zram;

fn plan(args: &[String]) -> RunPlan {
    parse_run_args(args, &|_| None).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

/// fio text as `iolab run` prints it.
fn text_of(run: &RunResult, plan: &RunPlan) -> String {
    let pl = plan
        .jobs
        .first()
        .map(|j| j.percentile_list.clone())
        .unwrap_or_default();
    text::render(run, &pl) + &text::render_traces(run)
}

/// Run `plan`, write its JSON, read it back, and check both renderings match.
/// Returns the value read back, for what the caller wants to see in it.
fn round_trip(plan: &RunPlan, opts: &EngineOptions) -> RunResult {
    let (run, _failed) = execute(plan, opts).expect("the run completes");
    let saved = json::render(&run);
    let back: RunResult = serde_json::from_str(&saved)
        .unwrap_or_else(|e| panic!("iolab's own JSON does not read back: {e}\n{saved}"));
    let again = json::render(&back);
    if again != saved {
        let at = saved
            .lines()
            .zip(again.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(0);
        panic!(
            "re-serialised JSON differs from line {}: {:?} vs {:?}",
            at + 1,
            saved.lines().nth(at),
            again.lines().nth(at)
        );
    }
    assert_eq!(text_of(&back, plan), text_of(&run, plan), "text differs");
    back
}

#[test]
fn null_runs_read_back_with_every_engine_object() {
    let _one = support::serial::one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("models.fio");
    std::fs::write(
        &file,
        "[global]\nioengine=null\nsize=4m\nbs=4k\nnull_lat=5us\n\
         runtime=150ms\ntime_based\n\
         [adaptive]\nrw=randread\ncompletion=adaptive\nnumjobs=2\ngroup_reporting\n\
         [dpas]\nrw=randrw\ncompletion=dpas\niodepth=4\n\
         [hybrid]\nrw=randread\ncompletion=hybrid-uring\npercentile_list=50:99.9\n\
         [pas]\nrw=read\ncompletion=pas\nstonewall\n\
         [prio]\nrw=randread\ncompletion=interrupt\niosched=laq\n",
    )
    .unwrap();
    let p = plan(&[file.display().to_string()]);
    let back = round_trip(&p, &EngineOptions::default());
    assert!(!back.global_options.is_empty(), "no [global] options kept");
    let engine = |name: &str| {
        back.jobs
            .iter()
            .find(|j| j.jobname == name)
            .and_then(|j| j.iolab.engine.clone())
            .unwrap_or_else(|| panic!("no engine object for job {name}"))
    };
    assert_eq!(
        back.jobs.iter().filter(|j| j.jobname == "adaptive").count(),
        1
    );
    assert!(!engine("adaptive").adaptive_decisions.is_empty());
    assert!(engine("hybrid").policy_summary.is_some());
    assert!(back.iolab.clock.is_some() && back.iolab.system.is_some());

    // Verification with every kind of injected fault: failures, first failure,
    // errors and the job's error message all read back.
    let mut faulty = support::faults::faulty_job("hybrid", "timer", "randwrite", 5);
    faulty.retain(|a| a != "--loops=2");
    let back = round_trip(&plan(&faulty), &EngineOptions::default());
    let e = back.jobs[0].iolab.engine.as_ref().expect("engine object");
    let v = e.verify.as_ref().expect("verify object");
    assert!(
        v.stats.failures > 0 && v.first_failure_message.is_some(),
        "{v:?}"
    );
    assert!(e.faults_injected.is_some_and(|f| f.total() > 0));
    assert!(e.error_message.is_some());
}

#[test]
fn placement_with_corunners_reads_back() {
    if !ready(&[Need::Cpus(2)]) {
        return;
    }
    let _one = support::serial::one_at_a_time();
    let args: Vec<String> = [
        "--name=p",
        "--ioengine=null",
        "--size=16m",
        "--rw=randread",
        "--completion=poll",
        "--null_lat=5",
        "--runtime=200ms",
        "--time_based",
        "--placement=balance",
        "--corunners=1",
        "--corunner_kernel=float",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let back = round_trip(&plan(&args), &EngineOptions::default());
    let p = back.iolab.placement.first().expect("a placement report");
    assert!(p.balancer.is_some(), "{p:?}");
    assert!(p.tasks.iter().any(|t| t.kernel.is_some()), "{p:?}");
}

#[test]
fn io_uring_on_a_file_reads_back() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("data");
    let args = vec![
        "--name=u".to_string(),
        "--ioengine=io_uring".into(),
        format!("--filename={}", file.display()),
        "--size=4m".into(),
        "--rw=randrw".into(),
        "--bs=4k".into(),
        "--iodepth=4".into(),
        "--fsync=8".into(),
        "--number_ios=400".into(),
    ];
    let back = round_trip(&plan(&args), &EngineOptions::default());
    assert_eq!(
        back.jobs[0]
            .iolab
            .engine
            .as_ref()
            .map(|e| e.backend.as_str()),
        Some("uring")
    );
}

#[test]
fn trace_on_zram_reads_back() {
    if !ready(&[Need::Zram]) {
        return;
    }
    let _one = support::serial::one_at_a_time();
    let z = match Zram::create(64 << 20) {
        Ok(z) => z,
        Err(e) => {
            skip(format_args!("could not create a zram device: {e}"));
            return;
        }
    };
    let args = vec![
        "--name=tr".to_string(),
        "--ioengine=psync".into(),
        format!("--filename={}", z.path().display()),
        "--direct=1".into(),
        "--rw=randrw".into(),
        "--bs=4k".into(),
        "--size=32m".into(),
        "--runtime=200ms".into(),
        "--time_based".into(),
    ];
    let opts = EngineOptions {
        trace: true,
        ..Default::default()
    };
    let back = round_trip(&plan(&args), &opts);
    let e = back.jobs[0].iolab.engine.as_ref().expect("engine object");
    let t = e.trace.as_ref().expect("a trace object");
    assert!(t.joined > 0, "{t:?}");
    assert!(
        !back.disk_util.is_empty(),
        "zram is a disk: disk_util expected"
    );
}

#[test]
fn bad_documents_are_refused_with_the_reason() {
    // A percentile key that is not a number, and a mode switch from a DPAS
    // this iolab does not have, name what is wrong.
    let e = serde_json::from_str::<iolab::report::model::Percentiles>(r#"{"ninety": 5}"#)
        .unwrap_err()
        .to_string();
    assert!(e.contains("percentile key `ninety`"), "{e}");
    let e = serde_json::from_str::<iolab::completion::ModeSwitch>(
        r#"{"at_us": 1, "from": "pas", "to": "warp", "rule": "PAS keeps up",
            "measure": "average waiters x10", "measured": 10}"#,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("unknown DPAS mode `warp`"), "{e}");
}

/// The shape the golden test compares with fio: a result built from a recorder
/// alone, whose `iolab.engine` is `{}`, reads back with no engine object.
#[test]
fn a_result_without_an_engine_run_reads_back() {
    use iolab::measure::cpu::ThreadUsage;
    use iolab::measure::recorder::{Recorder, RecorderConfig, Sample};
    use iolab::report::model::{JobMeta, JobResult, RunExtras, apply_group_aggregates};
    use iolab::request::{Class, Op};

    let mut rec = Recorder::new_at(RecorderConfig::for_runtime(false, Some(1_000_000_000)), 0);
    let mut t = 0;
    for i in 1..=500u64 {
        let clat = 20_000 + (i * 7919) % 60_000;
        t += clat;
        rec.note_depth(1);
        rec.record_sample(&Sample {
            op: if i % 3 == 0 { Op::Write } else { Op::Read },
            class: if i % 3 == 0 {
                Class::AsyncWrite
            } else {
                Class::Read
            },
            bytes: 4096,
            slat_ns: 0,
            clat_ns: clat,
            lat_ns: clat + 40,
            done_ns: t,
        });
    }
    let meta = JobMeta {
        name: "synthetic".into(),
        groupid: 0,
        jobnum: 0,
        workers: 1,
        pid: 1,
        options: vec![("rw".into(), "randrw".into()), ("bs".into(), "4k".into())],
        iodepth: 1,
        percentile_list: iolab::job::spec::DEFAULT_PERCENTILES.to_vec(),
        runtime_ns: t,
        job_runtime_ns: t,
        elapsed_ns: t,
    };
    let mut jobs = vec![JobResult::from_recorder(
        &meta,
        &rec,
        &ThreadUsage::default(),
    )];
    apply_group_aggregates(&mut jobs);
    let run = RunResult::new(jobs, Vec::new(), RunExtras::default());
    let saved = json::render(&run);
    assert!(saved.contains("\"engine\": {}"), "{saved}");
    let back: RunResult = serde_json::from_str(&saved).expect("reads back");
    assert!(back.jobs[0].iolab.engine.is_none());
    assert_eq!(json::render(&back), saved);
    assert_eq!(back.jobs[0], run.jobs[0]);
    let pl = &meta.percentile_list;
    assert_eq!(text::render(&back, pl), text::render(&run, pl));
}
