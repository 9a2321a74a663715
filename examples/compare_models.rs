//! The same job on the emulated device under two completion models: spinning
//! on the completion (`poll`) and sleeping until the device's interrupt
//! (`interrupt`). Polling answers sooner and burns the CPU for it; the figures
//! show how much of each, on this machine.
//!
//! ```text
//! cargo run --release --example compare_models
//! ```

fn main() -> Result<(), iolab::Error> {
    println!(
        "{:<10} {:>8} {:>10} {:>10} {:>14}",
        "model", "I/Os", "p50 ns", "p99 ns", "CPU ns per I/O"
    );
    for model in ["poll", "interrupt"] {
        let run = iolab::Job::new(model)
            .option("ioengine", "null")?
            .option("null_lat", "20us")?
            .option("rw", "randread")?
            .option("bs", "4k")?
            .option("size", "1g")?
            .option("number_ios", 5_000)?
            .option("completion", model)?
            .run()?;
        let job = &run.jobs[0];
        let s = iolab::Summary::of(job);
        println!(
            "{:<10} {:>8} {:>10} {:>10} {:>14.0}",
            model, s.ios, s.p50_ns, s.p99_ns, s.cpu_ns_per_io
        );
    }
    Ok(())
}
