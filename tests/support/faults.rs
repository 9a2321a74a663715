//! The faulty null-device job shared by the conservation tests
//! (`it::faults_conservation`) and the allocation test (`engine_noalloc`).

/// A null-device job with errors, hangs (aborted by io_timeout), latency spikes
/// and corrupted reads all switched on, verified, continuing on every error.
pub fn faulty_job(model: &str, irqmode: &str, rw: &str, seed: u64) -> Vec<String> {
    [
        "--name=faults",
        "--ioengine=null",
        "--size=2m",
        "--null_backing=mem",
        "--null_lat=5us",
        "--null_channels=2",
        &format!("--null_irqmode={irqmode}"),
        &format!("--rw={rw}"),
        "--bs=4k",
        "--iodepth=8",
        "--loops=2",
        "--verify=crc32c",
        "--verify_backlog=32",
        "--continue_on_error=all",
        "--null_err_rate=0.02",
        "--null_hang_rate=0.01",
        "--io_timeout=2ms",
        "--null_spike_rate=0.02",
        "--null_spike_lat=100us",
        "--null_corrupt_rate=0.03",
        &format!("--randseed={seed}"),
        &format!("--completion={model}"),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}
