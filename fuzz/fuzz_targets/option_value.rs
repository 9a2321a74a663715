//! One known option (picked by the first byte) with any value: reaches every
//! value parser quickly instead of waiting for the fuzzer to spell names.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    iolab_fuzz_support::option_value(data);
});

#[path = "support.rs"]
mod iolab_fuzz_support;
