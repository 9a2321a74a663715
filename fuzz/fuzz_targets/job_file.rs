//! Any text as a job file. Includes resolve to the input itself, so include
//! cycles and deep nesting are exercised too.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    iolab_fuzz_support::job_file(&text);
});

#[path = "support.rs"]
mod iolab_fuzz_support;
