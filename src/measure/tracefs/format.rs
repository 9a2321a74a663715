//! Event formats (`events/<system>/<name>/format`): record layouts, and reading
//! fields out of a raw record.

#[cfg(any(test, feature = "testing"))]
use std::collections::HashMap;

/// What is wrong with an event's `format` file or one of its field lines.
#[derive(Debug, thiserror::Error)]
pub enum FormatError {
    #[error("format line {line}: bad ID {value:?}: {err}")]
    BadId {
        line: usize,
        value: String,
        err: std::num::ParseIntError,
    },
    #[error("format line {line}: {text:?}: {err}")]
    Line {
        line: usize,
        text: String,
        err: Box<FormatError>,
    },
    #[error("format has no `{0}:` line")]
    Missing(&'static str),
    #[error("event {system}:{event} has no field `{field}` (fields: {fields})")]
    NoField {
        system: String,
        event: String,
        field: String,
        fields: String,
    },
    #[error(transparent)]
    Number(#[from] std::num::ParseIntError),
    #[error("no field declaration")]
    NoDeclaration,
    #[error("empty field declaration")]
    EmptyDeclaration,
    #[error("no offset")]
    NoOffset,
    #[error("no size")]
    NoSize,
}

type Result<T, E = FormatError> = std::result::Result<T, E>;

/// One field of an event record, from `events/<system>/<name>/format`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Field {
    pub name: String,
    pub offset: usize,
    pub size: usize,
    pub signed: bool,
    /// `__data_loc`: the field holds (len << 16 | offset) of a dynamic string.
    pub data_loc: bool,
    /// Fixed-size array (e.g. `char comm[16]`).
    pub array: bool,
}

/// An event's id and record layout.
#[derive(Clone, Debug)]
pub struct EventFormat {
    pub system: String,
    pub name: String,
    pub id: u16,
    pub fields: Vec<Field>,
}

impl EventFormat {
    /// Parse the text of a `format` file.
    pub fn parse(system: &str, text: &str) -> Result<EventFormat> {
        let mut name = None;
        let mut id = None;
        let mut fields = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if let Some(v) = line.strip_prefix("name:") {
                name = Some(v.trim().to_string());
            } else if let Some(v) = line.strip_prefix("ID:") {
                id = Some(v.trim().parse::<u16>().map_err(|err| FormatError::BadId {
                    line: i + 1,
                    value: v.to_string(),
                    err,
                })?);
            } else if line.starts_with("field:") {
                fields.push(parse_field(line).map_err(|err| FormatError::Line {
                    line: i + 1,
                    text: line.to_string(),
                    err: Box::new(err),
                })?);
            }
        }
        Ok(EventFormat {
            system: system.to_string(),
            name: name.ok_or(FormatError::Missing("name"))?,
            id: id.ok_or(FormatError::Missing("ID"))?,
            fields,
        })
    }

