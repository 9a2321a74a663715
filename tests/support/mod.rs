//! Shared test support: what every test binary may use.

#![allow(dead_code)] // each binary uses part of it

pub mod faults;
pub mod needs;
