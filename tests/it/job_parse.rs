//! The fio option language end to end: job files, command line, errors.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use iolab::job::*;
use iolab::request::Class;

fn keywords() -> Keywords {
    Keywords {
        pagesize: 4096,
        mb_memory: 24000,
        ncpus: 2,
    }
}

fn no_files(p: &Path) -> std::io::Result<String> {
    Err(std::io::Error::new(
        std::io::ErrorKind::NotFound,
        format!("no such file {}", p.display()),
    ))
}

fn parse_with_env(text: &str, vars: &[(&str, &str)]) -> Result<RunPlan, JobError> {
    let map: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let env = move |k: &str| map.get(k).cloned();
    let ctx = ParseCtx {
        env: &env,
        keywords: keywords(),
        read_file: &no_files,
    };
    parse_job_file_str(text, "t.fio", &ctx)
}

fn parse(text: &str) -> Result<RunPlan, JobError> {
    parse_with_env(text, &[])
}

fn cmdline(args: &[&str], files: &[(&str, &str)]) -> Result<RunPlan, JobError> {
    let files: HashMap<String, String> = files
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let read = move |p: &Path| {
        files
            .get(&p.display().to_string())
            .cloned()
            .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::NotFound))
    };
    let env = |_: &str| None;
    let ctx = ParseCtx {
        env: &env,
        keywords: keywords(),
        read_file: &read,
    };
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    parse_run_args_with(&args, &ctx)
}

#[test]
fn defaults_are_fios() {
    let p = parse("[j]\n").unwrap();
    let j = &p.jobs[0];
    assert_eq!(j.name, "j");
    assert_eq!(j.origin, Origin("t.fio:1".into()));
    assert_eq!(j.rw.fio_name(), "read");
    assert_eq!(j.bs, [BlockSizes::Fixed(4096), BlockSizes::Fixed(4096)]);
    assert_eq!(j.iodepth, 1);
    assert_eq!(j.ioengine, Engine::Psync);
    assert!(j.randrepeat);
    assert!(!j.direct);
    assert_eq!(j.size, None);
    assert_eq!(p.output_format, OutputFormats::only(OutputFormat::Normal));
}

#[test]
fn global_sections_apply_to_the_jobs_after_them() {
    let p = parse(
        "; a comment\n\
         [global]\n\
         ioengine=io_uring   # trailing comment\n\
         bs=8k\n\
         direct\n\
         [a]\n\
         rw=randread\n\
         [global]\n\
         iodepth=16\n\
         [b]\n\
         bs=16k\n",
    )
    .unwrap();
    let (a, b) = (&p.jobs[0], &p.jobs[1]);
    assert_eq!(a.ioengine, Engine::IoUring);
    assert!(a.direct && b.direct);
    assert_eq!(a.iodepth, 1, "a later [global] does not reach back");
    assert_eq!(b.iodepth, 16);
    assert_eq!(a.bs[0], BlockSizes::Fixed(8192));
    assert_eq!(b.bs[1], BlockSizes::Fixed(16384));
    assert_eq!(
        b.rw.fio_name(),
        "read",
        "job options do not leak to the next job"
    );
    assert_eq!(b.origin, Origin("t.fio:10".into()));
}

#[test]
fn numjobs_stonewall_and_bare_flags() {
    let p = parse(
        "[w]\nrw=write\nnumjobs=4\ngroup_reporting\n[r]\nwait_for_previous\ntime_based\nruntime=2m\n",
    )
    .unwrap();
    assert_eq!(p.jobs[0].numjobs, 4);
    assert!(p.jobs[0].group_reporting);
    assert!(!p.jobs[0].stonewall);
    assert!(p.jobs[1].stonewall);
    assert!(p.jobs[1].time_based);
    assert_eq!(p.jobs[1].runtime, Some(Duration::from_secs(120)));
}

#[test]
fn env_expansion_matches_fio() {
    let p = parse_with_env("[j]\nsize=${SZ}\nfilename=${DIR}/f\n", &[("SZ", "64m")]).unwrap();
    assert_eq!(p.jobs[0].size, Some(64 << 20));
    // fio substitutes an empty string for an unset variable; iolab says so.
    assert_eq!(p.jobs[0].filename.as_deref(), Some("/f"));
    assert_eq!(
        p.warnings,
        [
            "t.fio:3: environment variable 'DIR' is not set; substituted an empty string (as fio does)"
        ]
    );
    let e = parse("[j]\nsize=${SZ}\n").unwrap_err();
    assert_eq!(
        e.to_string(),
        "t.fio:2: option 'size': bad value '': expected a size: an integer with an optional \
         suffix b, k, m, g, t, p (also kb/ki, kib etc.; case-insensitive), e.g. 4k, 1m, 512, \
         or a percentage such as 50% (note: ${SZ} not set, substituted by an empty string)"
    );
}

#[test]
fn keywords_expand() {
    let p = parse("[j]\nnumjobs=$ncpus\nbs=$pagesize\nsize=$mb_memory\n").unwrap();
    assert_eq!(p.jobs[0].numjobs, 2);
    assert_eq!(p.jobs[0].bs[0], BlockSizes::Fixed(4096));
    assert_eq!(p.jobs[0].size, Some(24000));
}

#[test]
fn kb_base_applies_to_its_whole_section_and_is_inherited() {
    let p =
        parse("[global]\nsize=1m\nkb_base=1000\n[a]\nbs=4k\n[b]\nbs=4kib\nkb_base=1024\n").unwrap();
    assert_eq!(p.jobs[0].size, Some(1_000_000));
    assert_eq!(p.jobs[0].bs[0], BlockSizes::Fixed(4000));
    assert_eq!(
        p.jobs[1].bs[0],
        BlockSizes::Fixed(4000),
        "1024 mode: kib = 1000"
    );
    assert_eq!(p.jobs[1].kb_base, 1024);
}

