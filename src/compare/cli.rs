//! `iolab compare BASE NEW`, `iolab compare FLEET`, `iolab compare --run JOB...
//! --a OPTS --b OPTS`: the command's arguments and entry (ARCHITECTURE.md).
//! Exit status: 0 pass (or a complete report without rules), 1 a `--fail-if`
//! rule crossed, 2 bad input, 3 inconclusive (something a rule covers, or
//! without rules a job, could not be judged; 0 with --allow-inconclusive).

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow, bail};

use crate::compare::analyze::{Settings, compare};
use crate::compare::gate::{evaluate, parse_rule};
use crate::compare::load::load_side;
use crate::compare::model::Report;
use crate::compare::run::{AbPlan, option_names, run_ab, split_opts};
use crate::compare::{fleet, html, text};

/// `iolab compare`: is NEW faster than BASE? Per job and direction, IOPS,
/// bandwidth, clat mean/p50/p99/p99.9 and CPU per I/O with intervals, a
/// verdict and the test behind it.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Exit status: 0 pass (every rule judged, none crossed; without rules: every job compared), 1 a --fail-if rule crossed, 2 bad input, 3 inconclusive (a job not compared or on one side only, too few rounds, an interval reaching past a threshold, a metric missing; the last line says what would judge it). See docs/compare.md."
)]
pub struct CompareArgs {
    /// BASE then NEW: each a JSON file of `iolab run --output-format=json` or
    /// `fio --output-format=json` (json+ too), or a directory of them (one per
    /// round), or a fleet directory (one subdirectory per host). One fleet
    /// directory alone: every host against the first (or --base-host). One
    /// directory holding a/ and b/ (what --run writes): a against b.
    #[arg(value_name = "BASE NEW")]
    pub sides: Vec<PathBuf>,
    /// Run these job files in interleaved A/B rounds on this machine (with
    /// --a, --b, --rounds), store each round's JSON under --out, compare.
    #[arg(long, num_args = 1.., value_name = "JOBFILE", conflicts_with = "sides")]
    pub run: Vec<String>,
    /// Variant A's extra `iolab run` options, e.g. --a '--null_lat=4us'.
    #[arg(long = "a", value_name = "OPTS", allow_hyphen_values = true)]
    pub a: Option<String>,
    /// Variant B's extra `iolab run` options.
    #[arg(long = "b", value_name = "OPTS", allow_hyphen_values = true)]
    pub b: Option<String>,
    /// Rounds per variant with --run (at least 2 for a verdict on IOPS and
    /// for the gate; 5-10 is good; an inconclusive gate says how many the
    /// observed spread needs).
    #[arg(long, default_value_t = 5)]
    pub rounds: usize,
    /// With --run: where the rounds go (DIR/a/roundN.json, DIR/b/roundN.json).
    #[arg(long, value_name = "DIR", default_value = "iolab-compare")]
    pub out: PathBuf,
    /// Fail (exit 1) if a significant change crosses RULE: METRIC>+N% or
    /// METRIC<-N% (relative), or absolute in units: p99>+20us, iops<-1000,
    /// bw<-100MiB/s; an optional read./write./trim. prefix picks a direction.
    /// Metrics: iops, bw, mean, p50, p99, p99.9, cpu. Repeatable. A rule
    /// that cannot be judged (too few rounds, an interval reaching past the
    /// threshold, a job not compared) makes the gate inconclusive: exit 3.
    #[arg(long = "fail-if", value_name = "RULE")]
    pub fail_if: Vec<String>,
    /// Exit 0 instead of 3 when the gate is inconclusive (what was not
    /// judged is still listed). A rule crossed still exits 1.
    #[arg(long)]
    pub allow_inconclusive: bool,
    /// normal (text) or json.
    #[arg(long, value_name = "FORMAT", default_value = "normal")]
    pub output_format: String,
    /// Also write an HTML page (bars with intervals, latency CDFs) to DIR/index.html.
    #[arg(long, visible_alias = "report", value_name = "DIR")]
    pub html: Option<PathBuf>,
    /// Confidence level of the intervals, in percent (the tests use 100 - it).
    #[arg(long, value_name = "PCT", default_value = "95")]
    pub confidence: String,
    /// Smallest change called a difference, in percent: a significant change
    /// smaller than this is reported as no difference that matters.
    #[arg(long, value_name = "PCT", default_value = "1")]
    pub min_effect: String,
    /// Options allowed to differ between the sides (the change under test);
    /// jobs whose options differ otherwise are listed, not compared. `*`: any.
    #[arg(long = "allow-diff", value_name = "OPTION", value_delimiter = ',')]
    pub allow_diff: Vec<String>,
    /// With one fleet directory: the host the others are compared against.
    #[arg(long, value_name = "HOST")]
    pub base_host: Option<String>,
}

pub fn main(args: CompareArgs) -> Result<u8> {
    match compare_main(args) {
        Ok(code) => Ok(code),
        Err(e)
            if e.chain().any(|c| {
                c.downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            }) =>
        {
            Err(e)
        }
        Err(e) => {
            eprintln!("iolab: error: {e:#}");
            Ok(2)
        }
    }
}

