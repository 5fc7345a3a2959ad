//! Loss detection and probe timers of one path against RFC 9002 §6 and §7.6.

use super::*;
use crate::cc::Algorithm;
use crate::path::tests::packet;

const MAD: Duration = Duration::from_millis(25);

fn ms(n: u64) -> Timestamp {
    Timestamp::from_duration(Duration::from_millis(n))
}

/// A suspect path with a 30 ms RTT whose last probe left at 1000 ms, long after its PTO
/// backoff passed the probe cap.
fn suspect() -> Path {
    let addr = "127.0.0.1:1".parse().unwrap();
    let mut p = Path::new(0, None, addr, PathState::Suspect, Algorithm::Cubic, 1200, ms(0));
    p.rtt.update(Duration::from_millis(30), Duration::ZERO);
    p.pto_count = 6;
    p.last_eliciting_sent = Some(ms(1000));
    p
}

#[test]
fn a_suspect_path_probes_at_the_capped_interval() {
    let p = suspect();
    assert_eq!(p.loss_timer(MAD), Some(ms(1000) + MAX_PROBE_INTERVAL));
}

#[test]
fn a_short_spell_keeps_the_regular_probe_timer() {
    let mut p = suspect();
    p.pto_count = 1;
    p.last_received = Some(ms(1100));
    let pto = p.rtt.pto_base(MAD) * 2;
    assert_eq!(p.loss_timer(MAD), Some(ms(1000) + pto.min(MAX_PROBE_INTERVAL)));
}

/// A restored link: the peer's probe arrives between two of ours. Waiting for our next
/// probe would leave the path idle for up to MAX_PROBE_INTERVAL; it probes at once.
#[test]
fn a_suspect_path_that_hears_from_its_peer_probes_at_once() {
    let mut p = suspect();
    p.last_received = Some(ms(1100));
    assert_eq!(p.loss_timer(MAD), Some(ms(1100)));
    let mut lost = Vec::new();
    p.on_loss_timeout(ms(1100), MAD, &mut lost);
    assert_eq!(p.probes_due, 1);
    // Once the probe is out, the next one waits for the regular interval again.
    p.last_eliciting_sent = Some(ms(1100));
    assert_eq!(p.loss_timer(MAD), Some(ms(1100) + MAX_PROBE_INTERVAL));
}

/// An active path with packets 0..n sent 10 ms apart, 1000 bytes each.
fn sending(n: u64) -> Path {
    sending_every(n, 10)
}

/// An active path with packets 0..n sent `gap_ms` apart, 1000 bytes each.
fn sending_every(n: u64, gap_ms: u64) -> Path {
    let addr = "127.0.0.1:1".parse().unwrap();
    let mut p = Path::new(0, None, addr, PathState::Active, Algorithm::Cubic, 1200, ms(0));
    for i in 0..n {
        let pn = p.take_pn();
        p.on_packet_sent(packet(pn, ms(gap_ms * i)));
    }
    p
}

fn ack(largest: u64, ranges: &[std::ops::RangeInclusive<u64>], delay_ms: u64) -> AckFrame {
    AckFrame {
        path_id: 0,
        largest,
        ack_delay_us: delay_ms * 1000,
        timestamp_us: None,
        ranges: ranges.iter().cloned().collect(),
    }
}

fn pns(v: &[SentPacket]) -> Vec<u64> {
    v.iter().map(|p| p.pn).collect()
}

#[test]
fn an_ack_of_a_packet_never_sent_is_refused() {
    let mut p = sending(3);
    let (mut acked, mut lost) = (Vec::new(), Vec::new());
    assert_eq!(p.on_ack_frame(ms(50), &ack(3, &[3..=3], 0), MAD, &mut acked, &mut lost), Err(InvalidAck));
    assert!(acked.is_empty() && lost.is_empty());
    assert_eq!(p.in_flight, 3000, "nothing changed");
}

