//! Cross-option checks of the buffer-contents options (their types:
//! `job::buffers`).

use super::draft::Draft;
use super::error::JobError;

impl Draft {
    /// fio's rules for `dedupe_mode=working_set`: the working set is a share
    /// of an explicit `size` of one file, and its pages are unique, so they
    /// and the repeats cannot together exceed 100 %.
    pub(crate) fn check_dedupe(&self, section_at: &str) -> Result<(), JobError> {
        let b = &self.spec.buffers;
        if !b.working_set() {
            return Ok(());
        }
        let at = |opt: &str| {
            self.set
                .iter()
                .find(|(n, _)| *n == opt)
                .map_or(section_at, |(_, at)| at.as_str())
                .to_string()
        };
        let conflict = |problem: String| JobError::Conflict {
            at: at("dedupe_mode"),
            job: self.spec.name.clone(),
            problem,
        };
        if self.spec.size.is_none() {
            return Err(conflict(
                "dedupe_mode=working_set sizes its working set from size= (fio's rule): set \
                 size= explicitly"
                    .into(),
            ));
        }
        if self.spec.files.nrfiles != 1 {
            return Err(conflict(format!(
                "dedupe_mode=working_set works on one file per job (fio's rule), and nrfiles={}: \
                 use nrfiles=1, or dedupe_mode=repeat",
                self.spec.files.nrfiles
            )));
        }
        let (d, w) = (b.dedupe_percentage, b.dedupe_working_set_percentage);
        if d + w > 100 {
            return Err(conflict(format!(
                "dedupe_percentage={d} cannot be reached: dedupe_working_set_percentage={w} of \
                 size is unique pages (fio's rule: the two add up to at most 100); lower one"
            )));
        }
        Ok(())
    }
}

/// fio's `buffer_pattern`: hex, decimal and "text" pieces (`parse::verify_pattern`)
/// and `'file'` pieces, whose bytes are read from the file (up to the
/// pattern's 4096-byte limit), in any order and number.
pub(crate) fn set_buffer_pattern(d: &mut Draft, c: &super::draft::Ctx) -> Result<(), JobError> {
    const MAX: usize = 4096;
    let mut out = Vec::new();
    let mut pending = String::new();
    let mut in_text = false;
    let flush = |pending: &mut String, out: &mut Vec<u8>| -> Result<(), JobError> {
        if !pending.trim().is_empty() {
            out.extend(super::parse::verify_pattern(pending).map_err(|e| c.bad(e))?);
        }
        pending.clear();
        Ok(())
    };
    let mut chars = c.value.chars();
    while let Some(ch) = chars.next() {
        match ch {
            '"' => {
                in_text = !in_text;
                pending.push(ch);
            }
            '\'' if !in_text => {
                flush(&mut pending, &mut out)?;
                let name: String = chars.by_ref().take_while(|&x| x != '\'').collect();
                let bytes = std::fs::read(&name).map_err(|e| {
                    c.bad(format!(
                        "a readable file between single quotes ('{name}': {e}), or 0x hex, a \
                         number or \"text\""
                    ))
                })?;
                if bytes.is_empty() {
                    return Err(c.bad(format!("a file with some bytes in it ('{name}' is empty)")));
                }
                let room = MAX.saturating_sub(out.len());
                out.extend_from_slice(&bytes[..bytes.len().min(room)]);
            }
            _ => pending.push(ch),
        }
    }
    flush(&mut pending, &mut out)?;
    if out.is_empty() {
        return Err(c.bad("a pattern such as 0xdeadbeef, \"abc\" or 'pattern.bin'"));
    }
    if out.len() > MAX {
        return Err(c.bad("a pattern of at most 4096 bytes"));
    }
    d.spec.buffers.pattern = out;
    Ok(())
}
