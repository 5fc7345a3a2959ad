//! Figures derived from measurements: recovery after a link cut, the median of repeats, and
//! the capacity a set of links offers.
//!
//! Recovery time (issue 5): from the cut until the per-interval goodput *stays* at or above 90%
//! of the surviving capacity. Concretely, over the intervals that start at or after the event
//! and end by the next event (or the end of the test), it is the start of the earliest
//! interval from which every later interval meets the target, minus the event time. A target
//! first met in the last half second of the window does not count as recovered.

use crate::iperf::{Sample, INTERVAL_S};

/// Share of the capacity that counts as recovered.
pub const RECOVERED_SHARE: f64 = 0.9;
/// Shortest stretch at the target that counts as "stays".
pub const MIN_STABLE_S: f64 = 0.5;
/// Neighbours on each side in the 0.5 s averaged figures (2 + 1 + 2 intervals of 100 ms):
/// multipath receivers deliver in bursts (reordering across paths), so single 100 ms
/// intervals flap even at full rate.
pub const AVERAGE_HALF_WINDOW: usize = 2;
/// TCP payload per htb-shaped byte: 1448 payload bytes per 1514-byte frame (with timestamps).
pub const TCP_EFFICIENCY: f64 = 1448.0 / 1514.0;

/// Seconds from `at` until goodput stays at or above `target_bps`, looking at intervals inside
/// `[at, until]`. `None` when it never does (or only in the window's last half second).
pub fn time_to_target(series: &[Sample], at: f64, until: f64, target_bps: f64) -> Option<f64> {
    const EPS: f64 = 1e-6;
    let window: Vec<&Sample> = series
        .iter()
        .filter(|s| s.start + EPS >= at && s.end <= until + EPS)
        .filter(|s| s.end - s.start >= INTERVAL_S * 0.5)
        .collect();
    let last = window.last()?;
    let first_good = match window.iter().rposition(|s| s.bps < target_bps) {
        None => 0,
        Some(j) => j + 1,
    };
    let stable = window.get(first_good)?;
    let window_len = until - at;
    let need = MIN_STABLE_S.min(window_len / 2.0);
    if last.end - stable.start + EPS < need {
        return None;
    }
    Some((stable.start - at).max(0.0))
}

/// Centred moving average: each sample averaged (weighted by interval length) with up to
/// `half` neighbours on each side, never reaching outside `series`. Callers pass only the
/// samples between two link events, so no pre-event goodput leaks in and there is no lag.
pub fn centred_average(series: &[Sample], half: usize) -> Vec<Sample> {
    (0..series.len())
        .map(|i| {
            let part = &series[i.saturating_sub(half)..(i + half + 1).min(series.len())];
            let secs: f64 = part.iter().map(|s| s.end - s.start).sum();
            let bits: f64 = part.iter().map(|s| s.bps * (s.end - s.start)).sum();
            Sample {
                start: series[i].start,
                end: series[i].end,
                bps: if secs > 0.0 { bits / secs } else { 0.0 },
            }
        })
        .collect()
}

/// The index of the median value (the lower one for an even count); `None` when empty.
pub fn median_index(values: &[f64]) -> Option<usize> {
    if values.is_empty() {
        return None;
    }
    let mut idx: Vec<usize> = (0..values.len()).collect();
    idx.sort_by(|&a, &b| values[a].total_cmp(&values[b]));
    Some(idx[(values.len() - 1) / 2])
}

/// Ratio `a / b`, `None` when `b` is not positive.
pub fn ratio(a: f64, b: f64) -> Option<f64> {
    (b > 0.0).then(|| a / b)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// 100 ms intervals of `values` bit/s from t = 0 (shared with `recovery`'s tests).
    pub(crate) fn series(values: &[f64]) -> Vec<Sample> {
        values
            .iter()
            .enumerate()
            .map(|(i, &bps)| Sample { start: i as f64 * 0.1, end: (i + 1) as f64 * 0.1, bps })
            .collect()
    }

    #[test]
    fn recovery_counts_from_the_cut_to_the_stable_stretch() {
        // 1 s at 10, cut at 1.0: 0.3 s of nothing, a blip, then 5 (the survivor) for 2 s.
        let mut v = vec![10.0; 10];
        v.extend([0.0, 0.0, 4.6, 1.0]);
        v.extend([5.0; 20]);
        let s = series(&v);
        let t = time_to_target(&s, 1.0, 3.4, 0.9 * 5.0).unwrap();
        assert!((t - 0.4).abs() < 1e-9, "{t}");
    }

    #[test]
    fn no_dip_means_zero() {
        let s = series(&[5.0; 30]);
        assert_eq!(time_to_target(&s, 1.0, 3.0, 4.5), Some(0.0));
    }

    #[test]
    fn never_recovering_is_none() {
        let mut v = vec![10.0; 10];
        v.extend([1.0; 20]);
        assert_eq!(time_to_target(&series(&v), 1.0, 3.0, 4.5), None);
        // Recovering only in the last 0.2 s is not "staying".
        let mut v = vec![1.0; 28];
        v.extend([5.0; 2]);
        assert_eq!(time_to_target(&series(&v), 0.0, 3.0, 4.5), None);
        assert_eq!(time_to_target(&[], 0.0, 3.0, 4.5), None);
    }

    #[test]
    fn averages_are_centred_and_clipped() {
        let s = series(&[0.0, 10.0, 20.0, 30.0]);
        let a = centred_average(&s, 1);
        let v: Vec<f64> = a.iter().map(|x| (x.bps * 1e6).round() / 1e6).collect();
        assert_eq!(v, [5.0, 10.0, 20.0, 25.0]);
        let same = centred_average(&s, 0);
        assert!(same.iter().zip(&s).all(|(a, b)| (a.bps - b.bps).abs() < 1e-9));
    }

    #[test]
    fn medians() {
        assert_eq!(median_index(&[3.0, 1.0, 2.0]), Some(2));
        assert_eq!(median_index(&[4.0, 1.0]), Some(1));
        assert_eq!(median_index(&[]), None);
        assert_eq!(ratio(1.0, 0.0), None);
        assert_eq!(ratio(1.0, 2.0), Some(0.5));
    }
}
