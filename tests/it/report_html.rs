//! Structure of the HTML report: every study and chart present, every chart an
//! SVG with a real size, nothing unescaped, nothing external; `iolab report`
//! joins files and names the bad ones.

use crate::report_html_common;

use iolab::report::cli::ReportArgs;
use iolab::report::html::{
    LabSet, load_results, render_lab_html, render_lab_set_html, render_run_html,
};
use report_html_common::{HOSTILE, chart_count, lab_results, run_result, svg_size, svgs};

fn assert_clean_svgs(html: &str, expected: usize) {
    let all = svgs(html);
    assert_eq!(all.len(), expected, "one <svg> per chart");
    for s in all {
        let (w, h) = svg_size(s);
        assert!(w > 0.0 && h > 0.0, "chart size {w}x{h}");
        assert!(
            s.contains(&format!("viewBox=\"0 0 {w} {h}\"")),
            "viewBox matches size"
        );
        for bad in ["NaN", "inf", "undefined"] {
            assert!(!s.contains(bad), "{bad} in chart: {s}");
        }
    }
}

fn assert_self_contained(html: &str) {
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.trim_end().ends_with("</html>"));
    // Hostile names arrive escaped; the report itself carries no script.
    assert!(!html.to_lowercase().contains("<script"), "unescaped script");
    assert!(
        html.contains("&lt;script&gt;"),
        "hostile name shown, escaped"
    );
    // No network: the only URL is the SVG namespace.
    let urls = html.matches("http://").count() + html.matches("https://").count();
    assert_eq!(
        urls,
        html.matches("http://www.w3.org/2000/svg").count(),
        "external reference"
    );
    for attr in ["src=", "<link", "@import", "url("] {
        assert!(!html.contains(attr), "{attr} in a self-contained report");
    }
}

#[test]
fn lab_report_has_every_study_chart_and_table() {
    let r = lab_results();
    let html = render_lab_html(&r);
    assert_self_contained(&html);
    assert_clean_svgs(&html, chart_count(&r));
    // Every study: a section, and a table-of-contents link to it.
    let sections: Vec<&str> = html
        .match_indices("<section class=\"study\" id=\"")
        .map(|(i, _)| {
            let s = &html[i + 27..];
            &s[..s.find('"').unwrap()]
        })
        .collect();
    assert_eq!(sections.len(), r.studies.len());
    for id in &sections {
        assert!(
            html.contains(&format!("href=\"#{id}\"")),
            "toc link to {id}"
        );
        assert!(
            id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'),
            "{id}"
        );
    }
    for s in &r.studies {
        assert!(html.contains(&format!("Study {}", s.seed)));
    }
    // Header facts.
    for fact in [
        "testhost",
        "6.18.0",
        "Synthetic CPU",
        "24.0 GiB",
        "21.4 ns",
        "17.3 µs",
        "quick",
        "0.1.0",
    ] {
        assert!(html.contains(fact), "header lacks {fact}");
    }
    // Comparisons: 4.93/4.4 is close, 6.3/1.4 is far and marked, None has no ratio.
    assert!(html.contains("<tr class=\"close\">") && html.contains("1.12×"));
    assert!(html.contains("<tr class=\"far\">") && html.contains("4.50× \u{26A0}"));
    // Tables, verdict, skipped parts, not run.
    assert!(html.contains("QD1 latency by completion model") && html.contains(">10.31<"));
    assert!(html.contains("Poll beats interrupt"));
    assert!(html.contains("/sys/block/vda/queue/io_poll = 0"));
    assert!(html.contains("no SMT siblings on this machine"));
    assert!(html.contains("id=\"not-run\"") && html.contains("pgbench not found"));
    // A NaN table cell reads as "-", never "NaN".
    assert!(!html.contains("NaN"));
}

#[test]
fn run_report_has_histogram_cdf_and_iops_over_time() {
    let run = run_result();
    let html = render_run_html(&run);
    assert_self_contained(&html);
    assert_clean_svgs(&html, 3);
    assert!(html.contains("completion latency distribution"));
    assert!(html.contains("completion latency CDF"));
    assert!(html.contains("IOPS over time"));
    // Bimodal clat: buckets from <10µs up to <100µs are shown.
    assert!(
        html.contains("&lt;10µs") && html.contains("&lt;100µs"),
        "histogram buckets"
    );
    // 20 full intervals of 100 ms, 750 reads each: 7500 read IOPS per point.
    let iops = svgs(&html)[2];
    assert_eq!(iops.matches("<title>read: x=").count(), 20, "{iops}");
    assert_eq!(iops.matches("y=7.5k<").count(), 20, "{iops}");
    assert!(html.contains("fsync") && html.contains("poll: 15000 hits"));
    assert!(html.contains("Latency by request class"));
}

#[test]
fn empty_results_still_make_a_page() {
    let html = render_lab_html(&Default::default());
    assert_self_contained_min(&html);
    assert!(html.contains("No study produced results"));
    assert!(html.contains("unknown"));
}

