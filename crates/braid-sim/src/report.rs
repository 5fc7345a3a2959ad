//! The result of a simulation run: printed as a table or as one JSON object.

use crate::units::format_rate;
use serde::Serialize;
use std::fmt::Write;

/// One path's figures.
#[derive(Debug, Clone, Serialize)]
pub struct PathReport {
    /// The link it ran on.
    pub link: String,
    /// New stream bytes that arrived on it, per second.
    pub goodput_bps: f64,
    /// Smoothed RTT at the end (client's view).
    pub srtt_ms: f64,
    /// Packets the client declared lost on it.
    pub lost_packets: u64,
    /// Maximum UDP payload the client's path carries at the end (lowered after a path MTU
    /// black hole).
    pub mtu: usize,
    /// The same on the server's side of the path (what downloads use).
    pub server_mtu: usize,
    /// Stream bytes the client resent on it.
    pub retransmitted_bytes: u64,
    /// Final state.
    pub state: String,
    /// Client → server packets the link's queue dropped.
    pub queue_drops: u64,
    /// Client → server packets lost on the wire.
    pub wire_drops: u64,
    /// Wire bytes the server offered to the link (in a bulk run, mostly its ACKs).
    pub return_bytes: u64,
    /// Datagrams the client put on this path (sent, or dropped in its queue at the deadline).
    pub datagrams_assigned: u64,
    /// Datagrams that arrived on it (redundant copies included).
    pub datagrams_received: u64,
    /// 100 × (assigned − received) / assigned.
    pub datagram_loss_pct: f64,
    /// The path monitor's state at the end (client).
    pub monitor: String,
    /// The path monitor's capacity estimate at the end, bit/s.
    pub capacity_bps: f64,
    /// Loss to impairment (losses with no queue), percent.
    pub impairment_loss_pct: f64,
    /// Loss events classed as random.
    pub random_losses: u64,
    /// Loss the server reported about the client's packets on the path (PATH_REPORT), %.
    pub reported_loss_pct: Option<f64>,
    /// Loss events classed as congestion.
    pub congestion_losses: u64,
    /// Times the path went suspect (silent).
    pub blackouts: u64,
    /// New stream bytes that arrived on it in each second of the run, bit/s (seed 004's
    /// per-route throughput figures).
    pub timeline_bps: Vec<f64>,
}

/// Recovery after an outage.
#[derive(Debug, Clone, Serialize)]
pub struct CutReport {
    /// Link index.
    pub link: usize,
    /// When it went down.
    pub at_ms: u64,
    /// When it came back, if it did.
    pub until_ms: Option<u64>,
    /// Capacity of the links still up.
    pub surviving_bps: f64,
    /// Time from the cut until goodput averaged over the next second reached 90% of the
    /// surviving capacity (None: not within the outage).
    pub recovery_ms: Option<u64>,
}

/// How the client's connect phase went (the core's handshake failover over the links).
#[derive(Debug, Clone, Default, Serialize)]
pub struct HandshakeReport {
    /// Handshake attempts (one per session the client started).
    pub attempts: u32,
    /// Virtual time at which the session was established, ms (None: it never was).
    pub established_ms: Option<f64>,
    /// The link whose handshake established it.
    pub link: Option<usize>,
    /// Why the client gave up connecting, if it did.
    pub gave_up: Option<String>,
    /// When it gave up, ms.
    pub gave_up_ms: Option<f64>,
}

