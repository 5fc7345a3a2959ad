//! Configuration of sessions, clients and servers. Every value has a default that works for
//! links from a few hundred kbit/s to several Gbit/s.

use crate::cc::Algorithm;
use crate::crypto::{PublicKey, StaticSecret};
use crate::scheduler;
use std::collections::BTreeMap;
use std::time::Duration;

/// On which path acknowledgements travel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AckPath {
    /// On the path whose packets they acknowledge (also when they ride along in a packet).
    SamePath,
    /// On the answering path with the shortest one-way delay toward the peer (measured with
    /// the peer's ACK timestamps; the lowest RTT before those) among those with capacity to
    /// carry them (seed 003's offloading-ACK); a path's ACKs never ride on a third path. (The
    /// name predates the one-way ranking; `lowest-rtt` stays the command-line value.)
    #[default]
    LowestRtt,
    /// Seed 003's offloading-ACK as the paper defines it (§3.1, §4.2): the ACKs of the
    /// primary path (the one receiving the most packets) go to a secondary path, only while
    /// the primary's window is large (≥ 20 packets a round trip), only as many as the
    /// secondary's spare capacity sustains (the rest stay on the primary), and replaceable
    /// ones are dropped rather than sent on the primary when the secondary is short
    /// (see `session::ack_offload`).
    Secondary,
}

/// Selective redundancy (seed 003 §5): which packets also leave on a second path, beyond
/// datagrams of classes marked [`TrafficClass::duplicate`] (see `session::critical`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Redundancy {
    /// Only packets carrying datagrams of a `duplicate` class.
    #[default]
    None,
    /// Also control frames whose loss stalls the peer and the first bytes of every stream.
    Critical,
}

impl std::str::FromStr for Redundancy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "none" => Ok(Redundancy::None),
            "critical" => Ok(Redundancy::Critical),
            _ => Err(format!("'{s}': redundancy is none or critical")),
        }
    }
}

/// A traffic class: how the scheduler treats a stream or datagram flow.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TrafficClass {
    /// 0 is the most important.
    pub priority: u8,
    /// Delivery deadline of this class's datagrams, from when the application hands them
    /// over: a datagram still at the sender when it passes is dropped there, and the
    /// `deadline` scheduler drops it as soon as no path can deliver it in time (seed 001 MMTP).
    pub deadline: Option<Duration>,
    /// The scheduler for this class (None: the session's). Classes sharing a scheduler kind
    /// share one instance, so priority-aware schedulers see all their classes.
    pub scheduler: Option<scheduler::Kind>,
    /// Most bytes a second the class may send (seed 001's per-application maximum rate); what
    /// exceeds it waits (streams) or is dropped when it waits past its deadline (datagrams).
    pub max_rate: Option<u64>,
    /// Bytes a second the class is served ahead of its priority until it has had them (seed
    /// 001's minimum rate): a low-priority class is not starved.
    pub min_rate: Option<u64>,
    /// Copy this class's datagrams on a second path (a base layer, seed 000 §4; seed 003
    /// §5's mirrored base-layer frames), within the session's redundancy budget.
    pub duplicate: bool,
}

