//! The path's capacity under the bound its own queue sets (`Path::queue_bound`).

use super::*;
use crate::cc::Algorithm;

fn ms(n: u64) -> Timestamp {
    Timestamp::from_duration(Duration::from_millis(n))
}

/// An ack-eliciting, in-flight packet of 1000 bytes sent at `at`.
pub(super) fn packet(pn: u64, at: Timestamp) -> SentPacket {
    SentPacket {
        pn,
        sent_time: at,
        size: 1000,
        ack_eliciting: true,
        in_flight: true,
        requeued: false,
        mtu_probe: false,
        rate: Default::default(),
        frames: Default::default(),
    }
}

/// An active path with `packets` packets of 1000 bytes in flight (more than its window), a
/// packet pair of 2.5 MB/s (20 Mbit/s), RTT samples of `first_ms`, then `latest_ms`, and
/// forward one-way samples that differ as much (the later one queued `latest_ms − first_ms`).
fn loaded(packets: u64, first_ms: u64, latest_ms: u64) -> Path {
    let addr = "127.0.0.1:1".parse().unwrap();
    let mut p = Path::new(0, None, addr, PathState::Active, Algorithm::Cubic, 1200, ms(0));
    for i in 0..packets {
        let pn = p.take_pn();
        p.on_packet_sent(packet(pn, ms(i)));
    }
    p.capacity_estimate.on_packet_pair(ms(100), 2.5e6);
    p.rtt.update(Duration::from_millis(first_ms), Duration::ZERO);
    p.rtt.update(Duration::from_millis(latest_ms), Duration::ZERO);
    // Forward legs of half the first RTT, the second one queued; the peer's clock is 7 s off.
    let offset_us = 7_000_000;
    p.one_way.on_forward(ms(100), 0, offset_us + first_ms * 500, 1000);
    p.one_way.on_forward(
        ms(200),
        1000,
        offset_us + 1000 + first_ms * 500 + (latest_ms - first_ms) * 1000,
        1000,
    );
    p
}

#[test]
fn a_queue_longer_than_what_is_outstanding_could_fill_bounds_the_capacity() {
    // 100 kB waited behind a queue of one second: the bottleneck drains at most 100 kB/s,
    // 200 kB/s with the margin, whatever the pair said before.
    let p = loaded(100, 50, 1050);
    assert_eq!(p.outstanding(), 100_000);
    assert_eq!(p.queue_bound(), Some(200_000.0));
    assert_eq!(p.capacity(ms(200)), 200_000.0);
}

#[test]
fn a_short_queue_or_one_within_the_minimum_rtt_leaves_the_estimate() {
    // 70 ms of queue: jitter or a probing controller.
    let p = loaded(100, 50, 120);
    assert_eq!(p.queue_bound(), None);
    assert_eq!(p.capacity(ms(200)), 2.5e6);
    // 250 ms over a 300 ms minimum: the RTT has not doubled.
    let p = loaded(100, 300, 550);
    assert_eq!(p.queue_bound(), None);
    assert_eq!(p.capacity(ms(200)), 2.5e6);
}

#[test]
fn a_path_with_room_in_its_window_is_not_bound() {
    // Held below its window by the scheduler, a path has outstanding what its estimate
    // allows: the bound would feed on itself.
    let mut p = loaded(100, 50, 1050);
    p.in_flight = p.cc.window().saturating_sub(2 * p.mtu as u64);
    assert_eq!(p.queue_bound(), None);
    assert_eq!(p.capacity(ms(200)), 2.5e6);
}

#[test]
fn a_queue_the_path_made_itself_does_not_bind() {
    // At 2.5 MB/s, 150 ms of queue over a 50 ms minimum is 500 kB outstanding: the bound reads
    // 6.7 MB/s, the pair stands.
    let p = loaded(500, 50, 200);
    let bound = p.queue_bound().expect("150 ms of queue");
    assert!((bound - 2.0 * 500_000.0 / 0.15).abs() < 1.0, "{bound}");
    assert_eq!(p.capacity(ms(200)), 2.5e6);
}

#[test]
fn the_bound_stays_while_the_queue_stands_and_goes_with_it() {
    // The collapsed path: its window full behind a one-second queue, the bound sets the cap.
    let mut p = loaded(100, 50, 1050);
    p.keep_queue_cap = true;
    p.on_forward_sample(ms(200));
    assert_eq!(p.capacity(ms(200)), 200_000.0);
    // EDPF stops filling it: the window has room, the queue still stands. Without the cap
    // the estimate went back to the pair's 2.5 MB/s here.
    p.in_flight = p.cc.window().saturating_sub(2 * p.mtu as u64);
    assert_eq!(p.queue_bound(), None);
    p.on_forward_sample(ms(200));
    // The cap follows what is outstanding behind the one-second queue.
    assert_eq!(p.capacity(ms(200)), 2.0 * p.outstanding() as f64);
    // A packet that met no queue: the link is back, so is the estimate.
    p.one_way.on_forward(ms(300), 2000, 7_000_000 + 2000 + 25_000, 1000);
    p.on_forward_sample(ms(300));
    assert_eq!(p.capacity(ms(300)), 2.5e6);
    // A path that never had a full window never gets a cap, however long the queue.
    let mut q = loaded(100, 50, 1050);
    q.keep_queue_cap = true;
    q.in_flight = q.cc.window().saturating_sub(2 * q.mtu as u64);
    q.on_forward_sample(ms(200));
    assert_eq!(q.capacity(ms(200)), 2.5e6);
    // Nor does a path no EDPF schedules: the live bound alone, as the window allows.
    let mut r = loaded(100, 50, 1050);
    r.on_forward_sample(ms(200));
    assert!(!r.queue_capped());
    r.in_flight = r.cc.window().saturating_sub(2 * r.mtu as u64);
    assert_eq!(r.capacity(ms(200)), 2.5e6);
}

#[test]
fn a_window_held_by_stranded_bytes_is_full() {
    // The sender went silent on the collapsed path before any ACK showed its queue: what was
    // outstanding is stranded, and a few new packets went out after the path answered. The
    // stranded bytes hold the window, so the path is full and the queue binds it; counted
    // by in-flight bytes alone it read room forever and kept its old rate.
    let mut p = loaded(100, 50, 1050);
    p.keep_queue_cap = true;
    let _ = p.strand();
    assert_eq!((p.in_flight, p.stranded), (0, 100_000));
    let pn = p.take_pn();
    p.on_packet_sent(packet(pn, ms(150)));
    assert!(p.in_flight + (p.mtu as u64) < p.cc.window(), "room by in-flight bytes alone");
    assert_eq!(p.queue_bound(), Some(2.0 * 101_000.0));
    p.on_forward_sample(ms(200));
    assert!(p.queue_capped());
    assert_eq!(p.capacity(ms(200)), 2.0 * 101_000.0);
}