fn percent(name: &str, v: &str, lo: f64, hi: f64) -> Result<f64> {
    let x: f64 =
        v.trim().trim_end_matches('%').parse().map_err(|_| {
            anyhow!("--{name} '{v}': expected a percentage from {lo} to {hi}, e.g. 95")
        })?;
    if !(lo..=hi).contains(&x) {
        bail!("--{name} {v}: expected a percentage from {lo} to {hi}");
    }
    Ok(x / 100.0)
}

fn compare_main(a: CompareArgs) -> Result<u8> {
    let rules = a
        .fail_if
        .iter()
        .map(|r| parse_rule(r))
        .collect::<Result<Vec<_>, _>>()?;
    let json = match a.output_format.as_str() {
        "normal" | "text" => false,
        "json" => true,
        f => bail!("--output-format={f}: expected normal or json"),
    };
    let mut set = Settings {
        level: percent("confidence", &a.confidence, 50.0, 99.9)?,
        min_effect: percent("min-effect", &a.min_effect, 0.0, 100.0)?,
        allow_diff: a.allow_diff.iter().cloned().collect::<BTreeSet<_>>(),
    };
    let (comparisons, notes) = if !a.run.is_empty() {
        let (Some(oa), Some(ob)) = (&a.a, &a.b) else {
            bail!(
                "--run needs both --a 'OPTS' and --b 'OPTS' (the two variants' iolab run options; the same on both sides for an A/A check)"
            );
        };
        if a.rounds == 0 {
            bail!(
                "--rounds 0: give at least 1 (2 or more for a verdict on IOPS and for --fail-if)"
            );
        }
        for j in &a.run {
            if !Path::new(j).is_file() {
                bail!(
                    "--run {j}: no such job file (--run takes job files; put options in --a and --b)"
                );
            }
        }
        let plan = AbPlan {
            jobs: a.run.clone(),
            a: split_opts("a", oa)?,
            b: split_opts("b", ob)?,
            rounds: a.rounds,
            out: a.out.clone(),
        };
        set.allow_diff.extend(option_names(&plan.a));
        set.allow_diff.extend(option_names(&plan.b));
        let exe = std::env::current_exe().context("finding this iolab executable")?;
        run_ab(&exe, &plan, |m| eprintln!("iolab compare: {m}"))?;
        let (sa, sb) = (load_side(&a.out.join("a"))?, load_side(&a.out.join("b"))?);
        let title = format!("a: {oa}  against  b: {ob}");
        // The variants' options are in each round's `global options`, so
        // each job lists what changed.
        (
            vec![compare(&title, ("a", &sa), ("b", &sb), &set)],
            Vec::new(),
        )
    } else {
        if a.a.is_some() || a.b.is_some() {
            bail!("--a and --b go with --run JOBFILE...");
        }
        match a.sides.as_slice() {
            [f] if fleet::is_fleet(f) => fleet::host_vs_host(f, a.base_host.as_deref(), &set)?,
            [d] if d.join("a").is_dir() && d.join("b").is_dir() => {
                set.allow_diff
                    .extend(crate::compare::run::varied_options(d)?);
                let (sa, sb) = (load_side(&d.join("a"))?, load_side(&d.join("b"))?);
                (
                    vec![compare("a against b", ("a", &sa), ("b", &sb), &set)],
                    Vec::new(),
                )
            }
            [base, new] if fleet::is_fleet(base) && fleet::is_fleet(new) => {
                fleet::before_after(base, new, &set)?
            }
            [base, new] => {
                let (sb, sn) = (load_side(base)?, load_side(new)?);
                (
                    vec![compare(
                        "base against new",
                        ("base", &sb),
                        ("new", &sn),
                        &set,
                    )],
                    Vec::new(),
                )
            }
            [] => bail!(
                "give BASE and NEW (files or directories of run JSON), one fleet directory, or --run JOBFILE... --a OPTS --b OPTS"
            ),
            [one] => bail!(
                "{}: one side only; give BASE and NEW, a fleet directory (one subdirectory per host with jobs/), or a directory holding a/ and b/",
                one.display()
            ),
            more => bail!("{} sides given; give two: BASE and NEW", more.len()),
        }
    };
    let gate = evaluate(
        &rules,
        &comparisons,
        &notes,
        set.level,
        a.allow_inconclusive,
    );
    let report = Report {
        level: set.level,
        alpha: 1.0 - set.level,
        min_effect: set.min_effect,
        comparisons,
        notes,
        fail_if: rules.iter().map(|r| r.text.clone()).collect(),
        gate_hits: gate.hits,
        outcome: gate.outcome,
        unjudged: gate.unjudged,
        allow_inconclusive: a.allow_inconclusive,
        exit_code: gate.exit_code,
    };
    let mut stdout = std::io::stdout().lock();
    if json {
        serde_json::to_writer_pretty(&mut stdout, &report)?;
        writeln!(stdout)?;
    } else {
        write!(stdout, "{}", text::render(&report))?;
    }
    stdout.flush()?;
    if let Some(dir) = &a.html {
        let path = crate::report::html::write_index(dir, &html::render_html(&report))?;
        eprintln!("iolab compare: report {}", path.display());
    }
    Ok(report.exit_code)
}
