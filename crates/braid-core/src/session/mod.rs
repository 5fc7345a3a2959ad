//! A session: the encrypted multipath connection between one client and the server.
//!
//! The session is a pure state machine. See the crate documentation for the calling contract.
//! Its code is split by concern: `recv` (datagrams in), `send` (datagrams out), `frames`
//! (what received frames do), `paths` (joining, validation, blackout), `timers`.

mod ack_offload;
pub mod batch;
mod class_limits;
mod critical;
pub mod fetch;
mod frames;
#[cfg(feature = "fuzzing")]
mod fuzzing;
pub mod lost_log;
mod monitoring;
pub mod paths;
mod pinned;
mod policy;
mod recv;
mod reports;
mod send;
mod timers;
pub mod timing;
pub mod window_sizing;

use crate::config::{ClientConfig, SessionConfig};
use crate::crypto::cookie::CookieJar;
use crate::crypto::handshake::{Initiator, SessionKeys};
use crate::crypto::keyupdate::KeySchedule;
use crate::crypto::replay::ReplayWindow;
use crate::crypto::{PublicKey, Seed};
use crate::datagram::{Datagram, DatagramError, DatagramStats, Datagrams};
use crate::monitor::MonitorState;
use crate::path::sent::SentPacket;
use crate::path::{Path, PathId, PathState, PathStats};
use crate::scheduler::{self, Scheduler};
use crate::side::Side;
use crate::stream::{StreamError, StreamEvent, StreamId, StreamLimits, Streams};
use crate::time::Timestamp;
use crate::wire::{PathStatusKind, SessionId};
use bytes::Bytes;
use paths::PathError;
use rand_chacha::ChaCha20Rng;
use rand_core::RngCore;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

pub use recv::DropReason;

/// Why a session ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CloseReason {
    /// No packet arrived on any path for the idle timeout.
    IdleTimeout,
    /// The server never answered the handshake.
    HandshakeTimeout,
    /// The server does not admit our key.
    Refused,
    /// The peer closed the session.
    PeerClosed {
        /// Application code.
        code: u64,
        /// Reason text.
        reason: String,
    },
    /// We closed the session.
    LocalClosed {
        /// Application code.
        code: u64,
    },
    /// The peer broke the protocol (after authenticating, so it is a bug or an attack).
    ProtocolViolation(String),
    /// The server answered with a stateless reset: it no longer knows the session (it
    /// restarted, or ended the session).
    StatelessReset,
}

impl fmt::Display for CloseReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CloseReason::IdleTimeout => f.write_str("no path answered within the idle timeout"),
            CloseReason::HandshakeTimeout => f.write_str(
                "the server did not answer the handshake: it is down, unreachable, or holds a \
                 different key than the one configured as server key",
            ),
            CloseReason::Refused => f.write_str("the server refused our key (not in its client list)"),
            CloseReason::PeerClosed { code, reason } => {
                write!(f, "closed by peer (code {code}: {reason})")
            }
            CloseReason::LocalClosed { code } => write!(f, "closed locally (code {code})"),
            CloseReason::ProtocolViolation(what) => write!(f, "protocol violation by peer: {what}"),
            CloseReason::StatelessReset => {
                f.write_str("the server no longer knows this session (it restarted or ended it)")
            }
        }
    }
}

/// What happened to a path, for the application.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathEvent {
    /// Validated: it carries data now.
    Validated,
    /// Silent: its data moved to other paths; it is being probed.
    Suspect,
    /// Answering again after being suspect.
    Recovered,
    /// Validation failed; the path was dropped.
    Failed,
    /// Abandoned by us or the peer.
    Closed,
    /// The peer's address changed (NAT rebinding, a new address on its link) and the new one
    /// was validated: packets go there now.
    Migrated,
}

/// Something the application should know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// The handshake finished; streams and datagrams may be used.
    Connected,
    /// A stream event.
    Stream(StreamEvent),
    /// A datagram arrived (read it with [`Session::recv_datagram`]).
    DatagramReceived,
    /// A path changed.
    Path(PathId, PathEvent),
    /// The session ended; no further events follow.
    Closed(CloseReason),
}

/// A datagram to put on the wire. Its bytes are in the buffer passed to `poll_transmit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transmit {
    /// The path it belongs to.
    pub path: PathId,
    /// Where to send it.
    pub destination: SocketAddr,
    /// The local address to send from (None: any).
    pub source: Option<SocketAddr>,
    /// Its size.
    pub size: usize,
}

