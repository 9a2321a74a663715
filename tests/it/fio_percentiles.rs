//! fio's percentiles come from its bins: fio 3.33's own json+ output is
//! read back with iolab's `FioBins::percentile`, and every `percentile`
//! value fio wrote (slat, clat, lat per direction, and sync) must come out
//! the same. Then iolab's json+ for the same job must hold to the same rule
//! against its own bins. Both checks read one finished document each, so
//! the verdict does not depend on the latencies measured.

use std::process::Command;

use iolab::report::jsonplus::FioBins;
use serde_json::Value;

use crate::run_common::iolab_run;
use crate::support::needs::{Need, ready};

const JOB: &[&str] = &[
    "--name=p",
    "--ioengine=null",
    "--rw=randrw",
    "--size=16m",
    "--bs=4k",
    "--iodepth=4",
    "--fsync=16",
    "--slat_percentiles=1",
    "--lat_percentiles=1",
    // Unsorted, and with values that are not exact in binary.
    "--percentile_list=99.9:1:33.3:50:99.99:99.5:66.6",
    "--output-format=json+",
];

/// Checks every latency object of `doc` that carries both `percentile` and
/// `bins`; returns how many values it compared.
fn check(doc: &Value, who: &str) -> usize {
    let job = &doc["jobs"][0];
    let mut objs = Vec::new();
    for d in ["read", "write", "trim"] {
        for l in ["slat_ns", "clat_ns", "lat_ns"] {
            objs.push((format!("{d}.{l}"), &job[d][l]));
        }
    }
    objs.push(("sync.lat_ns".into(), &job["sync"]["lat_ns"]));
    let mut compared = 0;
    for (name, o) in objs {
        let (Some(p), Some(bins)) = (o.get("percentile"), o.get("bins")) else {
            continue;
        };
        let bins: FioBins = serde_json::from_value(bins.clone()).expect("bins parse");
        let n = o["N"].as_u64().unwrap();
        assert_eq!(bins.total(), n, "{who} {name}: bins hold every sample");
        for (k, v) in p.as_object().unwrap() {
            let pct: f64 = k.parse().unwrap();
            assert_eq!(
                bins.percentile(pct, n),
                v.as_u64(),
                "{who} {name}: the {k}th percentile is not the bin fio's rule gives"
            );
            compared += 1;
        }
    }
    compared
}

#[test]
fn percentiles_are_fios_bins() {
    if !ready(&[Need::Fio]) {
        return;
    }
    let out = Command::new("fio").args(JOB).output().expect("run fio");
    assert!(out.status.success(), "fio: {out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    let fio: Value = serde_json::from_str(&text[text.find('{').unwrap()..]).unwrap();
    // reads and writes: slat, clat, lat each; and sync's lat.
    let n = check(&fio, "fio");
    assert!(n >= 6 * 7 + 7, "fio wrote {n} percentiles with bins");

    let (code, out, err) = iolab_run(JOB);
    assert_eq!(code, 0, "{err}");
    let ours: Value = serde_json::from_str(&out).unwrap();
    let n = check(&ours, "iolab");
    assert!(n >= 4 * 7 + 7, "iolab wrote {n} percentiles with bins");
    // iolab's own, finer figures are kept beside fio's.
    let own = &ours["jobs"][0]["iolab"]["clat_percentile"];
    assert!(own["read"]["50.000000"].is_u64(), "{own}");
}
