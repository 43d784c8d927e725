//! SVG primitives for the HTML report: escaping, the palette, text measured
//! and wrapped without a browser, and the charts: bars with 95% whiskers and
//! each run, slowdown factors on a log axis, lines over a swept parameter
//! and a heat map of slowdowns over two parameters.
//!
//! Every chart scales down with its box (a viewBox, `max-width:100%`) and
//! draws everything inside it: a value beyond the axis is an arrow at the
//! edge with its figure, a label too long for its column is wrapped or cut
//! with "…" and keeps its full text in a `<title>`. A browser test relies on
//! two conventions: every data mark has the class `mark` and a `<title>`
//! with its figure, every text the class `label`.

use std::fmt::Write as _;

use super::super::model::{BarData, SlowdownRow};
use super::super::text::{num, percent, ratio_num};
use crate::stats::Outcome;

pub(super) const PALETTE: [&str; 8] = [
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#9c755f",
];

/// Font sizes of the text classes (the page's style sheet says the same;
/// the attributes hold where it does not).
const TITLE: f64 = 13.0;
const AXIS: f64 = 11.0;
const VALUE: f64 = 10.5;
/// Bold text is this much wider than regular.
const BOLD: f64 = 1.1;
/// The widest a row label of a ratio chart may be.
const LABEL_COLUMN: f64 = 260.0;

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
fn abbreviate(text: &str, max: f64, size: f64) -> String {
    if text_width(text, size) <= max {
        return text.to_string();
    }
    let room = (max - text_width("…", size)).max(0.0);
    format!("{}…", text[..fitting(text, room, size)].trim_end())
}

/// Where a text element sits and how it reads.
struct Text<'a> {
    x: f64,
    y: f64,
    /// `t` (title), `a` (axis) or `v` (value), after `label`.
    class: &'a str,
    anchor: &'a str,
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
    fn write(&self, s: &mut String, lines: &[String], full: &str, extra: &str) {
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
    fn line(&self, s: &mut String, text: &str, max: f64) {
        self.write(s, &[abbreviate(text, max, self.size())], text, "");
    }
}

/// The distance between the baselines of wrapped lines: the height a
/// browser gives the line's box, plus a little.
fn line_pitch(size: f64) -> f64 {
    (size * 1.27).round()
}

/// The opening of a chart `w` × `h` that scales down with its box.
fn open(w: f64, h: f64, kind: &str, title: &str) -> String {
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
fn title_width(title: &str) -> f64 {
    text_width(title, TITLE) * BOLD + 20.0
}

/// Round tick values from `lo` to at least `hi`: about four steps of 1, 2,
/// 2.5 or 5 times a power of ten.
fn nice_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let span = (hi - lo).max(1e-12);
    let raw = span / 4.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|k| k * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    let first = (lo / step).floor() as i64;
    let last = (hi / step).ceil() as i64;
    (first..=last).map(|k| k as f64 * step).collect()
}

/// Powers of ten from below `lo` to above `hi`, with 2× and 5× between
/// them when there are few.
fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let (a, b) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
    let b = b.max(a + 1);
    let steps: &[f64] = if b - a <= 2 { &[1.0, 2.0, 5.0] } else { &[1.0] };
    (a..=b)
        .flat_map(|e| steps.iter().map(move |k| k * 10f64.powi(e)))
        .filter(|t| *t <= 10f64.powi(b) * 1.0001)
        .collect()
}

/// Tick values as text with as few decimals as all of them need: "0",
/// "2.5", "5", not "0", "2.50", "5.00".
fn tick_texts(ticks: &[f64]) -> Vec<String> {
    let decimals = (0..6)
        .find(|d| {
            let k = 10f64.powi(*d);
            ticks
                .iter()
                .all(|t| ((t * k).round() - t * k).abs() < 1e-6 * (t.abs() * k).max(1.0))
        })
        .unwrap_or(6) as usize;
    ticks.iter().map(|t| format!("{t:.decimals$}")).collect()
}

/// The vertical value axis shared by the bar and line charts: round ticks
/// (on a log axis powers of ten), gridlines, their labels and the unit.
struct ValueAxis {
    ticks: Vec<f64>,
    log: bool,
    top: f64,
    height: f64,
}

impl ValueAxis {
    fn new(lo: f64, hi: f64, top: f64, height: f64) -> ValueAxis {
        ValueAxis {
            ticks: nice_ticks(lo, hi),
            log: false,
            top,
            height,
        }
    }

    /// The axis for these values (means, intervals, runs) given their
    /// means: linear from zero, or a log axis where the means lie 50× apart
    /// or more (on a linear one all but the largest would lie on the floor).
    fn for_values(
        values: impl Iterator<Item = f64> + Clone,
        means: impl Iterator<Item = f64> + Clone,
        top: f64,
        height: f64,
    ) -> ValueAxis {
        let lo = values.clone().fold(0.0, f64::min);
        let hi = values.clone().fold(0.0, f64::max);
        let least = means.clone().fold(f64::INFINITY, f64::min);
        if least > 0.0 && means.fold(0.0, f64::max) >= 50.0 * least {
            // An interval reaching down to nothing would stretch the axis
            // over decades that hold no mean: a decade below the least is
            // enough.
            let floor = values
                .filter(|v| *v > 0.0)
                .fold(least, f64::min)
                .max(least / 10.0);
            ValueAxis::log(floor, hi, top, height)
        } else {
            let hi = if hi > lo { hi * 1.08 } else { lo + 1.0 };
            ValueAxis::new(lo, hi, top, height)
        }
    }

    /// A log axis over `lo` … `hi`, both above zero.
    fn log(lo: f64, hi: f64, top: f64, height: f64) -> ValueAxis {
        ValueAxis {
            ticks: log_ticks(lo, hi),
            log: true,
            top,
            height,
        }
    }

    fn lo(&self) -> f64 {
        self.ticks.first().copied().unwrap_or(0.0)
    }

    fn hi(&self) -> f64 {
        self.ticks.last().copied().unwrap_or(1.0)
    }

    /// The y of `v`, kept within the axis.
    fn y(&self, v: f64) -> f64 {
        let f = if self.log {
            let v = if v > 0.0 { v.log10() } else { f64::MIN };
            (v - self.lo().log10()) / (self.hi().log10() - self.lo().log10()).max(1e-12)
        } else {
            (v - self.lo()) / (self.hi() - self.lo()).max(1e-12)
        };
        self.top + self.height * (1.0 - f.clamp(0.0, 1.0))
    }