/// Everything a run measured.
#[derive(Debug, Clone, Serialize)]
pub struct SimReport {
    /// Seed.
    pub seed: u64,
    /// Scheduler.
    pub scheduler: String,
    /// Congestion controller.
    pub congestion: String,
    /// Measured span (the run, or until a sized transfer completed).
    pub duration_s: f64,
    /// Bytes delivered in order to the receiving application, per second.
    pub goodput_bps: f64,
    /// Sum of the configured link rates (headers not subtracted).
    pub capacity_bps: f64,
    /// goodput ÷ capacity.
    pub efficiency: f64,
    /// Every byte arrived in order, exactly as sent (and all of it, for a sized transfer).
    pub intact: bool,
    /// Bytes delivered.
    pub delivered_bytes: u64,
    /// A sized transfer arrived whole (its FIN was read).
    pub complete: bool,
    /// Largest number of packets held in the reorder buffer behind a gap.
    pub reorder_max_packets: usize,
    /// The same after the warm-up.
    pub reorder_max_steady_packets: usize,
    /// The same outside loss recovery (sampled every 10 ms, not within a hold time after any
    /// drop on a link: [`crate::reorder::LossFreeReorder`]) — the reorder scheduling makes.
    pub reorder_max_lossfree_packets: usize,
    /// The mean of the same samples, packets.
    pub reorder_mean_lossfree_packets: f64,
    /// The largest session receive window the receiver granted, bytes (sized from the
    /// paths' skew, seed 004 §V; the configured window when sizing is off).
    pub receive_window_bytes: u64,
    /// Warm-up left out of the steady figures, seconds.
    pub warmup_s: f64,
    /// Stream bytes sent more than once.
    pub retransmitted_bytes: u64,
    /// How long lost stream bytes kept the receiver waiting, and loss fetching's counters
    /// (seed 003 Fig. 7a).
    pub hole_fill: crate::holes::HoleFillReport,
    /// DATA packets sent, both sides.
    pub packets_sent: u64,
    /// Bytes on the wire (UDP payloads) of both sides' paths open at the end.
    pub bytes_sent: u64,
    /// Copies made by selective redundancy (seed 003 §5), both sides.
    pub critical_copies: u64,
    /// Their bytes on the wire.
    pub critical_copy_bytes: u64,
    /// ACK packets the receiving sides offloaded to a secondary path, both sides (seed 003's
    /// offloading-ACK, `--ack-path secondary`).
    pub acks_offloaded: u64,
    /// Replaceable ACKs they dropped because the secondary was short.
    pub acks_dropped: u64,
    /// Short request/response flows, when the workload has them.
    pub short_flows: Option<crate::short::ShortReport>,
    /// The client's packet key generation at the end (key updates in the run).
    pub key_phase: u64,
    /// Datagram flows, one per traffic class, in workload order.
    pub classes: Vec<crate::flow::FlowReport>,
    /// Per path, in link order.
    pub paths: Vec<PathReport>,
    /// (t_ms, goodput_bps) per 100 ms.
    #[serde(serialize_with = "timeline_json")]
    pub timeline: Vec<(u64, f64)>,
    /// Outages and recovery.
    pub cuts: Vec<CutReport>,
    /// Why the session ended early, if it did.
    pub closed: Option<String>,
    /// The connect phase: attempts, time to established, or the give-up.
    pub handshake: HandshakeReport,
    /// Stream errors.
    pub errors: Vec<String>,
    /// Digest of every byte on the simulated wire (same seed, same digest).
    pub wire_digest: String,
    /// Wall-clock seconds the run took.
    pub wall_s: f64,
    /// Virtual seconds per wall-clock second.
    pub speedup: f64,
}

fn timeline_json<S: serde::Serializer>(t: &[(u64, f64)], s: S) -> Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    struct Point {
        t_ms: u64,
        goodput_bps: f64,
    }
    s.collect_seq(t.iter().map(|(t_ms, g)| Point { t_ms: *t_ms, goodput_bps: *g }))
}

