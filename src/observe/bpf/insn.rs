//! A small eBPF assembler: the instruction layout of the kernel's
//! Documentation/bpf/standardization/instruction-set.rst, named helpers for the
//! few instruction forms the observe programs use, and labels for jumps so the
//! programs read top to bottom without hand-counted offsets.

use std::collections::HashMap;

/// A program the assembler cannot finish: a bug in the program's source.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AsmError {
    #[error("eBPF assembler: jump to undefined label `{0}`")]
    UndefinedLabel(&'static str),
    #[error("eBPF assembler: jump to `{0}` too far")]
    TooFar(&'static str),
}

/// One 8-byte instruction: opcode, dst (low nibble) and src (high nibble)
/// registers, signed 16-bit offset, signed 32-bit immediate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C)]
pub struct Insn {
    pub code: u8,
    pub regs: u8,
    pub off: i16,
    pub imm: i32,
}

impl Insn {
    pub fn new(code: u8, dst: Reg, src: Reg, off: i16, imm: i32) -> Insn {
        Insn {
            code,
            regs: (dst.0 & 0xf) | ((src.0 & 0xf) << 4),
            off,
            imm,
        }
    }

    /// The little-endian wire form the kernel reads.
    #[cfg(any(test, feature = "testing"))]
    pub fn to_bytes(self) -> [u8; 8] {
        let mut b = [0u8; 8];
        b[0] = self.code;
        b[1] = self.regs;
        b[2..4].copy_from_slice(&self.off.to_le_bytes());
        b[4..8].copy_from_slice(&self.imm.to_le_bytes());
        b
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reg(pub u8);
pub const R0: Reg = Reg(0);
pub const R1: Reg = Reg(1);
pub const R2: Reg = Reg(2);
pub const R3: Reg = Reg(3);
pub const R4: Reg = Reg(4);
pub const R6: Reg = Reg(6);
pub const R7: Reg = Reg(7);
pub const R8: Reg = Reg(8);
pub const R9: Reg = Reg(9);
/// Read-only frame pointer; the stack grows down from it (512 bytes).
pub const R10: Reg = Reg(10);

// Instruction classes.
const LD: u8 = 0x00;
const LDX: u8 = 0x01;
const ST: u8 = 0x02;
const STX: u8 = 0x03;
const JMP: u8 = 0x05;
const ALU64: u8 = 0x07;
// Sizes and modes of loads and stores.
const IMM: u8 = 0x00;
const MEM: u8 = 0x60;
// Operand source: immediate (K) or register (X).
const K: u8 = 0x00;
const X: u8 = 0x08;

/// Access width of a load or store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Size {
    W = 0x00,
    #[cfg_attr(
        not(any(test, feature = "testing")),
        expect(dead_code, reason = "only iolab's tests construct it")
    )]
    H = 0x08,
    #[cfg_attr(
        not(any(test, feature = "testing")),
        expect(dead_code, reason = "only iolab's tests construct it")
    )]
    B = 0x10,
    DW = 0x18,
}

/// 64-bit ALU operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Alu {
    Add = 0x00,
    Sub = 0x10,
    Mul = 0x20,
    And = 0x50,
    #[cfg_attr(
        not(any(test, feature = "testing")),
        expect(dead_code, reason = "only iolab's tests construct it")
    )]
    Rsh = 0x70,
    Mov = 0xb0,
}

/// Jump conditions (unsigned unless named `S...`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cond {
    Always = 0x00,
    Eq = 0x10,
    Gt = 0x20,
    Ge = 0x30,
    Ne = 0x50,
    #[cfg_attr(
        not(any(test, feature = "testing")),
        expect(dead_code, reason = "only iolab's tests construct it")
    )]
    Slt = 0xc0,
}

const CALL: u8 = 0x80;
const EXIT: u8 = 0x90;
/// src_reg of an ld_imm64 whose immediate is a map file descriptor: the
/// verifier replaces it with the map's address.
pub const PSEUDO_MAP_FD: u8 = 1;

/// Kernel helper functions by their stable numbers (include/uapi/linux/bpf.h).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Helper {
    MapLookupElem = 1,
    MapUpdateElem = 2,
    KtimeGetNs = 5,
    GetPrandomU32 = 7,
    GetCurrentPidTgid = 14,
    GetCurrentComm = 16,
}

