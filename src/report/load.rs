//! Saved lab results read back (`iolab report RESULTS.json...`), naming the file
//! in every error.

use std::io;
use std::path::{Path, PathBuf};

use crate::report::study::{Cell, LabResults};

/// Why a saved results file could not be read back. Every message names the
/// file and says what `iolab report` reads instead.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error(
        "{} is a directory without results.json; pass the results.json written by `iolab lab --out DIR`",
        .0.display()
    )]
    DirWithoutResults(PathBuf),
    #[error(
        "cannot read {}: {err}; pass the results.json written by `iolab lab --out DIR`",
        file.display()
    )]
    Read { file: PathBuf, err: io::Error },
    #[error(
        "{} is not JSON ({err}); expected the results.json written by `iolab lab`",
        file.display()
    )]
    NotJson {
        file: PathBuf,
        err: serde_json::Error,
    },
    #[error(
        "{} is JSON but not an iolab results file: expected an object with \"machine\" and \"studies\"",
        .0.display()
    )]
    NotObject(PathBuf),
    #[error(
        "{} is fio-style JSON from `iolab run` or fio, not lab results; `iolab report` reads the results.json of `iolab lab` (use `iolab run --report DIR` for runs)",
        .0.display()
    )]
    FioJson(PathBuf),
    #[error(
        "{} is JSON but not an iolab results file: missing {missing}",
        file.display()
    )]
    Missing { file: PathBuf, missing: String },
    #[error(
        "{} looks like iolab results but does not match this iolab's format: {err}",
        file.display()
    )]
    Format {
        file: PathBuf,
        err: serde_json::Error,
    },
}

/// Read one saved results file, with errors that name the file and say what
/// it is instead.
pub fn load_results(path: &Path) -> Result<LabResults, LoadError> {
    let file = if path.is_dir() {
        let inner = path.join("results.json");
        if !inner.is_file() {
            return Err(LoadError::DirWithoutResults(path.to_path_buf()));
        }
        inner
    } else {
        path.to_path_buf()
    };
    let text = match std::fs::read_to_string(&file) {
        Ok(t) => t,
        Err(err) => return Err(LoadError::Read { file, err }),
    };
    let v: serde_json::Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(err) => return Err(LoadError::NotJson { file, err }),
    };
    let Some(obj) = v.as_object() else {
        return Err(LoadError::NotObject(file));
    };
    if obj.contains_key("fio version") {
        return Err(LoadError::FioJson(file));
    }
    let missing: Vec<&str> = ["iolab_version", "machine", "studies"]
        .into_iter()
        .filter(|k| !obj.contains_key(*k))
        .collect();
    if !missing.is_empty() {
        let missing = missing.join(", ");
        return Err(LoadError::Missing { file, missing });
    }
    let mut v = v;
    let holes = take_nulls(&mut v);
    let mut r: LabResults = match serde_json::from_value(v) {
        Ok(r) => r,
        Err(err) => return Err(LoadError::Format { file, err }),
    };
    for h in holes {
        h.restore(&mut r);
    }
    Ok(r)
}

/// A measured number that was NaN or infinite when saved. JSON has no such
/// values, so serde_json wrote `null`, which does not read back into an `f64`;
/// it is read as 0 and put back as NaN, which every view shows as "-" (tables,
/// comparisons) or "not drawn" (charts).
#[derive(Debug)]
enum Hole {
    Cell(usize, usize, usize, usize),
    Point(usize, usize, usize, usize, usize),
    Ours(usize, usize),
    Duration(usize),
    Machine(&'static str),
}

impl Hole {
    fn restore(self, r: &mut LabResults) {
        let nan = f64::NAN;
        match self {
            Hole::Cell(s, t, row, c) => {
                if let Some(Cell::Num { v, .. }) = r.studies[s].tables[t].rows[row].get_mut(c) {
                    *v = nan;
                }
            }
            Hole::Point(s, ch, se, p, k) => {
                let pt = &mut r.studies[s].charts[ch].series[se].points[p];
                if k == 0 {
                    pt.0 = nan;
                } else {
                    pt.1 = nan;
                }
            }
            Hole::Ours(s, c) => r.studies[s].comparisons[c].ours = nan,
            Hole::Duration(s) => r.studies[s].duration_s = nan,
            Hole::Machine(k) => match k {
                "memory_gib" => r.machine.memory_gib = nan,
                _ => r.machine.clock_cost_ns = nan,
            },
        }
    }
}

/// Replace `null` where the schema has an `f64` with 0, and say where.
fn take_nulls(v: &mut serde_json::Value) -> Vec<Hole> {
    use serde_json::Value;
    let mut holes = Vec::new();
    let mut fill = |x: &mut Value, h: Hole| {
        if x.is_null() {
            *x = Value::from(0.0);
            holes.push(h);
        }
    };
    for k in ["memory_gib", "clock_cost_ns"] {
        if let Some(x) = v.pointer_mut(&format!("/machine/{k}")) {
            fill(x, Hole::Machine(k));
        }
    }
    let Some(studies) = v.get_mut("studies").and_then(Value::as_array_mut) else {
        return holes;
    };
    for (si, st) in studies.iter_mut().enumerate() {
        if let Some(x) = st.get_mut("duration_s") {
            fill(x, Hole::Duration(si));
        }
        if let Some(cs) = st.get_mut("comparisons").and_then(Value::as_array_mut) {
            for (ci, c) in cs.iter_mut().enumerate() {
                if let Some(x) = c.get_mut("ours") {
                    fill(x, Hole::Ours(si, ci));
                }
            }
        }
        if let Some(ts) = st.get_mut("tables").and_then(Value::as_array_mut) {
            for (ti, t) in ts.iter_mut().enumerate() {
                let Some(rows) = t.get_mut("rows").and_then(Value::as_array_mut) else {
                    continue;
                };
                for (ri, row) in rows.iter_mut().enumerate() {
                    let Some(cells) = row.as_array_mut() else {
                        continue;
                    };
                    for (ci, cell) in cells.iter_mut().enumerate() {
                        // Only numeric cells ({v, prec}); text cells are strings.
                        if cell.get("prec").is_some()
                            && let Some(x) = cell.get_mut("v")
                        {
                            fill(x, Hole::Cell(si, ti, ri, ci));
                        }
                    }
                }
            }
        }
        if let Some(chs) = st.get_mut("charts").and_then(Value::as_array_mut) {
            for (chi, ch) in chs.iter_mut().enumerate() {
                let Some(ss) = ch.get_mut("series").and_then(Value::as_array_mut) else {
                    continue;
                };
                for (sei, se) in ss.iter_mut().enumerate() {
                    let Some(ps) = se.get_mut("points").and_then(Value::as_array_mut) else {
                        continue;
                    };
                    for (pi, p) in ps.iter_mut().enumerate() {
                        let Some(xy) = p.as_array_mut() else {
                            continue;
                        };
                        for (k, x) in xy.iter_mut().enumerate().take(2) {
                            fill(x, Hole::Point(si, chi, sei, pi, k));
                        }
                    }
                }
            }
        }
    }
    holes
}
