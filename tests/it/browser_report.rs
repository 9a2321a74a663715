//! The HTML report in a real browser: headless Chromium renders the lab and run
//! reports built from synthetic results with every chart kind, takes a
//! screenshot, and a measuring script (added to a copy of the page) reports
//! chart sizes, text that overflows its chart, SVG that is not well-formed XML,
//! resource loads and script/console errors. A deliberately broken page runs
//! through the same harness first, so the checks are known to catch faults.
//!
//! Without Chromium the test says why and passes (CI installs Debian's
//! `chromium` package: `apt-get install -y chromium`). `IOLAB_CHROMIUM` picks
//! another binary; `IOLAB_REPORT_RESULTS=results.json` checks the report of
//! real saved lab results instead of the synthetic ones; `IOLAB_KEEP_SCREENSHOT=PATH.png` keeps the lab screenshot
//! (and the pages beside it as PATH.html and PATH.run.html).

use crate::support;

use support::needs::{Need, chromium, ready};

use crate::report_html_common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use iolab::report::html::{load_results, render_lab_html, render_run_html};
use report_html_common::{chart_count, lab_results, run_result, svgs};
use serde_json::Value;

/// Run Chromium headless on `page` with `extra` flags; (stdout, stderr).
/// Killed (by its own handle) after 90 s so a hung browser fails the test.
pub(crate) fn run_chromium(
    bin: &Path,
    profile: &Path,
    page: &Path,
    extra: &[String],
) -> (String, String) {
    let out_file = profile.with_extension("stdout");
    let err_file = profile.with_extension("stderr");
    let mut child = Command::new(bin)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_file).unwrap())
        .stderr(std::fs::File::create(&err_file).unwrap())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", bin.display()));
    let t0 = Instant::now();
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            let out = std::fs::read_to_string(&out_file).unwrap_or_default();
            let err = std::fs::read_to_string(&err_file).unwrap_or_default();
            assert!(st.success(), "chromium failed ({st}):\n{err}");
            return (out, err);
        }
        if t0.elapsed() > Duration::from_secs(90) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish within 90 s on {}", page.display());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Installed first in <head>: records errors (script, console, failed loads).
const PROBE_HEAD: &str = r#"<script>
window.__errs = [];
window.addEventListener('error', function (e) {
  var t = e.target && e.target !== window ? ('load failed: ' + (e.target.src || e.target.href || e.target.tagName)) : String(e.message);
  window.__errs.push(t);
}, true);
(function () {
  var orig = console.error, warn = console.warn;
  console.error = function () { window.__errs.push('console.error: ' + Array.prototype.join.call(arguments, ' ')); return orig.apply(console, arguments); };
  console.warn = function () { window.__errs.push('console.warn: ' + Array.prototype.join.call(arguments, ' ')); return warn.apply(console, arguments); };
})();
</script>"#;

/// Added before </body>: measures and writes the findings into the DOM once
/// the page has loaded (failed loads have reported by then; --dump-dom waits
/// for the load event).
const PROBE_TAIL: &str = r#"<script>
window.addEventListener('load', function () {
  var out = { charts: [], overflow: [], xml: [], resources: [], scripts: 0, errors: window.__errs };
  document.querySelectorAll('svg').forEach(function (s, i) {
    var r = s.getBoundingClientRect();
    out.charts.push({ w: r.width, h: r.height, title: (s.querySelector('title') || {}).textContent || '' });
    s.querySelectorAll('text').forEach(function (t) {
      var b = t.getBoundingClientRect();
      if (t.textContent.length && (b.left < r.left - 1 || b.right > r.right + 1 || b.top < r.top - 1 || b.bottom > r.bottom + 1)) {
        out.overflow.push(i + ': ' + t.textContent);
      }
    });
  });
  (window.__sources || []).forEach(function (src, i) {
    var d = new DOMParser().parseFromString(src, 'image/svg+xml');
    if (d.getElementsByTagName('parsererror').length) {
      out.xml.push(i + ': ' + d.getElementsByTagName('parsererror')[0].textContent);
    }
  });
  out.resources = performance.getEntriesByType('resource').map(function (e) { return e.name; });
  out.scripts = document.querySelectorAll('script').length;
  document.body.setAttribute('data-probe', JSON.stringify(out));
});
</script>"#;

/// A copy of `html` with the probe scripts and the SVG sources to parse as XML.
fn probed(html: &str) -> String {
    let sources: Vec<&str> = svgs(html);
    // "</" would end the script element early; "\/" is the same JSON string.
    let json = serde_json::to_string(&sources)
        .unwrap()
        .replace("</", "<\\/");
    let tail = format!("<script>window.__sources = {json};</script>{PROBE_TAIL}");
    let html = html.replacen("<head>", &format!("<head>{PROBE_HEAD}"), 1);
    html.replacen("</body>", &format!("{tail}</body>"), 1)
}

