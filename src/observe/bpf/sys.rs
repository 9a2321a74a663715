//! The bpf(2) and perf_event_open(2) calls observe needs, on raw `libc::syscall`:
//! maps, program load with the verifier's log on failure, raw tracepoint and perf
//! tracepoint attachment. Every object is an `OwnedFd`, so dropping it detaches
//! and frees it in the kernel.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use super::insn::{AsmError, Insn};

/// Why a BPF object could not be made, attached or read, or why the counts it
/// gave are not exact. Causes are part of the message, not a `source`.
#[derive(Debug, thiserror::Error)]
pub enum BpfError {
    #[error("creating BPF map {name} ({entries} entries): {err}")]
    MapCreate {
        name: &'static str,
        entries: u32,
        err: io::Error,
    },
    #[error("reading BPF map {name}: {err}")]
    MapRead { name: &'static str, err: io::Error },
    #[error("writing BPF map {name}: {err}")]
    MapWrite { name: &'static str, err: io::Error },
    #[error("reading BPF program info: {0}")]
    ProgInfo(io::Error),
    #[error("this kernel does not report BPF recursion misses (Linux >= 5.12 does)")]
    NoRecursionMisses,
    #[error("loading BPF program {name}: needs CAP_BPF and CAP_PERFMON (or root): {err}")]
    NoPermission { name: String, err: io::Error },
    #[error("the kernel's verifier refused BPF program {name}: {err}\n  {log}")]
    Verifier {
        name: String,
        err: io::Error,
        /// The end of the verifier's log, where the refusal is.
        log: String,
    },
    #[error("attaching BPF program to raw tracepoint {tp}: {err}")]
    RawTracepoint { tp: String, err: io::Error },
    #[error("perf_event_open of tracepoint {id} on CPU {cpu}: {err}")]
    PerfOpen { id: u16, cpu: i32, err: io::Error },
    #[error("attaching BPF program to tracepoint {id} on CPU {cpu}: {err}")]
    PerfAttach { id: u16, cpu: i32, err: io::Error },
    #[error("enabling tracepoint {id} on CPU {cpu}: {err}")]
    PerfEnable { id: u16, cpu: i32, err: io::Error },
    #[error("reading {path}: {err}")]
    CpuFile { path: &'static str, err: io::Error },
    #[error("bad CPU list {text:?}: {err}")]
    CpuList {
        text: String,
        err: std::num::ParseIntError,
    },
    #[error(transparent)]
    Asm(#[from] AsmError),
    // The counter's own (`observe::bpf`).
    #[error("reading /proc/sys/kernel/pid_max: {0}")]
    PidMaxRead(io::Error),
    #[error("/proc/sys/kernel/pid_max: {text:?} is not a number: {err}")]
    PidMaxParse {
        text: String,
        err: std::num::ParseIntError,
    },
    #[error("{0} is not a power of two from 1 (every call) to 65536")]
    TimeOneIn(u32),
    #[error("thread id {0} is not valid")]
    BadTid(i32),
    #[error("tracking thread {tid} ({kind} thread map of {entries} entries): {err}")]
    Track {
        tid: i32,
        kind: &'static str,
        entries: u32,
        err: Box<BpfError>,
    },
    #[error(
        "{full} new threads could not be tracked: the BPF thread map ({entries} entries) \
         is full; counts are not exact. Use --backend=tracefs for this process tree"
    )]
    ThreadMapFull { full: u64, entries: u32 },
    #[error(
        "the kernel skipped {0} runs of the BPF programs (a program was already \
         running on that CPU: a preemptible kernel, or another BPF tool attached to \
         the same tracepoints); counts are not exact. Use --backend=tracefs"
    )]
    RecursionMisses(u64),
    #[error(transparent)]
    Mount(#[from] crate::measure::tracefs::mount::MountError),
    #[error("reading {}: {err}", path.display())]
    ReadFormat {
        path: std::path::PathBuf,
        err: io::Error,
    },
    #[error(transparent)]
    Format(#[from] crate::measure::tracefs::format::FormatError),
}

type Result<T, E = BpfError> = std::result::Result<T, E>;

const BPF_MAP_CREATE: libc::c_long = 0;
const BPF_MAP_LOOKUP_ELEM: libc::c_long = 1;
const BPF_MAP_UPDATE_ELEM: libc::c_long = 2;
const BPF_PROG_LOAD: libc::c_long = 5;
const BPF_OBJ_GET_INFO_BY_FD: libc::c_long = 15;
const BPF_RAW_TRACEPOINT_OPEN: libc::c_long = 17;
const BPF_MAP_LOOKUP_BATCH: libc::c_long = 24;

pub const MAP_HASH: u32 = 1;
pub const MAP_ARRAY: u32 = 2;
pub const MAP_PERCPU_ARRAY: u32 = 6;
pub const PROG_TRACEPOINT: u32 = 5;
pub const PROG_RAW_TRACEPOINT: u32 = 17;
/// Update flag: create or replace.
pub const BPF_ANY: u64 = 0;

const PERF_TYPE_TRACEPOINT: u32 = 2;
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 8;
/// _IOW('$', 8, __u32)
const PERF_EVENT_IOC_SET_BPF: libc::c_ulong = 0x4004_2408;
/// _IO('$', 0)
const PERF_EVENT_IOC_ENABLE: libc::c_ulong = 0x2400;

fn bpf<T>(cmd: libc::c_long, attr: &mut T) -> io::Result<i64> {
    // SAFETY: attr is a repr(C) prefix of union bpf_attr of the given size; the
    // kernel zero-extends shorter attrs and writes only inside them.
    let r = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            cmd,
            attr as *mut T,
            std::mem::size_of::<T>() as libc::c_uint,
        )
    };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r as i64)
    }
}

