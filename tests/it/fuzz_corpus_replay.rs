//! Replays every committed fuzz input (fuzz/corpus/<target>/, and any crash
//! kept under fuzz/artifacts/<target>/) through the same harness the fuzzer
//! ran, on stable: a parser change that panics on any of them fails here.

use std::path::Path;

// The fuzz targets' own harness (not the tests' `support`).
#[path = "../../fuzz/fuzz_targets/support.rs"]
mod fuzz_harness;

fn replay(target: &str, run: fn(&[u8])) -> usize {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    let mut n = 0;
    let mut panics = Vec::new();
    for dir in ["corpus", "artifacts"] {
        let Ok(entries) = std::fs::read_dir(root.join(dir).join(target)) else {
            continue;
        };
        for e in entries {
            let path = e.unwrap().path();
            let data = std::fs::read(&path).unwrap();
            n += 1;
            if std::panic::catch_unwind(|| run(&data)).is_err() {
                panics.push(path.display().to_string());
            }
        }
    }
    assert!(
        panics.is_empty(),
        "{target}: the parser panicked on {panics:?}"
    );
    n
}

#[test]
fn job_file_corpus_never_panics() {
    let n = replay("job_file", |d| {
        fuzz_harness::job_file(&String::from_utf8_lossy(d))
    });
    assert!(n >= 3, "the job_file corpus is missing ({n} files)");
}

#[test]
fn cmdline_corpus_never_panics() {
    let n = replay("cmdline", |d| {
        fuzz_harness::cmdline(&String::from_utf8_lossy(d))
    });
    assert!(n >= 2, "the cmdline corpus is missing ({n} files)");
}

#[test]
fn option_value_corpus_never_panics() {
    let n = replay("option_value", fuzz_harness::option_value);
    assert!(n >= 3, "the option_value corpus is missing ({n} files)");
}
