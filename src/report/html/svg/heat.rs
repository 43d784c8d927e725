//! The heat map of a two-way sweep: an environment's slowdown in each cell
//! of the grid, coloured on a diverging log scale around 1× (green faster,
//! white 1×, red slower), its figure written in.

use std::fmt::Write as _;

use super::axis::{factor, factor_text};
use super::draw::{abbreviate, axis_title, esc, open, text_width, title_width, Text, AXIS, VALUE};

/// A slowdown's colour on a diverging log scale: white at 1×, full green
/// at `1/scale` and faster, full red at `scale` and slower; and whether
/// text on it should be white.
pub(super) fn diverging(v: f64, scale: f64) -> (String, bool) {
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
pub(crate) fn heat_map(
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
