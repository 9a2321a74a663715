//! The engines `ioengine=` names that iolab does not run, each with the reason
//! a job asking for one is given (and docs/fio-compat.md shows), and the list
//! of the engines it does run, which every such message offers instead.

use crate::device::engine::ENGINE_NAMES;

/// fio engines iolab does not run, each with the reason (shown when a job asks
/// for one, and in docs/fio-compat.md).
pub const REFUSED_ENGINES: &[(&str, &str)] = &[
    (
        "io_uring_cmd",
        "NVMe passthrough needs an NVMe generic character device (/dev/ngXnY); use io_uring on the block device",
    ),
    (
        "sg",
        "SCSI generic passthrough needs a SCSI device (/dev/sgN or a SCSI block device)",
    ),
    (
        "libzbc",
        "needs a zoned SCSI/ATA (ZBC/ZAC) drive and the libzbc library",
    ),
    ("xnvme", "needs the xNVMe library and an NVMe device"),
    (
        "spdk",
        "SPDK's user-space NVMe driver takes an NVMe PCI device away from the kernel",
    ),
    (
        "libblkio",
        "needs the libblkio library and a virtio-blk/vhost-user or NVMe device it drives from user space",
    ),
    ("rdma", "needs an RDMA-capable network adapter and a peer"),
    (
        "librpma_apm_client",
        "needs an RDMA adapter and persistent memory on a peer (librpma)",
    ),
    (
        "librpma_apm_server",
        "needs an RDMA adapter and persistent memory (librpma)",
    ),
    (
        "librpma_gpspm_client",
        "needs an RDMA adapter and persistent memory on a peer (librpma)",
    ),
    (
        "librpma_gpspm_server",
        "needs an RDMA adapter and persistent memory (librpma)",
    ),
    (
        "net",
        "network I/O, not storage: needs a peer to send to or receive from",
    ),
    (
        "netsplice",
        "network I/O through splice, not storage: needs a peer",
    ),
    ("rbd", "needs a Ceph cluster (librbd)"),
    ("rados", "needs a Ceph cluster (librados)"),
    ("nfs", "needs an NFS server (libnfs)"),
    ("gfapi", "needs a GlusterFS volume (libgfapi)"),
    ("gfapi_async", "needs a GlusterFS volume (libgfapi)"),
    ("libhdfs", "needs an HDFS cluster"),
    ("http", "needs an HTTP/S3/Swift object store"),
    ("dfs", "needs a DAOS storage system"),
    ("libiscsi", "needs an iSCSI target"),
    ("nbd", "needs an NBD server (libnbd)"),
    ("libcufile", "needs NVIDIA GPUDirect Storage and a CUDA GPU"),
    (
        "dev-dax",
        "needs a device-DAX persistent-memory namespace (/dev/daxX.Y)",
    ),
    (
        "libpmem",
        "needs persistent memory (PMDK's libpmem on a DAX file system)",
    ),
    (
        "pmemblk",
        "needs persistent memory (PMDK's libpmemblk); removed from recent fio",
    ),
    ("ime_psync", "needs a DDN IME burst buffer"),
    ("ime_psyncv", "needs a DDN IME burst buffer"),
    ("ime_aio", "needs a DDN IME burst buffer"),
    ("mtd", "needs a raw flash MTD device (/dev/mtdN)"),
    ("windowsaio", "Windows only"),
    ("solarisaio", "Solaris only"),
    (
        "exec",
        "runs an external program; iolab runs no commands from job files",
    ),
    (
        "cpp_null",
        "fio's example engine plugin written in C++ (loaded as a shared object); iolab loads no engine plugins; ioengine=null is iolab's own",
    ),
    (
        "external",
        "loads a shared object as an engine; iolab loads no engine plugins",
    ),
    (
        "splice",
        "moves file data through a pipe (splice to a pipe, then read or vmsplice): not implemented in iolab; psync measures the same buffered file path without the pipe",
    ),
    (
        "e4defrag",
        "drives ext4 online defragmentation (EXT4_IOC_MOVE_EXT into a donor file), a maintenance operation rather than a data path: not implemented in iolab",
    ),
    (
        "dircreate",
        "not an engine of fio 3.33 (later fio times mkdir with it); not implemented in iolab",
    ),
    (
        "dirstat",
        "not an engine of fio 3.33 (later fio times stat of directories with it); not implemented in iolab",
    ),
    (
        "dirdelete",
        "not an engine of fio 3.33 (later fio times rmdir with it); not implemented in iolab",
    ),
    ("guasi", "removed from fio long ago"),
    (
        "syslet-rw",
        "a kernel interface that was never merged; removed from fio",
    ),
    (
        "binject",
        "a kernel interface that was never merged; removed from fio",
    ),
    (
        "psyncv",
        "fio has no engine of this name; pvsync is preadv/pwritev, psync is pread/pwrite",
    ),
];

/// An `ioengine=` value iolab does not run. The message lists the engines it
/// does run (what to use instead) and, for a known fio engine, why not this one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EngineNameError {
    #[error("one of {ENGINE_NAMES} (iolab does not run {name}: {why})")]
    Refused {
        name: &'static str,
        why: &'static str,
    },
    #[error("one of {ENGINE_NAMES} (other fio engines are not supported by iolab)")]
    Unknown,
}