/// fio's third value: trims' own block sizes and alignment; two values give
/// trims the write's, a trailing comma leaves them what they had.
#[test]
fn trims_have_their_own_block_size() {
    let p = parse(
        "[a]\nbs=4k,4k,8k\n[b]\nbs=4k,16k\n[c]\nbs=2k,16k,\n[d]\nbsrange=1k-2k,2k-4k,8k-16k\n\
         [e]\nbssplit=4k,8k,16k/50:32k/50\n[f]\nbs=4k,4k,8k\nbs=1k\n[g]\nrw=randtrim\nblockalign=512,1k,8k\n",
    )
    .unwrap();
    let fixed = BlockSizes::Fixed;
    let trim = |i: usize| p.jobs[i].trim_bs().clone();
    assert_eq!(p.jobs[0].bs, [fixed(4096), fixed(4096)]);
    assert_eq!(trim(0), fixed(8192));
    assert_eq!(trim(1), fixed(16384), "two values: trims take the write's");
    assert_eq!(
        trim(2),
        fixed(4096),
        "a trailing comma: trims keep the default"
    );
    assert_eq!(
        trim(3),
        BlockSizes::Range {
            min: 8192,
            max: 16384
        }
    );
    assert_eq!(trim(4), BlockSizes::Split(vec![(16384, 50), (32768, 50)]));
    assert_eq!(trim(5), fixed(1024), "one value sets all three");
    assert_eq!(p.jobs[6].blockalign, [512, 1024]);
    assert_eq!(p.jobs[6].blockalign_trim, Some(8192));
    assert_eq!(p.jobs[0].max_bs(), 8192);
}

/// fio reads a bssplit list given as bsrange by the first two sizes; so does
/// iolab, and says so.
#[test]
fn a_bssplit_list_under_bsrange_is_read_as_fio_reads_it() {
    let p = parse("[a]\nbsrange=512/25:1k:25:2k:25:4k/25\n").unwrap();
    let r = BlockSizes::Range {
        min: 512,
        max: 1024,
    };
    assert_eq!(p.jobs[0].bs, [r.clone(), r]);
    // A note, not a warning: it goes with the results (iolab.notes).
    let notes: Vec<&String> = p
        .notes
        .iter()
        .map(|n| &n.note)
        .filter(|n| n.contains("bssplit list under the bsrange name"))
        .collect();
    assert_eq!(notes.len(), 1, "{:?}", p.notes);
    assert!(
        notes[0].contains("read as the range 512-1k"),
        "{}",
        notes[0]
    );
    assert!(
        notes[0].contains("use bssplit=512/25:1k:25:2k:25:4k/25"),
        "{}",
        notes[0]
    );
    assert!(p.warnings.is_empty(), "{:?}", p.warnings);
    let p = parse("[a]\nbsrange=1k-4k\n").unwrap();
    assert!(
        p.notes.iter().all(|n| n.option != "bsrange"),
        "{:?}",
        p.notes
    );
}

#[test]
fn block_size_forms() {
    let p = parse(
        "[a]\nbs=4k,64k\n[b]\nbs=,8k\n[c]\nbsrange=16k-1k\n[d]\nbssplit=4k/10:64k/90,8k/\n\
         [e]\nbssplit=4k/:8k/:16k/\n[f]\nblocksize_range=1k-4k,2k-8k\n",
    )
    .unwrap();
    let bs = |i: usize| p.jobs[i].bs.clone();
    assert_eq!(bs(0), [BlockSizes::Fixed(4096), BlockSizes::Fixed(65536)]);
    assert_eq!(bs(1), [BlockSizes::Fixed(4096), BlockSizes::Fixed(8192)]);
    let r = BlockSizes::Range {
        min: 1024,
        max: 16384,
    };
    assert_eq!(bs(2), [r.clone(), r]);
    assert_eq!(
        bs(3),
        [
            BlockSizes::Split(vec![(4096, 10), (65536, 90)]),
            BlockSizes::Split(vec![(8192, 100)])
        ]
    );
    assert_eq!(
        bs(4)[0],
        BlockSizes::Split(vec![(4096, 33), (8192, 33), (16384, 34)])
    );
    assert_eq!(
        bs(5),
        [
            BlockSizes::Range {
                min: 1024,
                max: 4096
            },
            BlockSizes::Range {
                min: 2048,
                max: 8192
            }
        ]
    );
}

#[test]
fn iolab_options_map_onto_the_spec() {
    let p = parse(
        "[j]\nioengine=null\ncompletion=hybrid\nioclass=asyncwrite\nreadahead=128k\n\
         iosched=laq\nois_max=2m\nt_wait=500\n\
         null_lat=800ns\nnull_bw=2g\nnull_dist=uniform:0.2\nnull_channels=4\nnull_qd=32\n\
         null_order=readfirst\nnull_backing=mem\nnull_irqmode=thread\nnull_irq_batch=8\n\
         null_irq_time=20us\nnull_err_rate=0.1%\nnull_corrupt_rate=0.01\nnull_hang_rate=0\n\
         null_spike_rate=0.5%\nnull_spike_lat=5ms\nnull_fault_range=1m-2m\nnull_fault_limit=3\n\
         prio=3\npercentile_list=50:99:99.9\nrate_iops=100,200\nthinktime=2ms\n\
         thinktime_blocks=4\nfsync=8\nsync=1\nrwmixwrite=30\nrw=randrw\nsize=50%\noffset=1g\n",
    )
    .unwrap();
    let j = &p.jobs[0];
    assert_eq!(j.completion, Some(CompletionModel::Hybrid));
    assert_eq!(j.ioclass, Some(Class::AsyncWrite));
    assert_eq!(j.readahead, 128 << 10);
    assert_eq!(j.scheduler, SchedKind::Laq);
    assert_eq!(j.laq.ois_max, 2 << 20);
    assert_eq!(j.laq.ois_min, 1 << 20, "ois_min defaults to ois_max/2");
    assert_eq!(j.laq.t_wait, Duration::from_micros(500));
    let n = &j.backend.null;
    assert_eq!(n.lat, Duration::from_nanos(800));
    assert_eq!(n.bw, 2 << 30);
    assert_eq!(n.dist, LatDist::Uniform { jitter: 0.2 });
    assert_eq!((n.channels, n.qd), (4, 32));
    assert_eq!(n.order, NullOrder::ReadFirst);
    assert!(n.backing_mem);
    assert_eq!(n.irqmode, IrqMode::Thread);
    assert_eq!(n.irq_coalesce_count, 8);
    assert_eq!(n.irq_coalesce_time, Duration::from_micros(20));
    assert!((n.faults.error_rate - 0.001).abs() < 1e-12);
    assert_eq!(n.faults.corrupt_rate, 0.01);
    assert_eq!(n.faults.spike_lat, Duration::from_millis(5));
    assert_eq!(n.faults.range, Some((1 << 20, 2 << 20)));
    assert_eq!(n.faults.limit, 3);
    assert_eq!(j.ioprio, (2 << 13) | 3, "prio alone is best-effort class");
    assert_eq!(j.percentile_list, vec![50.0, 99.0, 99.9]);
    assert_eq!(j.rate_iops, [100, 200]);
    assert_eq!(j.thinktime, Duration::from_millis(2));
    assert_eq!(j.thinktime_blocks, 4);
    assert_eq!((j.fsync, j.sync), (8, true));
    assert_eq!(j.rwmixread, 70);
    assert_eq!(j.rw.fio_name(), "randrw");
    assert_eq!((j.size, j.size_percent), (None, Some(50)));
    assert_eq!(j.offset, 1 << 30);
}

