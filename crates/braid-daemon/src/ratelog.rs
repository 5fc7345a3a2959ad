//! Rate-limited logging. Under attack or overload one event can repeat thousands of times a
//! second; the log gets the first occurrence, then at most one line per interval saying how
//! many were left out.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// One kind of event to log at most once per interval.
pub struct RateLimited {
    interval: Duration,
    /// When an occurrence was last logged, and how many were left out since.
    state: Mutex<(Option<Instant>, u64)>,
}

impl RateLimited {
    /// At most one log line per `interval`.
    pub const fn new(interval: Duration) -> Self {
        RateLimited { interval, state: Mutex::new((None, 0)) }
    }

    /// Counts one occurrence. `Some(left_out)` when this one should be logged, `left_out`
    /// being the occurrences since the last logged one that were not.
    pub fn hit(&self) -> Option<u64> {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        match s.0 {
            Some(t) if now.duration_since(t) < self.interval => {
                s.1 += 1;
                None
            }
            _ => {
                let left_out = s.1;
                *s = (Some(now), 0);
                Some(left_out)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_is_logged_then_the_rest_are_counted() {
        let r = RateLimited::new(Duration::from_secs(3600));
        assert_eq!(r.hit(), Some(0));
        for _ in 0..5 {
            assert_eq!(r.hit(), None);
        }
        let r = RateLimited::new(Duration::from_millis(20));
        assert_eq!(r.hit(), Some(0));
        assert_eq!(r.hit(), None);
        assert_eq!(r.hit(), None);
        std::thread::sleep(Duration::from_millis(30));
        assert_eq!(r.hit(), Some(2), "the next line says how many were left out");
    }
}
