//! Any bytes as a command line: NUL or newline separate the arguments.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    iolab_fuzz_support::cmdline(&text);
});

#[path = "support.rs"]
mod iolab_fuzz_support;