#[test]
fn include_files_resolve_next_to_the_job_file() {
    let p = cmdline(
        &["/jobs/main.fio"],
        &[
            ("/jobs/main.fio", "[j]\ninclude common.inc\nrw=write\n"),
            ("/jobs/common.inc", "bs=64k\n"),
        ],
    )
    .unwrap();
    assert_eq!(p.jobs[0].bs[0], BlockSizes::Fixed(65536));
}

#[test]
fn command_line_follows_fios_rules() {
    let files = [
        ("one.fio", "[f1]\nrw=write\n[f2]\n"),
        ("two.fio", "[global]\niodepth=8\n[f3]\n[f4]\n"),
    ];
    let p = cmdline(
        &[
            "--bs=8k",
            "one.fio",
            "--output-format=json",
            "--name=c1",
            "--iodepth",
            "4",
            "--direct=1",
            "two.fio",
            "--output",
            "out.json",
            "--name=c2",
            "--time_based",
        ],
        &files,
    )
    .unwrap();
    let names: Vec<&str> = p.jobs.iter().map(|j| j.name.as_str()).collect();
    assert_eq!(
        names,
        ["c1", "c2", "f1", "f2", "f3", "f4"],
        "command-line jobs first"
    );
    assert!(
        p.jobs.iter().all(|j| j.bs[0] == BlockSizes::Fixed(8192)),
        "globals reach job files"
    );
    assert_eq!((p.jobs[0].iodepth, p.jobs[0].direct), (4, true));
    assert!(p.jobs[1].time_based && !p.jobs[0].time_based);
    assert_eq!(p.jobs[2].iodepth, 1);
    assert_eq!(p.jobs[4].iodepth, 8);
    let walls: Vec<bool> = p.jobs.iter().map(|j| j.stonewall).collect();
    assert_eq!(
        walls,
        [false, false, false, false, true, false],
        "2nd file starts with a stonewall"
    );
    assert_eq!(p.output_format, OutputFormats::only(OutputFormat::Json));
    assert_eq!(p.output.as_deref(), Some(Path::new("out.json")));

    let p = cmdline(&["--section=f2", "--parse-only", "one.fio"], &files).unwrap();
    assert_eq!(p.jobs.len(), 1);
    assert_eq!(p.jobs[0].name, "f2");
    assert!(p.parse_only);
}