#[derive(Debug)]
enum State {
    /// Client, waiting for the server's answer.
    Handshaking {
        initiator: Box<Initiator>,
        cookies: Box<CookieJar>,
        started: Timestamp,
        next_send: Timestamp,
        tries: u32,
    },
    /// Keys agreed.
    Established,
    /// We close: CLOSE frames are sent on every path, then the session is drained.
    Closing { until: Timestamp },
    /// Finished.
    Closed,
}

/// Session-wide counters.
#[derive(Debug, Clone, Default)]
pub struct SessionStats {
    /// Received datagrams dropped, by reason.
    pub dropped: BTreeMap<DropReason, u64>,
    /// Packets sent, all paths.
    pub packets_sent: u64,
    /// Packets received and authenticated, all paths.
    pub packets_received: u64,
}

/// What a closed path leaves behind so that its id cannot be abused later: its packet numbers
/// go on where they stopped (a nonce is never used twice under one key) and its replay window
/// refuses its old packets (a recorded packet cannot re-create the path).
#[derive(Debug, Clone)]
struct RetiredPath {
    next_pn: u64,
    replay: ReplayWindow,
}

/// Control frames the session owes the peer that do not belong to a stream.
#[derive(Debug, Default)]
struct PathControl {
    status: BTreeSet<PathId>,
    abandon: BTreeMap<PathId, u64>,
}

/// One encrypted multipath session.
pub struct Session {
    side: Side,
    config: Arc<SessionConfig>,
    state: State,
    local_id: SessionId,
    remote_id: SessionId,
    keys: Option<KeySchedule>,
    /// Client: the token of the server's stateless reset of this session.
    reset_token: Option<[u8; crate::wire::RESET_TOKEN_LEN]>,
    peer_key: Option<PublicKey>,
    paths: Vec<Path>,
    /// Closed paths, by id (at most 256).
    retired: BTreeMap<PathId, RetiredPath>,
    streams: Streams,
    datagrams: Datagrams,
    scheduler: Box<dyn Scheduler>,
    /// The kind of `scheduler` (what the policy names).
    scheduler_kind: scheduler::Kind,
    /// Per-class maximum and minimum rates.
    class_limits: class_limits::ClassLimits,
    /// The client's policy: what is owed to, or was received from, the peer.
    policy: policy::PolicyState,
    rng: ChaCha20Rng,
    events: VecDeque<Event>,
    path_control: PathControl,
    /// CLOSE to send: (code, reason, paths already sent on).
    close_frame: Option<(u64, String, BTreeSet<PathId>)>,
    closed_reason: Option<CloseReason>,
    last_activity: Timestamp,
    /// Server: the HANDSHAKE_INIT that created us and our answer, resent on a retransmission.
    handshake_init: Option<Vec<u8>>,
    handshake_resp: Option<Vec<u8>>,
    handshake_resp_due: bool,
    next_path_id: u16,
    stats: SessionStats,
    /// When the scheduler said data may leave next.
    next_send: Option<Timestamp>,
    /// Scratch space for ACK processing.
    acked_scratch: Vec<SentPacket>,
    lost_scratch: Vec<SentPacket>,
    /// Per-path queues: datagrams committed to a path and redundant copies.
    pinned: BTreeMap<PathId, VecDeque<pinned::Pinned>>,
    /// What selective redundancy may still spend on copies, and has spent.
    copy_budget: critical::CopyBudget,
    /// The scheduler's path views, rebuilt for every data packet in this one allocation.
    views: Vec<scheduler::PathView>,
    /// Offloading-ACK's credit on the secondary path (`AckPath::Secondary`).
    ack_credit: ack_offload::Credit,
    /// Schedulers of traffic classes that have their own, one instance per kind.
    class_schedulers: Vec<(scheduler::Kind, Box<dyn Scheduler>)>,
    /// Which classes use which scheduler kind (from the config, changed live).
    class_kinds: BTreeMap<u8, scheduler::Kind>,
    /// Seed of the schedulers' random choices.
    scheduler_seed: u64,
    /// When the periodic monitor work runs next.
    next_housekeeping: Timestamp,
    window_sizing: window_sizing::WindowSizing,
    /// When path admission runs next.
    next_admission: Timestamp,
    /// When a packet carrying application data (stream bytes, datagrams) last left.
    last_data_sent: Option<Timestamp>,
    /// Loss fetching's queue (seed 003, see `fetch`).
    fetch: fetch::LossFetch,
    /// Lost stream bytes, recorded when asked for (see `lost_log`).
    lost_log: Option<VecDeque<lost_log::LostRange>>,
}

