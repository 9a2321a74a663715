//! `iolab observe`: system calls (exact count, total and average time per name),
//! context switches and interrupts of a process tree, at a fraction of strace's cost.
//!
//! System calls and per-thread context switches come from tracepoints
//! (raw_syscalls, sched), counted either in the kernel by eBPF programs (`bpf`) or
//! streamed from a tracefs instance of our own (`tracer`), filtered in the kernel
//! to the process, its threads and its children; nothing is ptraced. CPU time
//! split, system-wide context switches and interrupts per source are /proc deltas
//! (`measure::cpu`). Any event the kernel drops makes the run fail loudly, since
//! exact counts are the promise.
//!
//! Files: `cli` (the command's arguments and output), `watch` (the observing
//! loop, the command's and the library's `observe_command`), `target` (starting or finding
//! the process tree), `collector` (one face over `bpf` and `tracer`), `period`
//! (what a collector hands out), `report` (a period as a report, and its text),
//! `names` over the generated `syscall_table`.

pub mod bpf;
pub mod cli;
pub mod collector;
pub mod names;
pub mod period;
pub mod report;
pub mod syscall_table;
pub mod target;
pub mod tracer;
pub mod watch;