fn unescape_attr(s: &str) -> String {
    s.replace("&quot;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

/// Load a probed copy of `html` and return the probe's findings.
pub(crate) fn probe(bin: &Path, dir: &Path, name: &str, html: &str) -> Value {
    let page = dir.join(format!("{name}.probe.html"));
    std::fs::write(&page, probed(html)).unwrap();
    let profile = dir.join(format!("{name}.profile"));
    let (dom, err) = run_chromium(bin, &profile, &page, &["--dump-dom".into()]);
    let i = dom
        .find("data-probe=\"")
        .unwrap_or_else(|| panic!("{name}: probe did not run; stderr:\n{err}"))
        + 12;
    let j = i + dom[i..].find('"').unwrap();
    serde_json::from_str(&unescape_attr(&dom[i..j])).unwrap()
}

/// Everything the probe found wrong, as readable lines.
pub(crate) fn faults(p: &Value, expected_scripts: u64) -> Vec<String> {
    let mut f = Vec::new();
    for c in p["charts"].as_array().unwrap() {
        let (w, h) = (c["w"].as_f64().unwrap(), c["h"].as_f64().unwrap());
        if w < 1.0 || h < 1.0 {
            f.push(format!("chart {:?} rendered {w}x{h}", c["title"]));
        }
    }
    for k in ["overflow", "xml", "resources", "errors"] {
        for e in p[k].as_array().unwrap() {
            f.push(format!("{k}: {e}"));
        }
    }
    if p["scripts"].as_u64() != Some(expected_scripts) {
        f.push(format!("{} script elements in the page", p["scripts"]));
    }
    f
}

pub(crate) fn check_png(path: &Path, w: u32, h: u32) -> u64 {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
    let be = |i: usize| u32::from_be_bytes(bytes[i..i + 4].try_into().unwrap());
    assert_eq!((be(16), be(20)), (w, h), "screenshot size");
    bytes.len() as u64
}

#[test]
fn report_renders_in_chromium() {
    let _one = crate::support::serial::one_at_a_time();
    if !ready(&[Need::Chromium]) {
        return;
    }
    let bin = chromium().expect("checked by ready");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Our own scripts in a probed page: the 3 probe scripts, nothing else.
    const PROBE_SCRIPTS: u64 = 3;

    // The harness catches faults: errors, loads, an empty chart, broken XML,
    // overflowing text, a stray script.
    let broken = r#"<!DOCTYPE html><html><head><title>b</title></head><body>
<img src="http://127.0.0.1:9/x.png">
<svg width="0" height="0" viewBox="0 0 0 0"></svg>
<svg width="100" height="50" viewBox="0 0 100 50"><text x="90" y="20">overflowing text here</text><rect x="1"></svg>
<script>console.error("boom");</script>
</body></html>"#;
    let p = probe(&bin, d, "broken", broken);
    let f = faults(&p, PROBE_SCRIPTS).join("\n");
    eprintln!("browser_report: faults found in the broken page:\n{f}");
    for expect in [
        "rendered 0x0",
        "overflow: \"1: overflowing text here\"",
        "xml: ",
        "127.0.0.1:9",
        "console.error: boom",
        "4 script elements",
    ] {
        assert!(f.contains(expect), "harness missed {expect:?}:\n{f}");
    }

    // The lab report: synthetic, or real saved results when given.
    let r = match std::env::var_os("IOLAB_REPORT_RESULTS") {
        Some(p) => load_results(Path::new(&p)).unwrap(),
        None => lab_results(),
    };
    let html = render_lab_html(&r);
    let page = d.join("index.html");
    std::fs::write(&page, &html).unwrap();
    let p = probe(&bin, d, "lab", &html);
    assert_eq!(p["charts"].as_array().unwrap().len(), chart_count(&r));
    let f = faults(&p, PROBE_SCRIPTS);
    assert!(f.is_empty(), "lab report faults:\n{}", f.join("\n"));
    let shot = d.join("lab.png");
    run_chromium(
        &bin,
        &d.join("shot.profile"),
        &page,
        &[
            format!("--screenshot={}", shot.display()),
            "--window-size=1280,2400".into(),
        ],
    );
    let size = check_png(&shot, 1280, 2400);
    // A blank 1280x2400 PNG compresses to a few KiB; text and charts do not.
    assert!(size > 60_000, "screenshot only {size} bytes");
    eprintln!("browser_report: lab screenshot {size} bytes");
    if let Some(keep) = std::env::var_os("IOLAB_KEEP_SCREENSHOT") {
        let keep = PathBuf::from(keep);
        std::fs::copy(&shot, &keep).unwrap();
        std::fs::copy(&page, keep.with_extension("html")).unwrap();
    }

    // The run report.
    let html = render_run_html(&run_result());
    if let Some(keep) = std::env::var_os("IOLAB_KEEP_SCREENSHOT") {
        std::fs::write(PathBuf::from(keep).with_extension("run.html"), &html).unwrap();
    }
    let p = probe(&bin, d, "run", &html);
    assert_eq!(p["charts"].as_array().unwrap().len(), 3);
    let f = faults(&p, PROBE_SCRIPTS);
    assert!(f.is_empty(), "run report faults:\n{}", f.join("\n"));
}
