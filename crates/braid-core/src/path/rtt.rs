//! Round-trip time estimation per path (RFC 9002 §5).

use smallvec::SmallVec;
use std::time::Duration;

pub use crate::timing::{GRANULARITY, INITIAL_RTT};

/// Smoothed RTT, variance, minimum and latest sample of one path.
#[derive(Debug, Clone)]
pub struct RttEstimator {
    latest: Duration,
    smoothed: Option<Duration>,
    var: Duration,
    /// The minimum over the current return route's samples.
    min: Duration,
    /// The return route (the path that brought the ACK) of the latest sample, and each
    /// route's minimum: a path whose ACKs moved from a 5 ms carrier back to itself must not
    /// keep the carrier's minimum, or the in-flight bound EDPF derives from it cannot grow (a
    /// 50 Mbit/s, 20 ms path was held at 22 Mbit/s).
    route: Option<u8>,
    /// Each route's minimum, and its floor once it has been the current route.
    routes: SmallVec<[(u8, Duration, Option<Duration>); 4]>,
    /// The route of the next sample, if the caller knows it.
    pending_route: Option<u8>,
    /// Consecutive samples that came back on another route than the current one.
    elsewhere: u32,
    /// The return leg of the next sample's route, and of the current route, if known.
    pending_leg: Option<Duration>,
    leg: Option<Duration>,
    /// The minimum moved only by the return legs of the routes ([`Self::floor`]).
    floor: Duration,
}

/// Consecutive samples on another return route before the minimum follows it (an occasional
/// ACK on another path — a liveness copy — must not swap the minimum back and forth: that
/// raised EDPF's reorder on seed 004's Table III mix from 5 to 16 packets).
const ROUTE_SWITCH_SAMPLES: u32 = 8;

impl Default for RttEstimator {
    fn default() -> Self {
        RttEstimator {
            latest: INITIAL_RTT,
            smoothed: None,
            var: INITIAL_RTT / 2,
            min: INITIAL_RTT,
            route: None,
            routes: SmallVec::new(),
            pending_route: None,
            elsewhere: 0,
            pending_leg: None,
            leg: None,
            floor: INITIAL_RTT,
        }
    }
}

impl RttEstimator {
    /// True once a sample has been taken.
    pub fn has_sample(&self) -> bool {
        self.smoothed.is_some()
    }

    /// Smoothed RTT (the initial RTT before any sample).
    pub fn smoothed(&self) -> Duration {
        self.smoothed.unwrap_or(INITIAL_RTT)
    }

    /// RTT variation.
    pub fn var(&self) -> Duration {
        self.var
    }

    /// The next sample's ACK came back on path `route`, whose return leg (half its round
    /// trip) is `leg`, if known.
    pub fn next_sample_route(&mut self, route: u8, leg: Option<Duration>) {
        self.pending_route = Some(route);
        self.pending_leg = leg;
    }

    /// The path the ACKs of this path come back on (settled over several samples), if known.
    pub fn route(&self) -> Option<u8> {
        self.route
    }

    /// Smallest sample seen on the current return route.
    pub fn min(&self) -> Duration {
        self.min
    }

    /// The current return route's minimum, not raised by a queue that stood when the ACKs
    /// moved to it: on a move to a route not seen before, the old floor moved by how much
    /// longer the new route's return leg is than the old one's (never lower than both the old
    /// floor and the samples), where the route's samples exceed that by more than the legs
    /// differ and an eighth of the floor (the excess is queue); else the minimum. A route seen
    /// before brings back its own floor. What EDPF sizes a path's pipe and one-way delay from
    /// ([`crate::path::base_rtt`]).
    ///
    /// Like the minimum it only falls afterwards, so a leg misjudged by more than that
    /// tolerance stays in it; only `base_rtt`'s rise rule lifts it.
    ///
    /// Taken as they came, the samples counted a 200 kbit/s path's standing queue (9 packets,
    /// 430 ms) as base delay when its ACKs moved from a 5 Mbit/s path to the path itself:
    /// EDPF expected that path's packets about 170 ms before they came, and the receiver held
    /// 30–78 packets for 5 s (`braid sim --link 5mbit/150ms --link 20kbit/20ms --link
    /// 20kbit/20ms --link 200kbit/150ms --scheduler edpf`, at 18.9 s). The minimum stays as it
    /// was for its other readers (the loss judge, the delivery rate).
    pub fn floor(&self) -> Duration {
        self.floor
    }

    /// The floor measured while the ACKs came back on `route`, if they ever did.
    fn route_floor(&self, route: u8) -> Option<Duration> {
        self.routes.iter().find(|(k, ..)| *k == route).and_then(|(.., f)| *f)
    }

    /// The current route's return leg, if known.
    pub fn leg(&self) -> Option<Duration> {
        self.leg
    }

    /// The path's forward leg: its floor less the current route's return leg, if known. The
    /// return leg of the path's own route when its ACKs come back on itself (taken as
    /// symmetric).
    pub fn forward_leg(&self) -> Option<Duration> {
        self.leg.map(|l| self.floor.saturating_sub(l))
    }

