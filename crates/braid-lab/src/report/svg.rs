//! Goodput over time, one line per contender, as a hand-written SVG (no plotting dependency).

use std::fmt::Write;

use crate::iperf::Sample;
use crate::scenario::units::format_rate;
use crate::transfer::{Action, AppliedEvent};

const W: f64 = 860.0;
const H: f64 = 420.0;
const LEFT: f64 = 64.0;
const RIGHT: f64 = 190.0;
const TOP: f64 = 36.0;
const BOTTOM: f64 = 48.0;
/// Colours for contenders without a fixed one (braid schedulers first).
const COLORS: [&str; 8] =
    ["#d62728", "#1f77b4", "#2ca02c", "#e377c2", "#17becf", "#bcbd22", "#8c564b", "#7f7f7f"];
/// Single links in greys, so the multipath contenders stand out.
const LINK_GREYS: [&str; 4] = ["#555555", "#888888", "#aaaaaa", "#cccccc"];

/// The same contender gets the same colour in every plot.
fn color_for(name: &str, spare: &mut usize) -> &'static str {
    if let Some(i) = name.strip_prefix("tcp-link").and_then(|i| i.parse::<usize>().ok()) {
        return LINK_GREYS[(i.max(1) - 1) % LINK_GREYS.len()];
    }
    match name {
        "mptcp" => "#ff7f0e",
        "aggligator" => "#9467bd",
        _ => {
            let c = COLORS[*spare % COLORS.len()];
            *spare += 1;
            c
        }
    }
}

/// One line of the plot.
pub struct Line<'a> {
    /// Legend text.
    pub name: &'a str,
    /// Receiver goodput per interval.
    pub series: &'a [Sample],
}

