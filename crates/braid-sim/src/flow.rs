//! Datagram flows: constant-bit-rate senders (one traffic class each) and receivers that
//! measure loss, latency and RFC 3550 jitter, and check that no datagram arrives twice.

use braid_core::{Session, Timestamp};
use bytes::{BufMut, BytesMut};
use serde::Serialize;
use std::collections::HashSet;
use std::time::Duration;

/// Bytes of the flow header inside each datagram: sequence number and send time.
const HEADER: usize = 16;

/// A constant-bit-rate datagram flow.
#[derive(Debug, Clone, PartialEq)]
pub struct FlowSpec {
    /// Traffic class (and flow identity).
    pub class: u8,
    /// Payload rate, bit/s.
    pub rate_bps: u64,
    /// Datagram payload size, bytes.
    pub size: usize,
}

/// One flow in a run.
#[derive(Debug)]
pub struct Flow {
    /// Its spec.
    pub spec: FlowSpec,
    interval: Duration,
    next_send: Duration,
    sent: u64,
    refused: u64,
    received: HashSet<u64>,
    duplicates: u64,
    latencies: Vec<Duration>,
    jitter: f64,
    last_transit: Option<f64>,
    /// Per link: RFC 3550 jitter of the datagrams that came on it, their last transit time,
    /// and how many came.
    link_jitter: Vec<(f64, Option<f64>, u64)>,
    /// The class's delivery deadline, if it has one (for the on-time and late counts).
    deadline: Option<Duration>,
}

/// What a flow measured.
#[derive(Debug, Clone, Serialize)]
pub struct FlowReport {
    /// Traffic class.
    pub class: u8,
    /// Configured rate.
    pub rate_bps: u64,
    /// Datagrams the application handed to the session.
    pub sent: u64,
    /// Datagrams received.
    pub received: u64,
    /// Datagrams received more than once (must be 0).
    pub duplicates: u64,
    /// (sent - received) / sent, in percent.
    pub loss_pct: f64,
    /// Mean one-way latency, ms.
    pub latency_mean_ms: f64,
    /// 99th percentile one-way latency, ms.
    pub latency_p99_ms: f64,
    /// RFC 3550 interarrival jitter of the flow as the application receives it (consecutive
    /// arrivals, whatever path they came on), ms.
    pub jitter_ms: f64,
    /// Datagrams that arrived within the class deadline (all that arrived, when it has none).
    pub on_time: u64,
    /// Datagrams that arrived after the class deadline.
    pub late: u64,
    /// RFC 3550 jitter computed over each path's own arrivals, in link order, ms.
    pub path_jitter_ms: Vec<f64>,
    /// The per-path jitters averaged, weighted by the datagrams each path delivered, ms: the
    /// jitter of a receiver that measures every channel as its own RTP stream.
    pub path_jitter_mean_ms: f64,
}

impl Flow {
    /// A flow starting at `start`.
    pub fn new(spec: FlowSpec, start: Duration) -> Self {
        let size = spec.size.max(HEADER);
        let interval = Duration::from_secs_f64(size as f64 * 8.0 / spec.rate_bps.max(1) as f64);
        Flow {
            spec: FlowSpec { size, ..spec },
            interval,
            next_send: start,
            sent: 0,
            refused: 0,
            received: HashSet::new(),
            duplicates: 0,
            latencies: Vec::new(),
            jitter: 0.0,
            last_transit: None,
            link_jitter: Vec::new(),
            deadline: None,
        }
    }

    /// Counts datagrams against this delivery deadline (seed 001's frames on time and late).
    pub fn with_deadline(mut self, deadline: Option<Duration>) -> Self {
        self.deadline = deadline;
        self
    }

    /// When the next datagram is due.
    pub fn next_wake(&self) -> Duration {
        self.next_send
    }

    /// Sends the datagrams due by `now`.
    pub fn send_due(&mut self, now: Duration, client: &mut Session) {
        if !client.is_established() {
            // Datagrams of a flow start once the session is up.
            if self.next_send <= now {
                self.next_send = now + self.interval;
            }
            return;
        }
        while self.next_send <= now {
            let mut d = BytesMut::with_capacity(self.spec.size);
            d.put_u64(self.sent);
            d.put_u64(self.next_send.as_nanos() as u64);
            d.resize(self.spec.size, 0xd9);
            match client.send_datagram(Timestamp::from_duration(now), self.spec.class, d.freeze()) {
                Ok(()) => self.sent += 1,
                Err(_) => self.refused += 1,
            }
            self.next_send += self.interval;
        }
    }

    /// A datagram of this flow arrived at `now` (on `link`, when known).
    pub fn on_received(&mut self, now: Duration, data: &[u8], link: Option<usize>) {
        if data.len() < HEADER {
            return;
        }
        let seq = u64::from_be_bytes(data[..8].try_into().expect("8 bytes"));
        let sent = Duration::from_nanos(u64::from_be_bytes(data[8..16].try_into().expect("8 bytes")));
        if !self.received.insert(seq) {
            self.duplicates += 1;
            return;
        }
        let latency = now.saturating_sub(sent);
        self.latencies.push(latency);
        // RFC 3550 §6.4.1: J += (|D(i-1,i)| - J) / 16, D from the transit times.
        let transit = latency.as_secs_f64();
        if let Some(prev) = self.last_transit {
            self.jitter += ((transit - prev).abs() - self.jitter) / 16.0;
        }
        self.last_transit = Some(transit);
        if let Some(l) = link {
            if self.link_jitter.len() <= l {
                self.link_jitter.resize(l + 1, (0.0, None, 0));
            }
            let (j, last, n) = &mut self.link_jitter[l];
            if let Some(prev) = *last {
                *j += ((transit - prev).abs() - *j) / 16.0;
            }
            *last = Some(transit);
            *n += 1;
        }
    }

    /// Datagrams that arrived after the deadline.
    fn late(&self) -> u64 {
        self.deadline.map_or(0, |d| self.latencies.iter().filter(|l| **l > d).count() as u64)
    }

    /// The flow's figures.
    pub fn report(&self) -> FlowReport {
        let mut l: Vec<f64> = self.latencies.iter().map(|d| d.as_secs_f64() * 1e3).collect();
        l.sort_by(|a, b| a.total_cmp(b));
        let mean = if l.is_empty() { 0.0 } else { l.iter().sum::<f64>() / l.len() as f64 };
        let p99 =
            l.get(((l.len() as f64 * 0.99) as usize).min(l.len().saturating_sub(1))).copied().unwrap_or(0.0);
        let offered = self.sent + self.refused;
        FlowReport {
            class: self.spec.class,
            rate_bps: self.spec.rate_bps,
            sent: offered,
            received: self.received.len() as u64,
            duplicates: self.duplicates,
            loss_pct: if offered == 0 {
                0.0
            } else {
                100.0 * (offered - self.received.len() as u64) as f64 / offered as f64
            },
            latency_mean_ms: mean,
            latency_p99_ms: p99,
            jitter_ms: self.jitter * 1e3,
            on_time: self.latencies.len() as u64 - self.late(),
            late: self.late(),
            path_jitter_ms: self.link_jitter.iter().map(|(j, _, _)| j * 1e3).collect(),
            path_jitter_mean_ms: {
                let n: u64 = self.link_jitter.iter().map(|(_, _, n)| n).sum();
                let w: f64 = self.link_jitter.iter().map(|(j, _, n)| j * *n as f64).sum();
                if n == 0 {
                    0.0
                } else {
                    w * 1e3 / n as f64
                }
            },
        }
    }
}