/// Instructions being assembled, with forward jumps resolved by label.
#[derive(Default)]
pub struct Asm {
    insns: Vec<Insn>,
    labels: HashMap<&'static str, usize>,
    fixups: Vec<(usize, &'static str)>,
}

impl Asm {
    pub fn new() -> Asm {
        Asm::default()
    }

    fn push(&mut self, i: Insn) -> &mut Asm {
        self.insns.push(i);
        self
    }

    /// dst op= imm
    pub fn alu_imm(&mut self, op: Alu, dst: Reg, imm: i32) -> &mut Asm {
        self.push(Insn::new(ALU64 | K | op as u8, dst, R0, 0, imm))
    }

    /// dst op= src
    pub fn alu_reg(&mut self, op: Alu, dst: Reg, src: Reg) -> &mut Asm {
        self.push(Insn::new(ALU64 | X | op as u8, dst, src, 0, 0))
    }

    pub fn mov_imm(&mut self, dst: Reg, imm: i32) -> &mut Asm {
        self.alu_imm(Alu::Mov, dst, imm)
    }

    pub fn mov_reg(&mut self, dst: Reg, src: Reg) -> &mut Asm {
        self.alu_reg(Alu::Mov, dst, src)
    }

    /// dst = *(size *)(src + off)
    pub fn load(&mut self, size: Size, dst: Reg, src: Reg, off: i16) -> &mut Asm {
        self.push(Insn::new(LDX | MEM | size as u8, dst, src, off, 0))
    }

    /// *(size *)(dst + off) = src
    pub fn store_reg(&mut self, size: Size, dst: Reg, off: i16, src: Reg) -> &mut Asm {
        self.push(Insn::new(STX | MEM | size as u8, dst, src, off, 0))
    }

    /// *(size *)(dst + off) = imm
    pub fn store_imm(&mut self, size: Size, dst: Reg, off: i16, imm: i32) -> &mut Asm {
        self.push(Insn::new(ST | MEM | size as u8, dst, R0, off, imm))
    }

    /// dst = map (two instruction slots; the kernel relocates the fd).
    pub fn ld_map_fd(&mut self, dst: Reg, fd: i32) -> &mut Asm {
        self.push(Insn::new(
            LD | IMM | Size::DW as u8,
            dst,
            Reg(PSEUDO_MAP_FD),
            0,
            fd,
        ));
        self.push(Insn::new(0, R0, R0, 0, 0))
    }

    pub fn call(&mut self, h: Helper) -> &mut Asm {
        self.push(Insn::new(JMP | CALL, R0, R0, 0, h as i32))
    }

    pub fn exit(&mut self) -> &mut Asm {
        self.push(Insn::new(JMP | EXIT, R0, R0, 0, 0))
    }

    /// if dst cond imm goto label
    pub fn jmp_imm(&mut self, c: Cond, dst: Reg, imm: i32, label: &'static str) -> &mut Asm {
        self.fixups.push((self.insns.len(), label));
        self.push(Insn::new(JMP | K | c as u8, dst, R0, 0, imm))
    }

    /// if dst cond src goto label
    pub fn jmp_reg(&mut self, c: Cond, dst: Reg, src: Reg, label: &'static str) -> &mut Asm {
        self.fixups.push((self.insns.len(), label));
        self.push(Insn::new(JMP | X | c as u8, dst, src, 0, 0))
    }

    pub fn ja(&mut self, label: &'static str) -> &mut Asm {
        self.jmp_imm(Cond::Always, R0, 0, label)
    }

    /// The next instruction is the target of `name`.
    pub fn label(&mut self, name: &'static str) -> &mut Asm {
        self.labels.insert(name, self.insns.len());
        self
    }

    /// *(u64 *)(reg + off) += 1 through r1 (a map value counter).
    pub fn inc_u64(&mut self, reg: Reg, off: i16) -> &mut Asm {
        self.load(Size::DW, R1, reg, off)
            .alu_imm(Alu::Add, R1, 1)
            .store_reg(Size::DW, reg, off, R1)
    }

