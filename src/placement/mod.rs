//! Placement: CPU topology, the polling predictor, placement policies, affinity.
//!
//! Study 001's vocabulary: a P task polls for I/O completions, a C task computes.
//! [`topology`] says which logical CPUs share a physical core, [`predictor`] (fed by
//! a [`PollSignal`] or by [`procsignal`] for other processes) tells P from C tasks,
//! [`policy`] and [`balance`] decide where each task runs, and [`affinity`] makes it
//! so and undoes it. [`corunner`] provides C tasks; the placement study's P tasks
//! (pollers on a device queue) are in `lab::placement::ptask`, above the devices.

pub mod affinity;
pub mod balance;
pub mod cli;
pub mod corunner;
pub mod policy;
pub mod predictor;
pub mod procsignal;
pub mod topology;

#[cfg(any(test, feature = "testing"))]
pub use policy::{Plan, PolicyError};
pub use policy::{Policy, place};
pub use predictor::{PollSignal, Predictor, TaskKind};
pub use topology::Topology;
#[cfg(any(test, feature = "testing"))]
pub use topology::{Core, TopologyError};
