//! Text from outside (a guest's error, a console log, a label a user typed)
//! made safe to print on a terminal: control characters and the Unicode
//! direction overrides are shown escaped, never interpreted, so a guest
//! cannot move the cursor, retitle the window or hide text.

/// `text` with every control character except newline and tab, and every
/// bidirectional override, written as `\u{..}`; what comes out is at most
/// `max` characters, escapes and the cut marker included (a longer text is
/// cut on a character boundary and says so).
pub fn terminal_safe(text: &str, max: usize) -> String {
    bounded(text, max, false)
}

/// As `terminal_safe`, on one line: newlines and tabs escaped too.
pub fn one_line(text: &str, max: usize) -> String {
    bounded(text, max, true)
}

/// What a text written out is, for [`output`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// Terminal text, markdown, CSV, HTML: ours but for what they quote.
    Text,
    /// JSON, whose strings take `\uXXXX` escapes.
    Json,
}

impl Form {
    /// The form of a report format named `format` (`--format`).
    pub fn of(format: &str) -> Form {
        if format == "json" {
            Form::Json
        } else {
            Form::Text
        }
    }
}

/// `text` as it may be written where a terminal can show it (standard
/// output, a file given to `--out`): the one gate every report, run text
/// and import line passes, whatever the format, so a string from a guest,
/// an imported file or a store (a metric's name or unit, a version, a
/// hypervisor signature, an error) never reaches a terminal as control
/// characters. Every C0 control but newline and tab (the layout is ours),
/// DEL, every C1 control (U+0080..U+009F, CSI among them) and the Unicode
/// direction overrides are escaped: `\u{1b}` in text, `\u001b` in JSON
/// (where they can only stand inside a string). Text without any is
/// returned as it is.
pub fn output(text: &str, form: Form) -> std::borrow::Cow<'_, str> {
    let unsafe_char = |c: char| (c.is_control() && c != '\n' && c != '\t') || is_bidi_control(c);
    if !text.chars().any(unsafe_char) {
        return std::borrow::Cow::Borrowed(text);
    }
    match form {
        Form::Text => std::borrow::Cow::Owned(bounded(text, usize::MAX, false)),
        Form::Json => {
            let mut out = String::with_capacity(text.len() + 16);
            for c in text.chars() {
                if unsafe_char(c) {
                    // Every such character is in the Basic Multilingual Plane.
                    out.push_str(&format!("\\u{:04x}", c as u32));
                } else {
                    out.push(c);
                }
            }
            std::borrow::Cow::Owned(out)
        }
    }
}

/// What ends a text [`terminal_safe`] cut.
const CUT: &str = "… (cut)";

fn bounded(text: &str, max: usize, one_line: bool) -> String {
    let cut_len = CUT.chars().count();
    let mut out = String::with_capacity(text.len().min(max.saturating_add(16)));
    // Characters in `out`, and where it stood when it last had room for
    // the cut marker after it.
    let mut n = 0usize;
    let mut keep = 0usize;
    let mut utf8 = [0u8; 4];
    for c in text.chars() {
        let escaped;
        let piece: &str = match c {
            '\n' if one_line => "\\n",
            '\t' if one_line => "\\t",
            c if (c.is_control() && c != '\n' && c != '\t') || is_bidi_control(c) => {
                escaped = format!("\\u{{{:x}}}", c as u32);
                &escaped
            }
            _ => c.encode_utf8(&mut utf8),
        };
        let len = piece.chars().count();
        if n + len > max {
            out.truncate(keep);
            if max >= cut_len {
                out.push_str(CUT);
            }
            return out;
        }
        out.push_str(piece);
        n += len;
        if n + cut_len <= max {
            keep = out.len();
        }
    }
    out
}

/// What stands for a secret's value wherever it would be shown or stored.
pub const REDACTED: &str = "***";

/// Whether an option's value is a secret: its name says password or secret
/// (a `...-file` option names where one is, which is not).
pub fn is_secret(option: &str) -> bool {
    let n = option.to_ascii_lowercase();
    (n.contains("password") || n.contains("secret")) && !n.ends_with("-file")
}

/// Whether an option holds a secret or names the file it is read from
/// (`--mysql-password-file`): neither is a measurement's parameter, so
/// neither reaches a result's `params`, the store or a report.
pub fn is_secret_or_its_file(option: &str) -> bool {
    is_secret(option) || option.strip_suffix("-file").is_some_and(is_secret)
}

/// The option name of an argument `--name=value` or `--name`.
fn option_name(arg: &str) -> Option<&str> {
    let rest = arg.strip_prefix("--")?;
    Some(rest.split_once('=').map_or(rest, |(n, _)| n))
}