impl fmt::Debug for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Session")
            .field("side", &self.side)
            .field("local_id", &self.local_id)
            .field("paths", &self.paths.len())
            .finish_non_exhaustive()
    }
}

impl Session {
    fn new(side: Side, config: Arc<SessionConfig>, seed: Seed, now: Timestamp, state: State) -> Self {
        let limits = StreamLimits {
            stream_window: config.stream_window,
            session_window: config.session_window,
            send_buffer: config.send_buffer,
            max_streams: config.max_streams,
        };
        let mut rng = seed.rng();
        let scheduler_seed = rng.next_u64();
        let class_kinds: BTreeMap<u8, scheduler::Kind> =
            config.classes.iter().filter_map(|(c, tc)| tc.scheduler.map(|k| (*c, k))).collect();
        let mut class_schedulers: Vec<(scheduler::Kind, Box<dyn Scheduler>)> = Vec::new();
        for k in class_kinds.values() {
            if !class_schedulers.iter().any(|(have, _)| have == k) {
                class_schedulers
                    .push((*k, k.build_seeded(class_seed(scheduler_seed, class_schedulers.len()))));
            }
        }
        Session {
            side,
            state,
            local_id: SessionId(0),
            remote_id: SessionId(0),
            keys: None,
            reset_token: None,
            peer_key: None,
            paths: Vec::new(),
            retired: BTreeMap::new(),
            streams: Streams::new(side, limits),
            datagrams: Datagrams::new(config.datagram_queue),
            scheduler: config.scheduler.build_seeded(scheduler_seed),
            scheduler_kind: config.scheduler,
            class_limits: class_limits::ClassLimits::default(),
            policy: policy::PolicyState::new(side),
            rng,
            events: VecDeque::new(),
            path_control: PathControl::default(),
            close_frame: None,
            closed_reason: None,
            last_activity: now,
            handshake_init: None,
            handshake_resp: None,
            handshake_resp_due: false,
            next_path_id: 1,
            copy_budget: critical::CopyBudget::default(),
            stats: SessionStats::default(),
            next_send: None,
            acked_scratch: Vec::new(),
            lost_scratch: Vec::new(),
            pinned: BTreeMap::new(),
            views: Vec::new(),
            ack_credit: Default::default(),
            class_schedulers,
            class_kinds,
            scheduler_seed,
            next_housekeeping: now,
            window_sizing: Default::default(),
            next_admission: now,
            last_data_sent: None,
            fetch: Default::default(),
            lost_log: None,
            config,
        }
    }

    /// Starts a client session: the handshake leaves on path 0 from `local` to `server`.
    ///
    /// `seed` feeds every random choice of the session (ids, ephemeral keys, challenges; the
    /// daemon passes 32 bytes from the OS); `timestamp` must grow with every handshake this
    /// client key makes (the daemon passes wall-clock nanoseconds) so the server can refuse
    /// replayed handshakes.
    pub fn connect(
        config: &ClientConfig,
        now: Timestamp,
        local: Option<SocketAddr>,
        server: SocketAddr,
        seed: Seed,
        timestamp: u64,
    ) -> Session {
        let mut rng = seed.rng();
        let local_id = SessionId(rng.next_u64() | 1);
        let mut initiator = Initiator::new(
            &config.secret,
            &config.server_key,
            local_id,
            timestamp,
            config.session.cipher,
            &Seed::draw(&mut rng),
        );
        let mut cookies = CookieJar::new(&config.server_key);
        cookies.stamp(now, &mut initiator.init_packet);
        let state = State::Handshaking {
            initiator: Box::new(initiator),
            cookies: Box::new(cookies),
            started: now,
            next_send: now,
            tries: 0,
        };
        let mut s =
            Session::new(Side::Client, Arc::new(config.session.clone()), Seed::draw(&mut rng), now, state);
        s.local_id = local_id;
        s.peer_key = Some(config.server_key);
        let path = Path::new(0, local, server, PathState::Validating, s.config.congestion, s.mtu(), now);
        s.paths.push(path);
        s
    }

