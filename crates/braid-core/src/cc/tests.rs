//! Unit tests of the controllers against one emulated bottleneck: a FIFO queue drained at a
//! fixed rate, a propagation RTT, drop-tail at a byte limit, one ACK per packet. Small enough
//! to reason about, so each test states a property of the algorithm (the rate it reaches, the
//! queue it keeps, how it answers loss), not of the whole session.

use super::delivery::{DeliveryRate, PacketRateState};
use super::{AckEvent, Algorithm, Controller, LossEvent, DEFAULT_MSS};
use crate::path::rtt::RttEstimator;
use crate::time::Timestamp;
use std::collections::VecDeque;
use std::time::Duration;

const MSS: u64 = DEFAULT_MSS;

/// What a run measured after its warm-up.
#[derive(Debug, Default)]
struct Run {
    /// Bytes acknowledged per second.
    goodput: f64,
    /// Mean and largest time a packet waited in the bottleneck queue.
    mean_queue: Duration,
    max_queue: Duration,
    /// Packets dropped at the queue.
    drops: u64,
}

struct InFlight {
    sent: Timestamp,
    acked_at: Timestamp,
    state: PacketRateState,
    lost: bool,
}

/// Runs `cc` over a bottleneck of `rate` bytes/s and `rtt` for `secs`, measuring after
/// `warmup` seconds.
fn run(cc: Box<dyn Controller>, rate: f64, rtt: Duration, queue_limit: u64, secs: f64, warmup: f64) -> Run {
    run_changing(cc, |_| rate, rtt, queue_limit, secs, warmup)
}

/// As [`run`], with the bottleneck's rate a function of time.
fn run_changing(
    mut cc: Box<dyn Controller>,
    rate_at: impl Fn(Timestamp) -> f64,
    rtt: Duration,
    queue_limit: u64,
    secs: f64,
    warmup: f64,
) -> Run {
    let mut rtt_est = RttEstimator::default();
    let mut delivery = DeliveryRate::default();
    let mut flight: VecDeque<InFlight> = VecDeque::new();
    let (mut in_flight, mut busy_until, mut next_send) = (0u64, Timestamp::ZERO, Timestamp::ZERO);
    let mut now = Timestamp::ZERO;
    let end = Timestamp::from_duration(Duration::from_secs_f64(secs));
    let warm = Timestamp::from_duration(Duration::from_secs_f64(warmup));
    let (mut acked_bytes, mut waited, mut waits, mut out) = (0u64, Duration::ZERO, 0u32, Run::default());
    while now < end {
        let can_send = in_flight + MSS <= cc.window();
        let next_ack = flight.front().map(|p| p.acked_at);
        let send_at = can_send.then_some(next_send.max(now));
        now = match (send_at, next_ack) {
            (Some(s), Some(a)) => s.min(a),
            (s, a) => s.or(a).expect("something is always in flight or sendable"),
        };
        if next_ack == Some(now) {
            let p = flight.pop_front().expect("peeked");
            let prior = in_flight;
            in_flight -= MSS;
            if p.lost {
                cc.on_congestion(&LossEvent::congestion(now, MSS, p.sent), &rtt_est);
                continue;
            }
            rtt_est.update(now - p.sent, Duration::ZERO);
            delivery.on_packet_acked(now, p.sent, MSS, &p.state);
            let sample = delivery.take_sample(rtt_est.min());
            let ev = AckEvent {
                now,
                acked_bytes: MSS,
                largest_sent_time: p.sent,
                prior_in_flight: prior,
                rate: sample,
            };
            cc.on_ack(&ev, &rtt_est);
            if now >= warm {
                acked_bytes += MSS;
            }
            continue;
        }
        // Send one packet.
        let state = delivery.on_sent(now, in_flight);
        in_flight += MSS;
        cc.on_sent(now, MSS, in_flight);
        let rate = rate_at(now);
        let serialize = Duration::from_secs_f64(MSS as f64 / rate);
        let wait = busy_until.saturating_since(now);
        let lost = (wait.as_secs_f64() * rate) as u64 + MSS > queue_limit;
        let acked_at = if lost {
            // A drop is detected about one RTT later, as the packets after it are acknowledged.
            now + rtt + wait
        } else {
            busy_until = now.max(busy_until) + serialize;
            if now >= warm {
                waited += wait;
                waits += 1;
                out.max_queue = out.max_queue.max(wait);
            }
            busy_until + rtt
        };
        out.drops += lost as u64;
        flight.push_back(InFlight { sent: now, acked_at, state, lost });
        let pace = cc.pacing_rate(&rtt_est).unwrap_or(f64::INFINITY);
        next_send = now + Duration::from_secs_f64(MSS as f64 / pace);
    }
    out.goodput = acked_bytes as f64 / (secs - warmup);
    out.mean_queue = waited / waits.max(1);
    out
}