fn assert_self_contained_min(html: &str) {
    assert!(html.starts_with("<!DOCTYPE html>") && html.contains("</html>"));
    assert!(!html.contains("NaN"));
}

#[test]
fn report_command_joins_files_and_names_bad_ones() {
    let dir = tempfile::tempdir().unwrap();
    let a = lab_results();
    let mut b = lab_results();
    b.machine.hostname = "otherhost".into();
    b.studies.truncate(1);
    b.studies[0].title = "second file's study".into();
    let pa = dir.path().join("a.json");
    let pb = dir.path().join("b");
    std::fs::create_dir(&pb).unwrap();
    std::fs::write(&pa, serde_json::to_string(&a).unwrap()).unwrap();
    std::fs::write(
        pb.join("results.json"),
        serde_json::to_string_pretty(&b).unwrap(),
    )
    .unwrap();
    // NaN does not survive JSON (it becomes null); the loader must still accept it.
    let back = load_results(&pa).unwrap();
    assert_eq!(back.studies.len(), 2);
    assert!(back.studies[1].charts[0].series[1].points[2].1.is_nan());
    assert!(
        matches!(back.studies[0].tables[0].rows[1][4], iolab::report::study::Cell::Num { v, .. } if v.is_nan())
    );

    let out = dir.path().join("out");
    let code = iolab::report::cli::main(ReportArgs {
        files: vec![pa.clone(), pb.clone()],
        out: out.clone(),
        fleet: None,
    })
    .unwrap();
    assert_eq!(code, 0);
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert_clean_svgs(&html, chart_count(&a) + chart_count(&b));
    assert!(html.contains("testhost") && html.contains("otherhost"));
    assert!(html.contains("a different machine"));
    assert!(
        html.contains("1 point not drawn"),
        "NaN read back as a point not drawn"
    );
    assert!(html.contains("second file&#39;s study"));
    assert_eq!(html.matches("<section class=\"study\"").count(), 3);
    // Two not-run entries, each attributed to its file.
    assert_eq!(html.matches("pgbench not found").count(), 2);

    // Same output from the library call.
    let set = LabSet {
        sources: vec![("a".into(), &a)],
    };
    assert_eq!(render_lab_set_html(&set), render_lab_html(&a));

    let err = |name: &str, body: &str| -> String {
        let p = dir.path().join(name);
        std::fs::write(&p, body).unwrap();
        format!("{:#}", load_results(&p).unwrap_err())
    };
    let e = err("text.json", "hello");
    assert!(e.contains("text.json") && e.contains("is not JSON"), "{e}");
    let e = err("fio.json", r#"{"fio version": "fio-3.33", "jobs": []}"#);
    assert!(
        e.contains("fio.json") && e.contains("fio-style JSON"),
        "{e}"
    );
    let e = err("other.json", r#"{"studies": []}"#);
    assert!(
        e.contains("other.json") && e.contains("missing iolab_version, machine"),
        "{e}"
    );
    let e = err("list.json", "[1, 2]");
    assert!(
        e.contains("list.json") && e.contains("not an iolab results file"),
        "{e}"
    );
    let e = err(
        "typed.json",
        r#"{"iolab_version": "0.1.0", "machine": {}, "studies": 3, "quick": false, "not_run": []}"#,
    );
    assert!(
        e.contains("typed.json") && e.contains("does not match"),
        "{e}"
    );
    let e = format!(
        "{:#}",
        load_results(&dir.path().join("missing.json")).unwrap_err()
    );
    assert!(
        e.contains("missing.json") && e.contains("cannot read"),
        "{e}"
    );
    let e = format!("{:#}", load_results(&out).unwrap_err());
    assert!(e.contains("directory without results.json"), "{e}");
    // A bad file fails the command before anything is written.
    let out2 = dir.path().join("out2");
    assert!(
        iolab::report::cli::main(ReportArgs {
            files: vec![pa, dir.path().join("text.json")],
            out: out2.clone(),
            fleet: None,
        })
        .is_err()
    );
    assert!(!out2.exists());
    let _ = HOSTILE;
}

#[test]
fn run_report_says_why_iops_over_time_is_missing() {
    let mut run = run_result();
    run.jobs[0].job_runtime = 50;
    run.jobs[0].iolab.runtime_ms = 50;
    run.jobs[0].iolab.iops_log.dropped = 7;
    let html = render_run_html(&run);
    assert!(
        html.contains("shorter than one log interval (100 ms)"),
        "short run noted"
    );
    assert!(
        html.contains("7 completions fell past the log"),
        "dropped noted"
    );
    assert!(svgs(&html)[2].contains("no data"));
    run.jobs[0].iolab.iops_log.interval_ms = 0;
    let html = render_run_html(&run);
    assert!(html.contains("below 1 ms"), "sub-ms interval noted");
    // A job without I/O says so instead of drawing empty charts.
    run.jobs[0].read = Default::default();
    run.jobs[0].write = Default::default();
    run.jobs[0].sync = Default::default();
    let html = render_run_html(&run);
    assert!(html.contains("completed no I/O") && svgs(&html).is_empty());
}
