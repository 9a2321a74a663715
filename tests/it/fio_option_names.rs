//! Every option name fio 3.33 prints (`fio --cmdhelp=all`, and
//! `fio --enghelp=E` for the engines users name on Linux) is known to iolab's
//! option table: with fio's meaning, accepted with a note, or refused with the
//! reason. An unknown name fails the test, listed.

use std::process::Command;

use crate::support::needs::{Need, ready};

const ENGINES: [&str; 7] = [
    "io_uring", "libaio", "psync", "pvsync2", "sync", "mmap", "null",
];

/// The names of `name : description` lines (children are indented).
fn names(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.split_once(':'))
        .map(|(n, _)| n.trim().to_string())
        .filter(|n| !n.is_empty() && !n.contains(' '))
        .collect()
}

fn fio(arg: &str) -> String {
    let out = Command::new("fio").arg(arg).output().expect("fio runs");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn every_fio_option_name_is_known() {
    if !ready(&[Need::Fio]) {
        return;
    }
    let mut all = names(&fio("--cmdhelp=all"));
    assert!(
        all.len() > 150,
        "fio --cmdhelp=all printed {} names",
        all.len()
    );
    for e in ENGINES {
        all.extend(names(&fio(&format!("--enghelp={e}"))));
    }
    all.sort();
    all.dedup();
    let unknown: Vec<&String> = all
        .iter()
        .filter(|n| iolab::job::table::find(n).is_none())
        .collect();
    assert!(
        unknown.is_empty(),
        "{} of fio's {} option names are unknown to iolab's option table: {}",
        unknown.len(),
        all.len(),
        unknown
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    );
}
