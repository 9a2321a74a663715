//! fio's I/O replay options: `write_iolog` (record what a job issues) and
//! `read_iolog` with the `replay_*` and `merge_blktrace_*` options (issue what
//! a log or a blktrace recorded). What they do is `workload::replay` (reading)
//! and `measure::iolog::trace_log` (writing); this is what a job asked for.

use serde::Serialize;

/// Directions `replay_skip` can leave out (fio's names).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ReplaySkip {
    pub read: bool,
    pub write: bool,
    pub trim: bool,
    /// `sync`: fsync, fdatasync and blktrace's flushes.
    pub sync: bool,
}

/// A job's iolog options.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct IologSpec {
    /// `write_iolog=FILE`: the I/Os the job issues, in fio's iolog version 3.
    pub write: Option<String>,
    /// `read_iolog=FILE[:FILE...]`: the log (or blktrace) to replay; clone N
    /// takes name N modulo their count, as fio does. `-` is standard input.
    pub read: Option<String>,
    /// `read_iolog_chunked`: fio reads the log while it runs; iolab reads it
    /// whole before the clock starts either way (a note says so).
    pub chunked: bool,
    /// `replay_no_stall`: issue as fast as possible, in the log's order.
    pub no_stall: bool,
    /// `replay_time_scale`: percent of the log's rate (200 = twice as fast).
    pub time_scale: u32,
    /// `replay_scale`: offsets divided by this (1 = as logged).
    pub scale: u64,
    /// `replay_align`: offsets rounded down to this power of two (0 = as logged).
    pub align: u64,
    /// `replay_redirect`: every I/O goes to this file or device instead.
    pub redirect: Option<String>,
    pub skip: ReplaySkip,
    /// `merge_blktrace_file`: merge the `read_iolog` blktraces into this file
    /// first, and replay that.
    pub merge_file: Option<String>,
    /// `merge_blktrace_scalars`: per trace, percent of its time scale.
    pub merge_scalars: Vec<f64>,
    /// `merge_blktrace_iters`: per trace, how many times it runs.
    pub merge_iters: Vec<f64>,
}

impl Default for IologSpec {
    fn default() -> Self {
        IologSpec {
            write: None,
            read: None,
            chunked: false,
            no_stall: false,
            time_scale: 100,
            scale: 1,
            align: 0,
            redirect: None,
            skip: ReplaySkip::default(),
            merge_file: None,
            merge_scalars: Vec::new(),
            merge_iters: Vec::new(),
        }
    }
}

impl IologSpec {
    /// The names of a `read_iolog` list (fio separates them with ':'; `\:` is
    /// a colon inside a name, as in `filename`).
    pub fn read_names(&self) -> Vec<String> {
        let Some(list) = self.read.as_deref() else {
            return Vec::new();
        };
        let mut out = vec![String::new()];
        let mut chars = list.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\\' if chars.peek() == Some(&':') => {
                    out.last_mut().unwrap_or(&mut String::new()).push(':');
                    chars.next();
                }
                ':' => out.push(String::new()),
                c => {
                    if let Some(s) = out.last_mut() {
                        s.push(c)
                    }
                }
            }
        }
        out.retain(|s| !s.is_empty());
        out
    }

    /// The log clone `jobnum` replays (fio's `get_name_by_idx`).
    pub fn read_for_clone(&self, jobnum: u32) -> Option<String> {
        let names = self.read_names();
        if names.is_empty() {
            return None;
        }
        Some(names[jobnum as usize % names.len()].clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clones_take_the_names_in_turn() {
        let s = IologSpec {
            read: Some("a.log:b\\:c.log".into()),
            ..Default::default()
        };
        assert_eq!(s.read_names(), vec!["a.log", "b:c.log"]);
        assert_eq!(s.read_for_clone(0).as_deref(), Some("a.log"));
        assert_eq!(s.read_for_clone(1).as_deref(), Some("b:c.log"));
        assert_eq!(s.read_for_clone(2).as_deref(), Some("a.log"));
        assert_eq!(IologSpec::default().read_for_clone(0), None);
    }
}
