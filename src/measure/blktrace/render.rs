//! Text views: btt's stage table and the per-layer breakdown (report calls these).

#[cfg(any(test, feature = "testing"))]
use super::join::{Breakdown, LayerSplit};
use super::stats::{BttTable, StageStats};

/// Render like btt's "All Devices" table (times in microseconds).
pub fn render_btt(t: &BttTable) -> String {
    let mut s = String::from(
        "            ALL        MIN (us)       AVG (us)       MAX (us)           N\n\
         --------------- -------------- -------------- -------------- -----------\n",
    );
    for (name, v) in [
        ("Q2G", &t.q2g),
        ("G2I", &t.g2i),
        ("I2D", &t.i2d),
        ("G2D", &t.g2d),
        ("Q2D", &t.q2d),
        ("D2C", &t.d2c),
        ("Q2C", &t.q2c),
    ] {
        stage_row(&mut s, name, v, [15, 14, 14, 14, 11]);
    }
    for n in &t.notes {
        s.push_str(&format!("note: {n}\n"));
    }
    s
}

/// One `name  min  avg  max  N` line (us), column widths `w`; "-" when empty.
fn stage_row(s: &mut String, name: &str, v: &StageStats, w: [usize; 5]) {
    let [wn, w1, w2, w3, w4] = w;
    if v.n == 0 {
        s.push_str(&format!(
            "{name:<wn$} {:>w1$} {:>w2$} {:>w3$} {:>w4$}\n",
            "-", "-", "-", 0
        ));
    } else {
        s.push_str(&format!(
            "{name:<wn$} {:>w1$.3} {:>w2$.3} {:>w3$.3} {:>w4$}\n",
            v.min_ns as f64 / 1e3,
            v.avg_ns / 1e3,
            v.max_ns as f64 / 1e3,
            v.n
        ));
    }
}

#[cfg(any(test, feature = "testing"))]
pub fn render_breakdown(b: &Breakdown) -> String {
    let mut s = String::from(
        "stage                              MIN (us)       AVG (us)       MAX (us)         N\n",
    );
    let row =
        |s: &mut String, name: &str, v: &StageStats| stage_row(s, name, v, [30, 12, 14, 14, 9]);
    let l = LayerSplit::of(&b.joined, None);
    row(&mut s, "user (submit -> Q)", &l.user);
    row(&mut s, "block layer (Q -> D)", &l.block);
    row(&mut s, "driver+device (D -> C)", &l.device);
    if l.block.n == 0 && l.q2c.n > 0 {
        row(&mut s, "block+driver+device (Q -> C)", &l.q2c);
    }
    row(&mut s, "completion delivery (C -> seen)", &l.completion);
    row(&mut s, "total (submit -> seen)", &l.total);
    if l.block.n == 0 && l.q2c.n > 0 {
        s.push_str(
            "note: no D events (bio-based device): block layer and device are not separable\n",
        );
    }
    if b.unmatched_user > 0 {
        s.push_str(&format!(
            "note: {} user I/Os had no traced request inside their window\n",
            b.unmatched_user
        ));
    }
    if b.unclaimed_requests > 0 {
        s.push_str(&format!(
            "note: {} traced requests belonged to no user I/O (other tasks, metadata)\n",
            b.unclaimed_requests
        ));
    }
    s
}