fn fd_of(r: i64) -> OwnedFd {
    // SAFETY: the kernel just returned a new descriptor that nothing else owns.
    unsafe { OwnedFd::from_raw_fd(r as i32) }
}

#[repr(C)]
#[derive(Default)]
struct MapCreateAttr {
    map_type: u32,
    key_size: u32,
    value_size: u32,
    max_entries: u32,
    map_flags: u32,
    inner_map_fd: u32,
    numa_node: u32,
    map_name: [u8; 16],
}

#[repr(C)]
struct ElemAttr {
    map_fd: u32,
    _pad: u32,
    key: u64,
    value: u64,
    flags: u64,
}

#[repr(C)]
#[derive(Default)]
struct ProgLoadAttr {
    prog_type: u32,
    insn_cnt: u32,
    insns: u64,
    license: u64,
    log_level: u32,
    log_size: u32,
    log_buf: u64,
    kern_version: u32,
    prog_flags: u32,
    prog_name: [u8; 16],
}

#[repr(C)]
struct BatchAttr {
    in_batch: u64,
    out_batch: u64,
    keys: u64,
    values: u64,
    count: u32,
    map_fd: u32,
    elem_flags: u64,
    flags: u64,
}

#[repr(C)]
struct InfoAttr {
    bpf_fd: u32,
    info_len: u32,
    info: u64,
}

#[repr(C)]
struct RawTpAttr {
    name: u64,
    prog_fd: u32,
    _pad: u32,
}

/// struct bpf_prog_info (uapi/linux/bpf.h) up to and including
/// recursion_misses; later fields are left to the kernel.
#[repr(C)]
#[derive(Default)]
struct ProgInfo {
    prog_type: u32,
    id: u32,
    tag: [u8; 8],
    jited_prog_len: u32,
    xlated_prog_len: u32,
    jited_prog_insns: u64,
    xlated_prog_insns: u64,
    load_time: u64,
    created_by_uid: u32,
    nr_map_ids: u32,
    map_ids: u64,
    name: [u8; 16],
    ifindex: u32,
    gpl_compatible: u32,
    netns_dev: u64,
    netns_ino: u64,
    nr_jited_ksyms: u32,
    nr_jited_func_lens: u32,
    jited_ksyms: u64,
    jited_func_lens: u64,
    btf_id: u32,
    func_info_rec_size: u32,
    func_info: u64,
    nr_func_info: u32,
    nr_line_info: u32,
    line_info: u64,
    jited_line_info: u64,
    nr_jited_line_info: u32,
    line_info_rec_size: u32,
    jited_line_info_rec_size: u32,
    nr_prog_tags: u32,
    prog_tags: u64,
    run_time_ns: u64,
    run_cnt: u64,
    recursion_misses: u64,
}

