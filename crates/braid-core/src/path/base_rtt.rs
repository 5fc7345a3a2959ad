//! A path's base round trip for sizing its pipe: the path's RTT floor
//! ([`crate::path::rtt::RttEstimator::floor`]: the minimum RTT of RFC 9002 §5.2, without a
//! queue that stood when the ACKs changed route), raised when the path's base delay rose for
//! good. (Below, "the lifetime minimum" is that floor.)
//!
//! The lifetime minimum never follows a rise: EDPF, which lets a path hold 1.5 × rate × the
//! minimum in flight, then starves the path, measures the lower delivery rate, and shrinks
//! its bound with it (a 20 Mbit/s path whose RTT rose from 20 to 80 ms ended at 0.5 Mbit/s).
//! A windowed minimum (BBR's, Cardwell et al. 2016) follows a rise, but also counts a
//! standing queue: at 200 kbit/s one queued 1500-byte packet is 60 ms, more than many paths'
//! propagation delay, and sizing the pipe from it raised EDPF's reorder on seed 004's mixes.
//!
//! So a rise counts only when it is more than the sender's own packets could have queued:
//! every sample (less its ACK delay, RFC 9002 §5.3) for [`RISE_HOLD`] stays above the base by
//! more than [`slack`] — the larger of half the base (EDPF's queue allowance) and the bytes in
//! flight drained at the path's rate, plus [`QUEUED_PACKETS`] packets. (A burst such as the
//! initial window queues 2.4 s at 50 kbit/s; the bytes in flight account for it.) The base then
//! becomes the smallest of those samples, and follows lower samples down again (a delay that
//! falls back, or a queue that drains).
//!
//! EDPF reads it ([`crate::scheduler::PathView::min_rtt`]), for its in-flight bound and for
//! each path's one-way delay; the congestion controllers and the loss timers keep the lifetime
//! minimum.
//!
//! Known cost: a queue that other flows keep standing on a shared bottleneck looks the same
//! as a rise, so the base follows it and EDPF's bound no longer holds a session to its share.
//! 100 sessions through one 200 Mbit/s link (`braid-emu`'s `many_sessions`, real sockets):
//! largest deviation from the mean 64–104 % with this base, 10–15 % with the lifetime minimum
//! (docs/benchmarks-notes.md). Following only step rises (a floor that climbs at most as fast
//! as a queue can build) gave 8.7–9.1 % when all sessions start together, but 3643 % when they
//! start 10 ms apart: latecomers' lifetime minimum holds the others' queue, the first sessions'
//! does not, and the bound then starves the first. Following the queue keeps every session's
//! base near one value.

use crate::time::Timestamp;
use std::time::Duration;

/// How long every RTT sample must stay above the base plus the slack for a rise to count.
pub const RISE_HOLD: Duration = Duration::from_secs(1);

/// Packets at the path's rate the slack allows beyond its queue term: the three packets of
/// EDPF's in-flight bound plus one in transmission.
pub const QUEUED_PACKETS: f64 = 4.0;

/// How far above the base a sample may be without counting toward a rise: the larger of half
/// the base and `in_flight` bytes drained at `rate` bytes/s, plus [`QUEUED_PACKETS`] packets
/// of `mtu` bytes.
pub fn slack(base: Duration, in_flight: u64, rate: f64, mtu: usize) -> Duration {
    let rate = rate.max(1.0);
    let queue = Duration::from_secs_f64(in_flight as f64 / rate).max(base / 2);
    queue + Duration::from_secs_f64(QUEUED_PACKETS * mtu as f64 / rate)
}

/// The base RTT above the lifetime minimum, if a rise was seen (see the module docs).
#[derive(Debug, Clone, Default)]
pub struct BaseRtt {
    /// The base after a rise: the smallest sample since (None: the lifetime minimum).
    risen: Option<Duration>,
    /// Since when every sample has been above the base plus the slack, and the smallest.
    above: Option<(Timestamp, Duration)>,
}

impl BaseRtt {
    /// The base RTT given the floor `min`.
    pub fn get(&self, min: Duration) -> Duration {
        self.risen.map_or(min, |r| r.max(min))
    }

    /// An RTT sample `rtt` (ACK delay removed) at `now`; `min` is the floor,
    /// `in_flight` the bytes in flight before the ACK, `rate` the path's rate in bytes/s and
    /// `mtu` its packet size.
    pub fn on_sample(
        &mut self,
        now: Timestamp,
        rtt: Duration,
        min: Duration,
        in_flight: u64,
        rate: f64,
        mtu: usize,
    ) {
        if let Some(r) = self.risen {
            self.risen = (rtt > min).then_some(r.min(rtt));
        }
        let base = self.get(min);
        if rtt <= base + slack(base, in_flight, rate, mtu) {
            self.above = None;
            return;
        }
        let (since, least) = match self.above {
            Some((t, m)) => (t, m.min(rtt)),
            None => (now, rtt),
        };
        if now >= since + RISE_HOLD {
            self.risen = Some(least);
            self.above = None;
        } else {
            self.above = Some((since, least));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    fn at(v: u64) -> Timestamp {
        Timestamp::ZERO + ms(v)
    }

    #[test]
    fn a_rise_counts_once_it_holds_beyond_what_the_bound_could_queue() {
        let mut b = BaseRtt::default();
        // 20 Mbit/s, 1500-byte packets: 0.6 ms each; slack 10 + 2.4 ms over a 20 ms base.
        let rate = 2.5e6;
        for i in 0..50 {
            b.on_sample(at(i * 20), ms(32), ms(20), 0, rate, 1500);
        }
        assert_eq!(b.get(ms(20)), ms(20), "a queue within the slack is no rise");
        // The base delay rises to 80 ms: after a second of samples above 32.4 ms, it counts.
        for i in 0..50 {
            b.on_sample(at(1000 + i * 20), ms(81 + i % 3), ms(20), 0, rate, 1500);
        }
        assert_eq!(b.get(ms(20)), ms(20));
        b.on_sample(at(2000), ms(83), ms(20), 0, rate, 1500);
        assert_eq!(b.get(ms(20)), ms(81));
        // It follows lower samples down, to the lifetime minimum at most.
        b.on_sample(at(2100), ms(60), ms(20), 0, rate, 1500);
        assert_eq!(b.get(ms(20)), ms(60));
        b.on_sample(at(2200), ms(20), ms(20), 0, rate, 1500);
        assert_eq!(b.get(ms(20)), ms(20));
    }

    #[test]
    fn a_standing_packet_on_a_slow_path_is_no_rise() {
        let mut b = BaseRtt::default();
        // 200 kbit/s: a packet is 60 ms, more than the 40 ms base; two queued stay in the slack.
        for i in 0..100 {
            b.on_sample(at(i * 100), ms(40 + 120), ms(40), 0, 25e3, 1500);
        }
        assert_eq!(b.get(ms(40)), ms(40));
        // 50 kbit/s after the initial window (10 packets, 2.4 s of queue): the bytes in flight
        // account for samples of up to 2.4 s.
        let mut b = BaseRtt::default();
        for i in 0..30 {
            b.on_sample(at(i * 100), ms(2200), ms(56), 15_000, 6250.0, 1500);
        }
        assert_eq!(b.get(ms(56)), ms(56));
        // One sample back within the slack restarts the hold.
        let mut b = BaseRtt::default();
        for i in 0..30 {
            let rtt = if i == 15 { ms(15) } else { ms(40) };
            b.on_sample(at(i * 50), rtt, ms(10), 0, 2.5e6, 1500);
        }
        assert_eq!(b.get(ms(10)), ms(10));
    }
}
