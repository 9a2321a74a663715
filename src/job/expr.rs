//! Arithmetic in option values, as fio reads it: a value that starts with
//! `(` is an expression (fio's HOWTO, "Job file parameters").
//!
//! fio's grammar (its exp/ lexer and yacc parser), restated:
//! - numbers: decimal integers, `0x` hex, decimals with a point or exponent;
//! - operators, loosest first: `+ -`, then a unit written after a value
//!   (`(1+2k)` is 1 + 2048 but `(2*3k)` is (2*3)k), then `* /`, then `^`
//!   (right-associative), then `%`, then unary minus; parentheses group;
//! - units, whatever `kb_base` says: `k`/`kb` 1024, `m`/`mb` 1024², `g`/`gb`,
//!   `t`/`tb`, `p`/`pb`, and `kib` 1000, `mib` 1000², `gib` 1000³, `pib` 1000⁵;
//!   for times `us`, `ms`, `s`, `m` (minutes), `h`, `d`;
//! - integer operands stay integers (`3/2` is 1); a decimal makes the
//!   operation a real one (`1.5*1024` is 1536);
//! - a time without a unit counts seconds for options in seconds, else
//!   microseconds; a time in seconds is then cut to whole seconds.
//!
//! Where fio would silently compute something other than what was written,
//! iolab refuses the value and says why: a decimal directly before a unit
//! (fio truncates `(1.5k)` to 1024), integers beyond 32 bits (fio reads each
//! number, and a result without a unit, as a C int), a time in seconds with a
//! fraction of a second, a time unit in a size or a size unit in a time.

/// What the expression is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExprKind {
    Size,
    /// A time; `seconds`: a number without a unit means seconds.
    Time {
        seconds: bool,
    },
    /// A real number (fio's float options).
    Real,
}

/// Why an expression is not one fio (and iolab) reads.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ExprError {
    #[error("unexpected '{found}' at character {at}")]
    Unexpected { found: String, at: usize },
    #[error("the expression ends early (a ')' or an operand is missing)")]
    Incomplete,
    #[error("text after the closing ')': '{0}'")]
    Trailing(String),
    #[error("division by zero")]
    DivideByZero,
    #[error("'%' needs integers (fio refuses it on decimals)")]
    ModuloOfReal,
    #[error(
        "'{0}' before a unit: fio truncates the decimal first ((1.5k) is 1024 there); \
         write it as a product, e.g. (1.5*1024) or (3*512)"
    )]
    DecimalBeforeUnit(String),
    #[error(
        "the number {0} is beyond 32 bits: fio reads each number of an expression as \
         a C int; use a unit, e.g. (4g) instead of (4294967296)"
    )]
    NumberTooLarge(String),
    #[error(
        "the result {0} is beyond 32 bits without a unit: fio would truncate it; \
         write a unit, e.g. (4*1024)m"
    )]
    TruncatedResult(i128),
    #[error("the result {0} is negative")]
    Negative(i128),
    #[error("the result is too large")]
    Overflow,
    #[error("'{0}' is a time unit, not valid in a size")]
    TimeUnitInSize(String),
    #[error("'{0}' is a size unit, not valid in a time")]
    SizeUnitInTime(String),
    #[error(
        "{0} µs is not a whole number of seconds: fio cuts an expression in seconds \
         to whole seconds; leave out the parentheses (e.g. 1500ms) or round it"
    )]
    FractionOfSecond(i128),
}

/// What the phrase "an expression" means, for error messages.
pub const EXPR_EXPECTED: &str = "an arithmetic expression in parentheses as fio reads it \
     (+ - * / % ^, units k m g t p, kib mib gib pib, times us ms s m h d), e.g. (2*4k)";

#[derive(Clone, Copy, Debug, PartialEq)]
enum Tok {
    Num { ival: i64, dval: f64, real: bool },
    Unit { mult: i64, time: bool },
    Op(char),
}

#[derive(Clone, Copy, Debug)]
struct Val {
    ival: i128,
    dval: f64,
    real: bool,
}

/// Evaluates a size expression to bytes.
pub fn eval_size(s: &str) -> Result<u64, ExprError> {
    let (v, units) = evaluate(s, ExprKind::Size)?;
    let n = v.ival;
    if n < 0 {
        return Err(ExprError::Negative(n));
    }
    if !units && n > i32::MAX as i128 {
        return Err(ExprError::TruncatedResult(n));
    }
    u64::try_from(n).map_err(|_| ExprError::Overflow)
}