    /// Latest sample.
    pub fn latest(&self) -> Duration {
        self.latest
    }

    /// RFC 9002 §6.2.1: PTO = smoothed_rtt + max(4*rttvar, kGranularity) + max_ack_delay.
    pub fn pto_base(&self, max_ack_delay: Duration) -> Duration {
        self.smoothed() + (4 * self.var).max(GRANULARITY) + max_ack_delay
    }

    /// Adds a sample (RFC 9002 §5.3).
    pub fn update(&mut self, latest: Duration, ack_delay: Duration) {
        self.latest = latest;
        let leg = self.pending_leg.take();
        if let Some(r) = self.pending_route.take() {
            if self.route.is_some_and(|c| c != r) && self.smoothed.is_some() {
                // A sample of another route: it counts towards that route's minimum only,
                // until enough in a row say the ACKs now come back that way.
                let m =
                    self.routes.iter().find(|(k, ..)| *k == r).map_or(latest, |(_, m, _)| (*m).min(latest));
                self.elsewhere += 1;
                if self.elsewhere < ROUTE_SWITCH_SAMPLES {
                    self.set_route_min(r, m);
                    self.update_smoothed(latest, ack_delay);
                    return;
                }
                self.floor = match (self.route_floor(r), self.leg, leg) {
                    (Some(f), _, _) => f.min(m),
                    (None, Some(old), Some(new)) => {
                        let moved = (self.floor + new).saturating_sub(old).max(self.floor.min(m));
                        // Legs are estimates (a carrier's round trip holds its packets'
                        // transmission): samples above by more than the legs differ, and
                        // than a queue the loss judge would still call none, count as one.
                        if m > moved + new.abs_diff(old).max(self.floor / 8) {
                            moved
                        } else {
                            m
                        }
                    }
                    (None, _, _) => m,
                };
                self.min = m;
            }
            self.elsewhere = 0;
            self.route = Some(r);
            self.leg = leg;
        }
        match self.smoothed {
            None => {
                // "On the first RTT sample ... min_rtt = latest_rtt, smoothed_rtt = latest_rtt,
                //  rttvar = latest_rtt / 2"
                self.min = latest;
                self.floor = latest;
                self.smoothed = Some(latest);
                self.var = latest / 2;
                self.remember_route();
            }
            Some(_) => {
                self.min = self.min.min(latest);
                self.floor = self.floor.min(self.min);
                self.remember_route();
                self.update_smoothed(latest, ack_delay);
            }
        }
    }

    /// RFC 9002 §5.3 after the first sample: "adjusted_rtt = latest_rtt; if (latest_rtt >=
    /// min_rtt + ack_delay): adjusted_rtt = latest_rtt - ack_delay".
    fn update_smoothed(&mut self, latest: Duration, ack_delay: Duration) {
        let srtt = self.smoothed();
        let adjusted = self.adjusted(latest, ack_delay);
        let diff = srtt.abs_diff(adjusted);
        self.var = (3 * self.var + diff) / 4;
        self.smoothed = Some((7 * srtt + adjusted) / 8);
    }

    /// `latest` less the peer's `ack_delay`, unless that would take it below the minimum
    /// (RFC 9002 §5.3: a delay the peer overstates must not make a sample look shorter than
    /// the path can carry it).
    pub fn adjusted(&self, latest: Duration, ack_delay: Duration) -> Duration {
        if latest >= self.min + ack_delay {
            latest - ack_delay
        } else {
            latest
        }
    }

    /// Forgets the minimum so it can follow a path whose base delay grew (used after a path
    /// comes back from a long outage).
    pub fn reset_min(&mut self) {
        self.min = self.latest;
        self.floor = self.latest;
        self.routes.clear();
        self.remember_route();
    }

    fn remember_route(&mut self) {
        if let Some(r) = self.route {
            self.set_route_min(r, self.min);
            if let Some(e) = self.routes.iter_mut().find(|(k, ..)| *k == r) {
                e.2 = Some(self.floor);
            }
        }
    }

