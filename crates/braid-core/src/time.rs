//! Time as the core sees it: a monotonic [`Timestamp`] handed in by the caller.
//!
//! The core never reads a clock. Drivers convert their clock (tokio `Instant`, the simulator's
//! virtual time) into a `Timestamp` counted from an epoch of their choosing; only differences
//! between timestamps carry meaning.

use std::ops::{Add, AddAssign, Sub};
use std::time::Duration;

/// A point in time, in nanoseconds since an arbitrary epoch chosen by the driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Timestamp(u64);

impl Timestamp {
    /// The epoch itself.
    pub const ZERO: Timestamp = Timestamp(0);

    /// A timestamp `nanos` nanoseconds after the epoch.
    pub const fn from_nanos(nanos: u64) -> Self {
        Timestamp(nanos)
    }

    /// A timestamp `d` after the epoch.
    pub fn from_duration(d: Duration) -> Self {
        Timestamp(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
    }

    /// Nanoseconds since the epoch.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }

    /// Microseconds since the epoch (the unit of an ACK_TS timestamp).
    pub const fn as_micros(self) -> u64 {
        self.0 / 1_000
    }

    /// Time since the epoch.
    pub const fn as_duration(self) -> Duration {
        Duration::from_nanos(self.0)
    }

    /// `self - earlier`, or zero when `earlier` is later.
    pub fn saturating_since(self, earlier: Timestamp) -> Duration {
        Duration::from_nanos(self.0.saturating_sub(earlier.0))
    }
}

impl Add<Duration> for Timestamp {
    type Output = Timestamp;
    fn add(self, d: Duration) -> Timestamp {
        let n = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        Timestamp(self.0.saturating_add(n))
    }
}

impl AddAssign<Duration> for Timestamp {
    fn add_assign(&mut self, d: Duration) {
        *self = *self + d;
    }
}

impl Sub<Duration> for Timestamp {
    type Output = Timestamp;
    fn sub(self, d: Duration) -> Timestamp {
        let n = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        Timestamp(self.0.saturating_sub(n))
    }
}

impl Sub<Timestamp> for Timestamp {
    type Output = Duration;
    /// Saturating difference: zero when `rhs` is later than `self`.
    fn sub(self, rhs: Timestamp) -> Duration {
        self.saturating_since(rhs)
    }
}

/// The earlier of two optional deadlines (None means "no deadline").
pub fn earliest(a: Option<Timestamp>, b: Option<Timestamp>) -> Option<Timestamp> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, None) => a,
        (None, b) => b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_saturates() {
        let t = Timestamp::from_nanos(5);
        assert_eq!(t - Timestamp::from_nanos(10), Duration::ZERO);
        assert_eq!((t - Duration::from_secs(1)).as_nanos(), 0);
        assert_eq!(Timestamp::from_nanos(u64::MAX) + Duration::from_secs(1), Timestamp::from_nanos(u64::MAX));
        assert_eq!(earliest(None, Some(t)), Some(t));
        assert_eq!(earliest(Some(Timestamp::ZERO), Some(t)), Some(Timestamp::ZERO));
    }
}
