//! fio's compressed logs (`log_store_compressed`): a log kept on disk as
//! fio keeps it, its rows as fio's binary samples (`struct io_sample`, 32
//! bytes, or 40 with `log_offset`: time, value, ddir with flag bits, priority,
//! block size[, offset], native byte order) in zlib streams of about
//! `log_compression` bytes each, concatenated in `NAME.log.fz`. `fio
//! --inflate-log=NAME.log.fz` (and `iolab run --inflate-log=...`) prints the
//! rows back as text. The writer writes the text as the run goes and
//! converts it when the job's logs are closed, off the measured path.

use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use flate2::Compression;
use flate2::write::ZlibEncoder;

/// Where the compressed form of the log at `path` goes (fio's name).
pub fn fz_path(path: &Path) -> PathBuf {
    let mut p = path.as_os_str().to_owned();
    p.push(".fz");
    PathBuf::from(p)
}

/// fio's flag bits in a sample's ddir word.
const OFFSET_BIT: u32 = 0x8000_0000;
const PRIO_BIT: u32 = 0x4000_0000;
/// fio's `IOPRIO_CLASS_RT << IOPRIO_CLASS_SHIFT`: a row's 0/1 priority flag
/// stored as a value fio reads back as 1.
const RT_PRIO: u16 = 1 << 13;

/// One text row as fio's binary sample; None for a row that is not one
/// (a histogram row: those logs stay text).
fn sample(line: &str) -> Option<Vec<u8>> {
    let f: Vec<&str> = line.split(',').map(str::trim).collect();
    if f.len() != 5 && f.len() != 6 {
        return None;
    }
    let time: u64 = f[0].parse().ok()?;
    let val: i64 = f[1].parse().ok()?;
    let mut ddir: u32 = f[2].parse().ok()?;
    let bs: u64 = f[3].parse().ok()?;
    let offset = (f.len() == 6)
        .then(|| f[4].parse::<u64>())
        .transpose()
        .ok()?;
    let p = f[f.len() - 1];
    let prio = match p.strip_prefix("0x") {
        Some(hex) => {
            ddir |= PRIO_BIT;
            u16::from_str_radix(hex, 16).ok()?
        }
        None if p == "1" => RT_PRIO,
        None => 0,
    };
    if offset.is_some() {
        ddir |= OFFSET_BIT;
    }
    let mut out = Vec::with_capacity(40);
    out.extend_from_slice(&time.to_ne_bytes());
    out.extend_from_slice(&val.to_ne_bytes());
    out.extend_from_slice(&ddir.to_ne_bytes());
    out.extend_from_slice(&prio.to_ne_bytes());
    out.extend_from_slice(&[0, 0]);
    out.extend_from_slice(&bs.to_ne_bytes());
    if let Some(o) = offset {
        out.extend_from_slice(&o.to_ne_bytes());
    }
    Some(out)
}

/// fio's text of binary samples (its `flush_samples`).
fn rows(mut b: &[u8], out: &mut impl Write) -> io::Result<()> {
    let u64_at = |b: &[u8], i: usize| u64::from_ne_bytes(b[i..i + 8].try_into().unwrap_or([0; 8]));
    while b.len() >= 32 {
        let ddir = u32::from_ne_bytes(b[16..20].try_into().unwrap_or([0; 4]));
        let prio = u16::from_ne_bytes(b[20..22].try_into().unwrap_or([0; 2]));
        let (time, val, bs) = (u64_at(b, 0), u64_at(b, 8) as i64, u64_at(b, 24));
        let dir = ddir & !(OFFSET_BIT | PRIO_BIT);
        let p = if ddir & PRIO_BIT != 0 {
            format!("0x{prio:04x}")
        } else {
            u8::from(prio >> 13 == 1).to_string()
        };
        if ddir & OFFSET_BIT != 0 {
            if b.len() < 40 {
                break;
            }
            writeln!(out, "{time}, {val}, {dir}, {bs}, {}, {p}", u64_at(b, 32))?;
            b = &b[40..];
        } else {
            writeln!(out, "{time}, {val}, {dir}, {bs}, {p}")?;
            b = &b[32..];
        }
    }
    Ok(())
}

