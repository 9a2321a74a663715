//! Escaping text for HTML and SVG: every view (the lab and run pages, the
//! fleet page, `iolab compare`'s page) and the SVG charts write results through
//! it, so names and notes from results never become markup.

/// Escape text for HTML and SVG (element content and quoted attributes).
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // Control characters are not allowed in XML 1.0 documents.
            c if c.is_control() && c != '\n' && c != '\t' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_and_control_characters_are_escaped() {
        assert_eq!(
            escape(r#"<b a="1">&'x'</b>"#),
            "&lt;b a=&quot;1&quot;&gt;&amp;&#39;x&#39;&lt;/b&gt;"
        );
        assert_eq!(escape("a\u{1}b"), "a\u{FFFD}b");
    }
}