/// struct perf_event_attr (uapi/linux/perf_event.h) in its first published
/// size (PERF_ATTR_SIZE_VER0, 64 bytes, accepted by every kernel): type, size,
/// config, sample_period; the rest (sample_type, read_format, flags,
/// wakeup_events, bp_type, config1) stays zero.
#[repr(C)]
#[derive(Default)]
struct PerfEventAttr {
    type_: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    rest: [u64; 5],
}

fn name16(name: &str) -> [u8; 16] {
    let mut n = [0u8; 16];
    for (d, s) in n.iter_mut().zip(name.bytes().take(15)) {
        *d = s;
    }
    n
}

/// A map: its descriptor and shape.
pub struct Map {
    pub fd: OwnedFd,
    pub name: &'static str,
    pub key_size: usize,
    #[cfg_attr(
        not(any(test, feature = "testing")),
        expect(dead_code, reason = "only iolab's tests read it")
    )]
    pub value_size: usize,
    pub max_entries: u32,
}

impl Map {
    pub fn create(
        map_type: u32,
        name: &'static str,
        key_size: usize,
        value_size: usize,
        max_entries: u32,
    ) -> Result<Map> {
        let mut a = MapCreateAttr {
            map_type,
            key_size: key_size as u32,
            value_size: value_size as u32,
            max_entries,
            map_name: name16(name),
            ..Default::default()
        };
        let fd = bpf(BPF_MAP_CREATE, &mut a).map_err(|err| BpfError::MapCreate {
            name,
            entries: max_entries,
            err,
        })?;
        Ok(Map {
            fd: fd_of(fd),
            name,
            key_size,
            value_size,
            max_entries,
        })
    }

    pub fn raw_fd(&self) -> i32 {
        self.fd.as_raw_fd()
    }

    /// Look up `key`; `value` receives value_size bytes (value_size times the
    /// possible CPUs, each rounded up to 8, for a per-CPU map). Ok(false) if absent.
    pub fn lookup(&self, key: &[u8], value: &mut [u8]) -> Result<bool> {
        debug_assert_eq!(key.len(), self.key_size);
        let mut a = ElemAttr {
            map_fd: self.raw_fd() as u32,
            _pad: 0,
            key: key.as_ptr() as u64,
            value: value.as_mut_ptr() as u64,
            flags: 0,
        };
        match bpf(BPF_MAP_LOOKUP_ELEM, &mut a) {
            Ok(_) => Ok(true),
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(false),
            Err(err) => Err(BpfError::MapRead {
                name: self.name,
                err,
            }),
        }
    }

    pub fn update(&self, key: &[u8], value: &[u8], flags: u64) -> Result<()> {
        let mut a = ElemAttr {
            map_fd: self.raw_fd() as u32,
            _pad: 0,
            key: key.as_ptr() as u64,
            value: value.as_ptr() as u64,
            flags,
        };
        bpf(BPF_MAP_UPDATE_ELEM, &mut a)
            .map(|_| ())
            .map_err(|err| BpfError::MapWrite {
                name: self.name,
                err,
            })
    }
}

