//! fio reads its command line with glibc's `getopt_long_only`, which takes
//! any unambiguous beginning of a long option's name for the option
//! (`--runt=5` is `--runtime=5`, `--time_ba` is `--time_based`); a beginning
//! shared by several names is an error listing them all (`--ra` is
//! randrepeat, rate, ramp_time, ...). Here the same rule over the same names:
//! fio's own flags, its option table's names and aliases, never iolab's own
//! options. A name written in full is always itself, even where it begins a
//! longer one (`--rate` beside `--rate_min`). Job files take no beginnings:
//! fio matches their keys in full.

use super::error::JobError;
use super::table::{OPTIONS, Status};

/// fio's own long flags (init.c's option list, besides its job options).
const FIO_FLAGS: &[&str] = &[
    "output",
    "latency-log",
    "bandwidth-log",
    "minimal",
    "output-format",
    "append-terse",
    "version",
    "help",
    "cmdhelp",
    "enghelp",
    "showcmd",
    "readonly",
    "eta",
    "eta-interval",
    "eta-newline",
    "debug",
    "parse-only",
    "section",
    "inflate-log",
    "alloc-size",
    "profile",
    "warnings-fatal",
    "max-jobs",
    "terse-version",
    "server",
    "server-internal",
    "daemonize",
    "client",
    "remote-config",
    "cpuclock-test",
    "crctest",
    "memcpytest",
    "idle-prof",
    "status-interval",
    "trigger-file",
    "trigger-timeout",
    "trigger",
    "trigger-remote",
    "aux-path",
    "merge-blktrace-only",
];

/// fio 3.33 job options (names and aliases) that iolab's option table has no
/// entry for: deprecated or build-dependent ones. They still take part in
/// fio's prefix matching, so they make the same beginnings ambiguous here;
/// a beginning that completes to one of them then gets iolab's "unknown
/// option" error under its full name.
const FIO_UNLISTED: &[&str] = &[
    "blocksize_unaligned",
    "bs_is_seq_rand",
    "fileoffset",
    "flow_watermark",
    "gpu_dev_id",
    "iomem_align",
    "mem_align",
    "percentage_sequential",
    "rwmixcycle",
    "softrandommap",
    "trim_backlog",
    "trim_percentage",
    "trim_verify_zero",
    "verify_async_cpus",
    "verify_state_load",
    "verifysort",
    "verifysort_nr",
];

/// Every long option name fio's getopt matches beginnings against.
fn fio_names() -> impl Iterator<Item = &'static str> {
    OPTIONS
        .iter()
        .filter(|o| !matches!(o.status, Status::IolabOnly))
        .flat_map(|o| o.names())
        .chain(FIO_FLAGS.iter().copied())
        .chain(FIO_UNLISTED.iter().copied())
}

/// The option `key` stands for on the command line: `None` when `key` is a
/// name in full (`known`) or begins no fio name (the caller's own errors
/// apply), the full name when it begins exactly one, an error naming every
/// candidate when it begins several.
pub(crate) fn complete(key: &str, known: bool) -> Result<Option<&'static str>, JobError> {
    if known || key.is_empty() {
        return Ok(None);
    }
    let mut found: Vec<&'static str> = fio_names().filter(|n| n.starts_with(key)).collect();
    found.sort_unstable();
    found.dedup();
    match found.as_slice() {
        [] => Ok(None),
        [one] => Ok(Some(one)),
        many => Err(JobError::AmbiguousOption {
            at: super::error::COMMAND_LINE.to_string(),
            option: format!("--{key}"),
            candidates: many
                .iter()
                .map(|n| format!("--{n}"))
                .collect::<Vec<_>>()
                .join(", "),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_unique_beginning_is_the_option_and_a_shared_one_names_every_candidate() {
        assert_eq!(complete("runt", false), Ok(Some("runtime")));
        assert_eq!(complete("time_ba", false), Ok(Some("time_based")));
        assert_eq!(complete("parse-o", false), Ok(Some("parse-only")));
        // Written in full: itself, though `rate_min` begins with it.
        assert_eq!(complete("rate", true), Ok(None));
        assert_eq!(complete("zzzz", false), Ok(None));
        // fio 3.33's own list for `--ra`.
        let Err(JobError::AmbiguousOption { candidates, .. }) = complete("ra", false) else {
            panic!("--ra is ambiguous");
        };
        let mut got: Vec<&str> = candidates.split(", ").collect();
        got.sort_unstable();
        let mut want = vec![
            "--randrepeat",
            "--randseed",
            "--random_generator",
            "--random_distribution",
            "--ramp_time",
            "--rate",
            "--rate_min",
            "--ratemin",
            "--rate_iops",
            "--rate_iops_min",
            "--rate_process",
            "--rate_cycle",
            "--ratecycle",
            "--rate_ignore_thinktime",
        ];
        want.sort_unstable();
        assert_eq!(got, want);
        let Err(e) = complete("outp", false) else {
            panic!("--outp is ambiguous");
        };
        assert!(e.to_string().contains("--output, --output-format"), "{e}");
    }
}
