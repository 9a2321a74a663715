#!/bin/sh
# Fuzz the job-file parser and option values with cargo-fuzz (libFuzzer, nightly).
# Usage: bench/fuzz.sh [SECONDS_PER_TARGET [TARGET...]]
#        (default 240 s for each of job_file, cmdline, option_value: 12 minutes)
# Needs: rustup toolchain nightly, `cargo install cargo-fuzz`.
# New corpus entries land in fuzz/corpus/<target>/ and are minimised at the end
# (cargo fuzz cmin); crashes land in fuzz/artifacts/<target>/. Commit the
# minimised corpus: tests/it/fuzz_corpus_replay.rs replays it on stable.
set -eu
secs=${1:-240}
[ $# -gt 0 ] && shift
targets=${*:-job_file cmdline option_value}
cd "$(dirname "$0")/../fuzz"
for t in $targets; do
    echo "== $t: ${secs}s"
    # -s none: the parser is safe Rust, so the sanitizer adds cost, not findings;
    # cargo fuzz still builds with debug assertions (overflow checks) on.
    cargo +nightly fuzz run -s none "$t" "corpus/$t" -- \
        -max_total_time="$secs" -max_len=4096 -timeout=10 -print_final_stats=1
    cargo +nightly fuzz cmin -s none "$t" "corpus/$t"
done
