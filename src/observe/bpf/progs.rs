//! The five observe programs, and the layout of the maps they share with user
//! space. Hot path (sys_enter/sys_exit, every system call of every task): one
//! lookup of the thread slot, which is both the filter and the per-thread
//! counters, then per-CPU counters indexed by syscall number (no atomics, no
//! locks). Times are bpf_ktime_get_ns (CLOCK_MONOTONIC).

use std::mem::{offset_of, size_of};

use super::insn::AsmError;

type Result<T, E = AsmError> = std::result::Result<T, E>;

use super::insn::{Alu, Asm, Cond, Helper, Insn, R0, R1, R2, R3, R4, R6, R7, R8, R9, R10, Size};

/// Syscall numbers at or above this share the last slot (as in the tracefs tracer).
pub const MAX_NR: u32 = 1024;

/// A thread slot, the value of the thread map (key: tid as u32), one per
/// tracked thread: both the filter and the thread's counters. The programs
/// address its fields through the offsets in [`slot`].
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ThreadSlot {
    /// 1 while the thread is tracked (cleared when it exits).
    pub on: u32,
    /// Between sys_enter and sys_exit: [`slot::TIMING`] when the call is timed,
    /// [`slot::UNTIMED`] when sampling left it out; 0 outside calls.
    pub in_call: u32,
    pub enter_ts: u64,
    /// Syscall number of the call in progress.
    pub enter_nr: u32,
    /// 1 once the thread was ever tracked (its row is reported).
    pub seen: u32,
    pub syscalls: u64,
    pub voluntary: u64,
    pub involuntary: u64,
    /// comm at exit (the thread is gone from /proc by report time).
    pub comm: [u8; COMM_LEN],
}

/// TASK_COMM_LEN: a task name with its NUL.
pub const COMM_LEN: usize = 16;

/// Per-CPU per-syscall counters, the value of the stats map (key: nr).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SyscallCounters {
    pub calls: u64,
    pub errors: u64,
    pub timed: u64,
    pub total_ns: u64,
}

// Both are copied to and from map bytes whole: no padding anywhere.
const _: () = assert!(size_of::<ThreadSlot>() == offset_of!(ThreadSlot, comm) + COMM_LEN);
const _: () = assert!(size_of::<SyscallCounters>() == 4 * size_of::<u64>());

/// Plain-integer map values, copied from and to the bytes the kernel hands
/// out (native byte order, as the programs wrote them).
pub trait MapValue: Copy + Default {
    /// The value at the start of `b` (at least `size_of::<Self>()` bytes).
    fn from_bytes(b: &[u8]) -> Self {
        assert!(b.len() >= size_of::<Self>(), "short map value");
        // SAFETY: the length is checked; implementors are repr(C) structs of
        // integers without padding, for which every bit pattern is valid.
        unsafe { std::ptr::read_unaligned(b.as_ptr().cast::<Self>()) }
    }

    fn as_bytes(&self) -> &[u8] {
        // SAFETY: implementors are repr(C) without padding: every byte is
        // initialised, and the slice lives as long as the borrow.
        unsafe { std::slice::from_raw_parts((self as *const Self).cast::<u8>(), size_of::<Self>()) }
    }
}

impl MapValue for ThreadSlot {}
impl MapValue for SyscallCounters {}

/// Offsets of [`ThreadSlot`]'s fields, as the programs address them.
pub mod slot {
    use super::ThreadSlot;
    use std::mem::{offset_of, size_of};

    pub const ON: i16 = offset_of!(ThreadSlot, on) as i16;
    pub const IN_CALL: i16 = offset_of!(ThreadSlot, in_call) as i16;
    pub const TIMING: i32 = 1;
    pub const UNTIMED: i32 = 2;
    pub const ENTER_TS: i16 = offset_of!(ThreadSlot, enter_ts) as i16;
    pub const ENTER_NR: i16 = offset_of!(ThreadSlot, enter_nr) as i16;
    pub const SEEN: i16 = offset_of!(ThreadSlot, seen) as i16;
    pub const SYSCALLS: i16 = offset_of!(ThreadSlot, syscalls) as i16;
    pub const VOLUNTARY: i16 = offset_of!(ThreadSlot, voluntary) as i16;
    pub const INVOLUNTARY: i16 = offset_of!(ThreadSlot, involuntary) as i16;
    pub const COMM: i16 = offset_of!(ThreadSlot, comm) as i16;
    pub const SIZE: usize = size_of::<ThreadSlot>();
}