/// Malformed input and the exact message for each.
#[test]
fn malformed_job_files() {
    let cases: &[(&str, &str)] = &[
        (
            "size=1m\n[j]\n",
            "t.fio:1: 'size=1m' is outside any section: put options under [global] or a [jobname] header",
        ),
        (
            "[j\nsize=1m\n",
            "t.fio:1: bad section header '[j': expected [name] on a line of its own",
        ),
        (
            "[]\n",
            "t.fio:1: bad section header '[]': expected [name] on a line of its own",
        ),
        (
            "[j]\niodepth=0\n",
            "t.fio:2: option 'iodepth': bad value '0': expected an integer from 1 to 65535, got 0",
        ),
        (
            "[j]\nrwmixread=101\n",
            "t.fio:2: option 'rwmixread': bad value '101': expected an integer from 0 to 100, got 101",
        ),
        (
            "[j]\nnumjobs=0\n",
            "t.fio:2: option 'numjobs': bad value '0': expected an integer from 1 to 4096, got 0",
        ),
        (
            "[j]\nbs=4q\n",
            "t.fio:2: option 'bs': bad value '4q': expected a size: an integer with an optional suffix b, k, m, g, t, p (also kb/ki, kib etc.; case-insensitive), e.g. 4k, 1m, 512",
        ),
        (
            "[j]\nbs=0\n",
            "t.fio:2: option 'bs': bad value '0': expected a block size from 1 byte to 4g-1",
        ),
        (
            "[j]\nbs=2k-8k\n",
            "t.fio:2: option 'bs': bad value '2k-8k': expected one block size, or 'read,write' such as 4k,64k (for a range of sizes use bsrange=2k-8k)",
        ),
        (
            "[j]\nbs=4k,8k,16k,32k\n",
            "t.fio:2: option 'bs': bad value '4k,8k,16k,32k': expected one value for all directions, or 'read,write' or 'read,write,trim'",
        ),
        (
            "[j]\nbssplit=4k/60:8k/60\n",
            "t.fio:2: option 'bssplit': bad value '4k/60:8k/60': expected size/percent pairs separated by ':' such as 4k/50:64k/50 (percentages add up to 100; an entry without one gets a share of the rest); these add up to 120%",
        ),
        (
            "[j]\nruntime=10sec\n",
            "t.fio:2: option 'runtime': bad value '10sec': expected a time: an integer with an optional suffix us, ms, s, m, h, d (no suffix = seconds)",
        ),
        (
            "[j]\nthinktime=1.5ms\n",
            "t.fio:2: option 'thinktime': bad value '1.5ms': expected a time: an integer with an optional suffix us, ms, s, m, h, d (no suffix = microseconds) (fractions are not supported; use a smaller unit)",
        ),
        (
            "[j]\ndirect=maybe\n",
            "t.fio:2: option 'direct': bad value 'maybe': expected a boolean: 0, 1, true, false, yes, no, on, off",
        ),
        (
            // rw=MODE:N is fio's offset modifier (accepted); a
            // random mode takes a count of I/Os.
            "[j]\nrw=randrw:0\n",
            "t.fio:2: option 'rw': bad value 'randrw:0': expected randrw[:N]: a new random offset every N I/Os (N >= 1), sequential in between, such as randrw:8",
        ),
        (
            // The trim modes run; a name fio lacks is refused.
            "[j]\nrw=discard\n",
            "t.fio:2: option 'rw': bad value 'discard': expected read, write, randread, randwrite, rw (or readwrite), randrw, trim, randtrim, trimwrite, randtrimwrite",
        ),
        (
            "[j]\nioengine=libaoi\n",
            "t.fio:2: option 'ioengine': bad value 'libaoi': expected one of null, sync, psync, vsync, pvsync, pvsync2, libaio, io_uring, posixaio, mmap, falloc, ftruncate, filecreate, filestat, filedelete, cpuio (other fio engines are not supported by iolab)",
        ),
        (
            "[j]\nioengine=sg\n",
            "t.fio:2: option 'ioengine': bad value 'sg': expected one of null, sync, psync, vsync, pvsync, pvsync2, libaio, io_uring, posixaio, mmap, falloc, ftruncate, filecreate, filestat, filedelete, cpuio (iolab does not run sg: SCSI generic passthrough needs a SCSI device (/dev/sgN or a SCSI block device))",
        ),
        (
            "[j]\nsize\n",
            "t.fio:2: option 'size' needs a value: expected a size: an integer with an optional suffix b, k, m, g, t, p (also kb/ki, kib etc.; case-insensitive), e.g. 4k, 1m, 512; or a count of zones such as 2z (with zonemode=strided or zbd)",
        ),
        (
            "[j]\niodpeth=4\n",
            "t.fio:2: unknown option 'iodpeth'; did you mean 'iodepth'?",
        ),
        (
            "[j]\nfrobnicate=4\n",
            "t.fio:2: unknown option 'frobnicate'",
        ),
        (
            // verify_async is accepted with a note (iolab checks on the worker).
            "[j]\nverify_async=many\n",
            "t.fio:2: option 'verify_async': bad value 'many': expected an integer from 0 to 4294967295",
        ),
        (
            "[j]\nprofile=tiobench\n",
            "t.fio:2: fio option 'profile' is not supported by iolab: fio's built-in profiles (tiobench, act) are job generators with options of their own; write the jobs they stand for into a job file instead",
        ),
        (
            "[j]\ncpus_allowed=3-1\n",
            "t.fio:2: option 'cpus_allowed': bad value '3-1': expected range `3-1` in CPU list `3-1` runs backwards",
        ),
        (
            "[j]\ncpumask=0\n",
            "t.fio:2: option 'cpumask': bad value '0': expected a non-zero CPU bit mask, decimal or 0x hex (e.g. 34 or 0x22 = cpu1 and cpu5)",
        ),
        (
            "[j]\ncpus_allowed=0\ncpumask=1\n",
            "t.fio:3: job 'j': cpumask and cpus_allowed both set the job's CPUs: keep one",
        ),
        (
            "[j]\ncpus_allowed_policy=even\n",
            "t.fio:2: option 'cpus_allowed_policy': bad value 'even': expected shared or split",
        ),
        (
            "[j]\ncpus_allowed=0\nplacement=scatter\n",
            "t.fio:3: job 'j': placement=scatter chooses the job's CPUs itself, and cpus_allowed fixes them: keep one",
        ),
        (
            "[j]\nplacement=scattered\n",
            "t.fio:2: option 'placement': bad value 'scattered': expected one of free, bunch, scatter, colocate, spread, balance",
        ),
        (
            "[j]\nplacement=scatter\nbalance_interval=10ms\n",
            "t.fio:3: job 'j': balance_interval only applies with placement=balance (the live balancer)",
        ),
        (
            "[j]\nplacement=balance\nbalance_interval=100us\n",
            "t.fio:3: option 'balance_interval': bad value '100us': expected a time of at least 1ms, e.g. 50ms (the balancer's tick; the study's balancer runs on the scheduler tick)",
        ),
        (
            "[j]\ncorunner_kernel=float\n",
            "t.fio:2: job 'j': corunner_kernel only applies with corunners=N (N > 0)",
        ),
        (
            "[j]\ncorunners=2\ncorunner_kernel=simd\n",
            "t.fio:3: option 'corunner_kernel': bad value 'simd': expected int or float",
        ),
        (
            "[j]\noutput-format=json\n",
            "t.fio:2: option 'output-format' is not valid here: it applies to the whole run and is only accepted on the command line (--output-format=...)",
        ),
        (
            "[j]\nkb_base=512\n",
            "t.fio:2: option 'kb_base': bad value '512': expected 1024 or 1000",
        ),
        (
            "[j]\npercentile_list=99:101\n",
            "t.fio:2: option 'percentile_list': bad value '99:101': expected a ':'-separated list of up to 20 percentiles in [0, 100], e.g. 50:99:99.9",
        ),
        (
            "[j]\nfixedbufs\n",
            "t.fio:2: job 'j': fixedbufs needs ioengine=io_uring, but the job uses ioengine=psync",
        ),
        (
            "[j]\nioengine=libaio\ncount_punts=1\n",
            "t.fio:3: job 'j': count_punts needs ioengine=io_uring, but the job uses ioengine=libaio",
        ),
        (
            "[global]\nhipri\n[j]\n",
            "t.fio:2: job 'j': hipri needs ioengine=io_uring or pvsync2, but the job uses ioengine=psync",
        ),
        (
            "[j]\nnull_lat=10us\n",
            "t.fio:2: job 'j': null_lat configures the emulated device and needs ioengine=null, but the job uses ioengine=psync",
        ),
        (
            "[j]\nioengine=null\nnull_corrupt_rate=0.1\n",
            "t.fio:3: job 'j': null_corrupt_rate needs null_backing=mem (there is no data to corrupt otherwise)",
        ),
        (
            "[j]\nois_max=1m\n",
            "t.fio:2: job 'j': ois_max only applies to iosched=laq",
        ),
        (
            "[j]\niosched=laq\nois_max=1m\nois_min=2m\n",
            "t.fio:4: job 'j': ois_min (2097152) is larger than ois_max (1048576)",
        ),
        (
            "[j]\nioengine=null\nnull_err_rate=2\n",
            "t.fio:3: option 'null_err_rate': bad value '2': expected a probability: a number from 0 to 1 (e.g. 0.001) or a percentage (e.g. 0.1%)",
        ),
        (
            "[j]\nioengine=null\nnull_dist=gauss\n",
            "t.fio:3: option 'null_dist': bad value 'gauss': expected fixed, exp, or uniform[:JITTER] with JITTER in [0, 1] (default 0.5)",
        ),
        (
            "[j]\nioengine=null\nnull_fault_range=2m-1m\n",
            "t.fio:3: option 'null_fault_range': bad value '2m-1m': expected START-END byte offsets with START < END, such as 0-1m",
        ),
        (
            "[j]\nprioclass=4\n",
            "t.fio:2: option 'prioclass': bad value '4': expected an integer from 0 to 3, got 4",
        ),
        (
            "[j]\nsize=1.5g\n",
            "t.fio:2: option 'size': bad value '1.5g': expected a size: an integer with an optional suffix b, k, m, g, t, p (also kb/ki, kib etc.; case-insensitive), e.g. 4k, 1m, 512, or a percentage such as 50% (fractions are not supported: fio would silently truncate them; use a smaller unit, e.g. 1536 instead of 1.5k)",
        ),
        (
            "[globalish]\n",
            "t.fio:1: bad section header '[globalish]': fio treats every section whose name starts with 'global' as [global]; rename the job, or write [global]",
        ),
        (
            "[global]\nbs=8k\n",
            "t.fio: no jobs defined: add a [jobname] section to a job file or --name=NAME on the command line",
        ),
    ];
    for (text, want) in cases {
        match parse(text) {
            Ok(p) => panic!("{text:?} parsed: {:?}", p.jobs),
            Err(e) => assert_eq!(e.to_string(), *want, "input {text:?}"),
        }
    }
}