    fn set_route_min(&mut self, r: u8, min: Duration) {
        match self.routes.iter_mut().find(|(k, ..)| *k == r) {
            Some(e) => e.1 = min,
            None => self.routes.push((r, min, None)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_minimum_follows_the_return_route() {
        let ms = Duration::from_millis;
        let mut r = RttEstimator::default();
        // ACKs first ride a 5 ms carrier (path 1): 25 ms.
        r.next_sample_route(1, None);
        r.update(ms(25), Duration::ZERO);
        r.next_sample_route(1, None);
        r.update(ms(27), Duration::ZERO);
        assert_eq!(r.min(), ms(25));
        // One ACK on the path itself (a liveness copy) does not move the minimum.
        r.next_sample_route(0, None);
        r.update(ms(41), Duration::ZERO);
        r.next_sample_route(1, None);
        r.update(ms(26), Duration::ZERO);
        assert_eq!(r.min(), ms(25));
        // Then they come back on the path itself (path 0) for good: its own round trip, 40 ms,
        // once eight samples in a row say so.
        for i in 0..ROUTE_SWITCH_SAMPLES {
            r.next_sample_route(0, None);
            r.update(ms(47 - u64::from(i)), Duration::ZERO);
            let want = if i + 1 < ROUTE_SWITCH_SAMPLES { ms(25) } else { ms(40) };
            assert_eq!(r.min(), want, "after {} samples", i + 1);
        }
        // Back on the carrier: its own minimum again.
        for _ in 0..ROUTE_SWITCH_SAMPLES {
            r.next_sample_route(1, None);
            r.update(ms(30), Duration::ZERO);
        }
        assert_eq!(r.min(), ms(25));
        // Samples of unknown route stay on the current one.
        r.update(ms(24), Duration::ZERO);
        assert_eq!(r.min(), ms(24));
        assert_eq!(r.floor(), ms(24), "with no queue in flight the floor is the minimum");
    }

    #[test]
    fn the_floor_leaves_out_the_queue_a_new_route_was_found_behind() {
        let ms = Duration::from_millis;
        let mut r = RttEstimator::default();
        // 300 ms with the ACKs on path 0 (a return leg of 150 ms), found while no queue stood.
        r.next_sample_route(0, Some(ms(150)));
        r.update(ms(300), Duration::ZERO);
        // Then a standing queue of 400 ms.
        for _ in 0..20 {
            r.next_sample_route(0, Some(ms(150)));
            r.update(ms(700), Duration::ZERO);
        }
        assert_eq!((r.min(), r.floor()), (ms(300), ms(300)));
        // The ACKs move to path 3, whose return leg is 40 ms longer; the queue stands.
        for _ in 0..ROUTE_SWITCH_SAMPLES {
            r.next_sample_route(3, Some(ms(190)));
            r.update(ms(740), Duration::ZERO);
        }
        assert_eq!(r.min(), ms(740), "the minimum takes the samples as they came");
        assert_eq!(r.floor(), ms(340), "the floor leaves the queue out");
        // The queue drains: both follow the samples down.
        r.next_sample_route(3, Some(ms(190)));
        r.update(ms(335), Duration::ZERO);
        assert_eq!((r.min(), r.floor()), (ms(335), ms(335)));
        // Back on path 0: its own.
        for _ in 0..ROUTE_SWITCH_SAMPLES {
            r.next_sample_route(0, Some(ms(150)));
            r.update(ms(310), Duration::ZERO);
        }
        assert_eq!((r.min(), r.floor()), (ms(300), ms(300)));
        // A new route with a shorter return leg: the floor stays until samples show less (it
        // never goes below both the old floor and the samples on a guess).
        for _ in 0..ROUTE_SWITCH_SAMPLES {
            r.next_sample_route(5, Some(ms(100)));
            r.update(ms(500), Duration::ZERO);
        }
        assert_eq!((r.min(), r.floor()), (ms(500), ms(300)));
        // A new route whose return leg is unknown: the samples.
        for _ in 0..ROUTE_SWITCH_SAMPLES {
            r.next_sample_route(6, None);
            r.update(ms(450), Duration::ZERO);
        }
        assert_eq!((r.min(), r.floor()), (ms(450), ms(450)));
        // Samples above the moved floor by less than the legs differ are taken as they come
        // (a leg from a carrier's round trip holds its packets' transmission, a few
        // milliseconds off).
        let mut r = RttEstimator::default();
        for _ in 0..3 {
            r.next_sample_route(3, Some(ms(6)));
            r.update(ms(25), Duration::ZERO);
        }
        for _ in 0..ROUTE_SWITCH_SAMPLES {
            r.next_sample_route(0, Some(ms(19)));
            r.update(ms(40), Duration::ZERO);
        }
        assert_eq!((r.min(), r.floor()), (ms(40), ms(40)));
    }

    #[test]
    fn follows_rfc9002() {
        let mut r = RttEstimator::default();
        assert!(!r.has_sample());
        assert_eq!(r.smoothed(), INITIAL_RTT);
        r.update(Duration::from_millis(100), Duration::ZERO);
        assert_eq!(
            (r.smoothed(), r.var(), r.min()),
            (Duration::from_millis(100), Duration::from_millis(50), Duration::from_millis(100))
        );
        r.update(Duration::from_millis(120), Duration::from_millis(10));
        // adjusted = 110: srtt = (700 + 110) / 8 = 101.25 ms, var = (150 + 10) / 4 = 40 ms
        assert_eq!(r.smoothed(), Duration::from_micros(101_250));
        assert_eq!(r.var(), Duration::from_millis(40));
        assert_eq!(r.min(), Duration::from_millis(100));
        assert_eq!(r.pto_base(Duration::from_millis(25)), Duration::from_micros(101_250 + 160_000 + 25_000));
    }

    #[test]
    fn an_ack_delay_never_takes_a_sample_below_the_minimum() {
        let ms = Duration::from_millis;
        let mut r = RttEstimator::default();
        r.update(ms(100), Duration::ZERO);
        assert_eq!(r.adjusted(ms(120), ms(10)), ms(110));
        // 105 - 10 would be 95, below the 100 ms minimum: the delay is not subtracted.
        assert_eq!(r.adjusted(ms(105), ms(10)), ms(105));
    }
}