    /// Room left of the plot for the tick labels and the unit.
    fn left(&self) -> f64 {
        let widest = tick_texts(&self.ticks)
            .iter()
            .map(|t| text_width(t, AXIS))
            .fold(0.0, f64::max);
        32.0 + widest + 6.0
    }

    fn write(&self, s: &mut String, left: f64, right: f64, unit: &str) {
        for (t, text) in self.ticks.iter().zip(tick_texts(&self.ticks)) {
            let y = self.y(*t);
            let _ = write!(
                s,
                r##"<line x1="{left:.1}" x2="{right:.1}" y1="{y:.1}" y2="{y:.1}" stroke="{}"/>"##,
                if *t == 0.0 { "#999" } else { "#ddd" }
            );
            Text {
                x: left - 6.0,
                y: y + 4.0,
                class: "a",
                anchor: "end",
            }
            .line(s, &text, f64::INFINITY);
        }
        let unit = if self.log {
            format!("{unit} (log scale)")
        } else {
            unit.to_string()
        };
        axis_title(s, &unit, self.top + self.height / 2.0, self.height);
    }
}

/// Vertical bars with 95% whiskers, starting at zero, each run a point
/// beside its bar; labels wrapped onto two lines of at most 130 px.
pub(super) fn bar_chart(title: &str, unit: &str, bars: &[BarData]) -> String {
    const BAR: f64 = 40.0;
    let labels: Vec<Vec<String>> = bars
        .iter()
        .map(|b| wrap(&b.label, 130.0, AXIS, 2))
        .collect();
    let col = labels
        .iter()
        .flatten()
        .map(|l| text_width(l, AXIS) + 12.0)
        .chain(bars.iter().map(|b| text_width(&num(b.value), VALUE) + 12.0))
        .fold(BAR + 40.0, f64::max);
    let finite = |v: f64| v.is_finite().then_some(v);
    let values = || {
        bars.iter().flat_map(|b| {
            [b.value, b.lower, b.upper]
                .into_iter()
                .chain(b.runs.iter().copied())
                .filter_map(finite)
        })
    };
    let (top, plot_h) = (44.0, 180.0);
    let axis = ValueAxis::for_values(
        values(),
        bars.iter().map(|b| b.value).filter_map(finite),
        top,
        plot_h,
    );
    let left = axis.left();
    let lines = labels.iter().map(Vec::len).max().unwrap_or(1) as f64;
    let w = (left + col * bars.len().max(1) as f64 + 10.0).max(title_width(title));
    let h = top + plot_h + 16.0 + lines * line_pitch(AXIS) + 4.0;
    let mut s = open(w, h, "bars", title);
    axis.write(&mut s, left, w - 10.0, unit);
    // Bars stand on zero, or on a log axis on its floor.
    let zero = axis.y(if axis.log { axis.lo() } else { 0.0 });
    for (i, (b, label)) in bars.iter().zip(&labels).enumerate() {
        let mid = left + (i as f64 + 0.5) * col;
        let x = mid - (BAR + 22.0) / 2.0;
        let cx = x + BAR / 2.0;
        let mut above = zero;
        if b.value.is_finite() {
            let yv = axis.y(b.value);
            above = above.min(yv);
            let _ = write!(
                s,
                r##"<rect x="{x:.1}" y="{:.1}" width="{BAR}" height="{:.1}" fill="{}" class="mark bar"><title>{}: {}</title></rect>"##,
                yv.min(zero),
                (yv - zero).abs().max(0.5),
                color(b.env),
                esc(&b.label),
                num(b.value)
            );
        }
        if b.lower.is_finite() && b.upper.is_finite() {
            let (y0, y1) = (axis.y(b.lower), axis.y(b.upper));
            above = above.min(y1);
            let _ = write!(
                s,
                r##"<path d="M{cx:.1} {y0:.1}V{y1:.1}M{:.1} {y1:.1}H{:.1}M{:.1} {y0:.1}H{:.1}" stroke="#222" stroke-width="1.5" fill="none" class="mark ci"><title>{}: 95% interval [{}, {}]</title></path>"##,
                cx - 8.0,
                cx + 8.0,
                cx - 8.0,
                cx + 8.0,
                esc(&b.label),
                num(b.lower),
                num(b.upper)
            );
        }
        if b.value.is_finite() {
            Text {
                x: cx,
                y: (above - 5.0).max(top + 2.0),
                class: "v",
                anchor: "middle",
            }
            .line(&mut s, &num(b.value), f64::INFINITY);
        }
        for (k, v) in b.runs.iter().enumerate() {
            if v.is_finite() {
                let _ = write!(
                    s,
                    r##"<circle cx="{:.1}" cy="{:.1}" r="3" fill="{}" stroke="#222" stroke-width="0.6" class="mark run"><title>run {}: {}</title></circle>"##,
                    x + BAR + 6.0 + (k % 3) as f64 * 5.0,
                    axis.y(*v),
                    color(b.env),
                    k + 1,
                    num(*v)
                );
            }
        }
        Text {
            x: mid,
            y: top + plot_h + 16.0,
            class: "a",
            anchor: "middle",
        }
        .write(&mut s, label, &b.label, "");
    }
    s.push_str("</svg>");
    s
}

/// A vertical axis's title, rotated, centred at height `mid`, and cut to
/// `fit` pixels (the full text on hover).
fn axis_title(s: &mut String, title: &str, mid: f64, fit: f64) {
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

fn verdict_color(v: Option<Outcome>) -> &'static str {
    match v {
        Some(Outcome::Slower) => "#c0392b",
        Some(Outcome::Faster) => "#2e7d32",
        Some(Outcome::Equivalent) => "#1f5fa8",
        _ => "#555555",
    }
}

/// "0.5×", "2×", "1.25×", "0.0004×"
fn factor(x: f64) -> String {
    if !x.is_finite() {
        "–".into()
    } else if x >= 10.0 || (x - x.round()).abs() < 1e-9 {
        format!("{x:.0}×")
    } else if x >= 1.0 {
        format!("{x:.2}×").replace(".00×", "×")
    } else {
        // Two significant figures at least, three below 1 at most.
        let digits = (-x.log10().floor()) as usize + 1;
        let s = format!("{x:.*}", digits.clamp(3, 12));
        format!("{}×", s.trim_end_matches('0').trim_end_matches('.'))
    }
}