#[test]
fn malformed_command_lines() {
    let cases: &[(&[&str], &str)] = &[
        (
            &[],
            "command line: no jobs defined: add a [jobname] section to a job file or --name=NAME on the command line",
        ),
        (
            &["--name=j", "--output-format=json,html"],
            "command line: option 'output-format': bad value 'json,html': expected normal, json, json+ or terse, or a comma list of them (e.g. normal,json)",
        ),
        (
            &["--name=j", "--output-format=json,"],
            "command line: option 'output-format': bad value 'json,': expected normal, json, json+ or terse, or a comma list of them (e.g. normal,json); the list has an empty entry",
        ),
        (
            &["--name=j", "--output-format=mininal"],
            "command line: option 'output-format': bad value 'mininal': expected normal, json, json+ or terse, or a comma list of them (e.g. normal,json)",
        ),
        (
            &["--name=j", "--status-interval=0"],
            "command line: option 'status-interval': bad value '0': expected a time of at least 100ms, e.g. 1 (second), 500ms or 2s",
        ),
        (
            &["--name=j", "--status-interval=10ms"],
            "command line: option 'status-interval': bad value '10ms': expected a time of at least 100ms, e.g. 1 (second), 500ms or 2s",
        ),
        (
            &["--name=j", "--status-interval=often"],
            "command line: option 'status-interval': bad value 'often': expected a time of at least 100ms, e.g. 1 (second), 500ms or 2s",
        ),
        (
            &["--name=j", "--status-interval"],
            "command line: option 'status-interval' needs a value: expected a time of at least 100ms, e.g. 1 (second), 500ms or 2s",
        ),
        (
            &["--name=j", "--output"],
            "command line: option 'output' needs a value: expected a file path",
        ),
        (
            &["--name="],
            "command line: option 'name' needs a value: expected a job name",
        ),
        (
            &["--name=j", "-bz=4k"],
            "command line: unknown option '-bz=4k'; did you mean '--bs'?",
        ),
        (
            &["--name=j", "--bs=4k", "--iodepht=2"],
            "command line: unknown option 'iodepht'; did you mean 'iodepth'?",
        ),
        (
            &["missing.fio"],
            "command line: cannot read job file 'missing.fio': entity not found; name a job file that exists and can be read",
        ),
        (
            &["--section=nope", "--name=j"],
            "command line: option 'section': bad value 'nope': expected the name of a job section in the given job files",
        ),
        (
            &["--name=j", "--profile=act"],
            "command line: fio option '--profile' is not supported by iolab: fio's built-in profiles (tiobench, act) are not in iolab; write the profile's jobs as a job file",
        ),
        (
            &["-"],
            "command line: fio option '-' is not supported by iolab: reading a job file from stdin is not supported; give a path",
        ),
    ];
    for (args, want) in cases {
        match cmdline(args, &[]) {
            Ok(p) => panic!("{args:?} parsed: {:?}", p.jobs),
            Err(e) => assert_eq!(e.to_string(), *want, "args {args:?}"),
        }
    }
}

#[test]
fn cpu_options_parse_like_fios() {
    let j = &parse("[j]\ncpus_allowed=0,5,8-10\ncpus_allowed_policy=split\n")
        .unwrap()
        .jobs[0];
    assert_eq!(j.cpus_allowed, vec![0, 5, 8, 9, 10]);
    assert!(j.cpus_allowed_split);
    // fio's example: 34 = cpu1 and cpu5; hex too.
    for mask in ["34", "0x22"] {
        let j = &parse(&format!("[j]\ncpumask={mask}\n")).unwrap().jobs[0];
        assert_eq!(j.cpus_allowed, vec![1, 5], "cpumask={mask}");
        assert!(!j.cpus_allowed_split);
    }
    let j = &parse("[j]\nplacement=balance\ncorunners=3\ncorunner_kernel=float\n")
        .unwrap()
        .jobs[0];
    assert_eq!(j.placement, Some(iolab::placement::Policy::Balance));
    assert_eq!(j.balance_interval, Duration::from_millis(50), "the default");
    assert_eq!(j.corunners, 3);
    assert_eq!(j.corunner_kernel, iolab::placement::corunner::Kernel::Float);
    let j = &parse("[j]\n").unwrap().jobs[0];
    assert!(j.cpus_allowed.is_empty() && j.placement.is_none() && j.corunners == 0);
}

#[test]
fn unsupported_list_is_documented() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/fio-compat.md"))
        .expect("docs/fio-compat.md");
    for (name, _) in describe_unsupported() {
        assert!(
            doc.contains(&format!("`{name}`")),
            "docs/fio-compat.md lacks `{name}`"
        );
    }
    for (name, _) in options::supported_options() {
        assert!(
            doc.contains(&format!("`{name}`")),
            "docs/fio-compat.md lacks `{name}`"
        );
    }
}

/// A typical benchmark file, read from disk through the public entry point.
#[test]
fn a_typical_job_file_from_disk() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ssd.fio");
    std::fs::write(
        &path,
        "# sequential and random, one after the other\n\
         [global]\n\
         bs=4k\n\
         ioengine=io_uring\n\
         iodepth=4\n\
         size=10g\n\
         direct=1\n\
         runtime=60\n\
         directory=/mnt/ssd\n\
         filename=ssd.test.file\n\
         \n\
         [seq-read]\n\
         rw=read\n\
         stonewall\n\
         \n\
         [rand-read]\n\
         rw=randread\n\
         stonewall\n\
         \n\
         [seq-write]\n\
         rw=write\n\
         stonewall\n\
         \n\
         [rand-write]\n\
         rw=randwrite\n\
         stonewall\n",
    )
    .unwrap();
    let args = vec![
        path.display().to_string(),
        "--output-format=json".to_string(),
    ];
    let env = |k: &str| std::env::var(k).ok();
    let p = parse_run_args(&args, &env).unwrap();
    let modes: Vec<&str> = p.jobs.iter().map(|j| j.rw.fio_name()).collect();
    assert_eq!(modes, ["read", "randread", "write", "randwrite"]);
    assert!(p.jobs.iter().all(|j| j.stonewall
        && j.direct
        && j.iodepth == 4
        && j.size == Some(10 << 30)
        && j.runtime == Some(Duration::from_secs(60))
        && j.filename.as_deref() == Some("ssd.test.file")));
    assert_eq!(p.jobs[1].origin, Origin(format!("{}:16", path.display())));
    assert_eq!(p.output_format, OutputFormats::only(OutputFormat::Json));
}