const RATE: f64 = 5e6; // 40 Mbit/s
const RTT: Duration = Duration::from_millis(20);
/// 100 ms of queue at the rate: deep, as the lab's and the emulator's default.
const DEEP: u64 = 500_000;

#[test]
fn bbr_fills_the_link_and_drains_its_queue() {
    let r = run(Algorithm::Bbr.build(MSS), RATE, RTT, DEEP, 12.0, 3.0);
    assert!(r.goodput > 0.9 * RATE, "{r:?}");
    assert_eq!(r.drops, 0, "{r:?}");
    // ProbeBW's drain phase empties what its probe phase queued (BBRv2's rule): on average
    // well under a quarter of the RTT waits in the queue, though it may hold 100 ms.
    assert!(r.mean_queue < Duration::from_millis(5), "{r:?}");
}

#[test]
fn bbr_drains_the_queue_left_by_a_rate_drop() {
    // The link halves at 4 s. The rate model keeps the old maximum for ten rounds and queues
    // the difference; afterwards v1's one-RTT drain phase would leave that queue standing for
    // good (each 1.25 phase adds what the next 0.75 removes). The drain phase that lasts
    // until the queue is gone (BBRv2) removes it.
    let halved = |t: Timestamp| if t.as_duration() < Duration::from_secs(4) { RATE } else { RATE / 2.0 };
    let r = run_changing(Algorithm::Bbr.build(MSS), halved, RTT, DEEP, 14.0, 7.0);
    assert!(r.goodput > 0.9 * RATE / 2.0, "{r:?}");
    assert!(r.mean_queue < Duration::from_millis(8), "{r:?}");
}

#[test]
fn bbr_under_a_latency_bound_keeps_the_queue_to_a_few_milliseconds() {
    let mut cc = Algorithm::Bbr.build(MSS);
    cc.set_latency_bound(true);
    let r = run(cc, RATE, RTT, DEEP, 12.0, 3.0);
    assert!(r.goodput > 0.9 * RATE, "{r:?}");
    // One BDP plus two send quanta in flight: at most ~2 ms of queue at any time.
    assert!(r.max_queue < Duration::from_millis(4), "{r:?}");
    let free = run(Algorithm::Bbr.build(MSS), RATE, RTT, DEEP, 12.0, 3.0);
    assert!(r.max_queue < free.max_queue, "bounded {r:?}, free {free:?}");
}

#[test]
fn loss_based_controllers_fill_a_bdp_queue_and_back_off_on_drops() {
    for algo in [Algorithm::Cubic, Algorithm::NewReno] {
        // A queue of one BDP: Reno-style halving still keeps the link busy.
        let bdp = (RATE * RTT.as_secs_f64()) as u64;
        let r = run(algo.build(MSS), RATE, RTT, bdp, 20.0, 5.0);
        assert!(r.goodput > 0.8 * RATE, "{algo:?} {r:?}");
        assert!(r.drops > 0, "{algo:?} probes until the queue overflows: {r:?}");
        // They back off: the queue is not full all the time.
        assert!(r.mean_queue < Duration::from_millis(19), "{algo:?} {r:?}");
    }
}

/// Every controller's name parses back to it, is what it displays, and what the built
/// controller (and its frozen copy) reports: the daemon's `congestion` key, `braid sim
/// --congestion` and the status all use these names.
#[test]
fn every_algorithm_round_trips_through_its_name() {
    for (name, a) in Algorithm::ALL {
        assert_eq!(name.parse::<Algorithm>(), Ok(a));
        assert_eq!(a.to_string(), name);
        assert_eq!(a.build(MSS).name(), name);
        assert_eq!(a.build(MSS).clone_box().name(), name);
    }
    let err = "bbr2".parse::<Algorithm>().unwrap_err();
    assert!(
        Algorithm::ALL.iter().all(|(n, _)| err.contains(&format!("{n},")) || err.contains(&format!("{n})"))),
        "{err}"
    );
}