/// The ends of a slowdown axis: no wider than this either way, beyond is an
/// arrow at the edge.
const AXIS_MIN: f64 = 0.001;
const AXIS_MAX: f64 = 1000.0;

/// A log axis of slowdown factors over `width` px from `x0`, chosen from
/// the values it shows and always including 1×.
struct LogAxis {
    lo: f64,
    hi: f64,
    x0: f64,
    width: f64,
}

impl LogAxis {
    fn new(values: impl Iterator<Item = f64>, margin: f64, x0: f64, width: f64) -> LogAxis {
        let band = (1.0 + margin.max(0.0)).ln();
        // At least 0.8× … 1.25× and the equivalence band with room.
        let (mut lo, mut hi) = (
            (-band * 1.5).min(0.8f64.ln()),
            (band * 1.5).max(1.25f64.ln()),
        );
        for v in values.filter(|v| v.is_finite() && *v > 0.0) {
            lo = lo.min(v.ln());
            hi = hi.max(v.ln());
        }
        let pad = ((hi - lo) * 0.05).max(0.04);
        LogAxis {
            lo: (lo - pad).max(AXIS_MIN.ln()),
            hi: (hi + pad).min(AXIS_MAX.ln()),
            x0,
            width,
        }
    }

    /// Where `v` sits: -1 left of the axis, 1 right of it, 0 on it.
    fn side(&self, v: f64) -> i8 {
        if v <= 0.0 || v.ln() < self.lo - 1e-9 {
            -1
        } else if v.ln() > self.hi + 1e-9 {
            1
        } else {
            0
        }
    }

    /// The x of `v`, kept within the axis.
    fn x(&self, v: f64) -> f64 {
        let l = if v > 0.0 { v.ln() } else { self.lo };
        self.x0 + self.width * (l.clamp(self.lo, self.hi) - self.lo) / (self.hi - self.lo)
    }

    /// The densest set of round factors whose labels do not touch: 1-2-5
    /// with 0.8× and 1.25×, 1-2-5, powers of ten, even powers of ten.
    fn ticks(&self) -> Vec<f64> {
        let decades = -3..=3;
        let sets: [Vec<f64>; 4] = [
            decades
                .clone()
                .flat_map(|e| [1.0, 2.0, 5.0].map(|k| k * 10f64.powi(e)))
                .chain([0.8, 1.25])
                .collect(),
            decades
                .clone()
                .flat_map(|e| [1.0, 2.0, 5.0].map(|k| k * 10f64.powi(e)))
                .collect(),
            decades.clone().map(|e| 10f64.powi(e)).collect(),
            decades
                .filter(|e| e % 2 == 0)
                .map(|e| 10f64.powi(e))
                .collect(),
        ];
        let mut last = Vec::new();
        for set in sets {
            let mut shown: Vec<f64> = set
                .into_iter()
                .filter(|t| self.side(*t) == 0 && (t.ln() - self.lo).min(self.hi - t.ln()) >= 0.0)
                .collect();
            shown.sort_by(f64::total_cmp);
            let roomy = shown.windows(2).all(|p| {
                let need = (text_width(&factor(p[0]), AXIS) + text_width(&factor(p[1]), AXIS))
                    / 2.0
                    + 10.0;
                self.x(p[1]) - self.x(p[0]) >= need
            });
            last = shown;
            if roomy {
                break;
            }
        }
        last
    }
}

