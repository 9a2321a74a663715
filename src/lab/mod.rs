//! `iolab lab`: the five studies, each reproduced on this machine and shown beside
//! its published figures. One file (or folder) per study; each fills a
//! `report::study::StudyResult` (tables, `report::chart` charts) for report to render.

pub mod breakdown;
pub mod cli;
pub mod laq;
pub mod observe;
pub mod placement;
pub mod poll;
pub mod runner;