/// Offsets of [`SyscallCounters`]' fields.
pub mod stat {
    use super::SyscallCounters;
    use std::mem::{offset_of, size_of};

    pub const CALLS: i16 = offset_of!(SyscallCounters, calls) as i16;
    pub const ERRORS: i16 = offset_of!(SyscallCounters, errors) as i16;
    pub const TIMED: i16 = offset_of!(SyscallCounters, timed) as i16;
    pub const TOTAL_NS: i16 = offset_of!(SyscallCounters, total_ns) as i16;
    pub const SIZE: usize = size_of::<SyscallCounters>();
}

/// Arguments of the raw tracepoints as the programs see them (ctx is an array
/// of u64, one per argument of the tracepoint's prototype).
#[repr(C)]
struct SysEnterArgs {
    _regs: u64,
    id: u64,
}

#[repr(C)]
struct SysExitArgs {
    _regs: u64,
    ret: u64,
}

#[repr(C)]
struct SchedSwitchArgs {
    preempt: u64,
    _prev: u64,
    _next: u64,
    prev_state: u64,
}

#[repr(C)]
struct SchedProcessExecArgs {
    _task: u64,
    old_pid: u64,
    _bprm: u64,
}

/// The programs' own stack frame, below r10. `new_slot` is first (lowest) and
/// 8-aligned for its double-word stores.
#[repr(C)]
struct Frame {
    new_slot: ThreadSlot,
    timed: u32,
    old_tid: u32,
    misc: u32,
    max: u32,
    epoch: u32,
    nr: u32,
    tid: u32,
}

/// Offset from r10 of a field at `off` in [`Frame`].
const fn frame(off: usize) -> i16 {
    off as i16 - size_of::<Frame>() as i16
}

const _: () = assert!(size_of::<Frame>() <= 512, "BPF stack is 512 bytes");
const _: () = assert!(size_of::<Frame>().is_multiple_of(8));

/// Per-CPU event counters (key: one of these).
pub mod misc {
    /// Thread slots that could not be created (full hash map): lost tracking.
    pub const LOST: u32 = 0;
    pub const FORKS: u32 = 1;
    pub const EXITS: u32 = 2;
    /// Returns whose entry was not seen (in flight at attach, a child's first return).
    pub const UNPAIRED: u32 = 3;
    pub const N: u32 = 4;
}

/// Map descriptors the programs are built against.
#[derive(Clone, Copy, Debug)]
pub struct MapFds {
    pub threads: i32,
    pub stats: i32,
    /// Per-CPU u64 max call time, key epoch * MAX_NR + nr.
    pub maxes: i32,
    /// One u32 whose low bit picks the half of `maxes` being written.
    pub epoch: i32,
    pub misc: i32,
}

// Stack slots (below r10).
const K_TID: i16 = frame(offset_of!(Frame, tid));
const K_NR: i16 = frame(offset_of!(Frame, nr));
const K_EPOCH: i16 = frame(offset_of!(Frame, epoch));
const K_MAX: i16 = frame(offset_of!(Frame, max));
const K_MISC: i16 = frame(offset_of!(Frame, misc));
const K_TIMED: i16 = frame(offset_of!(Frame, timed));
const K_OLD_TID: i16 = frame(offset_of!(Frame, old_tid));
const NEW_SLOT: i16 = frame(offset_of!(Frame, new_slot));