/// Evaluates a time expression to microseconds.
pub fn eval_time_us(s: &str, seconds: bool) -> Result<u64, ExprError> {
    let kind = ExprKind::Time { seconds };
    let (v, units) = evaluate(s, kind)?;
    let mut us = v.ival;
    if !units {
        let implied = if seconds { 1_000_000 } else { 1 };
        us = if v.real {
            (v.dval * implied as f64) as i128
        } else {
            us.checked_mul(implied).ok_or(ExprError::Overflow)?
        };
        if us > i32::MAX as i128 {
            return Err(ExprError::TruncatedResult(us));
        }
    }
    if us < 0 {
        return Err(ExprError::Negative(us));
    }
    if seconds && us % 1_000_000 != 0 {
        return Err(ExprError::FractionOfSecond(us));
    }
    u64::try_from(us).map_err(|_| ExprError::Overflow)
}

/// Evaluates a real-number expression (fio's float options).
pub fn eval_real(s: &str) -> Result<f64, ExprError> {
    Ok(evaluate(s, ExprKind::Real)?.0.dval)
}

/// The value and whether a unit was written.
fn evaluate(s: &str, kind: ExprKind) -> Result<(Val, bool), ExprError> {
    let toks = lex(s, kind)?;
    let mut p = Parser {
        toks: &toks,
        pos: 0,
        units: false,
    };
    let v = p.expr(0)?;
    if p.pos < toks.len() {
        // Only a ')' can be left over: every other token continues an expression.
        return Err(ExprError::Trailing(rest_after_close(s)));
    }
    Ok((v, p.units))
}

fn rest_after_close(s: &str) -> String {
    let mut depth = 0i32;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return s[i + 1..].to_string();
                }
            }
            _ => {}
        }
    }
    String::new()
}

/// fio's unit words; the longest match wins, as in its lexer.
fn unit(word: &str, kind: ExprKind) -> Option<(i64, bool)> {
    let time = matches!(kind, ExprKind::Time { .. });
    let k = 1024i64;
    Some(match word {
        "k" | "kb" => (k, false),
        "mb" => (k * k, false),
        "m" if time => (60_000_000, true),
        "m" => (k * k, false),
        "g" | "gb" => (k * k * k, false),
        "t" | "tb" => (k * k * k * k, false),
        "p" | "pb" => (k * k * k * k * k, false),
        "kib" => (1_000, false),
        "mib" => (1_000_000, false),
        "gib" => (1_000_000_000, false),
        "pib" => (1_000_000_000_000, false),
        "us" => (1, true),
        "ms" => (1_000, true),
        "s" => (1_000_000, true),
        "h" => (3_600_000_000, true),
        "d" => (86_400_000_000, true),
        _ => return None,
    })
}

fn lex(s: &str, kind: ExprKind) -> Result<Vec<Tok>, ExprError> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i] as char;
        if c == ' ' || c == '\t' {
            i += 1;
            continue;
        }
        if "+-*/%^()".contains(c) {
            out.push(Tok::Op(c));
            i += 1;
            continue;
        }
        if c.is_ascii_digit() || c == '.' {
            let start = i;
            if s[i..].starts_with("0x") || s[i..].starts_with("0X") {
                i += 2;
                while i < b.len() && b[i].is_ascii_hexdigit() {
                    i += 1;
                }
                let text = &s[start..i];
                let v = i64::from_str_radix(&text[2..], 16)
                    .ok()
                    .filter(|v| *v <= i32::MAX as i64)
                    .ok_or_else(|| ExprError::NumberTooLarge(text.to_string()))?;
                out.push(Tok::Num {
                    ival: v,
                    dval: v as f64,
                    real: false,
                });
                continue;
            }
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            let mut real = false;
            if i < b.len() && b[i] == b'.' {
                real = true;
                i += 1;
                while i < b.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
            }
            // An exponent: e, optional signs, digits.
            if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
                let mut j = i + 1;
                while j < b.len() && (b[j] == b'+' || b[j] == b'-') {
                    j += 1;
                }
                if j < b.len() && b[j].is_ascii_digit() {
                    while j < b.len() && b[j].is_ascii_digit() {
                        j += 1;
                    }
                    real = true;
                    i = j;
                }
            }
            let text = &s[start..i];
            let tok = if real {
                let d: f64 = text.parse().map_err(|_| ExprError::Unexpected {
                    found: text.to_string(),
                    at: start + 1,
                })?;
                Tok::Num {
                    ival: d as i64,
                    dval: d,
                    real: true,
                }
            } else {
                let v = text
                    .parse::<i64>()
                    .ok()
                    .filter(|v| *v <= i32::MAX as i64)
                    .ok_or_else(|| ExprError::NumberTooLarge(text.to_string()))?;
                Tok::Num {
                    ival: v,
                    dval: v as f64,
                    real: false,
                }
            };
            out.push(tok);
            continue;
        }
        if c.is_ascii_alphabetic() {
            let start = i;
            while i < b.len() && b[i].is_ascii_alphabetic() {
                i += 1;
            }
            let word = s[start..i].to_ascii_lowercase();
            let Some((mult, time)) = unit(&word, kind) else {
                return Err(ExprError::Unexpected {
                    found: s[start..i].to_string(),
                    at: start + 1,
                });
            };
            match kind {
                ExprKind::Size if time => return Err(ExprError::TimeUnitInSize(word)),
                ExprKind::Time { .. } if !time => return Err(ExprError::SizeUnitInTime(word)),
                _ => {}
            }
            if let Some(Tok::Num { real: true, .. }) = out.last() {
                let n = s[..start].trim_end();
                let from = n
                    .rfind(|c: char| !(c.is_ascii_digit() || c == '.'))
                    .map_or(0, |p| p + 1);
                return Err(ExprError::DecimalBeforeUnit(s[from..i].to_string()));
            }
            out.push(Tok::Unit { mult, time });
            continue;
        }
        return Err(ExprError::Unexpected {
            found: c.to_string(),
            at: i + 1,
        });
    }
    Ok(out)
}

