//! What `braid demo` reports: the table and the `--json` document.

use braid_sim::units::format_rate;
use serde::Serialize;

/// One path's share of the bonded steady state.
#[derive(Debug, Serialize)]
pub struct PathRow {
    /// The emulated link.
    pub link: String,
    /// Its goodput over the steady-state window, bit/s.
    pub goodput_bps: f64,
}

/// The demo's figures (`--json`).
#[derive(Debug, Serialize)]
pub struct DemoReport {
    /// Bonded goodput at steady state (all links up, after the start-up), bit/s.
    pub total_goodput_bps: f64,
    /// The best link alone at steady state, same emulation, bit/s.
    pub best_single_bps: f64,
    /// `total_goodput_bps / best_single_bps`.
    pub ratio: f64,
    /// The links' rates added up (UDP payload, as the emulator shapes them), bit/s.
    pub sum_of_links_bps: f64,
    /// `total_goodput_bps / sum_of_links_bps`.
    pub share_of_sum: f64,
    /// The whole bonded download arrived byte for byte (SHA-256), and ended cleanly.
    pub intact: bool,
    /// Bytes of the download.
    pub bytes: u64,
    /// Its duration, s (start-up, cut and restore included).
    pub seconds: f64,
    /// Its average goodput, bit/s.
    pub download_goodput_bps: f64,
    /// The link that was cut.
    pub cut_link: String,
    /// How long it was cut, s.
    pub cut_seconds: f64,
    /// Goodput while it was cut, bit/s.
    pub cut_goodput_bps: f64,
    /// From the cut until a 0.5 s window of goodput reaches 90% of the surviving links' part of
    /// the steady state, s; `None`: not before the restore.
    pub recover_s: Option<f64>,
    /// From the restore until the restored link carries data again (a 100 ms sample with ≥ 25%
    /// of its rate towards the client), s; `None`: not before the download ended.
    pub link_back_s: Option<f64>,
    /// From the restore until a 0.5 s window of goodput reaches 90% of the steady state, s;
    /// `None`: not within the observation after it.
    pub back_to_full_s: Option<f64>,
    /// Each path's goodput at steady state.
    pub paths: Vec<PathRow>,
}

fn seconds(v: Option<f64>) -> String {
    v.map_or_else(|| "not reached".into(), |s| format!("{s:.2} s"))
}

impl DemoReport {
    /// The table printed after the live view.
    pub fn table(&self, fastest: usize) -> String {
        let mut o = String::new();
        let mut line = |label: String, value: String, note: String| {
            o += format!("{label:<30} {value:>14}   {note}").trim_end();
            o.push('\n');
        };
        line("path (steady state)".into(), "goodput".into(), String::new());
        for (i, p) in self.paths.iter().enumerate() {
            line(format!("{i}: {}", p.link), format_rate(p.goodput_bps), String::new());
        }
        line(
            "bonded (steady state)".into(),
            format_rate(self.total_goodput_bps),
            format!(
                "{:.0}% of the links' sum, {}",
                self.share_of_sum * 100.0,
                format_rate(self.sum_of_links_bps)
            ),
        );
        line("best single link".into(), format_rate(self.best_single_bps), format!("link {fastest} alone"));
        line("ratio".into(), format!("{:.2}", self.ratio), "bonded / best single link".into());
        line(
            format!("link {fastest} cut for {:.0} s", self.cut_seconds),
            format_rate(self.cut_goodput_bps),
            "goodput while cut".into(),
        );
        line(
            "  recovered after".into(),
            seconds(self.recover_s),
            "≥ 90% of the surviving links over 0.5 s".into(),
        );
        line(
            format!("  link {fastest} carries data after"),
            seconds(self.link_back_s),
            "after the restore (100 ms samples)".into(),
        );
        line(
            "  back to full after restore".into(),
            seconds(self.back_to_full_s),
            "≥ 90% of steady state over 0.5 s".into(),
        );
        line(
            "download".into(),
            format_rate(self.download_goodput_bps),
            format!("{:.1} MB in {:.1} s, cut and restore included", self.bytes as f64 / 1e6, self.seconds),
        );
        line("intact (SHA-256)".into(), if self.intact { "yes" } else { "NO" }.into(), String::new());
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_has_the_headline_and_the_cut_as_their_own_figures() {
        let r = DemoReport {
            total_goodput_bps: 52e6,
            best_single_bps: 38e6,
            ratio: 52.0 / 38.0,
            sum_of_links_bps: 55e6,
            share_of_sum: 52.0 / 55.0,
            intact: true,
            bytes: 80_000_000,
            seconds: 13.2,
            download_goodput_bps: 48e6,
            cut_link: "40mbit/15ms".into(),
            cut_seconds: 2.0,
            cut_goodput_bps: 14e6,
            recover_s: Some(0.31),
            link_back_s: Some(0.24),
            back_to_full_s: None,
            paths: vec![PathRow { link: "40mbit/15ms".into(), goodput_bps: 38e6 }],
        };
        let t = r.table(0);
        assert!(
            t.contains("bonded (steady state)") && t.contains("52.00 Mbit/s") && t.contains("95% of"),
            "{t}"
        );
        assert!(t.contains("ratio") && t.contains("1.37"), "{t}");
        assert!(t.contains("≥ 90% of steady state over 0.5 s"), "{t}");
        assert!(t.contains("0.31 s") && t.contains("0.24 s") && t.contains("not reached"), "{t}");
        assert!(t.contains("80.0 MB in 13.2 s"), "{t}");
        let v = serde_json::to_value(&r).unwrap();
        for k in [
            "total_goodput_bps",
            "best_single_bps",
            "ratio",
            "intact",
            "recover_s",
            "link_back_s",
            "back_to_full_s",
        ] {
            assert!(v.get(k).is_some(), "{k}");
        }
        assert!(v["back_to_full_s"].is_null());
    }
}