/// fio's JSON `job options` / `global options`: each section's options as written,
/// in order, a repeated key keeping its last value; a flag written alone has
/// no value and is not listed (fio 3.33 leaves it out), one written `=1` is.
#[test]
fn options_are_kept_as_written_for_the_report() {
    let p = parse(
        "[global]\nioengine=null\nsize=64m\ngroup_reporting\n[a]\nrw=randread\nbs=4k\nbs=8k\n\
         [b]\nrw=write\ntime_based\nnew_group=1\n",
    )
    .unwrap();
    let own = |v: &[(&str, &str)]| {
        v.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        p.global_options,
        own(&[("ioengine", "null"), ("size", "64m")])
    );
    assert_eq!(p.jobs[0].options, own(&[("rw", "randread"), ("bs", "8k")]));
    assert_eq!(
        p.jobs[1].options,
        own(&[("rw", "write"), ("new_group", "1")])
    );
}

/// docs/fio-compat.md's option table is the option table: it cannot drift.
/// `IOLAB_BLESS=1 cargo test --test job_parse docs_option_table` rewrites it.
#[test]
fn docs_option_table_is_generated_from_the_table() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/fio-compat.md");
    let doc = std::fs::read_to_string(path).expect("docs/fio-compat.md");
    let begin = "<!-- BEGIN option table: generated by `iolab run --cmdhelp=markdown` -->\n";
    let end = "<!-- END option table -->";
    let (head, rest) = doc
        .split_once(begin)
        .expect("begin marker in docs/fio-compat.md");
    let (got, tail) = rest
        .split_once(end)
        .expect("end marker in docs/fio-compat.md");
    let want = iolab::job::table::markdown();
    if std::env::var_os("IOLAB_BLESS").is_some() && got != want {
        // Written whole then renamed: other tests read the page meanwhile.
        let tmp = format!("{path}.bless");
        std::fs::write(&tmp, format!("{head}{begin}{want}{end}{tail}")).unwrap();
        std::fs::rename(&tmp, path).unwrap();
        return;
    }
    assert!(
        got == want,
        "docs/fio-compat.md's option table differs from src/job/table.rs: run \
         IOLAB_BLESS=1 cargo test --test job_parse docs_option_table"
    );
}

/// Every entry that is not refused has a setter, and no name is listed twice.
#[test]
fn option_table_is_consistent() {
    use iolab::job::table::{OPTIONS, Status};
    let mut seen = std::collections::HashSet::new();
    for o in OPTIONS {
        for n in o.names() {
            assert!(
                seen.insert(n),
                "option name '{n}' appears twice in the table"
            );
        }
        assert_eq!(
            o.has_setter(),
            !matches!(o.status, Status::Refused(_)),
            "option '{}': implemented options need a setter, refused ones none",
            o.name
        );
        if !matches!(o.status, Status::Refused(_)) {
            assert!(!o.help.is_empty(), "option '{}' has no help text", o.name);
        }
    }
}

#[test]
fn cmdhelp_describes_options_from_the_table() {
    use iolab::job::table::cmdhelp;
    let all = cmdhelp(Some("all")).unwrap();
    assert!(
        all.contains("iodepth") && all.contains("I/O depth:"),
        "{all}"
    );
    assert_eq!(cmdhelp(None).unwrap(), all);
    let one = cmdhelp(Some("blocksize")).unwrap();
    assert!(one.contains("name      : bs\n"), "{one}");
    assert!(one.contains("status    : stricter"), "{one}");
    let refused = cmdhelp(Some("profile")).unwrap();
    assert!(
        refused.contains("refused") && refused.contains("job file"),
        "{refused}"
    );
    let e = cmdhelp(Some("iodeph")).unwrap_err().to_string();
    assert!(e.contains("did you mean 'iodepth'"), "{e}");
}

/// fio reads a number and its unit and ignores what follows; its own
/// t/strided.py passes `--filesize=65536)`. iolab reads a value whose only
/// trailing text is closing parentheses it never opened without them, with
/// a note (fio says nothing), and refuses any other trailing text.
#[test]
fn a_stray_closing_parenthesis_after_a_number_is_ignored_with_a_note() {
    let p = cmdline(&["--name=j", "--filesize=65536)", "--bs=4k))"], &[]).unwrap();
    assert_eq!(p.jobs[0].size, Some(65536));
    assert_eq!(p.jobs[0].bs[0].min(), 4096);
    assert!(p.warnings.is_empty(), "{:?}", p.warnings);
    let notes: Vec<String> = p.notes.iter().map(|n| n.to_string()).collect();
    assert_eq!(
        notes,
        [
            "command line: filesize=65536) is read as filesize=65536: the unmatched ')' is \
             ignored, as fio ignores what follows a number",
            "command line: bs=4k)) is read as bs=4k: the unmatched '))' is ignored, as fio \
             ignores what follows a number",
        ]
    );
    // A balanced expression is fio's arithmetic; anything else after the
    // number stays an error, as does a ')' after a complete expression
    // (fio refuses that one too).
    let p = cmdline(&["--name=j", "--size=(64*1k)"], &[]).unwrap();
    assert!(p.notes.is_empty());
    for bad in [
        "--size=64k)+1",
        "--size=65536abc",
        "--size=(64k))",
        "--size=)",
    ] {
        let e = cmdline(&["--name=j", bad], &[]).unwrap_err().to_string();
        assert!(e.contains("bad value"), "{bad}: {e}");
    }
}

