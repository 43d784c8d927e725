//! The charts' scales: round ticks and their labels, the vertical value
//! axis the bar and line charts share (linear from zero, or log where the
//! values lie far apart), the log axis of slowdown factors centred at 1×,
//! and how a factor reads ("0.5×", "1.52× slower").

use std::fmt::Write as _;

use super::draw::{axis_title, text_width, Text, AXIS};
use crate::report::text::ratio_num;

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
pub(super) fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
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
pub(super) fn tick_texts(ticks: &[f64]) -> Vec<String> {
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
pub(super) struct ValueAxis {
    ticks: Vec<f64>,
    pub log: bool,
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
    pub(super) fn for_values(
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

    pub(super) fn lo(&self) -> f64 {
        self.ticks.first().copied().unwrap_or(0.0)
    }

    fn hi(&self) -> f64 {
        self.ticks.last().copied().unwrap_or(1.0)
    }

    /// The y of `v`, kept within the axis.
    pub(super) fn y(&self, v: f64) -> f64 {
        let f = if self.log {
            let v = if v > 0.0 { v.log10() } else { f64::MIN };
            (v - self.lo().log10()) / (self.hi().log10() - self.lo().log10()).max(1e-12)
        } else {
            (v - self.lo()) / (self.hi() - self.lo()).max(1e-12)
        };
        self.top + self.height * (1.0 - f.clamp(0.0, 1.0))
    }

    /// Room left of the plot for the tick labels and the unit.
    pub(super) fn left(&self) -> f64 {
        let widest = tick_texts(&self.ticks)
            .iter()
            .map(|t| text_width(t, AXIS))
            .fold(0.0, f64::max);
        32.0 + widest + 6.0
    }

    pub(super) fn write(&self, s: &mut String, left: f64, right: f64, unit: &str) {
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

/// "0.5×", "2×", "1.25×", "0.0004×"
pub(super) fn factor(x: f64) -> String {
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
pub(super) struct LogAxis {
    lo: f64,
    hi: f64,
    pub(super) x0: f64,
    pub(super) width: f64,
}

impl LogAxis {
    pub(super) fn new(
        values: impl Iterator<Item = f64>,
        margin: f64,
        x0: f64,
        width: f64,
    ) -> LogAxis {
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
    pub(super) fn side(&self, v: f64) -> i8 {
        if v <= 0.0 || v.ln() < self.lo - 1e-9 {
            -1
        } else if v.ln() > self.hi + 1e-9 {
            1
        } else {
            0
        }
    }

    /// The x of `v`, kept within the axis.
    pub(super) fn x(&self, v: f64) -> f64 {
        let l = if v > 0.0 { v.ln() } else { self.lo };
        self.x0 + self.width * (l.clamp(self.lo, self.hi) - self.lo) / (self.hi - self.lo)
    }

    /// The densest set of round factors whose labels do not touch: 1-2-5
    /// with 0.8× and 1.25×, 1-2-5, powers of ten, even powers of ten.
    pub(super) fn ticks(&self) -> Vec<f64> {
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