/// Binding strengths, loosest first (fio's yacc precedences).
const ADD: u8 = 1;
const UNIT: u8 = 2;
const MUL: u8 = 3;
const POW: u8 = 4;
const MOD: u8 = 5;

struct Parser<'a> {
    toks: &'a [Tok],
    pos: usize,
    units: bool,
}

impl Parser<'_> {
    fn peek(&self) -> Option<Tok> {
        self.toks.get(self.pos).copied()
    }

    /// Precedence climbing: operators binding at least `min`.
    fn expr(&mut self, min: u8) -> Result<Val, ExprError> {
        let mut lhs = self.unary()?;
        loop {
            match self.peek() {
                Some(Tok::Unit { mult, .. }) if UNIT >= min => {
                    self.pos += 1;
                    self.units = true;
                    lhs = Val {
                        ival: lhs
                            .ival
                            .checked_mul(mult as i128)
                            .ok_or(ExprError::Overflow)?,
                        dval: lhs.dval * mult as f64,
                        real: lhs.real,
                    };
                }
                Some(Tok::Op(op)) => {
                    let (prec, right) = match op {
                        '+' | '-' => (ADD, false),
                        '*' | '/' => (MUL, false),
                        '^' => (POW, true),
                        '%' => (MOD, false),
                        _ => break,
                    };
                    if prec < min {
                        break;
                    }
                    self.pos += 1;
                    let rhs = self.expr(if right { prec } else { prec + 1 })?;
                    lhs = apply(op, lhs, rhs)?;
                }
                _ => break,
            }
        }
        Ok(lhs)
    }

    fn unary(&mut self) -> Result<Val, ExprError> {
        match self.peek() {
            Some(Tok::Op('-')) => {
                self.pos += 1;
                let v = self.unary()?;
                Ok(Val {
                    ival: -v.ival,
                    dval: -v.dval,
                    real: v.real,
                })
            }
            Some(Tok::Op('(')) => {
                self.pos += 1;
                let v = self.expr(0)?;
                match self.peek() {
                    Some(Tok::Op(')')) => {
                        self.pos += 1;
                        Ok(v)
                    }
                    None => Err(ExprError::Incomplete),
                    Some(t) => Err(unexpected(t)),
                }
            }
            Some(Tok::Num { ival, dval, real }) => {
                self.pos += 1;
                Ok(Val {
                    ival: ival as i128,
                    dval,
                    real,
                })
            }
            None => Err(ExprError::Incomplete),
            Some(t) => Err(unexpected(t)),
        }
    }
}

fn unexpected(t: Tok) -> ExprError {
    let found = match t {
        Tok::Op(c) => c.to_string(),
        Tok::Unit { .. } => "a unit".into(),
        Tok::Num { dval, .. } => dval.to_string(),
    };
    ExprError::Unexpected { found, at: 0 }
}