impl SimReport {
    /// One JSON object.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("report serializes")
    }

    /// A table for people.
    pub fn to_table(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "braid sim — scheduler {}, congestion {}, seed {}, {:.1} s",
            self.scheduler, self.congestion, self.seed, self.duration_s
        );
        let datagrams = self.paths.iter().any(|p| p.datagrams_assigned > 0);
        let _ = write!(
            s,
            "{:<5} {:<28} {:>14} {:>9} {:>8} {:>9} {:>14}",
            "path", "link", "goodput", "srtt", "lost", "monitor", "capacity est."
        );
        let _ = writeln!(s, "{}", if datagrams { "  datagrams sent/recv  loss" } else { "" });
        for (i, p) in self.paths.iter().enumerate() {
            let _ = write!(
                s,
                "{:<5} {:<28} {:>14} {:>7.1}ms {:>8} {:>9} {:>14}",
                i,
                p.link,
                format_rate(p.goodput_bps),
                p.srtt_ms,
                p.lost_packets,
                p.monitor,
                format_rate(p.capacity_bps)
            );
            if datagrams {
                let _ = write!(
                    s,
                    "  {:>9}/{:<9} {:>5.2}%",
                    p.datagrams_assigned, p.datagrams_received, p.datagram_loss_pct
                );
            }
            let _ = writeln!(s);
        }
        let _ = writeln!(s, "total goodput   {}", format_rate(self.goodput_bps));
        let _ = writeln!(s, "capacity        {}", format_rate(self.capacity_bps));
        let _ = writeln!(s, "efficiency      {:.3}", self.efficiency);
        let _ = writeln!(
            s,
            "reorder max     {} packets ({} after the first {:.1} s, {} outside loss recovery, {:.1} on average there)",
            self.reorder_max_packets,
            self.reorder_max_steady_packets,
            self.warmup_s,
            self.reorder_max_lossfree_packets,
            self.reorder_mean_lossfree_packets
        );
        let _ = writeln!(s, "retransmitted   {} bytes", self.retransmitted_bytes);
        let h = &self.hole_fill;
        if h.holes > 0 || h.fetched_packets > 0 {
            let _ = writeln!(
                s,
                "hole fill       {} holes: {:.1} ms mean, {:.1} ms p99 after the loss ({:.1} / {:.1} ms after the send); {} fetched, {} fell back",
                h.holes,
                h.since_loss_mean_ms,
                h.since_loss_p99_ms,
                h.since_send_mean_ms,
                h.since_send_p99_ms,
                h.fetched_packets,
                h.fetch_fallbacks
            );
        }
        let _ = writeln!(s, "packets         {} sent, key phase {}", self.packets_sent, self.key_phase);
        if self.critical_copies > 0 {
            let _ = writeln!(
                s,
                "copies          {} critical ({} bytes of {} sent)",
                self.critical_copies, self.critical_copy_bytes, self.bytes_sent
            );
        }
        if self.acks_offloaded + self.acks_dropped > 0 {
            let _ = writeln!(
                s,
                "offloaded ACKs  {} packets on the secondary, {} replaceable dropped",
                self.acks_offloaded, self.acks_dropped
            );
        }
        if let Some(f) = &self.short_flows {
            let _ = writeln!(
                s,
                "short flows     {}/{} done, completion mean {:.1} ms, p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
                f.completed, f.opened, f.mean_ms, f.p50_ms, f.p99_ms, f.max_ms
            );
        }
        let _ = writeln!(s, "intact          {}", if self.intact { "yes (byte-exact)" } else { "NO" });
        for c in &self.classes {
            let _ = writeln!(
                s,
                "class {:<3} {:>12}  loss {:>6.2}%  latency mean {:>7.1} ms  p99 {:>7.1} ms  jitter {:>6.2} ms",
                c.class,
                format_rate(c.rate_bps as f64),
                c.loss_pct,
                c.latency_mean_ms,
                c.latency_p99_ms,
                c.jitter_ms
            );
        }
        for c in &self.cuts {
            let rec = c.recovery_ms.map_or("not within the outage".to_string(), |r| format!("{r} ms"));
            let _ = writeln!(
                s,
                "cut link {} at {} ms: recovery to 90% of {} in {}",
                c.link,
                c.at_ms,
                format_rate(c.surviving_bps),
                rec
            );
        }
        let h = &self.handshake;
        match (&h.gave_up, h.established_ms, h.link) {
            (Some(e), _, _) => {
                let at = h.gave_up_ms.unwrap_or(0.0);
                let _ =
                    writeln!(s, "handshake       gave up at {at:.1} ms after {} attempts: {e}", h.attempts);
            }
            (None, Some(ms), Some(link)) if h.attempts > 1 => {
                let _ = writeln!(
                    s,
                    "handshake       established at {ms:.1} ms over link {link} (attempt {})",
                    h.attempts
                );
            }
            (None, None, _) => {
                let _ = writeln!(s, "handshake       not established");
            }
            _ => {}
        }
        if let Some(c) = &self.closed {
            let _ = writeln!(s, "session ended: {c}");
        }
        for e in &self.errors {
            let _ = writeln!(s, "error: {e}");
        }
        let _ = writeln!(s, "simulated in   {:.2} s wall ({:.0}x real time)", self.wall_s, self.speedup);
        s
    }
}
