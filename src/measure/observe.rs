//! `iolab observe`.

#[derive(clap::Args, Debug)]
pub struct ObserveArgs {}

pub fn main(_args: ObserveArgs) -> anyhow::Result<u8> {
    anyhow::bail!("observe: not built yet")
}
