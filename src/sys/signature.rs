//! On-disk signatures that say "this device holds data": filesystem superblocks,
//! swap headers, partition tables, RAID/LVM/LUKS labels. Only the well-known magic
//! numbers at their documented offsets are checked (what blkid/wipefs look for
//! first); a blank or random device has none of them.

use std::io;

/// Something that can be read at an offset: a device, a file, an in-memory image.
pub trait ReadAt {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize>;
}

impl ReadAt for std::fs::File {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        std::os::unix::fs::FileExt::read_at(self, buf, offset)
    }
}

impl ReadAt for [u8] {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let Ok(start) = usize::try_from(offset) else {
            return Ok(0);
        };
        if start >= self.len() {
            return Ok(0);
        }
        let n = buf.len().min(self.len() - start);
        buf[..n].copy_from_slice(&self[start..start + n]);
        Ok(n)
    }
}

/// One signature found on a device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Signature {
    /// Short type name: "ext4", "xfs", "swap", "gpt", "mbr", "lvm2", ...
    pub kind: &'static str,
    /// What it is, for messages: "an ext4 filesystem".
    pub what: &'static str,
    /// Byte offset of the magic that identified it.
    pub offset: u64,
    /// Which structure's magic ("superblock magic", "partition table header").
    pub magic: &'static str,
}

impl std::fmt::Display for Signature {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({} at byte {})", self.what, self.magic, self.offset)
    }
}

/// How much of the start of a device is read: covers btrfs (64 KiB + 64) and the
/// ZFS uberblock ring (128-256 KiB of label 0).
pub const HEAD_BYTES: usize = 256 << 10;

