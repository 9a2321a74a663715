//! What a study produces: data first (measured, published, verdict, charts);
//! text, JSON and HTML are views of this one value. `lab` fills it, `report`
//! renders it (so it lives here, and `report` never imports `lab`).

use serde::{Deserialize, Serialize};

use crate::report::chart::Chart;

/// One reproduced study.
#[derive(schemars::JsonSchema, Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct StudyResult {
    /// Command-line name (`poll`, `laq`, `placement`, `breakdown`, `observe`).
    pub id: String,
    /// Seed document number (`000` .. `004`).
    pub seed: String,
    pub title: String,
    /// What was run: parameters, devices, as (name, value) pairs.
    pub setup: Vec<(String, String)>,
    pub tables: Vec<Table>,
    /// Our figure beside the published one.
    pub comparisons: Vec<Comparison>,
    pub charts: Vec<Chart>,
    /// Plain sentences built from the numbers.
    pub verdict: Vec<String>,
    /// Parts that could not run here, with the reason.
    pub skipped: Vec<Skipped>,
    pub duration_s: f64,
}

#[derive(schemars::JsonSchema, Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Table {
    pub title: String,
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Cell>>,
}

/// A table cell: text, or a number with the precision to print it at.
#[derive(schemars::JsonSchema, Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(untagged)]
pub enum Cell {
    Num {
        /// The number; a measurement that could not be made (NaN) is
        /// written as null.
        #[schemars(with = "Option<f64>")]
        v: f64,
        prec: u8,
    },
    Text(String),
}

impl Cell {
    pub fn num(v: f64, prec: u8) -> Cell {
        Cell::Num { v, prec }
    }
    pub fn text(s: impl Into<String>) -> Cell {
        Cell::Text(s.into())
    }
    pub fn render(&self) -> String {
        match self {
            Cell::Num { v, prec } if v.is_finite() => format!("{:.*}", *prec as usize, v),
            Cell::Num { .. } => "-".into(),
            Cell::Text(s) => s.clone(),
        }
    }
}

/// Our measurement beside the study's published figure.
#[derive(schemars::JsonSchema, Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Comparison {
    pub what: String,
    pub ours: f64,
    pub published: Option<f64>,
    pub unit: String,
    /// Where the published figure comes from, or why there is none.
    pub note: String,
}

impl Comparison {
    pub fn ratio(&self) -> Option<f64> {
        self.published
            .filter(|p| *p != 0.0 && self.ours.is_finite())
            .map(|p| self.ours / p)
    }
}

#[derive(schemars::JsonSchema, Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Skipped {
    pub part: String,
    pub reason: String,
}

/// The version of `results.json`'s schema (`docs/schema/lab-results.schema.json`,
/// docs/json.md): MAJOR.MINOR.PATCH, a new optional key raising MINOR, a key
/// removed, renamed or retyped raising MAJOR.
pub const LAB_SCHEMA_VERSION: &str = "1.0.0";

/// Everything `iolab lab` produced, as saved in `results.json`.
#[derive(schemars::JsonSchema, Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct LabResults {
    /// The schema this document follows ([`LAB_SCHEMA_VERSION`]); empty when
    /// read from a file written before the field existed.
    #[serde(default)]
    pub schema_version: String,
    pub iolab_version: String,
    pub machine: Machine,
    pub quick: bool,
    pub studies: Vec<StudyResult>,
    /// Studies that could not run at all, with the reason.
    pub not_run: Vec<Skipped>,
}

/// The machine a lab run measured.
#[derive(schemars::JsonSchema, Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Machine {
    pub hostname: String,
    pub kernel: String,
    pub cpu_model: String,
    pub cpus: usize,
    pub memory_gib: f64,
    pub root: bool,
    pub clock_cost_ns: f64,
    pub wakeup_cost_ns: u64,
    pub date: String,
}

impl StudyResult {
    /// Plain-text view: setup, tables, comparisons, verdict, skipped parts.
    pub fn render_text(&self) -> String {
        let mut s = format!("== Study {} ({}): {} ==\n", self.seed, self.id, self.title);
        for (k, v) in &self.setup {
            s += &format!("  {k}: {v}\n");
        }
        for t in &self.tables {
            s += &format!("\n  {}\n", t.title);
            s += &render_table(
                &t.columns,
                &t.rows
                    .iter()
                    .map(|r| r.iter().map(Cell::render).collect())
                    .collect::<Vec<Vec<String>>>(),
            );
        }
        if !self.comparisons.is_empty() {
            s += "\n  Ours vs published\n";
            let rows: Vec<Vec<String>> = self
                .comparisons
                .iter()
                .map(|c| {
                    vec![
                        c.what.clone(),
                        fmt_num(c.ours),
                        c.published.map_or("-".into(), fmt_num),
                        c.unit.clone(),
                        c.ratio().map_or("-".into(), |r| format!("{r:.2}x")),
                        c.note.clone(),
                    ]
                })
                .collect();
            let cols = [
                "what",
                "ours",
                "published",
                "unit",
                "ours/published",
                "note",
            ]
            .map(String::from);
            s += &render_table(&cols, &rows);
        }
        if !self.verdict.is_empty() {
            s += "\n  Verdict\n";
            for v in &self.verdict {
                s += &format!("  - {v}\n");
            }
        }
        for k in &self.skipped {
            s += &format!("  skipped {}: {}\n", k.part, k.reason);
        }
        s += &format!("  ({:.1} s)\n", self.duration_s);
        s
    }
}

fn fmt_num(v: f64) -> String {
    if !v.is_finite() {
        "-".into()
    } else if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// Left-aligned first column, right-aligned numbers, two-space indent.
pub fn render_table(columns: &[String], rows: &[Vec<String>]) -> String {
    let n = columns.len();
    let mut w: Vec<usize> = columns.iter().map(|c| c.chars().count()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate().take(n) {
            w[i] = w[i].max(c.chars().count());
        }
    }
    let line = |cells: &[String]| -> String {
        let mut s = String::from("  ");
        for (i, c) in cells.iter().enumerate().take(n) {
            let pad = w[i] - c.chars().count();
            if i == 0 || i == n - 1 && c.parse::<f64>().is_err() {
                s += c;
                s += &" ".repeat(pad);
            } else {
                s += &" ".repeat(pad);
                s += c;
            }
            s += "  ";
        }
        s.trim_end().to_string() + "\n"
    };
    let mut s = line(columns);
    s += &line(&w.iter().map(|&x| "-".repeat(x)).collect::<Vec<_>>());
    for r in rows {
        s += &line(r);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comparison_ratio_and_text_view() {
        let r = StudyResult {
            id: "poll".into(),
            seed: "000".into(),
            title: "t".into(),
            comparisons: vec![Comparison {
                what: "4 KiB read, poll".into(),
                ours: 8.8,
                published: Some(4.4),
                unit: "us".into(),
                note: "FAST'12 Fig. 1".into(),
            }],
            verdict: vec!["poll wins".into()],
            ..Default::default()
        };
        assert_eq!(r.comparisons[0].ratio(), Some(2.0));
        let t = r.render_text();
        assert!(t.contains("2.00x") && t.contains("poll wins"), "{t}");
        let json = serde_json::to_string(&r).unwrap();
        let back: StudyResult = serde_json::from_str(&json).unwrap();
        assert_eq!(back, r);
    }
}
