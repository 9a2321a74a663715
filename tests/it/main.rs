//! The integration tests that need no process of their own, in one binary:
//! one link instead of one per file, and one place for shared helpers. Each
//! former `tests/NAME.rs` is the module `NAME` (`cargo test --release --test it
//! NAME::` runs one). Kept apart, each in its own binary and saying why at its
//! top: `engine_noalloc`, `null_noalloc` and `report_record_cost` (counting
//! global allocator), `trace_tsc_clock` (picks the process's clock source),
//! `sys_signal` (installs signal handlers and re-runs itself as a child),
//! `studies` (the lab studies, which time themselves: nothing else beside them).
//!
//! Tests that must not run beside each other here take
//! `support::serial::one_at_a_time()`; those that cannot run on this machine
//! report `SKIPPED` through `support::needs`.

#[path = "../support/mod.rs"]
mod support;

// Helpers shared by several modules.
mod backend_common;
mod backend_fio;
mod fio_twin_job;
mod io_order;
mod report_html_common;
mod run_common;

mod architecture;
mod backend_cpuio;
mod backend_engine_opts;
mod backend_fileops;
mod backend_libaio;
mod backend_mmap;
mod backend_posixaio;
mod backend_probe;
mod backend_psync;
mod backend_space;
mod backend_sync;
mod backend_uring;
mod browser_report;
mod buffers_run;
mod cli_conventions;
mod cli_pipe;
mod cmdprio_bssplit;
mod cmdprio_latency;
mod compare;
mod compare_fleet;
mod completion_policies;
mod dedupe_working_set;
mod deploy_manifests;
mod faults_conservation;
mod file_sizes;
mod fio_counts;
mod fio_examples;
mod fio_groups;
mod fio_meaning;
mod fio_option_names;
mod fio_percentiles;
mod fio_random;
mod fio_random_dist;
mod fio_random_lfsr;
mod fio_rwmix;
mod fio_suite;
mod fio_syncs;
mod fio_twin;
mod fleet_ansible;
mod flow;
mod fuzz_corpus_replay;
mod hybrid_iopoll;
mod iolog_fio_tools;
mod iolog_replay;
mod iolog_run;
mod issue_stamps;
mod job_control;
mod job_files;
mod job_parse;
mod json_schema;
mod jsonplus_bins;
mod laq_completion_path;
mod latency_target;
mod library_embed;
mod library_examples;
mod log_epoch;
mod null_conservation;
mod null_device;
mod null_measure;
mod numa;
mod observe_exact;
mod observe_parity;
mod openfiles;
mod paced_stream;
mod packaging;
mod placement_affinity;
mod placement_balance;
mod placement_run;
mod placement_topology;
mod probe_cli;
mod qd1_path;
mod queue_full;
mod random_rate;
mod report_formats;
mod report_golden;
mod report_html;
mod report_readback;
mod run_engines;
mod run_jobs;
mod safety_blockdev;
mod sched_props;
mod sched_sim;
mod signals_run;
mod steady_state;
mod submit_mode;
mod sys_resources;
mod sys_target;
mod target_process_opts;
mod trace_block_live;
mod trace_fixtures;
mod trace_live;
mod trace_run;
mod trim_run;
mod unlink_each_loop;
mod userspace_reap;
mod verify_digests;
mod verify_fio;
mod verify_more;
mod verify_run;
mod wait_for;
mod workload_opts;
mod zones;
