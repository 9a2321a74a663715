//! `iolab lab`: the five studies, each reproduced on this machine and shown beside
//! its published figures. `registry` lists them (name, seed, how each runs) for
//! the command line and the report. One file (or folder) per study; each fills a
//! `report::study::StudyResult` (tables, `report::chart` charts) for report to render.

pub mod breakdown;
pub mod cli;
pub mod laq;
pub mod observe;
pub mod placement;
pub mod poll;
pub mod registry;
pub mod runner;