/// r0 = thread slot of the current task, or leave through `out` if it is not
/// tracked. Clobbers r1-r5.
fn current_slot(a: &mut Asm, m: &MapFds) {
    a.call(Helper::GetCurrentPidTgid)
        .store_reg(Size::W, R10, K_TID, R0)
        .ld_map_fd(R1, m.threads)
        .mov_reg(R2, R10)
        .alu_imm(Alu::Add, R2, K_TID as i32)
        .call(Helper::MapLookupElem)
        .jmp_imm(Cond::Eq, R0, 0, "out")
        .load(Size::W, R1, R0, slot::ON)
        .jmp_imm(Cond::Eq, R1, 0, "out");
}

/// misc[idx] += 1 on this CPU. Clobbers r0-r5.
fn count_misc(a: &mut Asm, m: &MapFds, idx: u32, skip: &'static str) {
    a.store_imm(Size::W, R10, K_MISC, idx as i32)
        .ld_map_fd(R1, m.misc)
        .mov_reg(R2, R10)
        .alu_imm(Alu::Add, R2, K_MISC as i32)
        .call(Helper::MapLookupElem)
        .jmp_imm(Cond::Eq, R0, 0, skip)
        .inc_u64(R0, 0)
        .label(skip);
}

fn epilogue(a: &mut Asm) -> Result<Vec<Insn>> {
    a.label("out").mov_imm(R0, 0).exit();
    a.finish()
}

/// raw_syscalls:sys_enter, ctx = (struct pt_regs *regs, long id). Every call
/// is counted; one in 2^`sample_log2` (chosen at random, so no call pattern
/// can line up with it) is timed, every call when 0.
pub fn sys_enter(m: &MapFds, sample_log2: u32) -> Result<Vec<Insn>> {
    let mut a = Asm::new();
    a.load(Size::DW, R6, R1, offset_of!(SysEnterArgs, id) as i16);
    // Unsigned compare: negative ids land in the last slot too.
    a.jmp_imm(Cond::Gt, R6, MAX_NR as i32 - 1, "clamp")
        .ja("nr_ok")
        .label("clamp")
        .mov_imm(R6, MAX_NR as i32 - 1)
        .label("nr_ok");
    current_slot(&mut a, m);
    a.mov_reg(R7, R0)
        .inc_u64(R7, slot::SYSCALLS)
        .store_reg(Size::W, R7, slot::ENTER_NR, R6)
        .store_reg(Size::W, R10, K_NR, R6)
        .ld_map_fd(R1, m.stats)
        .mov_reg(R2, R10)
        .alu_imm(Alu::Add, R2, K_NR as i32)
        .call(Helper::MapLookupElem)
        .jmp_imm(Cond::Eq, R0, 0, "sample")
        .inc_u64(R0, stat::CALLS)
        .label("sample");
    if sample_log2 > 0 {
        a.call(Helper::GetPrandomU32)
            .alu_imm(Alu::And, R0, (1 << sample_log2) - 1)
            .jmp_imm(Cond::Eq, R0, 0, "timed")
            .store_imm(Size::W, R7, slot::IN_CALL, slot::UNTIMED)
            .ja("out")
            .label("timed");
    }
    a.store_imm(Size::W, R7, slot::IN_CALL, slot::TIMING)
        // The clock is read last so the call's time leaves out our own work.
        .call(Helper::KtimeGetNs)
        .store_reg(Size::DW, R7, slot::ENTER_TS, R0);
    epilogue(&mut a)
}

