//! `iolab run`.

#[derive(clap::Args, Debug)]
pub struct RunArgs {}

pub fn main(_args: RunArgs) -> anyhow::Result<u8> {
    anyhow::bail!("run: not built yet")
}
