//! The verify family's part of building and running a worker: what the
//! verifier records in its headers and where `verify_dump` writes, and
//! `fill_device` (fio's `fill_fs`): its bound, and ENOSPC as the end of a
//! write job rather than an error.

use std::path::Path;

use crate::engine::error::EngineError;
use crate::engine::error::label;
use crate::job::JobSpec;
use crate::workload::verify::Verifier;
use crate::workload::verify_dump::Dumper;

/// fio fills a filesystem when `fill_device` is given a regular file without
/// a size. iolab refuses that (other users' space, and a scratch file is
/// never meant to fill a disk): the job needs a size, or a block device,
/// whose end bounds it.
pub fn check_bounded(job: &JobSpec, path: &Path) -> Result<(), EngineError> {
    use std::os::unix::fs::FileTypeExt;
    if !job.fill_device || job.size.is_some() {
        return Ok(());
    }
    let block = std::fs::metadata(path).is_ok_and(|m| m.file_type().is_block_device());
    if block {
        return Ok(());
    }
    Err(EngineError::FillUnbounded {
        job: label(job),
        path: path.display().to_string(),
    })
}

/// How the job's file is laid out: a `fill_device` job's writes make it
/// (laying out `size` first could itself run out of space); with
/// `zero_buffers` it is laid out with zeroes, as fio fills its layout from the
/// job's buffer contents (a zram or deduplicating target reads zero pages
/// differently from data).
pub fn layout(job: &JobSpec) -> crate::device::target::Layout {
    use crate::device::target::Layout;
    if job.fill_device {
        Layout::Grow
    } else if job.buffers.zero {
        Layout::Zero
    } else {
        Layout::default()
    }
}

/// Give job clone `clone` (fio's thread number `thread`) its header thread
/// number and verify generator seed and, with `verify_dump`, its dump files
/// (named after its target, in the working directory as fio's are).
pub fn verify_origin(v: &mut Verifier, job: &JobSpec, thread: u32, clone: u32) {
    v.set_origin(thread, verify_seed(job, thread));
    if job.verify.dump {
        let target = crate::job::files_opts::paths(job, clone)
            .into_iter()
            .next()
            .unwrap_or_else(|| job.name.clone().into());
        let dir = std::env::current_dir().unwrap_or_else(|_| ".".into());
        v.dump_to(Dumper::new(dir, &target, label(job)));
    }
}

/// The seed fio gives the verify generator of job clone `thread`, whose
/// draws make each write's data seed, or None when the job's generators do
/// not repeat (`randrepeat=0` without `randseed`: fio seeds it from the OS,
/// and iolab keeps the clone's own seed).
pub fn verify_seed(job: &JobSpec, thread: u32) -> Option<u32> {
    use crate::workload::fio_rand::{allrand_seed, slot_seed};
    // fio's seed slot of the verify generator (after the three block-size
    // ones).
    const SLOT_VERIFY: u64 = 3;
    let seed = if job.workload.allrandrepeat {
        allrand_seed(thread, SLOT_VERIFY)
    } else if job.randrepeat {
        slot_seed(job.randseed, thread, SLOT_VERIFY)
    } else {
        return None;
    };
    // fio's 32-bit generator takes the seed's low 32 bits.
    Some(seed as u32)
}

/// A write of a `fill_device` job failed with `errno`: is that the device
/// being full, which ends the job's writing cleanly (fio's err=0)?
#[inline]
pub fn is_full(fill_device: bool, errno: i32) -> bool {
    fill_device && (errno == libc::ENOSPC || errno == libc::EDQUOT)
}