#[test]
fn acked_packets_leave_the_flight_once_and_give_an_rtt_sample() {
    let mut p = sending(4);
    let (mut acked, mut lost) = (Vec::new(), Vec::new());
    // Packets 0 and 1 acknowledged at 70 ms; the largest (1) left at 10 ms; 5 ms ACK delay.
    assert_eq!(p.on_ack_frame(ms(70), &ack(1, &[0..=1], 5), MAD, &mut acked, &mut lost), Ok(true));
    assert_eq!(pns(&acked), [0, 1]);
    assert_eq!(p.in_flight, 2000);
    assert_eq!(p.rtt.latest(), Duration::from_millis(60));
    assert_eq!(p.rtt.min(), Duration::from_millis(60));
    // The same ACK again acknowledges nothing new and changes nothing.
    acked.clear();
    assert_eq!(p.on_ack_frame(ms(80), &ack(1, &[0..=1], 5), MAD, &mut acked, &mut lost), Ok(false));
    assert!(acked.is_empty());
    assert_eq!(p.in_flight, 2000);
}

#[test]
fn a_packet_three_below_the_largest_acked_is_lost_and_later_ones_wait_for_time() {
    // RFC 9002 §6.1: packets 1 ms apart, 4 acknowledged at 54 ms (RTT 50 ms). 0 and 1 are
    // ≥ 3 below the largest acknowledged: lost at once. 2 and 3 are not, and are lost
    // when the time threshold (9/8 RTT after they left) passes.
    let mut p = sending_every(5, 1);
    let (mut acked, mut lost) = (Vec::new(), Vec::new());
    p.on_ack_frame(ms(54), &ack(4, &[4..=4], 0), MAD, &mut acked, &mut lost).unwrap();
    assert_eq!(pns(&acked), [4]);
    assert_eq!(pns(&lost), [0, 1]);
    let timer = p.loss_time.expect("the rest waits for the time threshold");
    assert_eq!(timer, ms(2) + Duration::from_micros(56_250));
    lost.clear();
    p.on_loss_timeout(timer, MAD, &mut lost);
    assert_eq!(pns(&lost), [2]);
    assert_eq!(p.in_flight, 1000, "only packet 3 is still in flight");
    assert_eq!(p.loss_time, Some(ms(3) + Duration::from_micros(56_250)));
}

#[test]
fn an_ack_delay_beyond_the_maximum_is_not_trusted() {
    // RFC 9002 §5.3: the peer's ACK delay is capped at max_ack_delay before it is taken off.
    let mut p = sending(2);
    let (mut acked, mut lost) = (Vec::new(), Vec::new());
    p.on_ack_frame(ms(40), &ack(0, &[0..=0], 0), MAD, &mut acked, &mut lost).unwrap();
    p.on_ack_frame(ms(210), &ack(1, &[1..=1], 500), MAD, &mut acked, &mut lost).unwrap();
    // Sample 200 ms, delay claimed 500 ms but capped at 25 ms: the RTT estimate rises.
    assert_eq!(p.rtt.latest(), Duration::from_millis(200));
    assert!(p.rtt.smoothed() > Duration::from_millis(40), "{:?}", p.rtt.smoothed());
}

/// A peer that keeps sending on a one-way broken path does not get a probe per packet.
#[test]
fn probes_for_a_talking_peer_stay_apart() {
    let mut p = suspect();
    p.last_received = Some(ms(1001));
    assert_eq!(p.loss_timer(MAD), Some(ms(1000) + MAX_PROBE_INTERVAL / 4));
    p.rtt.update(Duration::from_millis(300), Duration::ZERO);
    p.rtt.reset_min();
    p.rtt.update(Duration::from_millis(100), Duration::ZERO);
    assert_eq!(p.loss_timer(MAD), Some(ms(1100)), "a minimum RTT apart when that is longer");
}

/// Acknowledges packet 0 at 30 ms (the RTT sample) and then packet 6 at `at` ms: packets 1..=5
/// are declared lost together. Returns the window before and after the loss.
fn lose_one_to_five(p: &mut Path, at: u64) -> (u64, u64) {
    let (mut acked, mut lost) = (Vec::new(), Vec::new());
    p.on_ack_frame(ms(30), &ack(0, &[0..=0], 0), MAD, &mut acked, &mut lost).unwrap();
    let before = p.cc.window();
    p.on_ack_frame(ms(at), &ack(6, &[6..=6], 0), MAD, &mut acked, &mut lost).unwrap();
    assert_eq!(pns(&lost), [1, 2, 3, 4, 5]);
    (before, p.cc.window())
}