/// fio options iolab accepts as written: `thread` (iolab's workers are
/// threads), `description`, and those where iolab keeps measuring, which note
/// it once per run however often they appear. Notes are not warnings (fio
/// accepts the options silently), so `--warnings-fatal` lets them through.
#[test]
fn accepted_fio_options_and_their_one_note() {
    let p = parse(
        "[global]\nthread\ndescription=a test\ngtod_reduce=1\n\
         [a]\nthreads=1\nnew_group\nclat_percentiles=0\n[b]\ngtod_reduce=1\ndisable_slat=1\n",
    )
    .unwrap();
    assert_eq!(p.jobs.len(), 2);
    assert!(p.warnings.is_empty(), "{:?}", p.warnings);
    let notes = |name: &str| p.notes.iter().filter(|n| n.option == name).count();
    assert_eq!(notes("gtod_reduce"), 1, "{:?}", p.notes);
    // new_group has fio's meaning: no note.
    assert_eq!(notes("new_group"), 0, "{:?}", p.notes);
    assert!(p.jobs[0].new_group && !p.jobs[1].new_group);
    assert_eq!(notes("clat_percentiles"), 1, "{:?}", p.notes);
    assert_eq!(notes("disable_slat"), 1, "{:?}", p.notes);
    assert!(
        p.notes.iter().all(|n| !n.option.contains("thread")),
        "thread needs no note: {:?}",
        p.notes
    );
    assert_eq!(p.notes[0].at, "t.fio:4");
    assert!(
        p.notes[0]
            .to_string()
            .starts_with("t.fio:4: gtod_reduce is accepted, but "),
        "{}",
        p.notes[0]
    );
    let p = parse("[j]\nclocksource=cpu\n").unwrap();
    assert!(
        p.notes.iter().any(|n| n.option == "clocksource"),
        "{:?}",
        p.notes
    );
    let p = cmdline(&["--warnings-fatal", "--name=j", "--gtod_reduce=1"], &[]).unwrap();
    assert_eq!(p.notes.len(), 1, "{:?}", p.notes);
    // Options with fio's meaning have no note.
    let p = parse("[j]\nrw=write\nverify=md5\nverify_dump=1\nexperimental_verify=1\n").unwrap();
    assert!(p.notes.is_empty(), "{:?}", p.notes);
    let e = parse("[j]\nrandom_generator=mt\n").unwrap_err().to_string();
    assert!(e.contains("t.fio:2") && e.contains("lfsr"), "{e}");
    let e = parse("[j]\nthread=maybe\n").unwrap_err().to_string();
    assert!(
        e.contains("t.fio:2") && e.contains("'thread'") && e.contains("maybe"),
        "{e}"
    );
    let e = parse("[j]\ndescription=\n").unwrap_err().to_string();
    assert!(e.contains("non-empty"), "{e}");
    let e = parse("[j]\nprofile=act\n").unwrap_err().to_string();
    assert!(e.contains("not supported") && e.contains("job file"), "{e}");
    // fio ignores cpus_allowed_policy without a CPU list, and so does iolab.
    assert!(parse("[j]\ncpus_allowed_policy=split\n").is_ok());
}

/// fio parses ioengine first: a refused engine is named, not its own options.
#[test]
fn a_refused_engine_is_named_before_its_own_options() {
    let e = parse("[j]\nnfs_url=nfs://x/y\nioengine=nfs\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("'ioengine'") && e.contains("nfs"), "{e}");
}

/// `--max-runtime`, `--max-size`, `--scratch-dir` apply to every job, whatever
/// the job files say.
#[test]
fn run_caps_apply_to_every_job() {
    let file = "[global]\nsize=10g\nramp_time=5\n[a]\nfilename=/dev/sdb\nruntime=60\n\
                [b]\ndirectory=/mnt/x\n[c]\nioengine=null\nsize=50%\n";
    let p = cmdline(
        &[
            "job.fio",
            "--max-runtime=200ms",
            "--max-size=1m",
            "--scratch-dir=/tmp/s",
        ],
        &[("job.fio", file)],
    )
    .unwrap();
    let cap = Duration::from_millis(200);
    for j in &p.jobs {
        assert_eq!(j.runtime, Some(cap), "{}", j.name);
        assert!(j.ramp_time <= cap, "{}", j.name);
        assert_eq!(
            (j.size, j.size_percent),
            (Some(1 << 20), None),
            "{}",
            j.name
        );
    }
    assert_eq!(p.jobs[0].filename.as_deref(), Some("/tmp/s/sdb"));
    assert_eq!(p.jobs[1].directory.as_deref(), Some("/tmp/s"));
    assert_eq!(p.jobs[2].filename, None, "null jobs have no files to move");
    assert_eq!(p.caps.max_size, Some(1 << 20));
    let e = cmdline(&["job.fio", "--max-runtime=0"], &[("job.fio", file)])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("max-runtime") && e.contains("greater than zero"),
        "{e}"
    );
    let e = cmdline(&["job.fio", "--max-size", "lots"], &[("job.fio", file)])
        .unwrap_err()
        .to_string();
    assert!(e.contains("max-size") && e.contains("lots"), "{e}");
}

/// fio's `rw=MODE:N`: a size for sequential modes (negative = backwards), a
/// count for random ones; and `norandommap`.
#[test]
fn rw_suffix_and_norandommap() {
    let j = &parse("[j]\nrw=read:-8k\n").unwrap().jobs[0];
    assert_eq!(j.rw_suffix, RwSuffix::Add(-8192));
    let j = &parse("[j]\nrw=write:112k\nnorandommap\n").unwrap().jobs[0];
    assert_eq!(j.rw_suffix, RwSuffix::Add(112 * 1024));
    assert!(j.norandommap);
    let j = &parse("[j]\nrw=randread:8\n").unwrap().jobs[0];
    assert_eq!(
        (j.rw.pattern, j.rw_suffix),
        (Pattern::Rand, RwSuffix::Every(8))
    );
    assert_eq!(parse("[j]\n").unwrap().jobs[0].rw_suffix, RwSuffix::None);
    for (text, want) in [
        ("rw=read:x", "a hole after each I/O"),
        ("rw=randread:0", "every N I/Os"),
        ("rw=randread:-2", "every N I/Os"),
        ("norandommap=2", "boolean"),
    ] {
        let e = parse(&format!("[j]\n{text}\n")).unwrap_err().to_string();
        assert!(e.contains("t.fio:2") && e.contains(want), "{text}: {e}");
    }
}

