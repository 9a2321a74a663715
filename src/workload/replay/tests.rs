use super::blktrace::{
    self, BlkIoTrace, MAGIC, TA_QUEUE, TC_DISCARD, TC_FLUSH, TC_QUEUE, TC_READ, TC_WRITE, VERSION,
};
use super::*;

fn opts() -> ReplayOptions {
    ReplayOptions::default()
}

fn parse_str(text: &str, o: &ReplayOptions) -> Result<Trace, ReplayError> {
    parse(Path::new("t.log"), text.as_bytes(), o)
}

fn ios(t: &Trace) -> Vec<(u16, Op, u64, u32, u64)> {
    t.entries
        .iter()
        .map(|e| (e.file, e.op, e.offset, e.len, e.gap_ns))
        .collect()
}

const V3: &str = "fio version 3 iolog
24 /tmp/f1 add
137 /tmp/f1 open
142 /tmp/f1 read 0 4096
170 /tmp/f1 write 45056 8192
1170 /tmp/f1 trim 8192 4096
1200 /tmp/f1 sync 0 0
1300 /tmp/f1 datasync 0 0
1400 /tmp/f1 close
";

#[test]
fn version_3_lines_give_files_ios_and_gaps() {
    let t = parse_str(V3, &opts()).unwrap();
    assert_eq!(t.files, vec![PathBuf::from("/tmp/f1")]);
    // The first line has no gap (fio's last_ttime starts at 0); the add and
    // open lines' gaps are waited before the first I/O: 113 + 5 us.
    assert_eq!(
        ios(&t),
        vec![
            (0, Op::Read, 0, 4096, 118_000),
            (0, Op::Write, 45056, 8192, 28_000),
            (0, Op::Trim, 8192, 4096, 1_000_000),
            (0, Op::Fsync, 0, 0, 30_000),
            (0, Op::Fsync, 0, 0, 100_000),
        ]
    );
    assert_eq!(t.span_ns(), 1_276_000);
    assert!(t.writes());
    assert_eq!(t.max_len(), 8192);
    assert_eq!(t.file_ends(), vec![53248]);
}

#[test]
fn version_2_has_no_times_but_waits() {
    let t = parse_str(
        "fio version 2 iolog\n/a add\n/b add\n/a open\n/a read 4096 512\n/b wait 2000 0\n\
         /b write 0 4096\n/a close\n",
        &opts(),
    )
    .unwrap();
    assert_eq!(t.files.len(), 2);
    assert_eq!(
        ios(&t),
        vec![
            (0, Op::Read, 4096, 512, 0),
            (1, Op::Write, 0, 4096, 2_000_000)
        ]
    );
    // replay_no_stall drops the waits.
    let o = ReplayOptions {
        no_stall: true,
        ..opts()
    };
    assert_eq!(
        parse_str(
            "fio version 2 iolog\n/b add\n/b wait 2000 0\n/b read 0 1\n",
            &o
        )
        .unwrap()
        .span_ns(),
        0
    );
}

#[test]
fn bad_lines_name_the_file_and_line() {
    let cases: &[(&str, &str)] = &[
        (
            "fio version 3 iolog\n0 /a add\n5 /a frob 0 4096\n",
            "t.log:3: unknown I/O action 'frob'",
        ),
        (
            "fio version 3 iolog\n0 /a add\nx /a read 0 4096\n",
            "t.log:3: 'x' is not a timestamp",
        ),
        (
            "fio version 3 iolog\n0 /a add\n1 /b read 0 4096\n",
            "t.log:3: an I/O on '/b', which no add line",
        ),
        (
            "fio version 3 iolog\n0 /a add\n1 /a read zero 4096\n",
            "t.log:3: offset 'zero' is not a whole number",
        ),
        (
            "fio version 3 iolog\n0 /a add\n1 /a wait 10 0\n",
            "t.log:3: wait is not allowed in a version 3 log",
        ),
        (
            "fio version 2 iolog\n/a add\n/a read 0\n",
            "t.log:3: '/a read 0' is not a version 2 line",
        ),
        (
            "fio version 2 iolog\n/a open\n",
            "t.log:2: '/a' is opened or closed before an add line",
        ),
        (
            "fio version 3 iolog\n0 /a add\n1 /a explode\n",
            "t.log:3: unknown file action 'explode'",
        ),
        (
            "fio version 3 iolog\n0 /a add\n1 /a read 0 99999999999\n",
            "t.log:3: length 99999999999 is over 4 GiB",
        ),
        (
            "rw, offset, length\n0, 0, 4096\n",
            "is neither an fio iolog",
        ),
        ("fio version 3 iolog\n0 /a add\n", "has no I/O to replay"),
    ];
    for (text, want) in cases {
        let e = parse_str(text, &opts()).unwrap_err().to_string();
        assert!(e.contains(want), "{text:?}: {e}");
    }
}

