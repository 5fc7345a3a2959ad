//! The demo's figures from a download's progress: steady-state goodput over a window, the
//! times to recover after a cut and to be back at full rate after the restore (90% of the
//! capacity, the lab's share, over a 0.5 s window), and when a restored link carries data.

use braid_lab::iperf::Sample;
use braid_lab::metrics::RECOVERED_SHARE;

/// The window over which recovery is judged, s.
pub const WINDOW_S: f64 = 0.5;
/// The step between the windows tried, s.
const STEP_S: f64 = 0.1;

/// Bytes received over time: `(seconds since the start, bytes so far)`, in time order.
#[derive(Debug, Default, Clone)]
pub struct Timeline {
    samples: Vec<(f64, u64)>,
}

impl Timeline {
    /// Adds a sample; one that goes back in time is ignored.
    pub fn push(&mut self, t: f64, bytes: u64) {
        if self.samples.last().is_none_or(|&(last, _)| t > last) {
            self.samples.push((t, bytes));
        }
    }

    /// The time of the last sample.
    pub fn end(&self) -> f64 {
        self.samples.last().map_or(0.0, |s| s.0)
    }

    /// Bytes received by `t`, interpolated between samples.
    fn bytes_at(&self, t: f64) -> f64 {
        let i = self.samples.partition_point(|s| s.0 < t);
        match (i.checked_sub(1).map(|j| self.samples[j]), self.samples.get(i)) {
            (Some((t0, b0)), Some(&(t1, b1))) => b0 as f64 + (b1 as f64 - b0 as f64) * (t - t0) / (t1 - t0),
            (None, Some(&(_, b))) => b as f64,
            (Some((_, b)), None) => b as f64,
            (None, None) => 0.0,
        }
    }

    /// Goodput between `a` and `b`, bit/s (0 for an empty span).
    pub fn goodput(&self, a: f64, b: f64) -> f64 {
        if b <= a {
            return 0.0;
        }
        (self.bytes_at(b) - self.bytes_at(a)) * 8.0 / (b - a)
    }

    /// Consecutive samples as intervals of goodput.
    fn intervals(&self) -> Vec<Sample> {
        self.samples
            .windows(2)
            .map(|w| Sample {
                start: w[0].0,
                end: w[1].0,
                bps: (w[1].1 - w[0].1) as f64 * 8.0 / (w[1].0 - w[0].0),
            })
            .collect()
    }

    /// Seconds from `at` to the end of the first sampling interval after it with at least
    /// `bps` (a link that carries data again; its resolution is the sampling interval).
    pub fn first_reaching(&self, at: f64, bps: f64) -> Option<f64> {
        self.intervals().into_iter().find(|s| s.start + 1e-6 >= at && s.bps >= bps).map(|s| s.end - at)
    }

    /// Seconds from `at` until goodput is back: the start of the first [`WINDOW_S`] window,
    /// in steps of [`STEP_S`] and inside `[at, until]`, whose goodput reaches 90% of
    /// `capacity_bps`; `None` when none does. A window of half a second, not single samples: a
    /// receiver of several paths delivers in bursts, held up now and then by a loss on the
    /// slowest path, so 100 ms samples swing between a third and twice the mean even at
    /// steady state.
    pub fn time_to(&self, at: f64, until: f64, capacity_bps: f64) -> Option<f64> {
        (0..)
            .map(|k| at + k as f64 * STEP_S)
            .take_while(|t| t + WINDOW_S <= until + 1e-6)
            .find(|&t| self.goodput(t, t + WINDOW_S) >= RECOVERED_SHARE * capacity_bps)
            .map(|t| t - at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 100 ms samples at `rates` bit/s each.
    fn timeline(rates: &[f64]) -> Timeline {
        let mut tl = Timeline::default();
        let mut bytes = 0.0;
        tl.push(0.0, 0);
        for (i, r) in rates.iter().enumerate() {
            bytes += r / 8.0 * 0.1;
            tl.push((i + 1) as f64 * 0.1, bytes as u64);
        }
        tl
    }

    #[test]
    fn goodput_over_a_window_interpolates_between_samples() {
        let tl = timeline(&[8e6; 20]);
        assert!((tl.goodput(0.25, 1.75) - 8e6).abs() < 1e3);
        assert_eq!(tl.goodput(1.0, 1.0), 0.0);
        let mut back = tl.clone();
        back.push(0.5, 1);
        assert_eq!(back.end(), 2.0, "a sample back in time is ignored");
    }

    #[test]
    fn recovery_and_restore_times() {
        // 1 s at 50, cut at 1.0: 0.3 s of nothing, then 15 (the survivors) until the restore
        // at 3.0, then 0.4 s at 15 and back to 50.
        let mut rates = vec![50e6; 10];
        rates.extend([0.0; 3]);
        rates.extend([15e6; 17]);
        rates.extend([15e6; 4]);
        rates.extend([50e6; 20]);
        let tl = timeline(&rates);
        let recover = tl.time_to(1.0, 3.0, 15e6).unwrap();
        // 0.3 s of stall: a 0.5 s window that starts 0.3 s in has 90% of the survivors' rate.
        assert!((0.15..=0.35).contains(&recover), "{recover}");
        let back = tl.time_to(3.0, 5.4, 50e6).unwrap();
        assert!((0.25..=0.45).contains(&back), "{back}");
        // Never back to full before the end of the window.
        assert_eq!(tl.time_to(1.0, 3.0, 50e6), None);
        // The first 100 ms at ≥ 40 after the restore ends 0.5 s after it.
        let first = tl.first_reaching(3.0, 40e6).unwrap();
        assert!((first - 0.5).abs() < 1e-6, "{first}");
        assert_eq!(tl.first_reaching(1.0, 60e6), None);
    }
}