/// `filesize` with one file per job: the file's size, and the job's size when
/// `size` is not given.
#[test]
fn filesize_is_the_one_files_size() {
    let j = &parse("[j]\nfilesize=128m\n").unwrap().jobs[0];
    assert_eq!(j.size, Some(128 << 20));
    let j = &parse("[j]\nfilesize=1g\nsize=1g\n").unwrap().jobs[0];
    assert_eq!(j.size, Some(1 << 30));
    // fio: with filesize, size is the default io_size (a smaller size
    // limits the I/O; a larger one is clamped to what the files hold).
    let j = &parse("[j]\nfilesize=1g\nsize=4k\n").unwrap().jobs[0];
    assert_eq!((j.size, j.io_size), (Some(1 << 30), Some(4096)));
    let j = &parse("[j]\nfilesize=1m\nsize=4m\n").unwrap().jobs[0];
    assert_eq!((j.size, j.io_size), (Some(1 << 20), None));
    // A range, or size=N% beside filesize: each file sized when the job
    // starts (engine::files::file_sizes); size= stays the job's own.
    let j = &parse("[j]\nfilesize=1g\nsize=50%\n").unwrap().jobs[0];
    let s = j.files.sizes.unwrap();
    assert_eq!((s.low, s.high, s.percent), (1 << 30, 1 << 30, Some(50)));
    assert_eq!((j.size, j.size_percent), (None, None));
    let j = &parse("[j]\nfilesize=8k-4k\nsize=1m\n").unwrap().jobs[0];
    let s = j.files.sizes.unwrap();
    assert_eq!((s.low, s.high, s.percent), (4096, 8192, None));
    assert_eq!(j.size, Some(1 << 20));
    let e = parse("[j]\nfilesize=4k-x\n").unwrap_err().to_string();
    assert!(e.contains("t.fio:2") && e.contains("filesize"), "{e}");
    let e = parse("[j]\nfilesize=0\n").unwrap_err().to_string();
    assert!(e.contains("greater than zero"), "{e}");
}

/// fio reads its command line with getopt_long_only: one dash is as good as
/// two for a long option, with `=value` or the value in the next argument.
#[test]
fn single_dash_long_options_are_fios_long_options() {
    let one = cmdline(
        &[
            "-name=t",
            "-rw=randread",
            "-iodepth",
            "4",
            "-direct=1",
            "-group_reporting",
            "-output-format=json",
            "-name",
            "u",
            "-bs=8k",
        ],
        &[],
    )
    .unwrap();
    let two = cmdline(
        &[
            "--name=t",
            "--rw=randread",
            "--iodepth",
            "4",
            "--direct=1",
            "--group_reporting",
            "--output-format=json",
            "--name",
            "u",
            "--bs=8k",
        ],
        &[],
    )
    .unwrap();
    assert_eq!(format!("{:?}", one.jobs), format!("{:?}", two.jobs));
    assert_eq!(one.output_format, OutputFormats::only(OutputFormat::Json));
    assert_eq!((one.jobs[0].iodepth, one.jobs[0].direct), (4, true));
    assert_eq!(one.jobs[1].bs[0], BlockSizes::Fixed(8192));
    // fio's own flags take their value from the next argument too.
    let p = cmdline(
        &[
            "-name=t",
            "--eta",
            "never",
            "-max-jobs",
            "16",
            "--eta-newline",
            "2",
            "-bs=8k",
        ],
        &[],
    )
    .unwrap();
    assert_eq!(
        (p.jobs.len(), p.jobs[0].bs[0].clone()),
        (1, BlockSizes::Fixed(8192))
    );
    // A name neither fio nor iolab knows stays an error, with the near miss.
    let e = cmdline(&["-name=t", "-iodeph=4"], &[])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("unknown option '-iodeph=4'") && e.contains("'--iodepth'"),
        "{e}"
    );
}

/// fio's other names for libaio.
#[test]
fn linuxaio_and_aio_are_libaio() {
    for name in ["libaio", "linuxaio", "aio"] {
        let p = parse(&format!("[j]\nioengine={name}\n")).unwrap();
        assert_eq!(p.jobs[0].ioengine, Engine::Libaio, "{name}");
    }
}

/// `Nz` counts zones in size, io_size, offset, offset_increment and zoneskip
/// (fio multiplies by the zone size); without a zone mode it is an error.
#[test]
fn zone_counts_are_multiples_of_the_zone_size() {
    let p = parse(
        "[global]\nzonemode=strided\nzonesize=1m\nzonerange=4m\nsize=8z\n\
         [j]\nio_size=3z\noffset=1z\noffset_increment=2z\nzoneskip=1z\nnumjobs=2\n\
         [k]\nsize=2m\n",
    )
    .unwrap();
    let j = &p.jobs[0];
    assert_eq!(j.size, Some(8 << 20));
    assert_eq!(j.io_size, Some(3 << 20));
    assert_eq!(j.offset, 1 << 20);
    assert_eq!(j.offset_increment, 2 << 20);
    assert_eq!(j.zones.skip, 1 << 20);
    // A byte value in the job replaces the global count.
    assert_eq!(p.jobs.last().unwrap().size, Some(2 << 20));
    let e = parse("[j]\nsize=4z\n").unwrap_err().to_string();
    assert!(
        e.contains("size is a count of zones (Nz), which needs zonemode=strided or zonemode=zbd"),
        "{e}"
    );
}

/// Options fio takes where they do nothing run with a note, not an error.
#[test]
fn options_without_effect_are_noted_as_fio_ignores_them() {
    let cases: [(&str, &str); 4] = [
        ("do_verify=0\nverify_fatal=0\nverify_dump=0\n", "do_verify"),
        ("verify=none\ndo_verify=1\n", "do_verify"),
        (
            "rw=write\nrandom_distribution=zipf:1.2\n",
            "random_distribution",
        ),
        (
            "ioengine=libaio\nuserspace_reap\niodepth_batch_complete=8\n",
            "userspace_reap",
        ),
    ];
    for (body, option) in cases {
        let p = parse(&format!("[j]\n{body}")).unwrap_or_else(|e| panic!("{body}: {e}"));
        let note = p
            .notes
            .iter()
            .find(|n| n.option == option)
            .unwrap_or_else(|| panic!("{body}: no note for {option}: {:?}", p.notes));
        assert!(note.note.contains("has no effect"), "{}", note.note);
    }
    // verify_only without a checksum would have fio neither write nor check.
    let e = parse("[j]\nrw=write\nverify_only=1\n")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("verify_only has no effect without verify="),
        "{e}"
    );
    // userspace_reap without its minimum of 0 is io_getevents, as in fio.
    let p = parse("[j]\nioengine=libaio\nuserspace_reap\n").unwrap();
    assert!(!p.jobs[0].backend.libaio.ring_only());
    // A block-size mix written in bs= points to bssplit.
    let e = parse("[j]\nbs=4k/50:8k/50\n").unwrap_err().to_string();
    assert!(e.contains("bssplit=4k/50:8k/50"), "{e}");
}