/// Arguments with every secret option's value replaced by [`REDACTED`]
/// (`--name=value` and `--name value` alike): for labels and messages.
pub fn redact_args(args: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(args.len());
    let mut hide_next = false;
    for a in args {
        if std::mem::take(&mut hide_next) {
            out.push(REDACTED.to_string());
            continue;
        }
        match option_name(a) {
            Some(name) if is_secret(name) => match a.contains('=') {
                true => out.push(format!("--{name}={REDACTED}")),
                false => {
                    out.push(a.clone());
                    hide_next = true;
                }
            },
            _ => out.push(a.clone()),
        }
    }
    out
}

/// Arguments without the secret options at all (`--name=value`, or
/// `--name value`): what a store keeps to resume from, so a resume takes
/// the secret again from where the user keeps it (an environment variable
/// or a file option), never from the store.
pub fn without_secrets(args: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(args.len());
    let mut skip_next = false;
    for a in args {
        if std::mem::take(&mut skip_next) {
            continue;
        }
        match option_name(a) {
            Some(name) if is_secret(name) => skip_next = !a.contains('='),
            _ => out.push(a.clone()),
        }
    }
    out
}

fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' | '\u{061c}')
}

/// Owned copies of string literals: the argument lists of unit tests.
#[cfg(test)]
pub fn owned(a: &[&str]) -> Vec<String> {
    a.iter().map(|x| x.to_string()).collect()
}

#[cfg(test)]
mod tests {
    use super::owned as s;
    use super::*;

    #[test]
    fn secret_options_are_redacted_or_dropped_in_both_forms() {
        let args = s(&[
            "oltp_read_write",
            "--pgsql-password=hunter2",
            "--mysql-password",
            "swordfish",
            "--pgsql-password-file=/run/pw",
            "--serve-secret=x",
            "--time=1",
        ]);
        assert_eq!(
            redact_args(&args),
            s(&[
                "oltp_read_write",
                "--pgsql-password=***",
                "--mysql-password",
                "***",
                "--pgsql-password-file=/run/pw",
                "--serve-secret=***",
                "--time=1"
            ])
        );
        let kept = without_secrets(&args);
        assert_eq!(
            kept,
            s(&[
                "oltp_read_write",
                "--pgsql-password-file=/run/pw",
                "--time=1"
            ])
        );
        assert!(!kept.concat().contains("hunter2") && !kept.concat().contains("swordfish"));
    }

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
    fn output_escapes_every_control_but_the_layout_in_every_form() {
        // Issue 53, item 6: a guest's metric names, units, version and
        // hypervisor reached the terminal raw in run text and CSV.
        let hostile = "a\x1b]0;owned\x07\x1b[2J\r\u{9b}31m\u{85}\u{7f}\u{202e}b\nc\td";
        let text = output(hostile, Form::Text);
        assert!(
            !text
                .chars()
                .any(|c| c.is_control() && c != '\n' && c != '\t'),
            "{text:?}"
        );
        assert!(!text.contains('\u{202e}'));
        assert!(text.contains("\\u{1b}]0;owned\\u{7}") && text.contains("\\u{9b}31m"));
        assert!(text.ends_with("b\nc\td"), "{text:?}");
        // JSON: still JSON, the same string once parsed, nothing raw.
        let json = serde_json::to_string(&serde_json::json!({ "name": hostile })).unwrap();
        let safe = output(&json, Form::Json);
        assert!(
            !safe.chars().any(|c| c.is_control() || c == '\u{202e}'),
            "{safe}"
        );
        let back: serde_json::Value = serde_json::from_str(&safe).unwrap();
        assert_eq!(back["name"], hostile);
        // Nothing to escape: the text itself, not a copy.
        assert!(matches!(
            output("plain\n\tü ✓", Form::Text),
            std::borrow::Cow::Borrowed(_)
        ));
    }

    #[test]
    fn long_text_is_cut_on_a_char_boundary() {
        let s = terminal_safe(&"é".repeat(100), 20);
        assert!(
            s.starts_with(&"é".repeat(13)) && s.ends_with("(cut)"),
            "{s}"
        );
        assert_eq!(s.chars().count(), 20, "{s}");
        assert_eq!(terminal_safe(&"é".repeat(20), 20), "é".repeat(20));
    }

    #[test]
    fn escapes_count_toward_the_bound() {
        // A NUL is six characters escaped: the bound is on what comes out.
        let s = one_line(&"\0".repeat(100), 200);
        assert!(s.chars().count() <= 200, "{}", s.chars().count());
        assert!(s.ends_with("(cut)") && s.starts_with("\\u{0}"), "{s}");
        let s = one_line(&"\n".repeat(300), 200);
        assert!(s.chars().count() <= 200 && !s.contains('\n'));
    }
}
