//! `iolab topology`.

#[derive(clap::Args, Debug)]
pub struct TopologyArgs {}

pub fn main(_args: TopologyArgs) -> anyhow::Result<u8> {
    anyhow::bail!("topology: not built yet")
}
