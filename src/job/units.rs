//! Values in fio's notation: sizes with `kb_base` quirks, times with per-option
//! default units, booleans, integers, float lists.
//!
//! Each parser returns a [`UnitError`] whose message is a phrase describing what
//! would have been valid; the caller wraps it with the location and the option name.

use std::time::Duration;

/// The multiplier base for size suffixes (fio's `kb_base`).
///
/// With 1024 (fio's default, "compat" mode) `k`, `kb` and `ki` mean 1024 while
/// `kib` means 1000 — the reverse of SI/IEC, kept by fio for old job files.
/// With 1000 the suffixes mean what the standards say.
#[cfg(any(test, feature = "testing"))]
pub const KB_BASES: [u32; 2] = [1024, 1000];

/// A parsed size: bytes, or a percentage where the option allows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SizeVal {
    Bytes(u64),
    Percent(u64),
}

pub const SIZE_EXPECTED: &str = "a size: an integer with an optional suffix b, k, m, g, t, p \
     (also kb/ki, kib etc.; case-insensitive), e.g. 4k, 1m, 512";

fn power_of(suffix_letter: char) -> Option<u32> {
    match suffix_letter {
        'k' => Some(1),
        'm' => Some(2),
        'g' => Some(3),
        't' => Some(4),
        'p' => Some(5),
        _ => None,
    }
}

/// Splits `s` into its leading decimal digits and the rest.
fn split_digits(s: &str) -> (&str, &str) {
    let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    s.split_at(end)
}

/// The multiplier a size suffix stands for, following fio's `__get_mult_bytes`.
fn size_multiplier(suffix: &str, kb_base: u32) -> Option<u64> {
    let lower = suffix.to_ascii_lowercase();
    if lower.is_empty() || lower == "b" {
        return Some(1);
    }
    let mut chars = lower.chars();
    let pow = power_of(chars.next()?)?;
    let rest: String = chars.collect();
    // fio treats a trailing "ib" as "the other base"; "b" and "i" alone keep kb_base.
    let base: u64 = match rest.as_str() {
        "" | "b" | "i" => u64::from(kb_base),
        "ib" => {
            if kb_base == 1000 {
                1024
            } else {
                1000
            }
        }
        _ => return None,
    };
    base.checked_pow(pow)
}

/// Why a value is not in fio's notation. Each variant's message is the phrase
/// describing what would have been valid (and, where it helps, what was wrong);
/// the caller wraps it with the location and the option name.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum UnitError {
    /// Not a size (`percent`: a percentage would also have been valid).
    #[error("{}{}", size_expected(*.percent), .problem.map_or(String::new(), |p| p.to_string()))]
    Size {
        percent: bool,
        problem: Option<SizeProblem>,
    },
    /// A percentage above 100%.
    #[error("a percentage from 0% to 100%, got {0}%")]
    PercentOver(u64),
    /// Not a time (`ns`: the option admits nanoseconds).
    #[error(
        "a time: an integer with an optional suffix {}us, ms, s, m, h, d (no suffix = {}){}",
        if *.ns { "ns, " } else { "" },
        .default_unit.name(),
        .problem.map_or(String::new(), |p| p.to_string())
    )]
    Time {
        default_unit: TimeUnit,
        ns: bool,
        problem: Option<TimeProblem>,
    },
    #[error("{BOOL_EXPECTED}")]
    Bool,
    /// Not an integer in `[min, max]`; `got` is the value when it parsed but was out of range.
    #[error("{}{}", int_range(*.min, *.max), .got.map_or(String::new(), |v| format!(", got {v}")))]
    Int {
        min: u64,
        max: u64,
        got: Option<u64>,
    },
    #[error("a number from {min} to {max}")]
    Real { min: f64, max: f64 },
    #[error("{PROBABILITY_EXPECTED}")]
    Probability,
    #[error(
        "a ':'-separated list of up to {MAX_PERCENTILES} percentiles in [0, 100], e.g. 50:99:99.9"
    )]
    Percentiles,
    /// A value in parentheses that is not an expression fio reads the same way.
    #[error("{expected}: {0}", expected = super::expr::EXPR_EXPECTED)]
    Expr(#[from] super::expr::ExprError),
}