    pub fn field(&self, name: &str) -> Result<&Field> {
        self.fields
            .iter()
            .find(|f| f.name == name)
            .ok_or_else(|| FormatError::NoField {
                system: self.system.clone(),
                event: self.name.clone(),
                field: name.to_string(),
                fields: self
                    .fields
                    .iter()
                    .map(|f| f.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            })
    }
}

pub(super) fn parse_field(line: &str) -> Result<Field> {
    // field:<decl>;\toffset:N;\tsize:N;\tsigned:N;
    let mut decl = None;
    let mut offset = None;
    let mut size = None;
    let mut signed = false;
    for part in line.split(';') {
        let part = part.trim();
        if let Some(v) = part.strip_prefix("field:") {
            decl = Some(v.trim());
        } else if let Some(v) = part.strip_prefix("offset:") {
            offset = Some(v.trim().parse::<usize>()?);
        } else if let Some(v) = part.strip_prefix("size:") {
            size = Some(v.trim().parse::<usize>()?);
        } else if let Some(v) = part.strip_prefix("signed:") {
            signed = v.trim() == "1";
        }
    }
    let decl = decl.ok_or(FormatError::NoDeclaration)?;
    let data_loc = decl.starts_with("__data_loc");
    // The name is the last identifier; strip an array suffix like `comm[16]`.
    let last = decl
        .split_whitespace()
        .last()
        .ok_or(FormatError::EmptyDeclaration)?;
    let (name, array) = match last.find('[') {
        Some(i) if !data_loc => (&last[..i], true),
        Some(i) => (&last[..i], false),
        None => (last, false),
    };
    let name = name.trim_start_matches('*');
    Ok(Field {
        name: name.to_string(),
        offset: offset.ok_or(FormatError::NoOffset)?,
        size: size.ok_or(FormatError::NoSize)?,
        signed,
        data_loc,
        array,
    })
}

/// Read an unsigned integer field (1, 2, 4 or 8 bytes, little endian).
#[inline]
pub fn field_u64(payload: &[u8], f: &Field) -> Option<u64> {
    let b = payload.get(f.offset..f.offset + f.size)?;
    Some(match f.size {
        1 => b[0] as u64,
        2 => u16::from_le_bytes([b[0], b[1]]) as u64,
        4 => u32::from_le_bytes(b.try_into().ok()?) as u64,
        8 => u64::from_le_bytes(b.try_into().ok()?),
        _ => return None,
    })
}

/// Read a signed integer field, sign-extended.
#[inline]
pub fn field_i64(payload: &[u8], f: &Field) -> Option<i64> {
    let v = field_u64(payload, f)?;
    Some(match f.size {
        1 => v as u8 as i8 as i64,
        2 => v as u16 as i16 as i64,
        4 => v as u32 as i32 as i64,
        _ => v as i64,
    })
}

/// Read a string field: a fixed `char[]` or a `__data_loc char[]`.
pub fn field_str<'a>(payload: &'a [u8], f: &Field) -> Option<&'a str> {
    let bytes = if f.data_loc {
        let loc = field_u64(payload, f)? as u32;
        let off = (loc & 0xffff) as usize;
        let len = (loc >> 16) as usize;
        payload.get(off..off + len)?
    } else {
        payload.get(f.offset..f.offset + f.size)?
    };
    let end = bytes.iter().position(|&c| c == 0).unwrap_or(bytes.len());
    std::str::from_utf8(&bytes[..end]).ok()
}

/// Event ids of an instance's enabled events, by `system:name`.
#[cfg(any(test, feature = "testing"))]
pub fn ids_by_name(formats: &[EventFormat]) -> HashMap<String, u16> {
    formats
        .iter()
        .map(|f| (format!("{}:{}", f.system, f.name), f.id))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SYS_EXIT_FMT: &str = "name: sys_exit\nID: 442\nformat:\n\
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\
\tfield:long id;\toffset:8;\tsize:8;\tsigned:1;\n\
\tfield:long ret;\toffset:16;\tsize:8;\tsigned:1;\n\n\
print fmt: \"NR %ld = %ld\", REC->id, REC->ret\n";

    #[test]
    fn parses_event_format() {
        let f = EventFormat::parse("raw_syscalls", SYS_EXIT_FMT).unwrap();
        assert_eq!(f.name, "sys_exit");
        assert_eq!(f.id, 442);
        let ret = f.field("ret").unwrap();
        assert_eq!((ret.offset, ret.size, ret.signed), (16, 8, true));
        assert!(f.field("nope").is_err());
    }

    #[test]
    fn parses_array_and_data_loc_fields() {
        let a = parse_field("field:char comm[16];\toffset:38;\tsize:16;\tsigned:0;").unwrap();
        assert_eq!(
            (a.name.as_str(), a.array, a.data_loc),
            ("comm", true, false)
        );
        let d =
            parse_field("field:__data_loc char[] cmd;\toffset:60;\tsize:4;\tsigned:0;").unwrap();
        assert_eq!((d.name.as_str(), d.data_loc), ("cmd", true));
        let mut rec = vec![0u8; 70];
        rec[60..64].copy_from_slice(&((3u32 << 16) | 64).to_le_bytes());
        rec[64..67].copy_from_slice(b"ab\0");
        assert_eq!(field_str(&rec, &d), Some("ab"));
    }
}
