//! The five observe programs, and the layout of the maps they share with user
//! space. Hot path (sys_enter/sys_exit, every system call of every task): one
//! lookup of the thread slot, which is both the filter and the per-thread
//! counters, then per-CPU counters indexed by syscall number (no atomics, no
//! locks). Times are bpf_ktime_get_ns (CLOCK_MONOTONIC).

use anyhow::Result;

use super::insn::{Alu, Asm, Cond, Helper, Insn, R0, R1, R2, R3, R4, R6, R7, R8, R9, R10, Size};

/// Syscall numbers at or above this share the last slot (as in the tracefs tracer).
pub const MAX_NR: u32 = 1024;

/// Thread slot (key: tid as u32), one per tracked thread.
pub mod slot {
    /// u32: 1 while the thread is tracked (cleared when it exits).
    pub const ON: i16 = 0;
    /// u32 between sys_enter and sys_exit: [`TIMING`] when the call is timed,
    /// [`UNTIMED`] when sampling left it out; 0 outside calls.
    pub const IN_CALL: i16 = 4;
    pub const TIMING: i32 = 1;
    pub const UNTIMED: i32 = 2;
    pub const ENTER_TS: i16 = 8;
    /// u32 syscall number of the call in progress.
    pub const ENTER_NR: i16 = 16;
    /// u32: 1 once the thread was ever tracked (its row is reported).
    pub const SEEN: i16 = 20;
    pub const SYSCALLS: i16 = 24;
    pub const VOLUNTARY: i16 = 32;
    pub const INVOLUNTARY: i16 = 40;
    /// comm at exit (the thread is gone from /proc by report time).
    pub const COMM: i16 = 48;
    pub const SIZE: usize = 64;
}

/// Per-CPU per-syscall counters (key: nr).
pub mod stat {
    pub const CALLS: i16 = 0;
    pub const ERRORS: i16 = 8;
    pub const TIMED: i16 = 16;
    pub const TOTAL_NS: i16 = 24;
    pub const SIZE: usize = 32;
}

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
const K_TID: i16 = -4;
const K_NR: i16 = -8;
const K_EPOCH: i16 = -12;
const K_MAX: i16 = -16;
const K_MISC: i16 = -20;
const K_TIMED: i16 = -24;
const NEW_SLOT: i16 = -96;

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
    a.load(Size::DW, R6, R1, 8);
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
    a.load(Size::DW, R6, R1, 8);
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
    a.load(Size::DW, R6, R1, 0).load(Size::DW, R7, R1, 24);
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
        .mov_imm(R2, 16)
        .call(Helper::GetCurrentComm);
    count_misc(&mut a, m, misc::EXITS, "counted");
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