/// Renders the plot. `events` (from one of the runs) are drawn as vertical markers.
pub fn render(title: &str, lines: &[Line], events: &[AppliedEvent]) -> String {
    let t_max = lines.iter().filter_map(|l| l.series.last().map(|s| s.end)).fold(1.0, f64::max);
    let y_max_bps = lines.iter().flat_map(|l| l.series.iter().map(|s| s.bps)).fold(1e6, f64::max);
    let (y_top, y_step) = axis(y_max_bps / 1e6);
    // The receiver's last interval can end up to ~0.1 s after the nominal length.
    let (t_top, t_step) = axis(t_max - 0.2);
    let pw = W - LEFT - RIGHT;
    let ph = H - TOP - BOTTOM;
    let x = |t: f64| LEFT + t.min(t_top) / t_top * pw;
    let y = |mbit: f64| TOP + ph - (mbit / y_top).min(1.05) * ph;

    let mut o = String::new();
    let _ = writeln!(
        o,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(o, r#"<rect width="{W}" height="{H}" fill="white"/>"#);
    let _ =
        writeln!(o, r#"<text x="{LEFT}" y="20" font-size="14" font-weight="bold">{}</text>"#, escape(title));
    let y_ticks = (y_top / y_step).round() as usize;
    for k in 0..=y_ticks {
        let v = y_step * k as f64;
        let yy = y(v);
        let _ = writeln!(
            o,
            r##"<line x1="{LEFT}" y1="{yy:.1}" x2="{:.1}" y2="{yy:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
            LEFT + pw,
            LEFT - 6.0,
            yy + 4.0,
            trim(v)
        );
    }
    let t_ticks = (t_top / t_step).round() as usize;
    for k in 0..=t_ticks {
        let t = t_step * k as f64;
        let xx = x(t);
        let _ = writeln!(
            o,
            r##"<line x1="{xx:.1}" y1="{TOP}" x2="{xx:.1}" y2="{:.1}" stroke="#eee"/><text x="{xx:.1}" y="{:.1}" text-anchor="middle">{}</text>"##,
            TOP + ph,
            TOP + ph + 16.0,
            trim(t)
        );
    }
    let _ = writeln!(
        o,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">time (s)</text>"#,
        LEFT + pw / 2.0,
        H - 10.0
    );
    let _ = writeln!(
        o,
        r#"<text transform="translate(16 {:.1}) rotate(-90)" text-anchor="middle">goodput (Mbit/s)</text>"#,
        TOP + ph / 2.0
    );
    for e in events {
        let xx = x(e.at_s);
        let (color, label) = match e.action {
            Action::Cut => ("#d62728", format!("cut link {}", e.link)),
            Action::Restore => ("#2ca02c", format!("restore link {}", e.link)),
            Action::Rate { bps, .. } => {
                ("#9467bd", format!("link {} at {}", e.link, format_rate(bps as f64)))
            }
        };
        let _ = writeln!(
            o,
            r#"<line x1="{xx:.1}" y1="{TOP}" x2="{xx:.1}" y2="{:.1}" stroke="{color}" stroke-dasharray="4 3"/><text x="{:.1}" y="{:.1}" fill="{color}" font-size="10">{label}</text>"#,
            TOP + ph,
            xx + 3.0,
            TOP + 10.0
        );
    }
    let mut spare = 0;
    for (k, l) in lines.iter().enumerate() {
        let color = color_for(l.name, &mut spare);
        let pts: Vec<String> = l
            .series
            .iter()
            .map(|s| format!("{:.1},{:.1}", x((s.start + s.end) / 2.0), y(s.bps / 1e6)))
            .collect();
        if !pts.is_empty() {
            let _ = writeln!(
                o,
                r#"<polyline fill="none" stroke="{color}" stroke-width="1.5" points="{}"/>"#,
                pts.join(" ")
            );
        }
        let ly = TOP + 14.0 + 18.0 * k as f64;
        let lx = LEFT + pw + 14.0;
        let _ = writeln!(
            o,
            r#"<line x1="{lx:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{color}" stroke-width="3"/><text x="{:.1}" y="{ly:.1}">{}</text>"#,
            ly - 4.0,
            lx + 18.0,
            ly - 4.0,
            lx + 24.0,
            escape(l.name)
        );
    }
    o.push_str("</svg>\n");
    o
}

/// Axis top and tick step for data up to `v`: the step is 1, 2 or 5 × 10^k, chosen so the
/// axis has at most 8 ticks; the top is the first multiple of the step at or above `v`.
fn axis(v: f64) -> (f64, f64) {
    if v <= 0.0 || !v.is_finite() {
        return (1.0, 0.2);
    }
    let mag = 10f64.powf((v / 8.0).log10().floor());
    let step =
        [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * mag).find(|s| v / s <= 8.0 + 1e-9).unwrap_or(10.0 * mag);
    let top = ((v / step) - 1e-9).ceil().max(1.0) * step;
    (top, step)
}

fn trim(v: f64) -> String {
    let s = format!("{v:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axes() {
        assert_eq!(axis(9.99), (10.0, 2.0));
        assert_eq!(axis(29.99), (30.0, 5.0));
        assert_eq!(axis(48.5), (50.0, 10.0));
        assert_eq!(axis(19.1), (20.0, 5.0));
        assert_eq!(axis(0.0), (1.0, 0.2));
        assert_eq!(axis(f64::NAN), (1.0, 0.2));
    }

    #[test]
    fn renders_lines_events_and_escapes() {
        let s = [Sample { start: 0.0, end: 0.1, bps: 10e6 }, Sample { start: 0.1, end: 0.2, bps: 20e6 }];
        let ev = [AppliedEvent { link: 1, action: Action::Cut, planned_s: 0.1, at_s: 0.1 }];
        let svg = render("a <b>", &[Line { name: "mptcp", series: &s }], &ev);
        assert!(svg.starts_with("<svg"));
        assert!(svg.trim_end().ends_with("</svg>"));
        assert!(svg.contains("<polyline"));
        assert!(svg.contains("cut link 1"));
        assert!(svg.contains("a &lt;b&gt;"));
        let empty = render("empty", &[], &[]);
        assert!(!empty.contains("<polyline"));
    }
}