/// Read `buf.len()` bytes at `offset`, zero-filling past the end of the device.
fn read_full<R: ReadAt + ?Sized>(dev: &R, buf: &mut [u8], offset: u64) -> io::Result<()> {
    let mut done = 0;
    while done < buf.len() {
        match dev.read_at(&mut buf[done..], offset + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    buf[done..].fill(0);
    Ok(())
}

fn le16(b: &[u8], off: usize) -> u16 {
    u16::from_le_bytes([b[off], b[off + 1]])
}
fn le32(b: &[u8], off: usize) -> u32 {
    u32::from_le_bytes(b[off..off + 4].try_into().unwrap_or([0; 4]))
}
fn le64(b: &[u8], off: usize) -> u64 {
    u64::from_le_bytes(b[off..off + 8].try_into().unwrap_or([0; 8]))
}
fn has(b: &[u8], off: usize, magic: &[u8]) -> bool {
    b.get(off..off + magic.len()) == Some(magic)
}

const MD_MAGIC: u32 = 0xa92b_4efc;
const ZFS_UB_MAGIC: u64 = 0x00ba_b10c;

/// Scan a device (or image) of `size` bytes for signatures. Reads the first
/// [`HEAD_BYTES`] and two 4 KiB blocks near the end (where MD 0.90/1.0 keep
/// their superblocks).
pub fn scan<R: ReadAt + ?Sized>(dev: &R, size: u64) -> io::Result<Vec<Signature>> {
    let head_len = (size.min(HEAD_BYTES as u64)) as usize;
    let mut h = vec![0u8; HEAD_BYTES];
    read_full(dev, &mut h[..head_len], 0)?;
    let mut found = scan_head(&h);
    for off in md_tail_offsets(size) {
        let mut b = [0u8; 4];
        read_full(dev, &mut b, off)?;
        let m = u32::from_le_bytes(b);
        if m == MD_MAGIC || m.swap_bytes() == MD_MAGIC {
            found.push(sig("md", "an MD RAID member", off, "superblock magic"));
        }
    }
    Ok(found)
}

/// Where MD 1.0 (4-8 KiB before the end, 4 KiB aligned) and 0.90 (last 64 KiB
/// aligned block but one) superblocks live.
fn md_tail_offsets(size: u64) -> Vec<u64> {
    let mut v = Vec::new();
    if size >= 3 * 65536 {
        v.push(((size >> 16) << 16) - 65536);
    }
    if size >= 16 * 512 * 2 {
        let sectors = size >> 9;
        v.push(((sectors - 16) & !7) << 9);
    }
    v
}

fn sig(kind: &'static str, what: &'static str, offset: u64, magic: &'static str) -> Signature {
    Signature {
        kind,
        what,
        offset,
        magic,
    }
}

/// Signatures within the first [`HEAD_BYTES`] of a device; `h` must be
/// [`HEAD_BYTES`] long (zero past the device's end).
fn scan_head(h: &[u8]) -> Vec<Signature> {
    let mut v = Vec::new();
    if le16(h, 1080) == 0xEF53 && ext_sane(h) {
        v.push(ext_kind(h));
    }
    if has(h, 0, b"XFSB") {
        v.push(sig("xfs", "an XFS filesystem", 0, "superblock magic"));
    }
    if has(h, 65600, b"_BHRfS_M") {
        v.push(sig(
            "btrfs",
            "a btrfs filesystem",
            65600,
            "superblock magic",
        ));
    }
    if le32(h, 1024) == 0xF2F5_2010 {
        v.push(sig("f2fs", "an F2FS filesystem", 1024, "superblock magic"));
    }
    if has(h, 32768, b"JFS1") {
        v.push(sig("jfs", "a JFS filesystem", 32768, "superblock magic"));
    }
    if has(h, 65536 + 52, b"ReIsEr") {
        v.push(sig(
            "reiserfs",
            "a ReiserFS filesystem",
            65536 + 52,
            "superblock magic",
        ));
    }
    for ps in [4096usize, 8192, 16384, 65536] {
        let off = ps - 10;
        if has(h, off, b"SWAPSPACE2") || has(h, off, b"SWAP-SPACE") {
            v.push(sig("swap", "a swap area", off as u64, "swap header"));
            break;
        }
    }
    if has(h, 0, b"LUKS\xba\xbe") {
        v.push(sig("luks", "a LUKS encrypted volume", 0, "LUKS header"));
    }
    for s in 0..4usize {
        if has(h, s * 512, b"LABELONE") && has(h, s * 512 + 24, b"LVM2 001") {
            v.push(sig(
                "lvm2",
                "an LVM2 physical volume",
                (s * 512) as u64,
                "label",
            ));
            break;
        }
    }
    for off in [0usize, 4096] {
        if le32(h, off) == MD_MAGIC {
            v.push(sig(
                "md",
                "an MD RAID member",
                off as u64,
                "superblock magic",
            ));
        }
    }
    if has(h, 0, b"hsqs") || has(h, 0, b"sqsh") {
        v.push(sig("squashfs", "a squashfs image", 0, "superblock magic"));
    }
    if has(h, 32769, b"CD001") {
        v.push(sig(
            "iso9660",
            "an ISO 9660 filesystem",
            32769,
            "volume descriptor",
        ));
    }
    if has(h, 0, b"bluestore block device") {
        v.push(sig("bluestore", "a Ceph BlueStore device", 0, "label"));
    }
    // ZFS label 0 keeps a ring of uberblocks at 128-256 KiB; slots are at least 1 KiB.
    if (128usize..256).any(|k| {
        let m = le64(h, k * 1024);
        m == ZFS_UB_MAGIC || m.swap_bytes() == ZFS_UB_MAGIC
    }) {
        v.push(sig(
            "zfs",
            "a ZFS pool member",
            128 << 10,
            "uberblock magic",
        ));
    }
    let boot_sig = h[510] == 0x55 && h[511] == 0xAA;
    let mut boot_fs = false;
    if has(h, 3, b"NTFS    ") {
        v.push(sig("ntfs", "an NTFS filesystem", 3, "boot sector OEM id"));
        boot_fs = true;
    } else if has(h, 3, b"EXFAT   ") {
        v.push(sig("exfat", "an exFAT filesystem", 3, "boot sector OEM id"));
        boot_fs = true;
    } else if boot_sig
        && (h[0] == 0xEB || h[0] == 0xE9)
        && (has(h, 54, b"FAT12   ")
            || has(h, 54, b"FAT16   ")
            || has(h, 54, b"FAT     ")
            || has(h, 82, b"FAT32   "))
    {
        let off = if has(h, 82, b"FAT32   ") { 82 } else { 54 };
        v.push(sig("vfat", "a FAT filesystem", off, "boot sector type"));
        boot_fs = true;
    }
    let gpt = [512usize, 4096]
        .into_iter()
        .find(|&off| has(h, off, b"EFI PART"));
    if let Some(off) = gpt {
        v.push(sig(
            "gpt",
            "a GPT partition table",
            off as u64,
            "header signature",
        ));
    } else if boot_sig && !boot_fs && (0..4).any(|i| h[446 + i * 16 + 4] != 0) {
        v.push(sig(
            "mbr",
            "an MBR partition table",
            510,
            "boot signature 0x55AA with a used entry",
        ));
    }
    v
}

/// A two-byte magic alone would match one random device in 65536; these fields
/// of a real superblock are never zero or out of range.
fn ext_sane(h: &[u8]) -> bool {
    let sb = 1024;
    let inodes = le32(h, sb);
    let log_block_size = le32(h, sb + 0x18);
    let rev_level = le32(h, sb + 0x4C);
    inodes != 0 && log_block_size <= 6 && rev_level <= 1
}

/// ext2/3/4 share the magic; the feature flags tell them apart as blkid does.
fn ext_kind(h: &[u8]) -> Signature {
    let sb = 1024;
    let compat = le32(h, sb + 0x5C);
    let incompat = le32(h, sb + 0x60);
    let ro_compat = le32(h, sb + 0x64);
    const HAS_JOURNAL: u32 = 0x4;
    const JOURNAL_DEV: u32 = 0x8;
    // extents, 64bit, mmp, flex_bg, ... ; huge_file, gdt_csum, dir_nlink, extra_isize, metadata_csum
    const EXT4_INCOMPAT: u32 = 0x40 | 0x80 | 0x100 | 0x200 | 0x400 | 0x1000 | 0x8000 | 0x10000;
    const EXT4_RO_COMPAT: u32 = 0x8 | 0x10 | 0x20 | 0x40 | 0x400;
    let (kind, what) = if incompat & JOURNAL_DEV != 0 {
        ("jbd", "an ext3/ext4 external journal")
    } else if incompat & EXT4_INCOMPAT != 0 || ro_compat & EXT4_RO_COMPAT != 0 {
        ("ext4", "an ext4 filesystem")
    } else if compat & HAS_JOURNAL != 0 {
        ("ext3", "an ext3 filesystem")
    } else {
        ("ext2", "an ext2 filesystem")
    };
    sig(kind, what, 1080, "superblock magic")
}

#[cfg(test)]
mod tests {
    use super::*;

    const SIZE: usize = 1 << 20;

    fn img(stamps: &[(usize, &[u8])]) -> Vec<u8> {
        let mut v = vec![0u8; SIZE];
        for (off, bytes) in stamps {
            v[*off..*off + bytes.len()].copy_from_slice(bytes);
        }
        v
    }

    fn kinds(v: &[u8]) -> Vec<&'static str> {
        scan(v, v.len() as u64)
            .unwrap()
            .into_iter()
            .map(|s| s.kind)
            .collect()
    }

    #[test]
    fn table_of_magics() {
        let fat_boot: &[u8] = &[0xEB, 0x3C, 0x90];
        let mbr_entry: &[u8] = &[0x80, 0, 0, 0, 0x83];
        let cases: Vec<(&str, Vec<u8>, Vec<&str>)> = vec![
            ("blank", img(&[]), vec![]),
            (
                "ext2",
                img(&[(1024, &[1]), (1080, &[0x53, 0xEF])]),
                vec!["ext2"],
            ),
            ("ext-magic-only", img(&[(1080, &[0x53, 0xEF])]), vec![]),
            (
                "ext-bad-block-size",
                img(&[(1024, &[1]), (1024 + 0x18, &[7]), (1080, &[0x53, 0xEF])]),
                vec![],
            ),
            (
                "ext3",
                img(&[
                    (1024, &[1]),
                    (1080, &[0x53, 0xEF]),
                    (1024 + 0x5C, &[4, 0, 0, 0]),
                ]),
                vec!["ext3"],
            ),
            (
                "ext4",
                img(&[
                    (1024, &[1]),
                    (1080, &[0x53, 0xEF]),
                    (1024 + 0x5C, &[4, 0, 0, 0]),
                    (1024 + 0x60, &[0x40, 0, 0, 0]),
                ]),
                vec!["ext4"],
            ),
            ("xfs", img(&[(0, b"XFSB")]), vec!["xfs"]),
            ("btrfs", img(&[(65600, b"_BHRfS_M")]), vec!["btrfs"]),
            ("swap4k", img(&[(4086, b"SWAPSPACE2")]), vec!["swap"]),
            ("swap64k", img(&[(65526, b"SWAP-SPACE")]), vec!["swap"]),
            ("luks", img(&[(0, b"LUKS\xba\xbe")]), vec!["luks"]),
            (
                "lvm2",
                img(&[(512, b"LABELONE"), (512 + 24, b"LVM2 001")]),
                vec!["lvm2"],
            ),
            ("lvm-label-alone", img(&[(512, b"LABELONE")]), vec![]),
            ("md1.2", img(&[(4096, &MD_MAGIC.to_le_bytes())]), vec!["md"]),
            ("squashfs", img(&[(0, b"hsqs")]), vec!["squashfs"]),
            ("iso", img(&[(32769, b"CD001")]), vec!["iso9660"]),
            (
                "f2fs",
                img(&[(1024, &0xF2F5_2010u32.to_le_bytes())]),
                vec!["f2fs"],
            ),
            (
                "zfs",
                img(&[(128 * 1024 + 3 * 1024, &ZFS_UB_MAGIC.to_le_bytes())]),
                vec!["zfs"],
            ),
            (
                "ntfs",
                img(&[(3, b"NTFS    "), (510, &[0x55, 0xAA])]),
                vec!["ntfs"],
            ),
            (
                "exfat",
                img(&[(3, b"EXFAT   "), (510, &[0x55, 0xAA])]),
                vec!["exfat"],
            ),
            (
                "fat32",
                img(&[(0, fat_boot), (82, b"FAT32   "), (510, &[0x55, 0xAA])]),
                vec!["vfat"],
            ),
            (
                "fat16",
                img(&[(0, fat_boot), (54, b"FAT16   "), (510, &[0x55, 0xAA])]),
                vec!["vfat"],
            ),
            (
                "mbr",
                img(&[(446, mbr_entry), (510, &[0x55, 0xAA])]),
                vec!["mbr"],
            ),
            ("mbr-empty-table", img(&[(510, &[0x55, 0xAA])]), vec![]),
            (
                "gpt",
                img(&[(446 + 4, &[0xEE]), (510, &[0x55, 0xAA]), (512, b"EFI PART")]),
                vec!["gpt"],
            ),
            ("gpt4k", img(&[(4096, b"EFI PART")]), vec!["gpt"]),
            (
                "magic-off-by-one",
                img(&[(1024, &[1]), (1081, &[0x53, 0xEF])]),
                vec![],
            ),
        ];
        for (name, image, want) in cases {
            assert_eq!(kinds(&image), want, "case {name}");
        }
    }

    #[test]
    fn md_superblocks_at_the_end() {
        let size = SIZE as u64;
        for off in md_tail_offsets(size) {
            let mut v = img(&[]);
            v[off as usize..off as usize + 4].copy_from_slice(&MD_MAGIC.to_le_bytes());
            assert_eq!(kinds(&v), ["md"], "md at {off}");
        }
        // 0.90 at the last 64 KiB-aligned block but one, 1.0 at 8 KiB before the end.
        assert_eq!(md_tail_offsets(size), [size - 65536, size - 8192]);
    }

    #[test]
    fn small_devices_do_not_read_past_the_end() {
        let mut v = vec![0u8; 4096];
        v[1024] = 1;
        v[1080] = 0x53;
        v[1081] = 0xEF;
        let s = scan(&v[..], 4096).unwrap();
        assert_eq!(s.len(), 1);
        assert_eq!(
            s[0].to_string(),
            "an ext2 filesystem (superblock magic at byte 1080)"
        );
        assert!(scan(&[][..], 0).unwrap().is_empty());
    }

    #[test]
    fn random_data_has_no_signature() {
        // xorshift noise: a device full of old benchmark data must not look formatted.
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let v: Vec<u8> = (0..SIZE)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        assert!(kinds(&v).is_empty());
    }
}