/// Slowdown factors on a log axis chosen from the data (within 0.001× …
/// 1000×, always with 1×; left faster, right slower): the equivalence band
/// shaded, each run a point of its environment's colour, the geometric mean
/// a diamond in its verdict's colour with its 95% interval, its figure at
/// the row's end. What lies beyond the axis is an arrow at its edge with
/// the figure beside it. Labels take at most two lines of 260 px.
/// `rows`: headline metrics of one environment, each as a factor where above
/// 1 is slower (a throughput's ratio inverted), coloured by environment.
pub(super) fn ratio_chart(title: &str, rows: &[SlowdownRow], margin: f64) -> String {
    const PLOT: f64 = 520.0;
    let labels: Vec<Vec<String>> = rows
        .iter()
        .map(|r| wrap(&r.label, LABEL_COLUMN, AXIS, 2))
        .collect();
    let two = labels.iter().any(|l| l.len() > 1);
    let row_h = if two { 36.0 } else { 26.0 };
    let label_w = labels
        .iter()
        .flatten()
        .map(|l| text_width(l, AXIS))
        .fold(60.0, f64::max);
    let left = 10.0 + label_w + 12.0;
    let values: Vec<String> = rows.iter().map(|r| factor_text(r.point)).collect();
    let value_w = values
        .iter()
        .map(|v| text_width(v, VALUE))
        .fold(40.0, f64::max);
    let top = 40.0;
    let w = (left + PLOT + 12.0 + value_w + 10.0).max(title_width(title));
    let h = top + rows.len() as f64 * row_h + 44.0;
    let axis = LogAxis::new(
        rows.iter().flat_map(|r| {
            [r.point, r.lower, r.upper]
                .into_iter()
                .chain(r.runs.iter().copied())
        }),
        margin,
        left,
        PLOT,
    );
    let x = |v: f64| axis.x(v);
    let bottom = h - 38.0;
    let mut s = open(w, h, "ratio", title);
    // The equivalence band.
    let (b0, b1) = (x(1.0 / (1.0 + margin)), x(1.0 + margin));
    let _ = write!(
        s,
        r##"<rect x="{b0:.1}" y="{top}" width="{:.1}" height="{:.1}" fill="#e8f0fa"><title>equivalence margin ±{}%</title></rect>"##,
        (b1 - b0).max(1.0),
        bottom - top,
        percent(margin)
    );
    for t in axis.ticks() {
        let xx = x(t);
        let _ = write!(
            s,
            r##"<line x1="{xx:.1}" x2="{xx:.1}" y1="{top}" y2="{bottom:.1}" stroke="{}"/>"##,
            if t == 1.0 { "#666" } else { "#e4e4e4" },
        );
        Text {
            x: xx,
            y: h - 24.0,
            class: "a",
            anchor: "middle",
        }
        .line(&mut s, &factor(t), f64::INFINITY);
    }
    Text {
        x: left,
        y: h - 8.0,
        class: "a",
        anchor: "start",
    }
    .line(&mut s, "← faster", f64::INFINITY);
    Text {
        x: left + PLOT,
        y: h - 8.0,
        class: "a",
        anchor: "end",
    }
    .line(&mut s, "slower →", f64::INFINITY);
    for (i, (r, label)) in rows.iter().zip(&labels).enumerate() {
        let yy = top + i as f64 * row_h + row_h / 2.0;
        let first = if label.len() > 1 { yy - 3.0 } else { yy + 4.0 };
        Text {
            x: left - 12.0,
            y: first,
            class: "a",
            anchor: "end",
        }
        .write(&mut s, label, &r.label, "");
        let vc = verdict_color(r.verdict);
        // What lies beyond either end of the axis, for its arrow.
        let mut beyond: [Vec<String>; 2] = [Vec::new(), Vec::new()];
        let mut furthest = [f64::NAN; 2];
        let mut note = |v: f64, what: String| {
            let side = axis.side(v);
            if side != 0 {
                let k = usize::from(side > 0);
                beyond[k].push(format!("{what} {}", factor_text(v)));
                let further = if side > 0 {
                    v > furthest[k]
                } else {
                    v < furthest[k]
                };
                if furthest[k].is_nan() || further {
                    furthest[k] = v;
                }
            }
        };
        // Runs a little above the line, so they sit beside the mean.
        for (k, v) in r.runs.iter().enumerate() {
            if !(v.is_finite() && *v > 0.0) {
                continue;
            }
            if axis.side(*v) != 0 {
                note(*v, format!("run {}", k + 1));
                continue;
            }
            let _ = write!(
                s,
                r##"<circle cx="{:.1}" cy="{:.1}" r="3.2" fill="{}" stroke="#fff" stroke-width="0.6" class="mark run"><title>run {}: {}</title></circle>"##,
                x(*v),
                yy - 7.0 + (k % 3) as f64 * 1.5,
                color(r.env),
                k + 1,
                factor_text(*v)
            );
        }
        if r.lower.is_finite() && r.upper.is_finite() {
            let (a, b) = (x(r.lower), x(r.upper));
            // An end beyond the axis has no cap: the line runs off.
            let cap = |v: f64, xx: f64| {
                if axis.side(v) == 0 {
                    format!("M{xx:.1} {:.1}V{:.1}", yy, yy + 8.0)
                } else {
                    String::new()
                }
            };
            let _ = write!(
                s,
                r##"<path d="M{a:.1} {y:.1}H{b:.1}{}{}" stroke="{vc}" stroke-width="1.6" fill="none" class="mark ci"><title>{}: 95% interval [{}, {}]</title></path>"##,
                cap(r.lower, a),
                cap(r.upper, b),
                esc(&r.label),
                factor_text(r.lower),
                factor_text(r.upper),
                y = yy + 4.0
            );
            note(r.lower, "interval from".into());
            note(r.upper, "interval to".into());
        }
        let what = r.verdict.map(|v| v.label()).unwrap_or("not comparable");
        if r.point.is_finite() && axis.side(r.point) == 0 {
            let px = x(r.point);
            let _ = write!(
                s,
                r##"<path d="M{:.1} {:.1}L{:.1} {:.1}L{:.1} {:.1}L{:.1} {:.1}Z" fill="{vc}" class="mark mean"><title>{}: {} [{}, {}] ({what})</title></path>"##,
                px,
                yy - 1.0,
                px + 5.0,
                yy + 4.0,
                px,
                yy + 9.0,
                px - 5.0,
                yy + 4.0,
                esc(&r.label),
                factor_text(r.point),
                factor_text(r.lower),
                factor_text(r.upper),
            );
        } else if r.point.is_finite() {
            note(r.point, "mean".into());
        }
        for (k, sign) in [(0, -1.0), (1, 1.0)] {
            if beyond[k].is_empty() {
                continue;
            }
            let mean_beyond = axis.side(r.point) == sign as i8;
            let fill = if mean_beyond { vc } else { color(r.env) };
            let edge = if sign > 0.0 { left + PLOT } else { left };
            let base = edge - sign * 10.0;
            let _ = write!(
                s,
                r##"<path d="M{edge:.1} {:.1}L{base:.1} {:.1}L{base:.1} {:.1}Z" fill="{fill}" class="mark offscale"><title>{}: off the scale: {}</title></path>"##,
                yy + 4.0,
                yy - 2.0,
                yy + 10.0,
                esc(&r.label),
                beyond[k].join(", ")
            );
            let shown = if mean_beyond { r.point } else { furthest[k] };
            Text {
                x: edge - sign * 13.0,
                y: yy + 8.0,
                class: "v offscale",
                anchor: if sign > 0.0 { "end" } else { "start" },
            }
            .write(
                &mut s,
                &[factor(shown)],
                &factor(shown),
                r##" stroke="#fff" stroke-width="3" paint-order="stroke""##,
            );
        }
        Text {
            x: left + PLOT + 12.0,
            y: yy + 4.0,
            class: "v",
            anchor: "start",
        }
        .line(&mut s, &values[i], f64::INFINITY);
    }
    s.push_str("</svg>");
    s
}

/// A slowdown factor as a reader says it: "1.52× slower", "2.10× faster".
pub(super) fn factor_text(v: f64) -> String {
    if !v.is_finite() || v <= 0.0 {
        "–".into()
    } else if v >= 1.0 {
        format!("{}× slower", ratio_num(v))
    } else {
        format!("{}× faster", ratio_num(1.0 / v))
    }
}

/// (x, mean, lower, upper) points of one environment's line.
pub(super) type Series = (String, Vec<(f64, f64, f64, f64)>);

