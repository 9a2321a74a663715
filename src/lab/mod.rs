//! `iolab lab`: the five studies, each reproduced on this machine and shown beside
//! its published figures. One file per study; [`model`] is what they produce.

pub mod breakdown;
pub mod cli;
pub mod laq;
pub mod model;
pub mod observe;
pub mod placement;
pub mod poll;
pub mod runner;
