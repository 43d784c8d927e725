//! What every chart draws with: escaping, the palette, text measured and
//! wrapped without a browser (`Text`, `wrap`, `abbreviate`), a chart's
//! opening with its title, and a vertical axis's title.

use std::fmt::Write as _;

use crate::stats::Outcome;

const PALETTE: [&str; 8] = [
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#9c755f",
];

/// Font sizes of the text classes (the page's style sheet says the same;
/// the attributes hold where it does not).
const TITLE: f64 = 13.0;
pub(super) const AXIS: f64 = 11.0;
pub(super) const VALUE: f64 = 10.5;
/// Bold text is this much wider than regular.
const BOLD: f64 = 1.1;

/// Escapes text for HTML and SVG content and attributes.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

pub(super) fn color(i: usize) -> &'static str {
    PALETTE[i % PALETTE.len()]
}

/// A character's advance in DejaVu Sans, in em: the widest of the usual
/// sans-serif faces (and what Debian's system-ui is), so text measured here
/// is never narrower than a browser draws it.
fn char_em(c: char) -> f64 {
    let w = match c {
        ' ' | ',' | '.' | '·' => 318,
        'i' | 'j' | 'l' | '\'' | 'I' | 'J' => 295,
        ':' | ';' | '/' | '\\' => 337,
        'f' | 't' | '(' | ')' | '[' | ']' | '{' | '}' | '!' | '|' => 400,
        'r' | '-' => 411,
        '"' | '*' | '_' | '–' => 500,
        's' | 'z' | 'c' | '?' => 550,
        'k' | 'v' | 'x' | 'y' => 592,
        'm' | 'M' | '%' => 974,
        'w' | 'W' | '@' | '…' => 1000,
        'a'..='z' | '0'..='9' | '$' | 'F' | 'L' | 'T' | 'Y' => 636,
        'A'..='Z' | '&' => 780,
        '×' | '+' | '=' | '<' | '>' | '#' | '±' | '→' | '←' | '▶' | '◀' => 838,
        _ => 1000,
    };
    w as f64 / 1000.0
}

/// The width of `s` drawn at `size` px, a little generous.
pub(super) fn text_width(s: &str, size: f64) -> f64 {
    s.chars().map(char_em).sum::<f64>() * size * 1.04
}

/// The longest prefix of `s` (a byte index) no wider than `max`.
fn fitting(s: &str, max: f64, size: f64) -> usize {
    let mut w = 0.0;
    for (i, c) in s.char_indices() {
        w += char_em(c) * size * 1.04;
        if w > max {
            return i;
        }
    }
    s.len()
}

/// `text` in at most `lines` lines no wider than `max` px at `size`: broken
/// at spaces, a word wider than a line broken inside, and what does not fit
/// cut with "…".
pub(super) fn wrap(text: &str, max: f64, size: f64, lines: usize) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut cur = String::new();
    // A lone separator ("·") stays at the end of the word before it, so no
    // line starts with one.
    let mut words: Vec<String> = Vec::new();
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        match words.last_mut() {
            Some(last) if word == "·" => {
                last.push_str(" ·");
            }
            _ => words.push(word.to_string()),
        }
    }
    for word in &words {
        let word = word.as_str();
        let joined = if cur.is_empty() {
            word.to_string()
        } else {
            format!("{cur} {word}")
        };
        if text_width(&joined, size) <= max {
            cur = joined;
            continue;
        }
        if !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
        }
        let mut rest = word;
        while text_width(rest, size) > max {
            let cut = fitting(rest, max, size).max(rest.chars().next().map_or(1, char::len_utf8));
            out.push(rest[..cut].to_string());
            rest = &rest[cut..];
        }
        cur = rest.to_string();
    }
    if !cur.is_empty() || out.is_empty() {
        out.push(cur);
    }
    if out.len() > lines {
        out.truncate(lines.max(1));
        let last = out.last_mut().expect("one line at least");
        let room = max - text_width("…", size);
        last.truncate(fitting(last, room, size));
        let kept = last.trim_end().len();
        last.truncate(kept);
        last.push('…');
    }
    out
}