/// Lines over a swept parameter, one per environment, with their 95%
/// intervals as shaded bands; x on a log2 axis when the values are positive
/// and span a factor of 8 or more. The legend sits below the plot.
pub(super) fn line_chart(title: &str, xlabel: &str, unit: &str, series: &[Series]) -> String {
    const PLOT: f64 = 440.0;
    let (top, plot_h) = (44.0, 200.0);
    let points = || series.iter().flat_map(|s| s.1.iter());
    let finite = |v: f64| v.is_finite().then_some(v);
    let ys = || points().flat_map(|p| [p.1, p.2, p.3]).filter_map(finite);
    let axis = ValueAxis::for_values(ys(), points().map(|p| p.1).filter_map(finite), top, plot_h);
    let left = axis.left();
    let mut xs: Vec<f64> = points().map(|p| p.0).filter(|x| x.is_finite()).collect();
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    let (xmin, xmax) = (
        xs.first().copied().unwrap_or(0.0),
        xs.last().copied().unwrap_or(1.0),
    );
    let log = xmin > 0.0 && xmax / xmin >= 8.0;
    let tx = |x: f64| {
        let f = if xmax <= xmin {
            0.5
        } else if log {
            (x.ln() - xmin.ln()) / (xmax.ln() - xmin.ln())
        } else {
            (x - xmin) / (xmax - xmin)
        };
        left + 16.0 + (PLOT - 32.0) * f.clamp(0.0, 1.0)
    };
    let ty = |y: f64| axis.y(y);
    // Legend items laid out in rows below the plot.
    let names: Vec<String> = series
        .iter()
        .map(|s| abbreviate(&s.0, 240.0, AXIS))
        .collect();
    let w = (left + PLOT + 10.0).max(title_width(title));
    let mut legend = Vec::new();
    let (mut lx, mut row) = (left, 0usize);
    for name in &names {
        let item = 16.0 + text_width(name, AXIS) + 16.0;
        if lx + item > w - 10.0 && lx > left {
            lx = left;
            row += 1;
        }
        legend.push((lx, row));
        lx += item;
    }
    let legend_top = top + plot_h + 50.0;
    let h = legend_top + (row + 1) as f64 * 18.0 + 6.0;
    let mut s = open(w, h, "lines", title);
    axis.write(&mut s, left, left + PLOT, unit);
    let mut right_edge = f64::MIN;
    for (t, label) in xs.iter().zip(tick_texts(&xs)) {
        let half = text_width(&label, AXIS) / 2.0;
        if tx(*t) - half < right_edge + 6.0 {
            continue;
        }
        right_edge = tx(*t) + half;
        Text {
            x: tx(*t),
            y: top + plot_h + 16.0,
            class: "a",
            anchor: "middle",
        }
        .line(&mut s, &label, f64::INFINITY);
    }
    Text {
        x: left + PLOT / 2.0,
        y: top + plot_h + 34.0,
        class: "a",
        anchor: "middle",
    }
    .line(
        &mut s,
        &if log {
            format!("{xlabel} (log scale)")
        } else {
            xlabel.to_string()
        },
        PLOT,
    );
    for (i, (name, pts)) in series.iter().enumerate() {
        let c = color(i);
        let banded: Vec<_> = pts
            .iter()
            .filter(|p| p.0.is_finite() && p.2.is_finite() && p.3.is_finite())
            .collect();
        if banded.len() >= 2 {
            let upper = banded.iter().map(|p| (tx(p.0), ty(p.3)));
            let lower = banded.iter().rev().map(|p| (tx(p.0), ty(p.2)));
            let d: Vec<String> = upper
                .chain(lower)
                .map(|(x, y)| format!("{x:.1},{y:.1}"))
                .collect();
            let _ = write!(
                s,
                r#"<polygon points="{}" fill="{c}" fill-opacity="0.15" class="mark band"><title>{}: 95% intervals</title></polygon>"#,
                d.join(" "),
                esc(name)
            );
        } else {
            for p in banded {
                let _ = write!(
                    s,
                    r#"<path d="M{x:.1} {:.1}V{:.1}" stroke="{c}" stroke-width="1" class="mark ci"><title>{}: 95% interval [{}, {}]</title></path>"#,
                    ty(p.2),
                    ty(p.3),
                    esc(name),
                    num(p.2),
                    num(p.3),
                    x = tx(p.0)
                );
            }
        }
        let drawn: Vec<_> = pts
            .iter()
            .filter(|p| p.0.is_finite() && p.1.is_finite())
            .collect();
        let path: Vec<String> = drawn
            .iter()
            .enumerate()
            .map(|(k, p)| {
                format!(
                    "{}{:.1} {:.1}",
                    if k == 0 { "M" } else { "L" },
                    tx(p.0),
                    ty(p.1)
                )
            })
            .collect();
        if drawn.len() >= 2 {
            let _ = write!(
                s,
                r#"<path d="{}" fill="none" stroke="{c}" stroke-width="2" class="mark line"><title>{}</title></path>"#,
                path.join(""),
                esc(name)
            );
        }
        for p in drawn {
            let _ = write!(
                s,
                r#"<circle cx="{:.1}" cy="{:.1}" r="3.5" fill="{c}" class="mark point"><title>{} at {}={}: {} {} [{}, {}]</title></circle>"#,
                tx(p.0),
                ty(p.1),
                esc(name),
                esc(xlabel),
                num(p.0),
                num(p.1),
                esc(unit),
                num(p.2),
                num(p.3)
            );
        }
        let (lx, row) = legend[i];
        let ly = legend_top + row as f64 * 18.0;
        let _ = write!(
            s,
            r#"<rect x="{lx:.1}" y="{:.1}" width="12" height="12" fill="{c}" class="key"/>"#,
            ly - 10.0
        );
        Text {
            x: lx + 16.0,
            y: ly,
            class: "a",
            anchor: "start",
        }
        .write(&mut s, &[names[i].clone()], name, "");
    }
    s.push_str("</svg>");
    s
}

/// A slowdown's colour on a diverging log scale: white at 1×, full green
/// at `1/scale` and faster, full red at `scale` and slower; and whether
/// text on it should be white.
fn diverging(v: f64, scale: f64) -> (String, bool) {
    if !(v.is_finite() && v > 0.0) {
        return ("#eeeeee".into(), false);
    }
    let t = (v.ln() / scale.ln()).clamp(-1.0, 1.0);
    let to = if t > 0.0 {
        (192, 57, 43)
    } else {
        (46, 125, 50)
    };
    let mix = |c: i32| (255.0 + (c as f64 - 255.0) * t.abs()).round() as u8;
    (
        format!("#{:02x}{:02x}{:02x}", mix(to.0), mix(to.1), mix(to.2)),
        t.abs() > 0.55,
    )
}

