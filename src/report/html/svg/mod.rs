//! The SVG charts of the HTML report, one file per kind: bars with 95%
//! whiskers and each run (`bars`), slowdown factors on a log axis
//! (`ratio`), lines over a swept parameter (`lines`), a heat map of
//! slowdowns over two parameters (`heat`), stacked bars (`stacked`) and a
//! run second by second (`timeline`), drawn with `draw`'s text and
//! canvas primitives on `axis`' scales.
//!
//! Every chart scales down with its box (a viewBox, `max-width:100%`) and
//! draws everything inside it: a value beyond the axis is an arrow at the
//! edge with its figure, a label too long for its column is wrapped or cut
//! with "…" and keeps its full text in a `<title>`. A browser test relies on
//! two conventions: every data mark has the class `mark` and a `<title>`
//! with its figure, every text the class `label`.

mod axis;
mod bars;
mod draw;
mod heat;
mod lines;
mod ratio;
mod stacked;
mod timeline;

pub(crate) use bars::bar_chart;
pub use draw::esc;
pub(crate) use heat::heat_map;
pub(crate) use lines::line_chart;
pub(crate) use ratio::ratio_chart;
pub(crate) use stacked::stacked_chart;
pub(crate) use timeline::timeline_chart;

#[cfg(test)]
mod tests {
    //! The charts drawn and measured: every mark inside its chart's box,
    //! labels wrapped and cut to their columns, axes and ticks that read.

    use super::axis::{factor, log_ticks, tick_texts};
    use super::bars::bar_chart;
    use super::draw::{esc, text_width, wrap, AXIS};
    use super::heat::{diverging, heat_map};
    use super::lines::line_chart;
    use super::ratio::{ratio_chart, LABEL_COLUMN};
    use crate::report::model::{BarData, Series, SlowdownRow};
    use crate::stats::Outcome;

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
        assert!(
            svg.contains(
                r##"fill="#ffffff" stroke="#fff" class="mark cell"><title>1K, 1 thread: 1.000× slower"##
            ),
            "{svg}"
        );
        assert!(
            svg.contains(
                r##"fill="#c0392b" stroke="#fff" class="mark cell"><title>1M, 1 thread: 4.000× slower"##
            ),
            "{svg}"
        );
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