/// What was wrong with a size beyond "not a size".
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SizeProblem {
    #[error(" (hex values take no suffix)")]
    HexSuffix,
    #[error(
        " (fractions are not supported: fio would silently truncate them; \
         use a smaller unit, e.g. 1536 instead of 1.5k)"
    )]
    Fraction,
    #[error(" (too large)")]
    TooLarge,
    #[error(" (a percentage is not valid here)")]
    PercentNotHere,
}

/// What was wrong with a time beyond "not a time".
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TimeProblem {
    #[error(" (fractions are not supported; use a smaller unit)")]
    Fraction,
    #[error(" (too large)")]
    TooLarge,
}

fn size_expected(percent: bool) -> String {
    if percent {
        format!("{SIZE_EXPECTED}, or a percentage such as 50%")
    } else {
        SIZE_EXPECTED.to_string()
    }
}

fn int_range(min: u64, max: u64) -> String {
    if max == u64::MAX {
        format!("an integer >= {min}")
    } else {
        format!("an integer from {min} to {max}")
    }
}

/// Parses a size such as `4k`, `1MiB`, `0x1000`, or (if `allow_percent`) `50%`.
pub fn parse_size(s: &str, kb_base: u32, allow_percent: bool) -> Result<SizeVal, UnitError> {
    let s = s.trim();
    let bad = |problem| UnitError::Size {
        percent: allow_percent,
        problem,
    };
    if s.is_empty() {
        return Err(bad(None));
    }
    if let Some(hex) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        // fio accepts hex but then ignores any suffix; refuse rather than guess.
        return u64::from_str_radix(hex, 16)
            .map(SizeVal::Bytes)
            .map_err(|_| bad(Some(SizeProblem::HexSuffix)));
    }
    if s.starts_with('(') {
        // fio: a value that starts with '(' is an arithmetic expression.
        return Ok(SizeVal::Bytes(super::expr::eval_size(s)?));
    }
    let (digits, suffix) = split_digits(s);
    if digits.is_empty() {
        return Err(bad(None));
    }
    if suffix.starts_with('.') {
        return Err(bad(Some(SizeProblem::Fraction)));
    }
    let n: u64 = digits
        .parse()
        .map_err(|_| bad(Some(SizeProblem::TooLarge)))?;
    if suffix == "%" {
        if !allow_percent {
            return Err(bad(Some(SizeProblem::PercentNotHere)));
        }
        if n > 100 {
            return Err(UnitError::PercentOver(n));
        }
        return Ok(SizeVal::Percent(n));
    }
    let mult = size_multiplier(suffix, kb_base).ok_or_else(|| bad(None))?;
    n.checked_mul(mult)
        .map(SizeVal::Bytes)
        .ok_or_else(|| bad(Some(SizeProblem::TooLarge)))
}

/// A size in bytes (no percentage).
pub fn parse_bytes(s: &str, kb_base: u32) -> Result<u64, UnitError> {
    match parse_size(s, kb_base, false)? {
        SizeVal::Bytes(b) => Ok(b),
        SizeVal::Percent(_) => unreachable!("percent refused by parse_size"),
    }
}

/// Unit of a time value written without a suffix (fio's `is_seconds`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeUnit {
    Micros,
    Seconds,
}

impl TimeUnit {
    fn name(self) -> &'static str {
        match self {
            TimeUnit::Micros => "microseconds",
            TimeUnit::Seconds => "seconds",
        }
    }
}