/// Slowdowns over two swept parameters (say block size × threads): a cell
/// per (x, y) with its figure, coloured on a diverging log scale around 1×
/// (green faster, white 1×, red slower). `cells` are (x index, y index,
/// slowdown, the cell's tooltip).
pub(super) fn heat_map(
    title: &str,
    xlabel: &str,
    ylabel: &str,
    xs: &[String],
    ys: &[String],
    cells: &[(usize, usize, f64, String)],
) -> String {
    let cell_h = 26.0;
    let cell_w = xs
        .iter()
        .map(|x| text_width(x, AXIS).min(120.0) + 10.0)
        .chain(cells.iter().map(|c| text_width(&factor(c.2), VALUE) + 12.0))
        .fold(52.0, f64::max);
    let ylabels: Vec<String> = ys.iter().map(|y| abbreviate(y, 160.0, AXIS)).collect();
    let ylabel_w = ylabels
        .iter()
        .map(|y| text_width(y, AXIS))
        .fold(20.0, f64::max);
    let left = 32.0 + ylabel_w + 8.0;
    let top = 40.0;
    let grid_h = ys.len() as f64 * cell_h;
    let scale = cells
        .iter()
        .filter(|c| c.2.is_finite() && c.2 > 0.0)
        .map(|c| c.2.ln().abs().exp())
        .fold(2.0, f64::max);
    let key = format!(
        "green faster, white 1×, red slower; full colour at {} either way",
        factor(scale)
    );
    let w = (left + xs.len() as f64 * cell_w + 10.0)
        .max(title_width(title))
        .max(text_width(&key, AXIS) + 20.0);
    let h = top + grid_h + 68.0;
    let mut s = open(w, h, "heat", title);
    for &(xi, yi, v, ref tip) in cells {
        if xi >= xs.len() || yi >= ys.len() {
            continue;
        }
        let (x, y) = (left + xi as f64 * cell_w, top + yi as f64 * cell_h);
        let (fill, light) = diverging(v, scale);
        let _ = write!(
            s,
            r##"<rect x="{x:.1}" y="{y:.1}" width="{cell_w:.1}" height="{cell_h:.1}" fill="{fill}" stroke="#fff" class="mark cell"><title>{}: {}</title></rect>"##,
            esc(tip),
            factor_text(v)
        );
        Text {
            x: x + cell_w / 2.0,
            y: y + cell_h / 2.0 + 4.0,
            class: "v",
            anchor: "middle",
        }
        .write(
            &mut s,
            &[factor(v)],
            &factor(v),
            if light { r##" fill="#fff""## } else { "" },
        );
    }
    for (i, y) in ylabels.iter().enumerate() {
        Text {
            x: left - 8.0,
            y: top + (i as f64 + 0.5) * cell_h + 4.0,
            class: "a",
            anchor: "end",
        }
        .write(&mut s, std::slice::from_ref(y), &ys[i], "");
    }
    for (i, x) in xs.iter().enumerate() {
        Text {
            x: left + (i as f64 + 0.5) * cell_w,
            y: top + grid_h + 16.0,
            class: "a",
            anchor: "middle",
        }
        .line(&mut s, x, cell_w - 6.0);
    }
    let grid_w = xs.len() as f64 * cell_w;
    Text {
        x: left + grid_w / 2.0,
        y: top + grid_h + 34.0,
        class: "a",
        anchor: "middle",
    }
    .line(&mut s, xlabel, grid_w.max(60.0));
    axis_title(&mut s, ylabel, top + grid_h / 2.0, grid_h.max(40.0));
    Text {
        x: 10.0,
        y: top + grid_h + 56.0,
        class: "a",
        anchor: "start",
    }
    .line(&mut s, &key, w - 20.0);
    s.push_str("</svg>");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The numbers of attribute `name` in every element whose class starts
    /// with `mark` (one element's may be several, as a path's x or y).
    fn mark_coordinates(svg: &str) -> Vec<(String, Vec<f64>, Vec<f64>)> {
        let mut out = Vec::new();
        for piece in svg.split('<').skip(1) {
            let tag = piece.split('>').next().unwrap_or("");
            if !tag.contains(r#"class="mark"#) {
                continue;
            }
            let attr = |name: &str| -> Option<String> {
                let at = tag.find(&format!(" {name}=\""))? + name.len() + 3;
                Some(tag[at..at + tag[at..].find('"')?].to_string())
            };
            let f = |name: &str| attr(name).and_then(|v| v.parse::<f64>().ok());
            let (mut xs, mut ys) = (Vec::new(), Vec::new());
            if let (Some(cx), Some(cy), Some(r)) = (f("cx"), f("cy"), f("r")) {
                xs.extend([cx - r, cx + r]);
                ys.extend([cy - r, cy + r]);
            } else if let (Some(x), Some(y), Some(w), Some(h)) =
                (f("x"), f("y"), f("width"), f("height"))
            {
                xs.extend([x, x + w]);
                ys.extend([y, y + h]);
            } else if let Some(d) = attr("d") {
                // M/L take x y, H x, V y; every command here is absolute.
                let mut cmd = ' ';
                let mut nums = Vec::new();
                let mut flush = |cmd: char, nums: &mut Vec<f64>| {
                    match cmd {
                        'M' | 'L' => {
                            for p in nums.chunks(2) {
                                xs.push(p[0]);
                                ys.push(p[1]);
                            }
                        }
                        'H' => xs.append(nums),
                        'V' => ys.append(nums),
                        _ => {}
                    }
                    nums.clear();
                };
                let mut token = String::new();
                for c in d.chars().chain([' ']) {
                    if c.is_ascii_digit() || c == '.' || c == '-' {
                        token.push(c);
                        continue;
                    }
                    if !token.is_empty() {
                        nums.push(token.parse().unwrap());
                        token.clear();
                    }
                    if c.is_ascii_alphabetic() {
                        flush(cmd, &mut nums);
                        cmd = c;
                    }
                }
                flush(cmd, &mut nums);
            } else if let Some(points) = attr("points") {
                for p in points.split(' ') {
                    let (x, y) = p.split_once(',').unwrap();
                    xs.push(x.parse().unwrap());
                    ys.push(y.parse().unwrap());
                }
            }
            assert!(!xs.is_empty() && !ys.is_empty(), "no position in <{tag}>");
            out.push((tag.to_string(), xs, ys));
        }
        out
    }

    /// The viewBox's width and height.
    fn size(svg: &str) -> (f64, f64) {
        let at = svg.find(r#"viewBox="0 0 "#).unwrap() + 13;
        let mut it = svg[at..at + svg[at..].find('"').unwrap()]
            .split(' ')
            .map(|v| v.parse::<f64>().unwrap());
        (it.next().unwrap(), it.next().unwrap())
    }

    /// Every mark lies within the chart's viewBox; how many there are.
    fn marks_inside(svg: &str) -> usize {
        let (w, h) = size(svg);
        let marks = mark_coordinates(svg);
        for (tag, xs, ys) in &marks {
            for x in xs {
                assert!((0.0..=w).contains(x), "x {x} outside 0..{w}: <{tag}>");
            }
            for y in ys {
                assert!((0.0..=h).contains(y), "y {y} outside 0..{h}: <{tag}>");
            }
        }
        marks.len()
    }

    fn row(label: &str, point: f64) -> SlowdownRow {
        SlowdownRow {
            label: label.into(),
            point,
            lower: point * 0.9,
            upper: point * 1.1,
            runs: vec![point * 0.95, point, point * 1.05],
            verdict: Some(Outcome::Slower),
            env: 1,
        }
    }

    #[test]
    fn a_ratio_beyond_the_axis_is_an_arrow_with_its_figure() {
        let rows: Vec<SlowdownRow> = [0.003, 1.0, 20.8, 300.0, 5000.0]
            .iter()
            .map(|v| row(&format!("entry {v}"), *v))
            .collect();
        let svg = ratio_chart("docker against host", &rows, 0.05);
        assert!(svg.starts_with(
            r#"<svg xmlns="http://www.w3.org/2000/svg" class="chart ratio" viewBox="0 0 "#
        ));
        assert!(svg.contains(r#"style="max-width:100%;height:auto""#));
        // Four means on the axis, the fifth (its interval and runs too) an
        // arrow at the right edge with its figure.
        assert_eq!(svg.matches(r#"class="mark mean""#).count(), 4, "{svg}");
        assert_eq!(svg.matches(r#"class="mark offscale""#).count(), 1, "{svg}");
        assert!(svg.contains(">5000×</text>"), "{svg}");
        assert!(svg.contains("off the scale: run 1 4750× slower"), "{svg}");
        assert_eq!(svg.matches(r#"class="mark run""#).count(), 4 * 3);
        assert_eq!(marks_inside(&svg), 4 + 1 + 4 * 3 + 5);
        // The axis reaches from 0.003× to its end at 1000×, in powers of ten.
        assert!(!svg.contains(">0.001×<"), "{svg}");
        for t in ["0.01×", "0.1×", "1×", "10×", "100×", "1000×"] {
            assert!(svg.contains(&format!(">{t}</text>")), "no tick {t}: {svg}");
        }
        // Every mark carries its figure.
        assert_eq!(
            svg.matches(r#"class="mark"#).count(),
            svg.matches(r#"class="mark"#)
                .count()
                .min(svg.matches("</title>").count())
        );
    }

    #[test]
    fn a_ratio_axis_of_small_effects_keeps_its_fine_ticks() {
        let svg = ratio_chart("a", &[row("x", 1.03)], 0.05);
        for t in [">0.8×<", ">1×<", ">1.25×<"] {
            assert!(svg.contains(t), "{t}: {svg}");
        }
        assert!(!svg.contains("offscale"));
        marks_inside(&svg);
    }

    #[test]
    fn long_labels_wrap_onto_two_lines_and_keep_their_text_in_a_title() {
        let long = "fileio seqwr file-num=16 file-total-size=64M · open_close_per_sec";
        let lines = wrap(long, LABEL_COLUMN, AXIS, 2);
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert_eq!(lines.join(" "), long);
        let endless = "x".repeat(30) + " " + &"y".repeat(80) + " tail";
        let lines = wrap(&endless, LABEL_COLUMN, AXIS, 2);
        assert_eq!(lines.len(), 2);
        assert!(lines[1].ends_with('…'), "{lines:?}");
        for l in &lines {
            assert!(text_width(l, AXIS) <= LABEL_COLUMN, "{l}");
        }
        let svg = ratio_chart("t", &[row(long, 20.8), row(&endless, 1.0)], 0.05);
        assert!(svg.contains(&format!("<title>{}</title>", esc(long))));
        assert!(svg.contains("<tspan"));
        // The label column stays at 260 px, the plot inside the chart.
        let (w, _) = size(&svg);
        assert!(w <= 10.0 + LABEL_COLUMN + 12.0 + 520.0 + 12.0 + 90.0, "{w}");
        marks_inside(&svg);
    }

    #[test]
    fn a_separator_ends_a_line_rather_than_starting_one() {
        let lines = wrap(
            "memory memory-block-size=1K threads=16 · bandwidth_mib_per_sec",
            LABEL_COLUMN,
            AXIS,
            2,
        );
        assert!(!lines.iter().any(|l| l.starts_with('·')), "{lines:?}");
    }

    #[test]
    fn ticks_have_as_few_decimals_as_they_need() {
        assert_eq!(tick_texts(&[0.0, 2.5, 5.0]), ["0.0", "2.5", "5.0"]);
        assert_eq!(tick_texts(&[0.0, 10.0, 20.0]), ["0", "10", "20"]);
        assert_eq!(tick_texts(&[1.0, 2.0, 4.0, 16.0]), ["1", "2", "4", "16"]);
        assert_eq!(tick_texts(&[0.5, 1.0]), ["0.5", "1.0"]);
        assert_eq!(
            log_ticks(3.0, 2.0e6),
            [1.0, 10.0, 100.0, 1e3, 1e4, 1e5, 1e6, 1e7]
        );
        assert_eq!(
            log_ticks(3.0, 40.0),
            [1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0]
        );
    }

    #[test]
    fn a_line_chart_of_lines_far_apart_has_a_log_value_axis() {
        let series: Vec<Series> = [1.0, 1500.0]
            .iter()
            .map(|slow| {
                let pts = [1.0, 2.0, 4.0]
                    .iter()
                    .map(|t| (*t, 9000.0 * t / slow, 0.0, 9500.0 * t / slow))
                    .collect();
                (format!("{slow}"), pts)
            })
            .collect();
        let svg = line_chart("far apart", "threads", "MiB/s", &series);
        assert!(svg.contains("MiB/s (log scale)"), "{svg}");
        // The slow line is off the floor: its points stay above the axis's
        // bottom (its lower bounds of 0 are clamped there).
        let bottom = 44.0 + 200.0;
        let ys: Vec<f64> = mark_coordinates(&svg)
            .into_iter()
            .filter(|m| m.0.contains("mark point"))
            .map(|m| (m.2[0] + m.2[1]) / 2.0)
            .collect();
        assert!(ys.iter().all(|y| *y < bottom - 20.0), "{ys:?}");
        marks_inside(&svg);
    }

    #[test]
    fn factors_read_at_every_scale() {
        assert_eq!(factor(0.001), "0.001×");
        assert_eq!(factor(0.0004), "0.0004×");
        assert_eq!(factor(0.8), "0.8×");
        assert_eq!(factor(1.25), "1.25×");
        assert_eq!(factor(20.8), "21×");
        assert_eq!(factor(5000.0), "5000×");
    }

    #[test]
    fn a_line_chart_over_a_wide_sweep_has_a_log2_axis() {
        let series: Vec<Series> = ["host", "docker"]
            .iter()
            .enumerate()
            .map(|(i, name)| {
                let pts = [1.0, 2.0, 4.0, 8.0, 16.0]
                    .iter()
                    .map(|t| {
                        let v = 1000.0 * t / (1.0 + i as f64);
                        (*t, v, v * 0.9, v * 1.1)
                    })
                    .collect();
                (name.to_string(), pts)
            })
            .collect();
        let svg = line_chart("memory by threads", "threads", "MiB/s", &series);
        assert!(svg.contains("threads (log scale)"));
        let cx: Vec<f64> = mark_coordinates(&svg)
            .into_iter()
            .filter(|m| m.0.contains("mark point"))
            .map(|m| (m.1[0] + m.1[1]) / 2.0)
            .take(5)
            .collect();
        let steps: Vec<f64> = cx.windows(2).map(|p| p[1] - p[0]).collect();
        assert!(steps.iter().all(|s| (s - steps[0]).abs() < 0.2), "{cx:?}");
        assert_eq!(svg.matches(r#"class="mark band""#).count(), 2);
        assert_eq!(marks_inside(&svg), 2 * (1 + 1 + 5));
        // A narrow sweep stays linear.
        let narrow = vec![(
            "host".to_string(),
            vec![(2.0, 1.0, 0.9, 1.1), (3.0, 2.0, 1.8, 2.2)],
        )];
        assert!(!line_chart("t", "x", "u", &narrow).contains("log scale"));
    }

    #[test]
    fn a_bar_chart_keeps_its_columns_narrow_and_its_marks_inside() {
        let bars: Vec<BarData> = ["host", "a very long environment name that goes on and on"]
            .iter()
            .enumerate()
            .map(|(i, l)| BarData {
                label: l.to_string(),
                value: 100.0 * (i + 1) as f64,
                lower: 90.0 * (i + 1) as f64,
                upper: 110.0 * (i + 1) as f64,
                env: i,
                runs: vec![95.0, 105.0],
            })
            .collect();
        let svg = bar_chart("events_per_sec", "events/s", &bars);
        let (w, _) = size(&svg);
        assert!(w < 400.0, "{w}");
        assert!(svg.contains(r#"class="chart bars""#));
        assert_eq!(marks_inside(&svg), 2 * (1 + 1 + 2));
        assert!(svg.contains("…"));
    }

    #[test]
    fn bars_far_apart_stand_on_a_log_axis_and_none_is_flat() {
        let bars: Vec<BarData> = [9000.0, 3_000_000.0, 6.0]
            .iter()
            .enumerate()
            .map(|(i, v)| BarData {
                label: format!("env{i}"),
                value: *v,
                lower: v * 0.98,
                upper: v * 1.02,
                env: i,
                runs: vec![*v],
            })
            .collect();
        let svg = bar_chart("mib_per_sec", "MiB/s", &bars);
        assert!(svg.contains("MiB/s (log scale)"), "{svg}");
        // Every bar rises well off the floor, the smallest too.
        let heights: Vec<f64> = svg
            .split("<rect ")
            .skip(1)
            .filter(|r| r.contains("mark bar"))
            .map(|r| {
                let at = r.find("height=\"").unwrap() + 8;
                r[at..at + r[at..].find('"').unwrap()].parse().unwrap()
            })
            .collect();
        assert_eq!(heights.len(), 3);
        assert!(heights.iter().all(|h| *h > 15.0), "{heights:?}");
        marks_inside(&svg);
    }

    #[test]
    fn a_heat_map_colours_slower_red_and_faster_green() {
        let xs = vec!["1K".to_string(), "1M".to_string()];
        let ys = vec!["1".to_string(), "16".to_string()];
        let cells = vec![
            (0, 0, 1.0, "1K, 1 thread".to_string()),
            (1, 0, 4.0, "1M, 1 thread".to_string()),
            (0, 1, 0.25, "1K, 16 threads".to_string()),
            (1, 1, f64::NAN, "1M, 16 threads".to_string()),
        ];
        let svg = heat_map("memory", "block size", "threads", &xs, &ys, &cells);
        assert_eq!(svg.matches(r#"class="mark cell""#).count(), 4);
        assert_eq!(marks_inside(&svg), 4);
        assert!(svg.contains(r##"fill="#ffffff" stroke="#fff" class="mark cell"><title>1K, 1 thread: 1.000× slower"##), "{svg}");
        assert!(svg.contains(r##"fill="#c0392b" stroke="#fff" class="mark cell"><title>1M, 1 thread: 4.000× slower"##), "{svg}");
        assert!(svg.contains(r##"fill="#2e7d32""##));
        assert!(svg.contains(">4×</text>") && svg.contains(">0.25×</text>"));
        // Between 1× and the scale's end, a paler red.
        let (pale, white_text) = diverging(1.5, 4.0);
        assert!(
            pale != "#ffffff" && pale != "#c0392b" && !white_text,
            "{pale}"
        );
    }
}
