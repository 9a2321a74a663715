//! Shared by the fuzz targets and by tests/fuzz_corpus_replay.rs (which
//! includes this file), so the replay runs the corpus exactly as fuzzing did.
#![allow(dead_code)]

use std::path::Path;

use iolab::job::{Keywords, ParseCtx, parse_job_file_str, parse_run_args_with};

fn keywords() -> Keywords {
    Keywords {
        pagesize: 4096,
        mb_memory: 24 * 1024,
        ncpus: 2,
    }
}

/// A parsed plan must also be printable: serialising walks every field.
fn touch(plan: &iolab::job::RunPlan) {
    for j in &plan.jobs {
        let _ = serde_json::to_string(j);
    }
}

/// Any variable is set to its own name's length in kilobytes, or unset when
/// the name starts with 'U', so both expansion paths run.
fn env(k: &str) -> Option<String> {
    if k.starts_with('U') {
        None
    } else {
        Some(format!("{}k", k.len()))
    }
}

pub fn job_file(text: &str) {
    let me = text.to_string();
    let read = move |_: &Path| Ok(me.clone());
    let ctx = ParseCtx {
        env: &env,
        keywords: keywords(),
        read_file: &read,
    };
    if let Ok(plan) = parse_job_file_str(text, "fuzz.fio", &ctx) {
        touch(&plan);
    }
}

pub fn cmdline(text: &str) {
    let args: Vec<String> = text.split(['\0', '\n']).map(str::to_string).collect();
    let read = |_: &Path| Ok(String::from("[inc]\nrw=randread\nbs=4k\n"));
    let ctx = ParseCtx {
        env: &env,
        keywords: keywords(),
        read_file: &read,
    };
    if let Ok(plan) = parse_run_args_with(&args, &ctx) {
        touch(&plan);
    }
}

pub fn option_value(data: &[u8]) {
    let Some((&pick, value)) = data.split_first() else {
        return;
    };
    let names: Vec<&str> = iolab::job::options::supported_options()
        .map(|(n, _)| n)
        .collect();
    let name = names[pick as usize % names.len()];
    let value = String::from_utf8_lossy(value);
    // The option in a job, once alone and once after settings it interacts with.
    job_file(&format!("[j]\n{name}={value}\n"));
    job_file(&format!(
        "[global]\nioengine=null\nsize=1m\n[j]\nrw=randwrite\nverify=crc32c\n{name}={value}\n"
    ));
}