/// Parses a time such as `10`, `250us`, `5ms`, `2s`, `1m`, `1h`, `1d`.
///
/// `allow_ns` admits `ns` for iolab's own device-model options, where fio has no
/// precedent and sub-microsecond latencies matter.
pub fn parse_time(s: &str, default_unit: TimeUnit, allow_ns: bool) -> Result<Duration, UnitError> {
    let s = s.trim();
    let bad = |problem| UnitError::Time {
        default_unit,
        ns: allow_ns,
        problem,
    };
    if s.starts_with('(') {
        let us = super::expr::eval_time_us(s, default_unit == TimeUnit::Seconds)?;
        return Ok(Duration::from_micros(us));
    }
    let (digits, suffix) = split_digits(s);
    if digits.is_empty() {
        return Err(bad(None));
    }
    if suffix.starts_with('.') {
        return Err(bad(Some(TimeProblem::Fraction)));
    }
    let n: u64 = digits
        .parse()
        .map_err(|_| bad(Some(TimeProblem::TooLarge)))?;
    let nanos_per: u64 = match suffix.to_ascii_lowercase().as_str() {
        "" => match default_unit {
            TimeUnit::Micros => 1_000,
            TimeUnit::Seconds => 1_000_000_000,
        },
        "ns" | "nsec" if allow_ns => 1,
        "us" | "usec" => 1_000,
        "ms" | "msec" => 1_000_000,
        "s" => 1_000_000_000,
        "m" => 60 * 1_000_000_000,
        "h" => 3_600 * 1_000_000_000,
        "d" => 86_400 * 1_000_000_000,
        _ => return Err(bad(None)),
    };
    n.checked_mul(nanos_per)
        .map(Duration::from_nanos)
        .ok_or_else(|| bad(Some(TimeProblem::TooLarge)))
}

pub const BOOL_EXPECTED: &str = "a boolean: 0, 1, true, false, yes, no, on, off";

pub fn parse_bool(s: &str) -> Result<bool, UnitError> {
    match s.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        _ => Err(UnitError::Bool),
    }
}

/// An integer in `[min, max]`. Like fio, integer options take size suffixes
/// (`number_ios=1k` is 1024 with kb_base=1024).
pub fn parse_int(s: &str, kb_base: u32, min: u64, max: u64) -> Result<u64, UnitError> {
    let bad = |got| UnitError::Int { min, max, got };
    let v = match parse_bytes(s, kb_base) {
        Err(UnitError::Expr(e)) => return Err(UnitError::Expr(e)),
        r => r.map_err(|_| bad(None))?,
    };
    if v < min || v > max {
        return Err(bad(Some(v)));
    }
    Ok(v)
}

/// A real number in `[min, max]`.
pub fn parse_f64(s: &str, min: f64, max: f64) -> Result<f64, UnitError> {
    let bad = || UnitError::Real { min, max };
    let v: f64 = if s.trim().starts_with('(') {
        super::expr::eval_real(s.trim())?
    } else {
        s.trim().parse().map_err(|_| bad())?
    };
    if !v.is_finite() || v < min || v > max {
        return Err(bad());
    }
    Ok(v)
}

const PROBABILITY_EXPECTED: &str =
    "a probability: a number from 0 to 1 (e.g. 0.001) or a percentage (e.g. 0.1%)";

/// A probability: `0.01` or `1%`.
pub fn parse_probability(s: &str) -> Result<f64, UnitError> {
    let s = s.trim();
    let (num, scale) = match s.strip_suffix('%') {
        Some(n) => (n, 100.0),
        None => (s, 1.0),
    };
    let v: f64 = num.trim().parse().map_err(|_| UnitError::Probability)?;
    let p = v / scale;
    if !p.is_finite() || !(0.0..=1.0).contains(&p) {
        return Err(UnitError::Probability);
    }
    Ok(p)
}

/// fio caps `percentile_list` at 20 entries (FIO_IO_U_LIST_MAX_LEN).
pub const MAX_PERCENTILES: usize = 20;