/// raw_syscalls:sys_exit, ctx = (struct pt_regs *regs, long ret). Errors are
/// counted for every call; time only for the calls sys_enter chose to time.
pub fn sys_exit(m: &MapFds) -> Result<Vec<Insn>> {
    let mut a = Asm::new();
    a.load(Size::DW, R6, R1, offset_of!(SysExitArgs, ret) as i16);
    current_slot(&mut a, m);
    a.mov_reg(R7, R0)
        .load(Size::W, R1, R7, slot::IN_CALL)
        .jmp_imm(Cond::Eq, R1, 0, "unpaired")
        .store_reg(Size::W, R10, K_TIMED, R1)
        .mov_imm(R9, 0)
        .jmp_imm(Cond::Ne, R1, slot::TIMING, "untimed")
        // The clock is read first so the call's time leaves out our own work.
        .call(Helper::KtimeGetNs)
        .mov_reg(R9, R0)
        .load(Size::DW, R1, R7, slot::ENTER_TS)
        .alu_reg(Alu::Sub, R9, R1)
        .label("untimed")
        .store_imm(Size::W, R7, slot::IN_CALL, 0)
        .load(Size::W, R8, R7, slot::ENTER_NR)
        // The verifier must see the key is in range for the maxes arithmetic.
        .jmp_imm(Cond::Gt, R8, MAX_NR as i32 - 1, "out")
        .store_reg(Size::W, R10, K_NR, R8)
        .ld_map_fd(R1, m.stats)
        .mov_reg(R2, R10)
        .alu_imm(Alu::Add, R2, K_NR as i32)
        .call(Helper::MapLookupElem)
        .jmp_imm(Cond::Eq, R0, 0, "out")
        // -4095 <= ret <= -1 is an error return (-errno).
        .mov_reg(R1, R6)
        .alu_imm(Alu::Add, R1, 4095)
        .jmp_imm(Cond::Gt, R1, 4094, "no_error")
        .inc_u64(R0, stat::ERRORS)
        .label("no_error")
        .load(Size::W, R1, R10, K_TIMED)
        .jmp_imm(Cond::Ne, R1, slot::TIMING, "out")
        .inc_u64(R0, stat::TIMED)
        .load(Size::DW, R1, R0, stat::TOTAL_NS)
        .alu_reg(Alu::Add, R1, R9)
        .store_reg(Size::DW, R0, stat::TOTAL_NS, R1)
        .store_imm(Size::W, R10, K_EPOCH, 0)
        .ld_map_fd(R1, m.epoch)
        .mov_reg(R2, R10)
        .alu_imm(Alu::Add, R2, K_EPOCH as i32)
        .call(Helper::MapLookupElem)
        .jmp_imm(Cond::Eq, R0, 0, "out")
        .load(Size::W, R1, R0, 0)
        .alu_imm(Alu::And, R1, 1)
        .alu_imm(Alu::Mul, R1, MAX_NR as i32)
        .alu_reg(Alu::Add, R1, R8)
        .store_reg(Size::W, R10, K_MAX, R1)
        .ld_map_fd(R1, m.maxes)
        .mov_reg(R2, R10)
        .alu_imm(Alu::Add, R2, K_MAX as i32)
        .call(Helper::MapLookupElem)
        .jmp_imm(Cond::Eq, R0, 0, "out")
        .load(Size::DW, R1, R0, 0)
        .jmp_reg(Cond::Ge, R1, R9, "out")
        .store_reg(Size::DW, R0, 0, R9)
        .ja("out")
        .label("unpaired");
    count_misc(&mut a, m, misc::UNPAIRED, "unpaired_done");
    epilogue(&mut a)
}

/// sched:sched_switch (raw), ctx = (bool preempt, prev, next, unsigned int
/// prev_state); runs as `prev`. Voluntary exactly as the kernel's nvcsw: not a
/// preemption and the task was leaving the running state.
pub fn sched_switch(m: &MapFds) -> Result<Vec<Insn>> {
    let mut a = Asm::new();
    a.load(
        Size::DW,
        R6,
        R1,
        offset_of!(SchedSwitchArgs, preempt) as i16,
    )
    .load(
        Size::DW,
        R7,
        R1,
        offset_of!(SchedSwitchArgs, prev_state) as i16,
    );
    current_slot(&mut a, m);
    // prev_state arrives zero-extended from an unsigned int.
    a.jmp_imm(Cond::Ne, R6, 0, "invol")
        .jmp_imm(Cond::Eq, R7, 0, "invol")
        .inc_u64(R0, slot::VOLUNTARY)
        .ja("out")
        .label("invol")
        .inc_u64(R0, slot::INVOLUNTARY);
    epilogue(&mut a)
}

