//! Schedulers: which path (or paths, or none) carries the next packet.
//!
//! A scheduler sees a [`PathView`] of every path — state, RTT, window, when its pacer lets the
//! next packet go, estimated rate, loss — and a [`PacketInfo`] about what is to be sent, and
//! returns a [`Decision`]. It is chosen per session and may be swapped at any time without
//! disturbing streams (the swap only changes where future packets go).
//!
//! * [`minrtt::MinRtt`] — the lowest-RTT path that can send now (Linux MPTCP's default).
//! * [`round_robin::RoundRobin`] — paths in turn.

pub mod minrtt;
pub mod round_robin;

use crate::path::PathId;
use crate::time::Timestamp;
use crate::wire::PathStatusKind;
use smallvec::SmallVec;
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// What a scheduler may know about one path.
#[derive(Debug, Clone)]
pub struct PathView {
    /// Path id.
    pub id: PathId,
    /// Validated and answering (not suspect, not validating).
    pub usable: bool,
    /// How the path is to be used.
    pub status: PathStatusKind,
    /// Smoothed RTT.
    pub srtt: Duration,
    /// Minimum RTT.
    pub min_rtt: Duration,
    /// RTT variation.
    pub rttvar: Duration,
    /// Congestion window, bytes.
    pub cwnd: u64,
    /// Bytes in flight.
    pub in_flight: u64,
    /// When a packet of the intended size may leave (pacing); None while the window is full.
    pub ready_at: Option<Timestamp>,
    /// Estimated path rate, bytes/s (bottleneck estimate, or delivery rate, or pacing rate).
    pub rate: f64,
    /// Smoothed loss fraction.
    pub loss_rate: f64,
    /// Maximum packet size.
    pub mtu: usize,
}

impl PathView {
    /// True when a packet can leave on this path at `now`.
    pub fn ready(&self, now: Timestamp) -> bool {
        self.usable && self.ready_at.is_some_and(|t| t <= now)
    }

    /// True when the path is eligible for ordinary data.
    pub fn carries_data(&self) -> bool {
        self.usable && self.status == PathStatusKind::Active
    }
}

/// What is about to be sent.
#[derive(Debug, Clone)]
pub struct PacketInfo {
    /// Traffic class of the most important content.
    pub class: u8,
    /// Its priority (0 most important).
    pub priority: u8,
    /// A datagram deadline, if the content has one.
    pub deadline: Option<Timestamp>,
    /// Packet size in bytes.
    pub bytes: usize,
    /// The content is a retransmission.
    pub retransmit: bool,
}

/// A scheduler's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Send on this path now.
    Send(PathId),
    /// Send a copy on each of these paths now (the first carries the original).
    Redundant(SmallVec<[PathId; 4]>),
    /// Nothing can leave now; try again at this time (None: when an ACK opens a window).
    Wait(Option<Timestamp>),
    /// The content cannot arrive in time on any path: drop it at the sender.
    Drop,
}

/// A packet scheduler.
pub trait Scheduler: fmt::Debug + Send {
    /// Name as used on the command line.
    fn name(&self) -> &'static str;
    /// Chooses where the next packet goes.
    fn select(&mut self, now: Timestamp, paths: &[PathView], packet: &PacketInfo) -> Decision;
}

/// The paths eligible for data: active ones, or the backup ones when no active path is usable
/// (the common rule every scheduler applies first).
pub fn eligible(paths: &[PathView]) -> impl Iterator<Item = &PathView> {
    let any_active = paths.iter().any(|p| p.carries_data());
    paths.iter().filter(move |p| {
        p.usable
            && match p.status {
                PathStatusKind::Active => true,
                PathStatusKind::Backup => !any_active,
                PathStatusKind::Standby => false,
            }
    })
}

/// `Wait` until the earliest time an eligible path can send.
pub fn wait_for<'a>(paths: impl Iterator<Item = &'a PathView>) -> Decision {
    Decision::Wait(paths.filter_map(|p| p.ready_at).min())
}

/// The schedulers braid knows, by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Kind {
    /// Lowest RTT first.
    #[default]
    MinRtt,
    /// Round-robin.
    RoundRobin,
}

impl Kind {
    /// Every scheduler with its command-line name and a one-line description.
    pub const ALL: [(&'static str, Kind, &'static str); 2] = [
        ("minrtt", Kind::MinRtt, "lowest smoothed RTT among paths that can send now"),
        ("rr", Kind::RoundRobin, "paths in turn, skipping those that cannot send"),
    ];

    /// A fresh scheduler of this kind.
    pub fn build(self) -> Box<dyn Scheduler> {
        match self {
            Kind::MinRtt => Box::new(minrtt::MinRtt),
            Kind::RoundRobin => Box::new(round_robin::RoundRobin::default()),
        }
    }

    /// Command-line name.
    pub fn name(self) -> &'static str {
        Self::ALL.iter().find(|(_, k, _)| *k == self).map_or("?", |(n, _, _)| n)
    }
}

impl FromStr for Kind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Self::ALL.iter().find(|(n, _, _)| n.eq_ignore_ascii_case(s)).map(|(_, k, _)| *k).ok_or_else(|| {
            let names: Vec<_> = Self::ALL.iter().map(|(n, _, _)| *n).collect();
            format!("unknown scheduler '{s}' (one of: {})", names.join(", "))
        })
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
pub(crate) mod test_util {
    use super::*;

    /// A usable active path with the given id, RTT in ms and readiness.
    pub fn view(id: PathId, rtt_ms: u64, ready: Option<u64>) -> PathView {
        PathView {
            id,
            usable: true,
            status: PathStatusKind::Active,
            srtt: Duration::from_millis(rtt_ms),
            min_rtt: Duration::from_millis(rtt_ms),
            rttvar: Duration::ZERO,
            cwnd: 100_000,
            in_flight: 0,
            ready_at: ready.map(Timestamp::from_nanos),
            rate: 1e6,
            loss_rate: 0.0,
            mtu: 1452,
        }
    }

    /// A 1200-byte packet of class 0.
    pub fn packet() -> PacketInfo {
        PacketInfo { class: 0, priority: 0, deadline: None, bytes: 1200, retransmit: false }
    }
}