/// Store the log at `path` as [`fz_path`]: fio's binary samples in zlib
/// streams of about `chunk` bytes each (0: one stream), and remove the text.
/// A log whose rows are not samples (a histogram log) is compressed as text.
/// Returns the compressed file's path.
pub fn store(path: &Path, chunk: u64) -> io::Result<PathBuf> {
    let out_path = fz_path(path);
    let text = std::fs::read_to_string(path)?;
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let binary: Option<Vec<Vec<u8>>> = lines.iter().map(|l| sample(l)).collect();
    let chunks: Vec<Vec<u8>> = match binary {
        Some(samples) => {
            let chunk = if chunk == 0 {
                usize::MAX
            } else {
                chunk as usize
            };
            let mut out = vec![Vec::new()];
            for s in samples {
                let cur = out.last_mut().expect("one chunk at least");
                if !cur.is_empty() && cur.len() + s.len() > chunk {
                    out.push(s);
                } else {
                    cur.extend_from_slice(&s);
                }
            }
            out
        }
        None => vec![text.into_bytes()],
    };
    let mut out = io::BufWriter::new(File::create(&out_path)?);
    for c in chunks.iter().filter(|c| !c.is_empty()) {
        let mut z = ZlibEncoder::new(Vec::new(), Compression::default());
        z.write_all(c)?;
        out.write_all(&z.finish()?)?;
    }
    out.flush()?;
    std::fs::remove_file(path)?;
    Ok(out_path)
}

/// Write the rows of a compressed log (every zlib stream of it, in order)
/// to `out` as text, as `fio --inflate-log` does.
pub fn inflate(path: &Path, out: &mut impl Write) -> io::Result<()> {
    let data = std::fs::read(path)?;
    let mut rest: &[u8] = &data;
    let mut raw = Vec::new();
    while !rest.is_empty() {
        let mut z = flate2::bufread::ZlibDecoder::new(rest);
        z.read_to_end(&mut raw)?;
        rest = z.into_inner();
    }
    rows(&raw, out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_round_trip_as_fio_samples_in_several_streams() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x_bw.log");
        let text: String = (0..500)
            .map(|i| {
                format!(
                    "{i}, {}, {}, 4096, {}, {}\n",
                    i * 7,
                    i % 2,
                    i * 4096,
                    i % 3 / 2
                )
            })
            .collect();
        std::fs::write(&p, &text).unwrap();
        let fz = store(&p, 1024).unwrap();
        assert!(!p.exists(), "the text is replaced by the .fz file");
        assert_eq!(fz, dir.path().join("x_bw.log.fz"));
        let raw = std::fs::read(&fz).unwrap();
        let mut rest: &[u8] = &raw;
        let (mut streams, mut bytes) = (0, 0);
        while !rest.is_empty() {
            let mut z = flate2::bufread::ZlibDecoder::new(rest);
            bytes += io::copy(&mut z, &mut io::sink()).unwrap();
            rest = z.into_inner();
            streams += 1;
        }
        assert!(streams > 5, "{streams}");
        assert_eq!(bytes, 500 * 40, "fio's io_sample_offset is 40 bytes");
        let mut back = Vec::new();
        inflate(&fz, &mut back).unwrap();
        assert_eq!(String::from_utf8(back).unwrap(), text);
    }

    #[test]
    fn prio_values_keep_their_hex_form() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("y_lat.log");
        let text = "1, 2000, 0, 4096, 0x6004\n";
        std::fs::write(&p, text).unwrap();
        let fz = store(&p, 0).unwrap();
        let mut back = Vec::new();
        inflate(&fz, &mut back).unwrap();
        assert_eq!(String::from_utf8(back).unwrap(), text);
    }
}
