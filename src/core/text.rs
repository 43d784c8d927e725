//! Text from outside (a guest's error, a console log, a label a user typed)
//! made safe to print on a terminal: control characters and the Unicode
//! direction overrides are shown escaped, never interpreted, so a guest
//! cannot move the cursor, retitle the window or hide text.

/// `text` with every control character except newline and tab, and every
/// bidirectional override, written as `\u{..}`; longer than `max` chars, it
/// is cut and says so.
pub fn terminal_safe(text: &str, max: usize) -> String {
    let mut out = String::with_capacity(text.len().min(max.saturating_add(16)));
    for (n, c) in text.chars().enumerate() {
        if n == max {
            out.push_str("… (cut)");
            break;
        }
        if (c.is_control() && c != '\n' && c != '\t') || is_bidi_control(c) {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

/// As `terminal_safe`, on one line: newlines and tabs escaped too.
pub fn one_line(text: &str, max: usize) -> String {
    terminal_safe(text, max)
        .replace('\n', "\\n")
        .replace('\t', "\\t")
}

fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' | '\u{061c}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_sequences_never_pass_raw() {
        let hostile = "ok\x1b]0;owned\x07\x1b[2J\r\u{9b}31m\u{202e}txt.exe\nnext\tcol";
        let safe = terminal_safe(hostile, 1000);
        assert!(!safe
            .chars()
            .any(|c| c.is_control() && c != '\n' && c != '\t'));
        assert!(!safe.contains('\u{202e}'));
        assert!(safe.contains("\\u{1b}]0;owned\\u{7}"), "{safe}");
        assert!(safe.contains("\nnext\tcol"));
        assert!(!one_line(hostile, 1000).contains('\n'));
    }

    #[test]
    fn long_text_is_cut_on_a_char_boundary() {
        let s = terminal_safe(&"é".repeat(100), 10);
        assert!(
            s.starts_with(&"é".repeat(10)) && s.ends_with("(cut)"),
            "{s}"
        );
    }
}