impl Map {
    /// Every entry: (keys, values) concatenated, `value_len` bytes per value
    /// (per-CPU maps: all CPUs' copies). One syscall per `chunk` entries instead
    /// of one per entry.
    pub fn lookup_all(&self, value_len: usize) -> Result<(Vec<u8>, Vec<u8>)> {
        let chunk: u32 = 4096;
        let mut keys = Vec::new();
        let mut values = Vec::new();
        let mut kbuf = vec![0u8; chunk as usize * self.key_size];
        let mut vbuf = vec![0u8; chunk as usize * value_len];
        // Batch positions are opaque u32 tokens for arrays and hash maps.
        let mut token_in = 0u32;
        let mut token_out = 0u32;
        let mut first = true;
        loop {
            let mut a = BatchAttr {
                in_batch: if first {
                    0
                } else {
                    &mut token_in as *mut u32 as u64
                },
                out_batch: &mut token_out as *mut u32 as u64,
                keys: kbuf.as_mut_ptr() as u64,
                values: vbuf.as_mut_ptr() as u64,
                count: chunk,
                map_fd: self.raw_fd() as u32,
                elem_flags: 0,
                flags: 0,
            };
            let r = bpf(BPF_MAP_LOOKUP_BATCH, &mut a);
            let n = a.count as usize;
            keys.extend_from_slice(&kbuf[..n * self.key_size]);
            values.extend_from_slice(&vbuf[..n * value_len]);
            match r {
                Ok(_) => {}
                Err(e) if e.raw_os_error() == Some(libc::ENOENT) => break,
                Err(err) => {
                    return Err(BpfError::MapRead {
                        name: self.name,
                        err,
                    });
                }
            }
            first = false;
            token_in = token_out;
        }
        Ok((keys, values))
    }
}

/// Runs of a program the kernel skipped because it was already running on that
/// CPU (bpf_prog_info.recursion_misses): events observe did not count.
pub fn prog_recursion_misses(prog: &OwnedFd) -> Result<u64> {
    let mut info = ProgInfo::default();
    let mut a = InfoAttr {
        bpf_fd: prog.as_raw_fd() as u32,
        info_len: std::mem::size_of::<ProgInfo>() as u32,
        info: (&mut info as *mut ProgInfo) as u64,
    };
    bpf(BPF_OBJ_GET_INFO_BY_FD, &mut a).map_err(BpfError::ProgInfo)?;
    // The kernel writes back how much of the struct it knows.
    if (a.info_len as usize) < std::mem::size_of::<ProgInfo>() {
        return Err(BpfError::NoRecursionMisses);
    }
    Ok(info.recursion_misses)
}

/// Load a program. Failure carries the verifier's log, which says which
/// instruction it refused and why.
pub fn prog_load(prog_type: u32, name: &str, insns: &[Insn]) -> Result<OwnedFd> {
    let license = CString::new("GPL").expect("no NUL");
    let mut a = ProgLoadAttr {
        prog_type,
        insn_cnt: insns.len() as u32,
        insns: insns.as_ptr() as u64,
        license: license.as_ptr() as u64,
        prog_name: name16(name),
        ..Default::default()
    };
    // Without a log first: asking for one makes every load slower.
    match bpf(BPF_PROG_LOAD, &mut a) {
        Ok(fd) => return Ok(fd_of(fd)),
        Err(err) if err.raw_os_error() == Some(libc::EPERM) => {
            return Err(BpfError::NoPermission {
                name: name.to_string(),
                err,
            });
        }
        Err(_) => {}
    }
    let mut log = vec![0u8; 1 << 20];
    a.log_level = 1;
    a.log_size = log.len() as u32;
    a.log_buf = log.as_mut_ptr() as u64;
    match bpf(BPF_PROG_LOAD, &mut a) {
        Ok(fd) => Ok(fd_of(fd)),
        Err(err) => {
            let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
            let text = String::from_utf8_lossy(&log[..end]);
            // The refusal is at the end of the log.
            let tail: Vec<&str> = text.lines().rev().take(12).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            Err(BpfError::Verifier {
                name: name.to_string(),
                err,
                log: tail.join("\n  "),
            })
        }
    }
}

/// Attach a raw-tracepoint program (`sys_enter`, `sched_switch`...). Detached
/// when the returned descriptor is closed.
pub fn raw_tracepoint_open(tp: &str, prog: &OwnedFd) -> Result<OwnedFd> {
    let name = CString::new(tp).expect("tracepoint names have no NUL");
    let mut a = RawTpAttr {
        name: name.as_ptr() as u64,
        prog_fd: prog.as_raw_fd() as u32,
        _pad: 0,
    };
    let fd = bpf(BPF_RAW_TRACEPOINT_OPEN, &mut a).map_err(|err| BpfError::RawTracepoint {
        tp: tp.to_string(),
        err,
    })?;
    Ok(fd_of(fd))
}