    /// A server session, created by [`crate::endpoint::Endpoint`] from an admitted handshake.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn accept(
        config: Arc<SessionConfig>,
        now: Timestamp,
        local: Option<SocketAddr>,
        client: SocketAddr,
        seed: Seed,
        ids: (SessionId, SessionId),
        keys: SessionKeys,
        peer_key: PublicKey,
        init: Vec<u8>,
        resp: Vec<u8>,
    ) -> Session {
        let mut s = Session::new(Side::Server, config, seed, now, State::Established);
        (s.local_id, s.remote_id) = ids;
        s.install_keys(keys, now);
        s.peer_key = Some(peer_key);
        s.handshake_init = Some(init);
        s.handshake_resp = Some(resp);
        s.handshake_resp_due = true;
        let mut path = Path::new(0, local, client, PathState::Active, s.config.congestion, s.mtu(), now);
        path.last_received = Some(now);
        path.monitor.request_pair();
        s.paths.push(path);
        s.apply_path_config();
        s.events.push_back(Event::Connected);
        s
    }

    fn install_keys(&mut self, keys: SessionKeys, now: Timestamp) {
        self.reset_token = keys.reset_token;
        self.keys = Some(KeySchedule::new(keys.cipher, keys.send, keys.recv, self.config.key_update, now));
    }

    /// How long the previous phase's receive key is kept after a key update (RFC 9001 §6.5:
    /// three times the PTO; here the largest PTO of the paths, at least 1 s, at most 10 s).
    pub(crate) fn key_grace(&self) -> Duration {
        let pto = self.paths.iter().map(|p| p.rtt.pto_base(self.config.max_ack_delay)).max();
        (3 * pto.unwrap_or(Duration::ZERO)).clamp(Duration::from_secs(1), Duration::from_secs(10))
    }

    /// Generation of the packet keys in use (0 after the handshake; grows with each key
    /// update).
    pub fn key_phase(&self) -> u64 {
        self.keys.as_ref().map_or(0, |k| k.phase())
    }

    fn apply_path_config(&mut self) {
        for p in &mut self.paths {
            p.monitor.discriminate_loss = self.config.loss_discrimination;
            p.loss_judge = self.config.loss_judge;
        }
    }

    pub(crate) fn mtu(&self) -> usize {
        self.config.max_datagram_size
    }

    /// Which side we are.
    pub fn side(&self) -> Side {
        self.side
    }

    /// Our session id (the id the peer puts in packets to us).
    pub fn id(&self) -> SessionId {
        self.local_id
    }

    /// The id the server chose for this session: the same on both ends (a client's own id
    /// travels only in packets to it), so that both sides' logs and status name the session
    /// alike. On a client it is zero until the handshake completes.
    pub fn server_id(&self) -> SessionId {
        match self.side {
            Side::Server => self.local_id,
            Side::Client => self.remote_id,
        }
    }

    /// The peer's static public key.
    pub fn peer_key(&self) -> Option<PublicKey> {
        self.peer_key
    }

    /// The settings in force.
    pub fn config(&self) -> &SessionConfig {
        &self.config
    }

    /// True once the handshake finished and until the session closes.
    pub fn is_established(&self) -> bool {
        matches!(self.state, State::Established)
    }

    /// True once the session has ended for good.
    pub fn is_closed(&self) -> bool {
        matches!(self.state, State::Closed)
    }

    /// Why the session ended, once it has.
    pub fn close_reason(&self) -> Option<&CloseReason> {
        self.closed_reason.as_ref()
    }

    /// The next event for the application.
    pub fn poll_event(&mut self) -> Option<Event> {
        if let Some(e) = self.events.pop_front() {
            return Some(e);
        }
        self.streams.poll_event().map(Event::Stream)
    }

    // ---- streams -------------------------------------------------------------------------

    /// Opens a stream of traffic class `class`.
    pub fn open_stream(&mut self, class: u8) -> Result<StreamId, StreamError> {
        if !self.is_established() {
            return Err(StreamError::Blocked);
        }
        self.streams.open(class)
    }

    /// Writes to a stream; returns how much was taken (`Blocked` when nothing).
    pub fn write(&mut self, id: StreamId, data: &[u8]) -> Result<usize, StreamError> {
        self.streams.write(id, data)
    }

    /// Writes a `Bytes` whole without copying, or `Blocked`.
    pub fn write_bytes(&mut self, id: StreamId, data: Bytes) -> Result<(), StreamError> {
        self.streams.write_bytes(id, data)
    }

    /// Room in a stream's send buffer.
    pub fn write_room(&self, id: StreamId) -> Result<u64, StreamError> {
        self.streams.write_room(id)
    }

    /// Ends what we send on a stream.
    pub fn finish(&mut self, id: StreamId) -> Result<(), StreamError> {
        self.streams.finish(id)
    }

    /// Abandons what we send on a stream.
    pub fn reset_stream(&mut self, id: StreamId, code: u64) -> Result<(), StreamError> {
        self.streams.reset(id, code)
    }

    /// Stops reading a stream and asks the peer to stop sending.
    pub fn stop_stream(&mut self, id: StreamId, code: u64) -> Result<(), StreamError> {
        self.streams.stop(id, code)
    }

    /// Reads into `buf`; `Ok(None)` at the end of the stream, `Blocked` when nothing is there.
    pub fn read(&mut self, id: StreamId, buf: &mut [u8]) -> Result<Option<usize>, StreamError> {
        self.streams.read(id, buf)
    }

    /// Reads up to `max` bytes without copying; `Ok(None)` at the end of the stream.
    pub fn read_chunk(&mut self, id: StreamId, max: usize) -> Result<Option<Bytes>, StreamError> {
        self.streams.read_chunk(id, max)
    }

    /// The traffic class of a stream.
    pub fn stream_class(&self, id: StreamId) -> Option<u8> {
        self.streams.class(id)
    }

    /// Open streams.
    pub fn stream_count(&self) -> usize {
        self.streams.count()
    }

    /// Largest reorder-buffer occupancy seen, in packets held behind a gap.
    pub fn reorder_max(&self) -> usize {
        self.streams.reorder_max
    }

    /// Starts the reorder-buffer maximum afresh from the current occupancy (to measure a
    /// steady state after a warm-up).
    pub fn reset_reorder_max(&mut self) {
        self.streams.reorder_max = self.streams.reorder_now();
    }

    /// Current reorder-buffer occupancy, in packets.
    pub fn reorder_now(&self) -> usize {
        self.streams.reorder_now()
    }

    /// The armed timers, for diagnostics: (name, deadline).
    pub fn timers(&self) -> Vec<(String, Timestamp)> {
        self.timer_table()
    }

    /// Session-level flow control: (new bytes sent, peer's limit, bytes received, our limit).
    pub fn flow_control(&self) -> (u64, u64, u64, u64) {
        self.streams.flow()
    }

    /// The receive windows granted now, bytes (per stream, session): the configured ones, or
    /// larger when sized from the paths' delay skew (`window_sizing`).
    pub fn receive_windows(&self) -> (u64, u64) {
        self.streams.receive_windows()
    }

    /// Stream bytes sent more than once.
    pub fn retransmitted_bytes(&self) -> u64 {
        self.streams.retransmitted_bytes
    }

    // ---- datagrams -----------------------------------------------------------------------

    /// Largest datagram payload that fits a packet.
    pub fn max_datagram_payload(&self) -> usize {
        // DATA overhead, DATAGRAM frame header with a 2-byte length and an 8-byte deadline.
        self.mtu() - crate::wire::DATA_OVERHEAD - 2 - 8 - 8 - 2
    }

    /// Queues a datagram of class `class`. Its class deadline (if any) starts now.
    pub fn send_datagram(&mut self, now: Timestamp, class: u8, data: Bytes) -> Result<(), DatagramError> {
        if !self.is_established() {
            return Err(DatagramError::NotConnected);
        }
        let max = self.max_datagram_payload();
        if data.len() > max {
            return Err(DatagramError::TooLarge(data.len(), max));
        }
        let deadline = self.config.class(class).deadline.map(|d| now + d);
        let cfg = self.config.clone();
        self.datagrams.push(now, class, data, deadline, |c| cfg.priority(c));
        Ok(())
    }

    /// The next received datagram.
    pub fn recv_datagram(&mut self) -> Option<Datagram> {
        self.datagrams.recv()
    }

    /// Datagram counters by class.
    pub fn datagram_stats(&self) -> &BTreeMap<u8, DatagramStats> {
        &self.datagrams.stats
    }

    // ---- scheduling ----------------------------------------------------------------------

    /// Replaces the session's scheduler; streams are not disturbed (the swap only changes
    /// where future packets go).
    pub fn set_scheduler(&mut self, kind: scheduler::Kind) {
        self.scheduler = kind.build_seeded(self.scheduler_seed);
        self.scheduler_kind = kind;
        self.policy_changed();
    }

    /// Replaces the session's scheduler with a custom one.
    pub fn set_scheduler_boxed(&mut self, scheduler: Box<dyn Scheduler>) {
        self.scheduler = scheduler;
    }

    /// Gives traffic class `class` its own scheduler (None: the session's again). Live, like
    /// [`Session::set_scheduler`]; classes with the same kind share one instance.
    pub fn set_class_scheduler(&mut self, class: u8, kind: Option<scheduler::Kind>) {
        match kind {
            Some(k) => {
                self.class_kinds.insert(class, k);
                if !self.class_schedulers.iter().any(|(have, _)| *have == k) {
                    let seed = class_seed(self.scheduler_seed, self.class_schedulers.len());
                    self.class_schedulers.push((k, k.build_seeded(seed)));
                }
            }
            None => {
                self.class_kinds.remove(&class);
            }
        }
        let used: Vec<scheduler::Kind> = self.class_kinds.values().copied().collect();
        self.class_schedulers.retain(|(k, _)| used.contains(k));
        // Priority-aware schedulers learn the classes at the next housekeeping.
        self.next_housekeeping = Timestamp::ZERO;
        self.policy_changed();
    }

    /// The AEAD the handshake agreed on (None before it finished).
    pub fn cipher(&self) -> Option<crate::crypto::aead::Cipher> {
        self.keys.as_ref().map(|k| k.cipher())
    }

    /// The session scheduler's name.
    pub fn scheduler_name(&self) -> &'static str {
        self.scheduler.name()
    }

    /// The scheduler for `class`.
    pub(super) fn scheduler_for(&mut self, class: u8) -> &mut Box<dyn Scheduler> {
        match self.class_kinds.get(&class) {
            Some(k) => match self.class_schedulers.iter().position(|(have, _)| have == k) {
                Some(i) => &mut self.class_schedulers[i].1,
                None => &mut self.scheduler,
            },
            None => &mut self.scheduler,
        }
    }

    /// Sets a path's weighted-round-robin weight (None: automatic, from its measured
    /// capacity). Takes effect at once (seed 002: weights change live).
    pub fn set_path_weight(&mut self, id: PathId, weight: Option<u32>) -> Result<(), PathError> {
        self.path_mut(id).ok_or(PathError::Unknown)?.weight = weight;
        self.policy_changed();
        Ok(())
    }

    // ---- paths ---------------------------------------------------------------------------

    /// Ids of the session's paths.
    pub fn path_ids(&self) -> Vec<PathId> {
        self.paths.iter().map(|p| p.id).collect()
    }

    /// A snapshot of one path for status output.
    pub fn path_info(&self, id: PathId) -> Option<PathInfo> {
        let p = self.path(id)?;
        Some(PathInfo {
            id,
            local: p.local,
            remote: p.remote,
            state: p.state,
            status: p.status(),
            srtt: p.rtt.smoothed(),
            min_rtt: p.rtt.min(),
            rttvar: p.rtt.var(),
            cwnd: p.cc.window(),
            in_flight: p.in_flight,
            pacing_rate: p.pacer.rate(),
            delivery_rate: p.monitor.delivery_rate,
            loss_rate: p.monitor.loss_rate,
            jitter: p.monitor.jitter,
            congestion: p.cc.name(),
            stats: p.stats.clone(),
            monitor_state: p.monitor_state(),
            capacity: p.capacity(self.last_activity),
            packet_pair: p.monitor.packet_pair.map(|(r, _)| r),
            impairment_loss: p.monitor.impairment_loss,
            random_losses: p.monitor.random_losses,
            congestion_losses: p.monitor.congestion_losses,
            reported_loss: (p.peer.packets > 0).then_some(p.peer.loss),
            admitted: p.admitted,
            mtu: p.mtu,
            mtu_black_holes: p.pmtu.black_holes,
            weight: p.weight,
            max_rate: p.max_rate,
        })
    }

    /// Session-wide counters.
    pub fn stats(&self) -> &SessionStats {
        &self.stats
    }

    pub(crate) fn path(&self, id: PathId) -> Option<&Path> {
        self.paths.iter().find(|p| p.id == id)
    }

    pub(crate) fn path_mut(&mut self, id: PathId) -> Option<&mut Path> {
        self.paths.iter_mut().find(|p| p.id == id)
    }

    // ---- closing -------------------------------------------------------------------------

    /// Closes the session: CLOSE is sent on every path, then the session ends.
    pub fn close(&mut self, now: Timestamp, code: u64, reason: &str) {
        match self.state {
            State::Closing { .. } | State::Closed => {}
            State::Handshaking { .. } => self.end(CloseReason::LocalClosed { code }),
            State::Established => {
                self.close_frame = Some((code, reason.to_owned(), BTreeSet::new()));
                let pto = self.paths.iter().map(|p| p.rtt.pto_base(self.config.max_ack_delay)).max();
                self.state = State::Closing { until: now + 3 * pto.unwrap_or(Duration::from_secs(1)) };
                self.closed_reason = Some(CloseReason::LocalClosed { code });
            }
        }
    }

    /// Ends the session now with `reason`.
    fn end(&mut self, reason: CloseReason) {
        if matches!(self.state, State::Closed) {
            return;
        }
        self.state = State::Closed;
        let reason = self.closed_reason.take().unwrap_or(reason);
        self.closed_reason = Some(reason.clone());
        self.events.push_back(Event::Closed(reason));
    }

    /// Closes after a protocol violation: one CLOSE goes out, then the session ends.
    fn violation(&mut self, now: Timestamp, what: String) {
        tracing::debug!(session = %self.local_id, %what, "protocol violation");
        self.close(now, 1, "protocol violation");
        self.closed_reason = Some(CloseReason::ProtocolViolation(what));
    }

    fn random_token(&mut self) -> [u8; 8] {
        self.rng.next_u64().to_be_bytes()
    }
}