    /// Resolve labels; jump offsets count instructions after the jump.
    pub fn finish(&mut self) -> Result<Vec<Insn>, AsmError> {
        for &(at, name) in &self.fixups {
            let Some(&to) = self.labels.get(name) else {
                return Err(AsmError::UndefinedLabel(name));
            };
            let off = to as i64 - at as i64 - 1;
            self.insns[at].off = i16::try_from(off).map_err(|_| AsmError::TooFar(name))?;
        }
        Ok(std::mem::take(&mut self.insns))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(f: impl FnOnce(&mut Asm) -> &mut Asm) -> Vec<[u8; 8]> {
        let mut a = Asm::new();
        f(&mut a);
        a.finish()
            .unwrap()
            .into_iter()
            .map(Insn::to_bytes)
            .collect()
    }

    // Expected bytes from the kernel's instruction-set document: opcode byte,
    // regs byte (src << 4 | dst), little-endian off and imm.
    #[test]
    fn encodes_alu_and_mov() {
        // BPF_ALU64 | BPF_K | BPF_MOV = 0xb7: r0 = 0
        assert_eq!(one(|a| a.mov_imm(R0, 0)), vec![[0xb7, 0, 0, 0, 0, 0, 0, 0]]);
        // r6 = r1: 0xbf, dst 6 src 1
        assert_eq!(
            one(|a| a.mov_reg(R6, R1)),
            vec![[0xbf, 0x16, 0, 0, 0, 0, 0, 0]]
        );
        // r2 += -4: 0x07, imm -4
        assert_eq!(
            one(|a| a.alu_imm(Alu::Add, R2, -4)),
            vec![[0x07, 0x02, 0, 0, 0xfc, 0xff, 0xff, 0xff]]
        );
        // r0 -= r9: 0x1f
        assert_eq!(
            one(|a| a.alu_reg(Alu::Sub, R0, R9)),
            vec![[0x1f, 0x90, 0, 0, 0, 0, 0, 0]]
        );
    }

    #[test]
    fn encodes_memory_access() {
        // r6 = *(u64 *)(r1 + 8): BPF_LDX | BPF_MEM | BPF_DW = 0x79
        assert_eq!(
            one(|a| a.load(Size::DW, R6, R1, 8)),
            vec![[0x79, 0x16, 8, 0, 0, 0, 0, 0]]
        );
        // *(u32 *)(r10 - 4) = r0: BPF_STX | BPF_MEM | BPF_W = 0x63
        assert_eq!(
            one(|a| a.store_reg(Size::W, R10, -4, R0)),
            vec![[0x63, 0x0a, 0xfc, 0xff, 0, 0, 0, 0]]
        );
        // *(u64 *)(r10 - 16) = 7: BPF_ST | BPF_MEM | BPF_DW = 0x7a
        assert_eq!(
            one(|a| a.store_imm(Size::DW, R10, -16, 7)),
            vec![[0x7a, 0x0a, 0xf0, 0xff, 7, 0, 0, 0]]
        );
    }

    #[test]
    fn encodes_map_fd_load_call_exit() {
        // BPF_LD | BPF_IMM | BPF_DW = 0x18 with src = BPF_PSEUDO_MAP_FD, then a
        // zero second half (upper 32 bits of the immediate).
        assert_eq!(
            one(|a| a.ld_map_fd(R1, 5)),
            vec![[0x18, 0x11, 0, 0, 5, 0, 0, 0], [0; 8]]
        );
        // call bpf_map_lookup_elem (1): 0x85; exit: 0x95
        assert_eq!(
            one(|a| a.call(Helper::MapLookupElem).exit()),
            vec![[0x85, 0, 0, 0, 1, 0, 0, 0], [0x95, 0, 0, 0, 0, 0, 0, 0]]
        );
    }

    #[test]
    fn jumps_resolve_forward_and_backward_labels() {
        let code = one(|a| {
            a.label("top")
                .jmp_imm(Cond::Eq, R0, 0, "out") // 0x15, skips 2
                .jmp_reg(Cond::Gt, R1, R9, "top") // 0x2d, back to 0: off -2
                .mov_imm(R0, 1)
                .label("out")
                .exit()
        });
        assert_eq!(code[0], [0x15, 0x00, 2, 0, 0, 0, 0, 0]);
        assert_eq!(code[1], [0x2d, 0x91, 0xfe, 0xff, 0, 0, 0, 0]);
        let mut a = Asm::new();
        a.ja("nowhere");
        assert!(a.finish().is_err(), "undefined label must be an error");
    }
}
