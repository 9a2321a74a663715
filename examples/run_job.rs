//! Run one fio job through iolab's front door and print its median and 99th
//! percentile completion latency and the CPU each I/O cost.
//!
//! ```text
//! cargo run --release --example run_job
//! ```
//!
//! The job reads 4 KiB blocks at random from the emulated device (`ioengine=null`,
//! 4 us per command), so it needs no disk and no root.

fn main() -> Result<(), iolab::Error> {
    let run = iolab::Job::new("randread")
        .option("ioengine", "null")?
        .option("null_lat", "4us")?
        .option("rw", "randread")?
        .option("bs", "4k")?
        .option("size", "1g")?
        .option("iodepth", 1)?
        .option("number_ios", 20_000)?
        .run()?;
    for job in &run.jobs {
        let s = iolab::Summary::of(job);
        println!(
            "{}: {} I/Os, {:.0} IOPS, p50 {} ns, p99 {} ns, CPU {:.0} ns per I/O",
            job.jobname, s.ios, s.iops, s.p50_ns, s.p99_ns, s.cpu_ns_per_io
        );
    }
    Ok(())
}