#[test]
fn a_repeated_header_from_clones_is_not_an_io() {
    let t = parse_str(
        "fio version 3 iolog\n0 /a add\n9 /a read 0 4096\nfio version 3 iolog\n0 /a add\n4 /a read 4096 4096\n",
        &opts(),
    )
    .unwrap();
    // The second clone's times start again: an earlier time waits nothing,
    // and after a time of 0 fio waits nothing either.
    assert_eq!(
        ios(&t),
        vec![(0, Op::Read, 0, 4096, 0), (0, Op::Read, 4096, 4096, 0)]
    );
}

#[test]
fn scale_align_skip_redirect_and_time_scale() {
    let o = ReplayOptions {
        scale: 2,
        align: 4096,
        redirect: Some("/dev/target".into()),
        skip: ReplaySkip {
            write: true,
            ..Default::default()
        },
        time_scale: 200,
        ..opts()
    };
    let t = parse_str(
        "fio version 3 iolog\n0 /a add\n0 /b add\n100 /a read 20480 4096\n300 /b write 0 4096\n\
         500 /b read 13000 512\n",
        &o,
    )
    .unwrap();
    // Both files are the redirect's one; offsets halved then aligned down;
    // the write is left out with its gap; twice the rate halves the gaps.
    assert_eq!(t.files, vec![PathBuf::from("/dev/target")]);
    assert_eq!(t.skipped, 1);
    assert_eq!(
        ios(&t),
        vec![
            (0, Op::Read, 8192, 4096, 0),
            (0, Op::Read, 4096, 512, 100_000)
        ]
    );
    assert_eq!(o.map_offset(12345), 4096);
    let half = ReplayOptions {
        time_scale: 50,
        ..opts()
    };
    let t = parse_str("fio version 3 iolog\n1 /a add\n11 /a read 0 1\n", &half).unwrap();
    assert_eq!(t.entries[0].gap_ns, 20_000);
    let all = ReplayOptions {
        skip: ReplaySkip {
            read: true,
            ..Default::default()
        },
        ..opts()
    };
    let e = parse_str("fio version 3 iolog\n1 /a add\n11 /a read 0 1\n", &all).unwrap_err();
    assert!(e.to_string().contains("1 left out by replay_skip"), "{e}");
}

#[test]
fn the_cursor_keeps_the_log_gaps_from_each_issue() {
    let t = parse_str(
        "fio version 3 iolog\n1 /a add\n11 /a read 0 4096\n1011 /a read 4096 4096\n3011 /a read 0 4096\n3111 /a read 0 4096\n",
        &opts(),
    )
    .unwrap();
    let mut r = Replay::new(&t);
    let now = 1_000_000u64;
    r.next_io().unwrap();
    assert_eq!(
        r.due(now),
        now + 10_000,
        "the first gap counts from the first ask"
    );
    r.issued(now + 10_500); // waited, overslept by 500 ns: not carried on
    r.next_io().unwrap();
    assert_eq!(r.due(now + 10_600), now + 1_010_000);
    // It waited for its time, and went later still: the next gap counts
    // from its time.
    r.issued(now + 1_500_000);
    r.next_io().unwrap();
    // (asked when it is already past due)
    assert_eq!(r.due(now + 3_500_000), now + 1_010_000 + 2_000_000);
    // Already due when first asked (the queue was full until now): the
    // next gap counts from when it went, as fio's gaps count from the issue.
    r.issued(now + 4_000_000);
    r.next_io().unwrap();
    assert_eq!(r.due(now + 4_000_000), now + 4_100_000);
    assert_eq!(r.file(), 0);
    assert!(r.next_io().is_none());
    assert_eq!(r.position(), 4);
}

fn rec(time: u64, sector: u64, bytes: u32, tc: u32, action: u32, dev: u32) -> BlkIoTrace {
    BlkIoTrace {
        magic: MAGIC | VERSION,
        time,
        sector,
        bytes,
        action: (tc << 16) | action,
        device: dev,
        ..Default::default()
    }
}