/// Attach a tracepoint program to perf tracepoint `id` through a perf event on
/// `cpu` (perf needs a CPU for a task-less event; the program then runs for
/// hits on every CPU). Detached on close.
pub fn perf_tracepoint_attach(id: u16, cpu: i32, prog: &OwnedFd) -> Result<OwnedFd> {
    let attr = PerfEventAttr {
        type_: PERF_TYPE_TRACEPOINT,
        size: std::mem::size_of::<PerfEventAttr>() as u32,
        config: id as u64,
        sample_period: 1,
        ..Default::default()
    };
    // SAFETY: attr is a valid perf_event_attr of the size it declares.
    let r = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            &attr as *const PerfEventAttr,
            -1 as libc::pid_t,
            cpu,
            -1 as libc::c_int,
            PERF_FLAG_FD_CLOEXEC,
        )
    };
    if r < 0 {
        let err = io::Error::last_os_error();
        return Err(BpfError::PerfOpen { id, cpu, err });
    }
    let ev = fd_of(r);
    // SAFETY: ioctls on the perf event we own, with an int argument.
    if unsafe { libc::ioctl(ev.as_raw_fd(), PERF_EVENT_IOC_SET_BPF, prog.as_raw_fd()) } != 0 {
        let err = io::Error::last_os_error();
        return Err(BpfError::PerfAttach { id, cpu, err });
    }
    // SAFETY: as above.
    if unsafe { libc::ioctl(ev.as_raw_fd(), PERF_EVENT_IOC_ENABLE, 0) } != 0 {
        let err = io::Error::last_os_error();
        return Err(BpfError::PerfEnable { id, cpu, err });
    }
    Ok(ev)
}

/// CPUs the kernel may ever run per-CPU map slots for ("0-1" in
/// /sys/devices/system/cpu/possible).
pub fn possible_cpus() -> Result<usize> {
    cpu_list_len(&read_cpu_file("/sys/devices/system/cpu/possible")?)
}

/// Online CPU numbers (for per-CPU perf events).
pub fn online_cpus() -> Result<Vec<i32>> {
    cpu_list(&read_cpu_file("/sys/devices/system/cpu/online")?)
}

fn read_cpu_file(path: &'static str) -> Result<String> {
    std::fs::read_to_string(path).map_err(|err| BpfError::CpuFile { path, err })
}

fn cpu_list(s: &str) -> Result<Vec<i32>> {
    let mut v = Vec::new();
    for part in s.trim().split(',').filter(|p| !p.is_empty()) {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        let num = |x: &str| {
            x.parse::<i32>().map_err(|err| BpfError::CpuList {
                text: s.trim().to_string(),
                err,
            })
        };
        let (a, b) = (num(a)?, num(b)?);
        v.extend(a..=b);
    }
    Ok(v)
}

fn cpu_list_len(s: &str) -> Result<usize> {
    // Per-CPU maps size their values by the highest possible CPU number + 1.
    Ok(cpu_list(s)?.into_iter().max().map_or(1, |m| m as usize + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists() {
        assert_eq!(cpu_list("0-1\n").unwrap(), vec![0, 1]);
        assert_eq!(cpu_list("0,2-3").unwrap(), vec![0, 2, 3]);
        assert_eq!(cpu_list_len("0-3,7").unwrap(), 8);
        assert!(cpu_list("x").is_err());
    }

    #[test]
    fn attr_layouts_match_the_uapi() {
        // union bpf_attr members, from include/uapi/linux/bpf.h.
        assert_eq!(std::mem::size_of::<MapCreateAttr>(), 44);
        assert_eq!(std::mem::size_of::<ElemAttr>(), 32);
        assert_eq!(std::mem::offset_of!(ProgLoadAttr, prog_name), 48);
        assert_eq!(std::mem::size_of::<RawTpAttr>(), 16);
        // bpf_prog_info.recursion_misses (Linux 5.12) and PERF_ATTR_SIZE_VER0.
        assert_eq!(std::mem::offset_of!(ProgInfo, recursion_misses), 208);
        assert_eq!(std::mem::size_of::<PerfEventAttr>(), 64);
    }
}