/// `99:99.9:99.99` -> percentiles in (0, 100].
pub fn parse_percentile_list(s: &str) -> Result<Vec<f64>, UnitError> {
    let mut out = Vec::new();
    for part in s.trim().split(':') {
        let v: f64 = part.trim().parse().map_err(|_| UnitError::Percentiles)?;
        if !v.is_finite() || !(0.0..=100.0).contains(&v) {
            return Err(UnitError::Percentiles);
        }
        out.push(v);
    }
    if out.len() > MAX_PERCENTILES {
        return Err(UnitError::Percentiles);
    }
    Ok(out)
}

/// Formats `bytes` with the largest suffix that divides it exactly, in the given
/// base (`k`..`p` for kb_base, `kib`..`pib` for the other base). Used by tests
/// and by messages; parse_size reads it back to the same value.
#[cfg(any(test, feature = "testing"))]
pub fn format_size(bytes: u64, kb_base: u32) -> String {
    let other: u64 = if kb_base == 1000 { 1024 } else { 1000 };
    for (i, letter) in ["p", "t", "g", "m", "k"].iter().enumerate() {
        let pow = 5 - i as u32;
        let unit = u64::from(kb_base).pow(pow);
        if bytes != 0 && bytes.is_multiple_of(unit) {
            return format!("{}{letter}", bytes / unit);
        }
        let unit = other.pow(pow);
        if bytes != 0 && bytes.is_multiple_of(unit) {
            return format!("{}{letter}ib", bytes / unit);
        }
    }
    bytes.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn compat_mode_matches_fio_3_33() {
        // Measured with fio 3.33 (`--bs=X`, reported block size).
        for (s, want) in [
            ("4k", 4096),
            ("4K", 4096),
            ("4KB", 4096),
            ("4ki", 4096),
            ("4kib", 4000),
            ("4KiB", 4000),
            ("1m", 1 << 20),
            ("1mi", 1 << 20),
            ("1mib", 1_000_000),
            ("512", 512),
            ("512b", 512),
            ("0x10", 16),
        ] {
            assert_eq!(parse_bytes(s, 1024), Ok(want), "{s}");
        }
    }

    #[test]
    fn kb_base_1000_uses_true_units() {
        assert_eq!(parse_bytes("4k", 1000), Ok(4000));
        assert_eq!(parse_bytes("4kib", 1000), Ok(4096));
        assert_eq!(parse_bytes("1g", 1000), Ok(1_000_000_000));
    }

    #[test]
    fn percent_only_where_allowed() {
        assert_eq!(parse_size("50%", 1024, true), Ok(SizeVal::Percent(50)));
        assert!(parse_size("50%", 1024, false).is_err());
        assert!(parse_size("101%", 1024, true).is_err());
    }

    #[test]
    fn refuses_what_fio_silently_mangles() {
        assert!(
            parse_bytes("1.5k", 1024)
                .unwrap_err()
                .to_string()
                .contains("fractions")
        );
        assert!(parse_bytes("0x10k", 1024).is_err());
        assert!(parse_bytes("4kk", 1024).is_err());
        assert!(parse_bytes("k", 1024).is_err());
        assert!(parse_bytes("", 1024).is_err());
        assert!(parse_bytes("-4k", 1024).is_err());
        assert!(
            parse_bytes("99999999999p", 1024)
                .unwrap_err()
                .to_string()
                .contains("too large")
        );
        // fio's arithmetic: an expression in parentheses.
        assert_eq!(parse_bytes("(4k*2)", 1024), Ok(8192));
        assert_eq!(parse_int("(2*8)", 1024, 1, 64), Ok(16));
        assert_eq!(
            parse_time("(2*3)", TimeUnit::Seconds, false),
            Ok(Duration::from_secs(6))
        );
        let e = parse_bytes("(4k*)", 1024).unwrap_err().to_string();
        assert!(e.contains("arithmetic expression in parentheses"), "{e}");
    }

    #[test]
    fn time_default_units_and_suffixes() {
        let s = TimeUnit::Seconds;
        let u = TimeUnit::Micros;
        assert_eq!(parse_time("10", s, false), Ok(Duration::from_secs(10)));
        assert_eq!(parse_time("10", u, false), Ok(Duration::from_micros(10)));
        assert_eq!(parse_time("5ms", s, false), Ok(Duration::from_millis(5)));
        assert_eq!(parse_time("5MSEC", s, false), Ok(Duration::from_millis(5)));
        assert_eq!(parse_time("7us", s, false), Ok(Duration::from_micros(7)));
        assert_eq!(parse_time("2m", u, false), Ok(Duration::from_secs(120)));
        assert_eq!(parse_time("1h", u, false), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_time("1d", u, false), Ok(Duration::from_secs(86400)));
        assert_eq!(parse_time("500ns", u, true), Ok(Duration::from_nanos(500)));
        // fio 3.33 reads "10sec" as 10 us; refuse it instead.
        assert!(parse_time("10sec", s, false).is_err());
        assert!(parse_time("500ns", u, false).is_err());
        assert!(parse_time("1.5s", s, false).is_err());
        assert!(
            parse_time("300000d", s, false)
                .unwrap_err()
                .to_string()
                .contains("too large")
        );
    }

    #[test]
    fn booleans_and_ints() {
        assert_eq!(parse_bool("yes"), Ok(true));
        assert_eq!(parse_bool("0"), Ok(false));
        assert!(parse_bool("2").is_err());
        assert_eq!(parse_int("1k", 1024, 1, u64::MAX), Ok(1024));
        assert_eq!(
            parse_int("0", 1024, 1, 100).unwrap_err().to_string(),
            "an integer from 1 to 100, got 0"
        );
    }

    #[test]
    fn percentiles() {
        assert_eq!(parse_percentile_list("99:99.9"), Ok(vec![99.0, 99.9]));
        assert!(parse_percentile_list("99:101").is_err());
        assert!(parse_percentile_list("99::1").is_err());
        let long = vec!["1"; 21].join(":");
        assert!(parse_percentile_list(&long).is_err());
    }

    #[test]
    fn probabilities() {
        assert_eq!(parse_probability("0.5"), Ok(0.5));
        assert_eq!(parse_probability("1%"), Ok(0.01));
        assert!(parse_probability("2").is_err());
    }

    proptest! {
        #[test]
        fn size_suffix_round_trip(n in 0u64..1_000_000, pow in 0u32..5, base_1000 in any::<bool>(), ib in any::<bool>(), upper in any::<bool>()) {
            let kb_base: u32 = if base_1000 { 1000 } else { 1024 };
            let letters = ["", "k", "m", "g", "t"];
            let letter = letters[pow as usize];
            let (suffix, unit) = if pow == 0 {
                (String::new(), 1u64)
            } else if ib {
                let other: u64 = if base_1000 { 1024 } else { 1000 };
                (format!("{letter}ib"), other.pow(pow))
            } else {
                (letter.to_string(), u64::from(kb_base).pow(pow))
            };
            let suffix = if upper { suffix.to_ascii_uppercase() } else { suffix };
            prop_assert_eq!(parse_bytes(&format!("{n}{suffix}"), kb_base), Ok(n * unit));
        }

        #[test]
        fn format_size_parses_back(bytes in any::<u64>(), base_1000 in any::<bool>()) {
            let kb_base = if base_1000 { 1000 } else { 1024 };
            let text = format_size(bytes, kb_base);
            prop_assert_eq!(parse_bytes(&text, kb_base), Ok(bytes));
        }

        #[test]
        fn time_round_trip(n in 0u64..100_000, idx in 0usize..6) {
            let (suffix, nanos) = [("us", 1_000u64), ("ms", 1_000_000), ("s", 1_000_000_000),
                ("m", 60_000_000_000), ("h", 3_600_000_000_000), ("d", 86_400_000_000_000)][idx];
            prop_assert_eq!(
                parse_time(&format!("{n}{suffix}"), TimeUnit::Micros, false),
                Ok(Duration::from_nanos(n * nanos))
            );
        }
    }
}