/// `text` on one line no wider than `max`, cut with "…".
pub(super) fn abbreviate(text: &str, max: f64, size: f64) -> String {
    if text_width(text, size) <= max {
        return text.to_string();
    }
    let room = (max - text_width("…", size)).max(0.0);
    format!("{}…", text[..fitting(text, room, size)].trim_end())
}

/// Where a text element sits and how it reads.
pub(super) struct Text<'a> {
    pub x: f64,
    pub y: f64,
    /// `t` (title), `a` (axis) or `v` (value), after `label`.
    pub class: &'a str,
    pub anchor: &'a str,
}

impl Text<'_> {
    fn size(&self) -> f64 {
        match self.class.split(' ').next() {
            Some("t") => TITLE,
            Some("v") => VALUE,
            _ => AXIS,
        }
    }

    /// Writes `lines` from baseline `y`, 14 px apart at 11 px; with the
    /// full text as its title where it was cut.
    pub(super) fn write(&self, s: &mut String, lines: &[String], full: &str, extra: &str) {
        let size = self.size();
        let _ = write!(
            s,
            r#"<text x="{:.1}" y="{:.1}" class="label {}" text-anchor="{}" font-size="{}"{extra}>"#,
            self.x, self.y, self.class, self.anchor, size
        );
        let cut = lines.len() > 1 || lines.first().map(String::as_str) != Some(full);
        if cut {
            let _ = write!(s, "<title>{}</title>", esc(full));
        }
        if let [one] = lines {
            s.push_str(&esc(one));
        } else {
            for (i, line) in lines.iter().enumerate() {
                let _ = write!(
                    s,
                    r#"<tspan x="{:.1}" y="{:.1}">{}</tspan>"#,
                    self.x,
                    self.y + i as f64 * line_pitch(size),
                    esc(line)
                );
            }
        }
        s.push_str("</text>");
    }

    /// One line, cut with "…" to `max` px.
    pub(super) fn line(&self, s: &mut String, text: &str, max: f64) {
        self.write(s, &[abbreviate(text, max, self.size())], text, "");
    }
}

/// The distance between the baselines of wrapped lines: the height a
/// browser gives the line's box, plus a little.
pub(super) fn line_pitch(size: f64) -> f64 {
    (size * 1.27).round()
}

/// The opening of a chart `w` × `h` that scales down with its box.
pub(super) fn open(w: f64, h: f64, kind: &str, title: &str) -> String {
    let (w, h) = (w.ceil(), h.ceil());
    let mut s = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="chart {kind}" viewBox="0 0 {w} {h}" width="{w}" height="{h}" style="max-width:100%;height:auto" role="img"><title>{}</title>"#,
        esc(title)
    );
    Text {
        x: 10.0,
        y: 20.0,
        class: "t",
        anchor: "start",
    }
    .line(&mut s, title, w - 20.0);
    s
}

/// The width a chart needs for its title.
pub(super) fn title_width(title: &str) -> f64 {
    text_width(title, TITLE) * BOLD + 20.0
}

/// A vertical axis's title, rotated, centred at height `mid`, and cut to
/// `fit` pixels (the full text on hover).
pub(super) fn axis_title(s: &mut String, title: &str, mid: f64, fit: f64) {
    Text {
        x: 16.0,
        y: mid,
        class: "a",
        anchor: "middle",
    }
    .write(
        s,
        &[abbreviate(title, fit, AXIS)],
        title,
        &format!(r#" transform="rotate(-90 16 {mid:.1})""#),
    );
}

/// A verdict's colour: red slower, green faster, blue equivalent, grey
/// otherwise.
pub(super) fn verdict_color(v: Option<Outcome>) -> &'static str {
    match v {
        Some(Outcome::Slower) => "#c0392b",
        Some(Outcome::Faster) => "#2e7d32",
        Some(Outcome::Equivalent) => "#1f5fa8",
        _ => "#555555",
    }
}
