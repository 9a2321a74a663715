//! `iolab topology`: CPUs, cores and SMT siblings as iolab sees them.

use std::path::PathBuf;

use super::topology::Topology;

#[derive(clap::Args, Debug)]
pub struct TopologyArgs {
    /// Read a topology file (`packages=1 cores=4 threads=2`, `core LIST` lines, or
    /// this command's --json output) instead of this machine's sysfs.
    #[arg(long, value_name = "FILE")]
    pub topology: Option<PathBuf>,
    /// Print JSON (which --topology accepts back).
    #[arg(long)]
    pub json: bool,
}

pub fn main(args: TopologyArgs) -> anyhow::Result<u8> {
    let topo = match &args.topology {
        Some(p) => Topology::from_file(p)?,
        None => Topology::from_system()?,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&topo)?);
    } else {
        print!("{topo}");
    }
    Ok(0)
}