/// sched:sched_process_exit (raw); runs as the exiting thread. Its calls stop
/// here (exit and exit_group never return), its counters stay for the report.
pub fn sched_process_exit(m: &MapFds) -> Result<Vec<Insn>> {
    let mut a = Asm::new();
    current_slot(&mut a, m);
    a.mov_reg(R6, R0)
        .store_imm(Size::W, R6, slot::ON, 0)
        .store_imm(Size::W, R6, slot::IN_CALL, 0)
        .mov_reg(R1, R6)
        .alu_imm(Alu::Add, R1, slot::COMM as i32)
        .mov_imm(R2, COMM_LEN as i32)
        .call(Helper::GetCurrentComm);
    count_misc(&mut a, m, misc::EXITS, "counted");
    epilogue(&mut a)
}

/// sched:sched_process_exec (raw), ctx = (struct task_struct *p, pid_t
/// old_pid, struct linux_binprm *bprm); runs as the task after a successful
/// exec. A thread other than the leader that execs takes the process's pid
/// (the old leader has exited by then, and its slot stopped tracking): the
/// leader's slot tracks again and takes over the execve in progress, so its
/// return pairs; the old tid's slot keeps its counters and is no longer in a
/// call. Nothing to do when the leader itself execs.
pub fn sched_process_exec(m: &MapFds) -> Result<Vec<Insn>> {
    let mut a = Asm::new();
    a.load(
        Size::DW,
        R6,
        R1,
        offset_of!(SchedProcessExecArgs, old_pid) as i16,
    )
    .store_reg(Size::W, R10, K_OLD_TID, R6)
    .call(Helper::GetCurrentPidTgid)
    .store_reg(Size::W, R10, K_TID, R0)
    // Both as u32 from the stack, so the compare sees zero-extended tids.
    .load(Size::W, R6, R10, K_OLD_TID)
    .load(Size::W, R7, R10, K_TID)
    .jmp_reg(Cond::Eq, R6, R7, "out")
    .ld_map_fd(R1, m.threads)
    .mov_reg(R2, R10)
    .alu_imm(Alu::Add, R2, K_OLD_TID as i32)
    .call(Helper::MapLookupElem)
    .jmp_imm(Cond::Eq, R0, 0, "out")
    .mov_reg(R8, R0)
    .load(Size::W, R1, R8, slot::ON)
    .jmp_imm(Cond::Eq, R1, 0, "out")
    .ld_map_fd(R1, m.threads)
    .mov_reg(R2, R10)
    .alu_imm(Alu::Add, R2, K_TID as i32)
    .call(Helper::MapLookupElem)
    .jmp_imm(Cond::Ne, R0, 0, "take_over");
    // No leader slot (a hash map that was full): the thread is lost to counting.
    count_misc(&mut a, m, misc::LOST, "lost_counted");
    a.ja("out")
        .label("take_over")
        .load(Size::W, R1, R8, slot::IN_CALL)
        .store_reg(Size::W, R0, slot::IN_CALL, R1)
        .load(Size::W, R1, R8, slot::ENTER_NR)
        .store_reg(Size::W, R0, slot::ENTER_NR, R1)
        .load(Size::DW, R1, R8, slot::ENTER_TS)
        .store_reg(Size::DW, R0, slot::ENTER_TS, R1)
        .store_imm(Size::W, R0, slot::SEEN, 1)
        .store_imm(Size::W, R0, slot::ON, 1)
        .store_imm(Size::W, R8, slot::ON, 0)
        .store_imm(Size::W, R8, slot::IN_CALL, 0)
        // The old tid is gone from /proc by report time: keep a name for its row.
        .mov_reg(R1, R8)
        .alu_imm(Alu::Add, R1, slot::COMM as i32)
        .mov_imm(R2, COMM_LEN as i32)
        .call(Helper::GetCurrentComm);
    epilogue(&mut a)
}