fn apply(op: char, a: Val, b: Val) -> Result<Val, ExprError> {
    let real = a.real || b.real;
    let dval = match op {
        '+' => a.dval + b.dval,
        '-' => a.dval - b.dval,
        '*' => a.dval * b.dval,
        '/' => {
            if b.dval.abs() < 1e-20 {
                return Err(ExprError::DivideByZero);
            }
            a.dval / b.dval
        }
        '%' => {
            if real {
                return Err(ExprError::ModuloOfReal);
            }
            if b.ival == 0 {
                return Err(ExprError::DivideByZero);
            }
            (a.ival % b.ival) as f64
        }
        _ => a.dval.powf(b.dval),
    };
    let ival = if real {
        if !dval.is_finite() || dval.abs() >= 1e30 {
            return Err(ExprError::Overflow);
        }
        dval as i128
    } else {
        let r = match op {
            '+' => a.ival.checked_add(b.ival),
            '-' => a.ival.checked_sub(b.ival),
            '*' => a.ival.checked_mul(b.ival),
            '/' => {
                if b.ival == 0 {
                    return Err(ExprError::DivideByZero);
                }
                Some(a.ival / b.ival)
            }
            '%' => Some(a.ival % b.ival),
            _ => {
                if b.ival >= 0 {
                    u32::try_from(b.ival)
                        .ok()
                        .and_then(|e| a.ival.checked_pow(e))
                } else {
                    // fio: a negative integer power goes through pow().
                    Some(dval as i128)
                }
            }
        };
        r.filter(|v| v.unsigned_abs() < 1u128 << 64)
            .ok_or(ExprError::Overflow)?
    };
    Ok(Val { ival, dval, real })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fio_precedence() {
        // Each value checked against fio's own exp/ parser built from its source.
        for (e, want) in [
            ("(2*1024)k", 2_097_152),
            ("(10/2k)", 5120),
            ("(1+2k*3)", 6145),
            ("(2^3^2)", 512),
            ("(2^7%4)", 8),
            ("(2*3%2)", 2),
            ("(1.5*1024)", 1536),
            ("(0x10)", 16),
            ("(1kib)", 1000),
            ("(3/2*1024)", 1024),
            ("( 4 * 1k )", 4096),
            ("(2*(3+1))k", 8192),
            ("(1e3)", 1000),
            ("(1mib+1MB)", 2_048_576),
        ] {
            assert_eq!(eval_size(e), Ok(want), "{e}");
        }
    }

    #[test]
    fn times() {
        assert_eq!(eval_time_us("(2)", true), Ok(2_000_000));
        assert_eq!(eval_time_us("(1m)", true), Ok(60_000_000));
        assert_eq!(eval_time_us("(5ms)", false), Ok(5_000));
        assert_eq!(eval_time_us("(2*5)", false), Ok(10));
        assert_eq!(
            eval_time_us("(1500ms)", true),
            Err(ExprError::FractionOfSecond(1_500_000))
        );
        assert_eq!(
            eval_time_us("(2k)", true),
            Err(ExprError::SizeUnitInTime("k".into()))
        );
    }

    #[test]
    fn where_fio_would_compute_something_else() {
        assert!(matches!(
            eval_size("(1.5k)"),
            Err(ExprError::DecimalBeforeUnit(s)) if s == "1.5k"
        ));
        assert!(matches!(
            eval_size("(4096*1024*1024)"),
            Err(ExprError::TruncatedResult(_))
        ));
        assert_eq!(eval_size("(4096*1024)k"), Ok(4 << 30));
        assert!(matches!(
            eval_size("(5000000000)"),
            Err(ExprError::NumberTooLarge(_))
        ));
        assert!(matches!(
            eval_size("(1s)"),
            Err(ExprError::TimeUnitInSize(_))
        ));
    }

    #[test]
    fn malformed() {
        assert_eq!(eval_size("(4k"), Err(ExprError::Incomplete));
        assert!(matches!(
            eval_size("(4k)x"),
            Err(ExprError::Unexpected { found, at: 5 }) if found == "x"
        ));
        assert_eq!(eval_size("(4k))"), Err(ExprError::Trailing(")".into())));
        assert_eq!(eval_size("(1/0)"), Err(ExprError::DivideByZero));
        assert_eq!(eval_size("(1.5%2)"), Err(ExprError::ModuloOfReal));
        assert!(matches!(
            eval_size("(-1k)"),
            Err(ExprError::Negative(-1024))
        ));
        assert!(matches!(
            eval_size("(2**3)"),
            Err(ExprError::Unexpected { .. })
        ));
        assert!(eval_size("(2k)(3)").is_err());
        assert_eq!(eval_real("(1/4.0)"), Ok(0.25));
    }
}