/// What the status API shows about a path.
#[derive(Debug, Clone)]
pub struct PathInfo {
    /// Path id.
    pub id: PathId,
    /// Local address.
    pub local: Option<SocketAddr>,
    /// Peer address.
    pub remote: SocketAddr,
    /// Life-cycle state.
    pub state: PathState,
    /// Usage status.
    pub status: PathStatusKind,
    /// Smoothed RTT.
    pub srtt: Duration,
    /// Minimum RTT.
    pub min_rtt: Duration,
    /// RTT variation.
    pub rttvar: Duration,
    /// Congestion window.
    pub cwnd: u64,
    /// Bytes in flight.
    pub in_flight: u64,
    /// Pacing rate, bytes/s.
    pub pacing_rate: f64,
    /// Latest delivery rate, bytes/s.
    pub delivery_rate: f64,
    /// Smoothed loss fraction.
    pub loss_rate: f64,
    /// RTT jitter.
    pub jitter: Duration,
    /// Congestion controller name.
    pub congestion: &'static str,
    /// Counters.
    pub stats: PathStats,
    /// State as the path monitor reports it (probing, active, standby, suspect, down).
    pub monitor_state: MonitorState,
    /// Capacity estimate, bytes/s (saturated delivery rate or packet pair).
    pub capacity: f64,
    /// Latest packet-pair estimate, bytes/s.
    pub packet_pair: Option<f64>,
    /// Loss fraction due to the link itself (losses without a queue).
    pub impairment_loss: f64,
    /// Loss events classed as random.
    pub random_losses: u64,
    /// Loss events classed as congestion.
    pub congestion_losses: u64,
    /// Loss fraction the peer reported in PATH_REPORT (the two-sided monitor), if it did.
    pub reported_loss: Option<f64>,
    /// Path admission's verdict (false: kept in standby).
    pub admitted: bool,
    /// Maximum UDP payload the path carries now (lowered when a black hole was found).
    pub mtu: usize,
    /// Path MTU black holes detected (see `path::mtu`).
    pub mtu_black_holes: u32,
    /// Weighted-round-robin weight (None: automatic).
    pub weight: Option<u32>,
    /// Rate cap, bytes/s (None: none).
    pub max_rate: Option<u64>,
}

/// The seed of the `n`th class scheduler: distinct from the session scheduler's (`n` + 1 is
/// never 0) and from the other classes'.
fn class_seed(scheduler_seed: u64, n: usize) -> u64 {
    scheduler_seed ^ (n as u64 + 1)
}