/// sched:sched_process_fork as a perf tracepoint: ctx is the event record,
/// `child_pid_off` its offset from the tracepoint's format file. Runs as the
/// parent; a new thread or process of a tracked task is tracked before it runs.
pub fn sched_process_fork(m: &MapFds, child_pid_off: i16) -> Result<Vec<Insn>> {
    let mut a = Asm::new();
    a.mov_reg(R6, R1);
    current_slot(&mut a, m);
    a.load(Size::W, R7, R6, child_pid_off)
        .store_reg(Size::W, R10, K_TID, R7)
        .ld_map_fd(R1, m.threads)
        .mov_reg(R2, R10)
        .alu_imm(Alu::Add, R2, K_TID as i32)
        .call(Helper::MapLookupElem)
        .jmp_imm(Cond::Eq, R0, 0, "insert")
        // An existing slot (array map, or a reused tid): keep its counters.
        .store_imm(Size::W, R0, slot::IN_CALL, 0)
        .store_imm(Size::W, R0, slot::SEEN, 1)
        .store_imm(Size::W, R0, slot::ON, 1)
        .ja("forked")
        .label("insert");
    for off in (0..slot::SIZE as i16).step_by(8) {
        a.store_imm(Size::DW, R10, NEW_SLOT + off, 0);
    }
    a.store_imm(Size::W, R10, NEW_SLOT + slot::ON, 1)
        .store_imm(Size::W, R10, NEW_SLOT + slot::SEEN, 1)
        .ld_map_fd(R1, m.threads)
        .mov_reg(R2, R10)
        .alu_imm(Alu::Add, R2, K_TID as i32)
        .mov_reg(R3, R10)
        .alu_imm(Alu::Add, R3, NEW_SLOT as i32)
        .mov_imm(R4, 0)
        .call(Helper::MapUpdateElem)
        .jmp_imm(Cond::Eq, R0, 0, "forked");
    count_misc(&mut a, m, misc::LOST, "lost_counted");
    a.label("forked");
    count_misc(&mut a, m, misc::FORKS, "fork_counted");
    epilogue(&mut a)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn map_values_round_trip_through_bytes() {
        // 64 B per thread slot is what the array map's size is planned on.
        assert_eq!(slot::SIZE, 64);
        let t = ThreadSlot {
            on: 1,
            in_call: slot::UNTIMED as u32,
            enter_nr: 110,
            syscalls: 7,
            comm: *b"find\0\0\0\0\0\0\0\0\0\0\0\0",
            ..ThreadSlot::default()
        };
        let b = t.as_bytes();
        assert_eq!(b.len(), slot::SIZE);
        assert_eq!(b[slot::ENTER_NR as usize], 110);
        assert_eq!(&b[slot::COMM as usize..][..4], b"find");
        assert_eq!(ThreadSlot::from_bytes(b), t);
        let n = SyscallCounters {
            errors: 3,
            ..SyscallCounters::default()
        };
        assert_eq!(n.as_bytes()[stat::ERRORS as usize], 3);
        assert_eq!(SyscallCounters::from_bytes(n.as_bytes()), n);
        // The frame's u32 slots do not overlap the fresh slot or each other,
        // and all lie inside the 512-byte stack below r10.
        let mut k = [K_TIMED, K_OLD_TID, K_MISC, K_MAX, K_EPOCH, K_NR, K_TID];
        k.sort_unstable();
        assert!(NEW_SLOT >= -512 && NEW_SLOT + slot::SIZE as i16 <= k[0]);
        assert!(
            k.windows(2).all(|w| w[1] - w[0] >= 4) && k[6] <= -4,
            "{k:?}"
        );
    }

    #[test]
    fn programs_assemble_with_all_labels() {
        let m = MapFds {
            threads: 3,
            stats: 4,
            maxes: 5,
            epoch: 6,
            misc: 7,
        };
        for p in [
            sys_enter(&m, 0).unwrap(),
            sys_enter(&m, 4).unwrap(),
            sys_exit(&m).unwrap(),
            sched_switch(&m).unwrap(),
            sched_process_exit(&m).unwrap(),
            sched_process_exec(&m).unwrap(),
            sched_process_fork(&m, 20).unwrap(),
        ] {
            assert_eq!(p.last().unwrap().code, 0x95, "ends in exit");
            // Every ld_imm64 names one of our maps.
            for i in p.iter().filter(|i| i.code == 0x18) {
                assert!((3..=7).contains(&i.imm), "{i:?}");
            }
        }
    }
}