#[test]
fn blktrace_queue_events_replay_as_fio_reads_them() {
    let dev = (7 << 20) | 99;
    let mut bytes = Vec::new();
    let recs = [
        rec(1_000, 8, 4096, TC_QUEUE | TC_READ, TA_QUEUE, dev),
        // Not a queue event: left out.
        rec(1_500, 8, 4096, TC_READ, 7, dev),
        rec(3_000, 16, 8192, TC_QUEUE | TC_WRITE, TA_QUEUE, dev),
        rec(
            4_000,
            64,
            4096,
            TC_QUEUE | TC_DISCARD | TC_WRITE,
            TA_QUEUE,
            dev,
        ),
        rec(9_000, 0, 0, TC_QUEUE | TC_FLUSH | TC_WRITE, TA_QUEUE, dev),
    ];
    for (i, r) in recs.iter().enumerate() {
        let mut r = *r;
        // A payload after the second record is stepped over.
        if i == 1 {
            r.pdu_len = 5;
        }
        bytes.extend_from_slice(&r.encode());
        if i == 1 {
            bytes.extend_from_slice(b"abcde");
        }
    }
    assert_eq!(blktrace::magic(&bytes), Some(false));
    let o = ReplayOptions {
        redirect: Some("/dev/null".into()),
        ..opts()
    };
    let t = parse(Path::new("bt.bin"), &bytes, &o).unwrap();
    assert!(t.blktrace);
    assert_eq!(t.files, vec![PathBuf::from("/dev/null")]);
    assert_eq!(
        ios(&t),
        vec![
            (0, Op::Read, 4096, 4096, 0),
            (0, Op::Write, 8192, 8192, 2_000),
            (0, Op::Trim, 32768, 4096, 1_000),
            (0, Op::Fsync, 0, 0, 5_000),
        ]
    );
    // Big-endian files are read too.
    let mut be = Vec::new();
    for r in &recs[..1] {
        let le = r.encode();
        for f in [
            0..4,
            4..8,
            8..16,
            16..24,
            24..28,
            28..32,
            32..36,
            36..40,
            40..44,
            44..46,
            46..48,
        ] {
            be.extend(le[f].iter().rev());
        }
    }
    assert_eq!(blktrace::magic(&be), Some(true));
    assert_eq!(ios(&parse(Path::new("be"), &be, &o).unwrap())[0].2, 4096);
    // An unknown device without replay_redirect names the device.
    let e = parse(Path::new("bt.bin"), &bytes, &opts())
        .unwrap_err()
        .to_string();
    assert!(e.contains("device 7:99 is not a block device"), "{e}");
    // A cut-off record is an error.
    let e = parse(Path::new("bt.bin"), &bytes[..bytes.len() - 3], &o)
        .unwrap_err()
        .to_string();
    assert!(e.contains("truncated"), "{e}");
}

#[test]
fn merged_blktraces_interleave_by_scaled_time() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, recs: &[BlkIoTrace]| {
        let p = dir.path().join(name);
        let b: Vec<u8> = recs.iter().flat_map(|r| r.encode()).collect();
        std::fs::write(&p, b).unwrap();
        p
    };
    let a = write(
        "a",
        &[
            rec(100, 0, 512, TC_QUEUE | TC_READ, TA_QUEUE, 1),
            rec(200, 1, 512, TC_QUEUE | TC_READ, TA_QUEUE, 1),
        ],
    );
    let b = write("b", &[rec(150, 2, 512, TC_QUEUE | TC_WRITE, TA_QUEUE, 1)]);
    let out = dir.path().join("m");
    // a at half its times, twice; b as is.
    let n = blktrace::merge(&[a, b], &[50.0, 100.0], &[2.0, 1.0], &out).unwrap();
    assert_eq!(n, 5);
    let o = ReplayOptions {
        redirect: Some("/x".into()),
        ..opts()
    };
    let t = load(&out, &o).unwrap();
    let order: Vec<(Op, u64)> = t.entries.iter().map(|e| (e.op, e.offset / 512)).collect();
    // a: 50, 100, then repeated 200 later: 150, 200; b: 150.
    assert_eq!(
        order,
        vec![
            (Op::Read, 0),
            (Op::Read, 1),
            (Op::Read, 0),
            (Op::Write, 2),
            (Op::Read, 1)
        ]
    );
}
