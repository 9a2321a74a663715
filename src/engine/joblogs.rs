//! Which fio logs each job clone writes (`write_lat_log` and friends): the
//! job's options turned into `measure::iolog::StreamLogs` before the clock
//! starts — file names with fio's job index, and which clone creates a file
//! that several share (`per_job_logs=0`).

use std::path::PathBuf;

use crate::job::JobSpec;
use crate::measure::iolog::format::Columns;
use crate::measure::iolog::record::LogType;
use crate::measure::iolog::{StreamLogs, file_name};

/// fio's index of a job clone: 1 + the clones of the jobs before it + jobnum.
pub fn job_index(jobs: &[JobSpec], job: usize, jobnum: u32) -> u32 {
    jobs[..job].iter().map(|j| j.numjobs).sum::<u32>() + jobnum + 1
}

fn prefix_of(job: &JobSpec, ty: LogType) -> Option<(&str, &'static str)> {
    let l = &job.logs;
    match ty {
        LogType::Slat | LogType::Clat | LogType::Lat => {
            l.lat.as_deref().map(|p| (p, "write_lat_log"))
        }
        LogType::Bw => l.bw.as_deref().map(|p| (p, "write_bw_log")),
        LogType::Iops => l.iops.as_deref().map(|p| (p, "write_iops_log")),
        LogType::Hist => l.hist.as_deref().map(|p| (p, "write_hist_log")),
    }
}

/// The logs of clone `jobnum` of `jobs[job]`, or None when it writes none.
pub fn plan(jobs: &[JobSpec], job: usize, jobnum: u32) -> Option<StreamLogs> {
    let j = &jobs[job];
    if !j.logs.any() {
        return None;
    }
    let path_of = |jj: &JobSpec, ji: usize, n: u32, ty: LogType| {
        prefix_of(jj, ty)
            .map(|(p, _)| file_name(p, ty, jj.logs.per_job.then(|| job_index(jobs, ji, n))))
    };
    let mut paths: [Option<(PathBuf, &'static str, bool)>; 6] = Default::default();
    for ty in LogType::ALL {
        let Some((_, option)) = prefix_of(j, ty) else {
            continue;
        };
        let Some(path) = path_of(j, job, jobnum, ty) else {
            continue;
        };
        // The first clone (in job order) naming a file creates it; later ones
        // append, as fio's jobs with per_job_logs=0 do.
        let first = !jobs.iter().enumerate().any(|(ji, jj)| {
            (0..jj.numjobs)
                .take_while(|&n| (ji, n) < (job, jobnum))
                .any(|n| path_of(jj, ji, n, ty).as_ref() == Some(&path))
        });
        paths[ty as usize] = Some((path, option, first));
    }
    Some(StreamLogs {
        job: j.name.clone(),
        paths,
        cols: Columns {
            offset: j.logs.offset,
            prio_value: j.logs.prio,
            ioprio: j.ioprio,
        },
        avg_msec: j.logs.avg_msec,
        hist_msec: j.logs.hist_msec,
        hist_coarseness: j.logs.hist_coarseness,
        max_value: j.logs.max_value,
        slat: true,
        dirs: j.rw.dir.issues(),
        epoch_clock: j.logs.epoch_clock(),
        store_fz: j
            .reporting
            .log_store_compressed
            .then_some(j.reporting.log_compression),
        drop_when_full: j.logs.drop_when_full,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(prefix: &str) -> JobSpec {
        let mut j = JobSpec::default();
        j.logs.lat = Some(prefix.to_string());
        j.logs.iops = Some(prefix.to_string());
        j
    }

    #[test]
    fn names_follow_fio_and_shared_files_are_created_once() {
        let mut a = job("x");
        a.numjobs = 2;
        let jobs = vec![a, job("y")];
        assert!(plan(&[JobSpec::default()], 0, 0).is_none());
        let p = plan(&jobs, 1, 0).unwrap();
        let clat = p.paths[LogType::Clat as usize].clone().unwrap();
        assert_eq!(clat, ("y_clat.3.log".into(), "write_lat_log", true));
        let mut shared = jobs.clone();
        for j in &mut shared {
            j.logs.per_job = false;
            j.logs.lat = Some("s".into());
        }
        let firsts: Vec<bool> = [(0, 0), (0, 1), (1, 0)]
            .iter()
            .map(|&(j, n)| plan(&shared, j, n).unwrap().paths[LogType::Lat as usize].clone())
            .map(|p| p.unwrap().2)
            .collect();
        assert_eq!(firsts, vec![true, false, false]);
    }
}