#[test]
fn lost_packets_spanning_three_ptos_are_persistent_congestion() {
    // RFC 9002 §7.6: PTO = 30 + 4 × 15 + 25 = 115 ms after the first sample, so the threshold
    // is about 3 × 115 ms; packets 1..=5 sent 100 ms apart span 400 ms.
    let mut p = sending_every(7, 100);
    let (_, after) = lose_one_to_five(&mut p, 630);
    assert_eq!(after, crate::cc::minimum_window(1200), "§7.6.2: the window collapses to the minimum");
}

#[test]
fn a_short_run_of_losses_is_an_ordinary_congestion_event() {
    // The same five packets 10 ms apart span 40 ms: CUBIC's β reduction, not the minimum.
    let mut p = sending_every(7, 10);
    let (before, after) = lose_one_to_five(&mut p, 90);
    assert_eq!(after, (before as f64 / 1200.0 * 0.7 * 1200.0) as u64, "{before} -> {after}");
}

#[test]
fn the_probe_timeout_doubles_with_each_unanswered_probe() {
    // RFC 9002 §6.2.1: PTO = smoothed_rtt + max(4 × rttvar, kGranularity) + max_ack_delay,
    // from the last ack-eliciting packet, doubled for every PTO in a row.
    let mut p = sending(3);
    let (mut acked, mut lost) = (Vec::new(), Vec::new());
    p.on_ack_frame(ms(30), &ack(0, &[0..=0], 0), MAD, &mut acked, &mut lost).unwrap();
    let pto = Duration::from_millis(30 + 4 * 15 + 25);
    assert_eq!(p.loss_timer(MAD), Some(ms(20) + pto), "from packet 2, the last one sent");
    p.on_loss_timeout(ms(20) + pto, MAD, &mut lost);
    assert_eq!((p.pto_count, p.probes_due), (1, 1));
    assert!(lost.is_empty(), "a PTO declares nothing lost");
    let second = ms(20) + pto;
    assert_eq!(p.loss_timer(MAD), Some(second + 2 * pto));
    p.on_loss_timeout(second + 2 * pto, MAD, &mut lost);
    assert_eq!(p.loss_timer(MAD), Some(second + 2 * pto + 4 * pto));
    // An acknowledgement resets the backoff.
    p.on_ack_frame(ms(600), &ack(1, &[1..=1], 0), MAD, &mut acked, &mut lost).unwrap();
    assert_eq!(p.pto_count, 0);
}

/// Packets stranded when the path went silent leave the flight but still count against its
/// window until they are acknowledged late or declared lost: a slow link's queue still holds
/// them, and a path that answers again must not pile new packets on top.
#[test]
fn stranded_packets_hold_the_window_until_acked_or_lost() {
    let mut p = sending(8);
    let window = p.cc.window();
    assert!(window >= 8000, "the test needs room for 8 packets");
    p.strand();
    assert_eq!((p.in_flight, p.stranded), (0, 8000));
    assert_eq!(p.outstanding(), 8000);
    assert_eq!(p.window_room(), window - 8000);
    assert_eq!(p.ready_at(ms(100), window - 7999), None, "the stranded bytes fill the window");
    // Packets 0 and 1 arrive late; 2 is still queued.
    let (mut acked, mut lost) = (Vec::new(), Vec::new());
    p.on_ack_frame(ms(100), &ack(1, &[0..=1], 0), MAD, &mut acked, &mut lost).unwrap();
    assert_eq!((p.in_flight, p.stranded), (0, 6000));
    // A packet sent after them is acknowledged: the stranded ones left long before are lost
    // by the time threshold, and leave the count.
    let pn = p.take_pn();
    p.on_packet_sent(packet(pn, ms(500)));
    p.on_ack_frame(ms(600), &ack(pn, &[pn..=pn], 0), MAD, &mut acked, &mut lost).unwrap();
    assert_eq!(pns(&lost), [2, 3, 4, 5, 6, 7]);
    assert_eq!((p.in_flight, p.stranded), (0, 0));
}