/// Settings shared by both sides of a session.
#[derive(Debug, Clone)]
pub struct SessionConfig {
    /// The UDP payload a path starts at (1452 fits IPv6 in a 1500-byte MTU); less after a
    /// black hole (`path::mtu`).
    pub max_datagram_size: usize,
    /// The most a path's MTU search may reach (RFC 8899's MAX_PLPMTU, at most
    /// [`crate::path::mtu::MAX_CEILING`]): paths search above `max_datagram_size` up to
    /// the local interface's limit ([`crate::Session::set_path_mtu_ceiling`]) or the largest
    /// datagram they delivered, never past this. `max_datagram_size` or less: no search up.
    pub mtu_ceiling: usize,
    /// The session ends when no packet arrived on any path for this long.
    pub idle_timeout: Duration,
    /// The client gives up when the server has not answered the handshake for this long.
    pub handshake_timeout: Duration,
    /// An idle path is probed this often.
    pub keepalive_interval: Duration,
    /// How long we may delay an acknowledgement (RFC 9000 max_ack_delay).
    pub max_ack_delay: Duration,
    /// Per-stream receive window, bytes.
    pub stream_window: u64,
    /// Session-wide receive window, bytes.
    pub session_window: u64,
    /// Largest receive window, bytes, that sizing from the paths' delay skew may grant (seed
    /// 004 §V, `session::window_sizing`); `stream_window` and `session_window` are the floor.
    /// At or below them the windows stay fixed.
    pub receive_window_cap: u64,
    /// Per-stream send buffer, bytes.
    pub send_buffer: u64,
    /// Streams the peer may have open at once.
    pub max_streams: u64,
    /// Congestion controller of every path.
    pub congestion: Algorithm,
    /// Packet scheduler.
    pub scheduler: scheduler::Kind,
    /// Where acknowledgements travel.
    pub ack_path: AckPath,
    /// The DATA packet AEAD this side asks for; AES-256-GCM is used only when both sides ask
    /// for it ([`crate::crypto::aead::Cipher::agree`]).
    pub cipher: crate::crypto::aead::Cipher,
    /// When packet keys are updated (by count and by time, RFC 9001 §6).
    pub key_update: crate::crypto::keyupdate::UpdatePolicy,
    /// Keep a silent path's congestion state and restore it when it answers (seed 003).
    pub blackout_freeze: bool,
    /// Do not cut the window for losses classed as random (seeds 001, 003).
    pub loss_discrimination: bool,
    /// Which judge tells random from congestion losses: the sender's RTT trend (default) or
    /// the receiver's inter-arrival times (seed 001 §4.3), reported in PATH_REPORT.
    pub loss_judge: crate::path::judge::LossJudge,
    /// The two-sided channel monitor (seed 000 §III-B): send PATH_REPORTs about what arrives
    /// on each path, and let the schedulers read the peer's reported loss. Off by default
    /// (the wire carries no reports); the `arrival` loss judge sends reports either way.
    pub receiver_reports: bool,
    /// Loss fetching (seed 003 §3.3, mirroring-loss-fetching): stream bytes lost on the
    /// primary path (the highest-capacity one) are sent again on the secondary path, ahead of
    /// new data and spaced one packet time of the secondary apart (see `session::fetch`).
    pub loss_fetching: bool,
    /// Leave out paths that seeds 000/002 predict would lower the total, keeping them in
    /// standby until they improve (see `scheduler::admission`). Off by default: those rules
    /// describe one TCP flow striped over links, and with braid's per-path congestion control
    /// and frame retransmission on any path a lossy path still adds goodput (see
    /// docs/experiments.md); turn it on when the traffic inside the session is itself loss-based
    /// TCP striped across paths.
    pub path_admission: bool,
    /// Selective redundancy: what else gets a copy on a second path (see `session::critical`).
    pub redundancy: Redundancy,
    /// With [`Redundancy::Critical`], a stream's bytes below this offset are copied (a flow's
    /// first packets: its request, its TLS hello).
    pub redundancy_first_bytes: u64,
    /// Most copies may use, as a share of the paths' summed usable capacity (plus a burst of
    /// `session::critical::BURST` bytes).
    pub redundancy_share: f64,
    /// Most paths per session.
    pub max_paths: usize,
    /// Datagrams queued per direction.
    pub datagram_queue: usize,
    /// Traffic classes by id; an unknown class behaves as priority 0, no deadline.
    pub classes: BTreeMap<u8, TrafficClass>,
}

impl Default for SessionConfig {
    fn default() -> Self {
        SessionConfig {
            max_datagram_size: 1452,
            mtu_ceiling: crate::path::mtu::MAX_CEILING,
            idle_timeout: Duration::from_secs(30),
            handshake_timeout: Duration::from_secs(10),
            keepalive_interval: Duration::from_secs(1),
            max_ack_delay: crate::timing::MAX_ACK_DELAY,
            stream_window: 16 << 20,
            session_window: 32 << 20,
            receive_window_cap: 128 << 20,
            send_buffer: 8 << 20,
            max_streams: 1024,
            congestion: Algorithm::default(),
            scheduler: scheduler::Kind::default(),
            ack_path: AckPath::default(),
            cipher: crate::crypto::aead::Cipher::default(),
            key_update: Default::default(),
            blackout_freeze: true,
            loss_discrimination: false,
            loss_judge: Default::default(),
            receiver_reports: false,
            loss_fetching: false,
            path_admission: false,
            redundancy: Redundancy::None,
            redundancy_first_bytes: 3000,
            redundancy_share: 0.1,
            max_paths: 16,
            datagram_queue: 1024,
            classes: BTreeMap::new(),
        }
    }
}

impl SessionConfig {
    /// The class settings of `class`.
    pub fn class(&self, class: u8) -> TrafficClass {
        self.classes.get(&class).cloned().unwrap_or_default()
    }

    /// The priority of `class`.
    pub fn priority(&self, class: u8) -> u8 {
        self.classes.get(&class).map_or(0, |c| c.priority)
    }
}

/// A client: its key, the server's key, session settings.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// Our static key.
    pub secret: StaticSecret,
    /// The server's static public key.
    pub server_key: PublicKey,
    /// Session settings.
    pub session: SessionConfig,
}

/// A server: its key, the clients it admits, session settings.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Our static key.
    pub secret: StaticSecret,
    /// Public keys of the clients we admit.
    pub clients: Vec<PublicKey>,
    /// Session settings.
    pub session: SessionConfig,
}
