//! The TUN front end's counters, and their form in the status (`frontend.tun`).

use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Counters of the TUN front end.
#[derive(Debug, Default)]
pub struct TunCounters {
    /// Packets read from the TUN.
    pub packets_in: AtomicU64,
    /// Packets written into it.
    pub packets_out: AtomicU64,
    /// TCP connections accepted by the stack.
    pub tcp_flows: AtomicU64,
    /// Of which the server could not connect.
    pub tcp_refused: AtomicU64,
    /// UDP flows opened.
    pub udp_flows: AtomicU64,
    /// Ping flows opened.
    pub ping_flows: AtomicU64,
    /// Flows the server refused (its max_udp, its policy).
    pub flows_refused: AtomicU64,
    /// Dropped: malformed packets (or answers that make no packet).
    pub dropped_malformed: AtomicU64,
    /// Dropped: IP fragments.
    pub dropped_fragments: AtomicU64,
    /// Dropped: protocols braid does not carry, IPv6 extension headers.
    pub dropped_protocol: AtomicU64,
    /// Dropped: ICMP other than echo requests.
    pub dropped_icmp: AtomicU64,
    /// Dropped: a full queue (a flow's, the session's).
    pub dropped_queue: AtomicU64,
    /// Dropped: the flow table was full.
    pub dropped_flows: AtomicU64,
    /// Reorder windows: datagrams released in order after a wait.
    pub reorder_held: AtomicU64,
    /// Reorder windows: gaps given up.
    pub reorder_gaps: AtomicU64,
    /// Reorder windows: datagrams passed on late.
    pub reorder_late: AtomicU64,
}

/// The TUN's counters as published in the status (`frontend.tun`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct TunStatus {
    pub device: String,
    pub packets_in: u64,
    pub packets_out: u64,
    pub tcp_flows: u64,
    pub tcp_refused: u64,
    pub udp_flows: u64,
    pub ping_flows: u64,
    pub flows_refused: u64,
    pub dropped_malformed: u64,
    pub dropped_fragments: u64,
    pub dropped_protocol: u64,
    pub dropped_icmp: u64,
    pub dropped_queue: u64,
    pub dropped_flows: u64,
    pub reorder_held: u64,
    pub reorder_gaps: u64,
    pub reorder_late: u64,
    pub reorder_hold_us: u64,
}

impl TunCounters {
    /// The counters now, as published; `device` is the device's name, `hold` the reorder
    /// window's hold time now.
    pub fn snapshot(&self, device: &str, hold: Duration) -> TunStatus {
        let c = self;
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        TunStatus {
            device: device.to_string(),
            packets_in: g(&c.packets_in),
            packets_out: g(&c.packets_out),
            tcp_flows: g(&c.tcp_flows),
            tcp_refused: g(&c.tcp_refused),
            udp_flows: g(&c.udp_flows),
            ping_flows: g(&c.ping_flows),
            flows_refused: g(&c.flows_refused),
            dropped_malformed: g(&c.dropped_malformed),
            dropped_fragments: g(&c.dropped_fragments),
            dropped_protocol: g(&c.dropped_protocol),
            dropped_icmp: g(&c.dropped_icmp),
            dropped_queue: g(&c.dropped_queue),
            dropped_flows: g(&c.dropped_flows),
            reorder_held: g(&c.reorder_held),
            reorder_gaps: g(&c.reorder_gaps),
            reorder_late: g(&c.reorder_late),
            reorder_hold_us: hold.as_micros() as u64,
        }
    }
}
