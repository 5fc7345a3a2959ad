//! A session: the encrypted multipath connection between one client and the server.
//!
//! The session is a pure state machine. See the crate documentation for the calling contract.
//! Its code is split by concern: `recv` (datagrams in), `send` (datagrams out), `frames`
//! (what received frames do), `paths` (joining, validation, blackout), `timers`.

mod ack_carrier;
mod ack_offload;
mod acks;
pub mod batch;
mod builder;
mod class_limits;
mod closing;
mod critical;
mod events;
pub mod fetch;
mod frames;
#[cfg(feature = "fuzzing")]
mod fuzzing;
mod info;
pub mod lost_log;
mod monitoring;
mod packing;
mod path_queues;
pub mod paths;
mod pinned;
mod policy;
mod probes;
mod recv;
mod reports;
mod schedulers;
mod scheduling;
mod sharing;
mod stall;
mod streams_api;
mod timers;
pub mod timing;
mod transmit;
pub mod window_sizing;

use crate::config::{ClientConfig, SessionConfig};
use crate::crypto::cookie::CookieJar;
use crate::crypto::handshake::{Initiator, SessionKeys};
use crate::crypto::keyupdate::KeySchedule;
use crate::crypto::replay::ReplayWindow;
use crate::crypto::{PublicKey, Seed};
use crate::datagram::Datagrams;
use crate::path::sent::SentPacket;
use crate::path::{Path, PathId, PathState};
use crate::scheduler::{self, Scheduler};
use crate::side::Side;
use crate::stream::{StreamLimits, Streams};
use crate::time::Timestamp;
use crate::wire::SessionId;
use paths::PathError;
use rand_chacha::ChaCha20Rng;
use rand_core::RngCore;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

pub use ack_offload::OffloadStats;
pub use builder::Transmit;
pub use events::{CloseReason, Event, PathEvent};
pub use info::PathInfo;
pub use recv::DropReason;

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
    /// The session's and the traffic classes' schedulers.
    schedulers: schedulers::Schedulers,
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
    queues: path_queues::PathQueues,
    /// What selective redundancy may still spend on copies, and has spent.
    copy_budget: critical::CopyBudget,
    /// On which path each path's ACKs leave, and the Offloader's credit.
    ack_carrier: ack_carrier::AckCarrier,
    /// When the periodic monitor work runs next.
    next_housekeeping: Timestamp,
    window_sizing: window_sizing::WindowSizing,
    /// When path admission runs next.
    next_admission: Timestamp,
    /// When a packet carrying application data (stream bytes, datagrams) last left.
    last_data_sent: Option<Timestamp>,
    /// When a packet with more than PINGs, PADDING and ACKs last arrived (see
    /// `Session::carries_traffic`).
    last_payload_received: Option<Timestamp>,
    /// Loss fetching's queue (seed 003, see `fetch`).
    fetch: fetch::LossFetch,
    /// Stalled stream heads and their reinjection (see `stall`).
    stall: stall::StallWatch,
    /// Lost stream bytes, recorded when asked for (see `lost_log`).
    lost_log: Option<VecDeque<lost_log::LostRange>>,
    /// Whether other senders share the paths' bottlenecks, and what a server owes its
    /// client about its ingress (see `sharing`).
    sharing: sharing::Sharing,
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
            schedulers: schedulers::Schedulers::new(config.scheduler, class_kinds, scheduler_seed),
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
            queues: Default::default(),
            ack_carrier: Default::default(),
            next_housekeeping: now,
            window_sizing: Default::default(),
            next_admission: now,
            last_data_sent: None,
            last_payload_received: None,
            fetch: Default::default(),
            stall: Default::default(),
            lost_log: None,
            sharing: sharing::Sharing::new(side),
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
        (3 * pto.unwrap_or(Duration::ZERO)).clamp(crate::timing::KEY_GRACE_MIN, crate::timing::KEY_GRACE_MAX)
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

    // ---- scheduling ----------------------------------------------------------------------

    /// Replaces the session's scheduler; streams are not disturbed (the swap only changes
    /// where future packets go).
    pub fn set_scheduler(&mut self, kind: scheduler::Kind) {
        self.schedulers.set(kind);
        self.policy_changed();
    }

    /// Replaces the session's scheduler with a custom one.
    pub fn set_scheduler_boxed(&mut self, scheduler: Box<dyn Scheduler>) {
        self.schedulers.set_boxed(scheduler);
    }

    /// Gives traffic class `class` its own scheduler (None: the session's again). Live, like
    /// [`Session::set_scheduler`]; classes with the same kind share one instance.
    pub fn set_class_scheduler(&mut self, class: u8, kind: Option<scheduler::Kind>) {
        self.schedulers.set_class(class, kind);
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
        self.schedulers.name()
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

    fn random_token(&mut self) -> [u8; 8] {
        self.rng.next_u64().to_be_bytes()
    }
}
