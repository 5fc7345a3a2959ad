//! The status document and Prometheus metrics each daemon serves on its status port:
//! `GET /status` (JSON), `GET /metrics` (Prometheus text), `GET /` (a small live page), and
//! `POST /scheduler` (body: a scheduler name) to switch every session's scheduler live. Every
//! request passes [`crate::control`]'s guard first: changes need the daemon's token.

use crate::frontend::FrontendStatus;
pub use crate::linkpolicy::table::LinkStatus;
pub use crate::metrics::prometheus;
use crate::rates::{Counters, RateMemory};
use axum::extract::State;
use axum::http::header;
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse};
use axum::routing::{get, post};
use axum::{Json, Router};
use braid_core::scheduler::Kind;
use braid_core::Session;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock, RwLock};
use std::time::Instant;
use tokio::sync::watch;

/// One path, as published.
#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct PathStatus {
    /// Path id.
    pub id: u8,
    /// Local address.
    pub local: Option<String>,
    /// Peer address.
    pub remote: String,
    /// Link label (interface or address) on the client.
    pub link: Option<String>,
    /// probing, active, standby, backup, suspect, down.
    pub state: String,
    /// Smoothed RTT, ms.
    pub rtt_ms: f64,
    /// Minimum RTT, ms.
    pub min_rtt_ms: f64,
    /// RTT variation, ms.
    pub rttvar_ms: f64,
    /// Congestion window, bytes.
    pub cwnd: u64,
    /// Bytes in flight.
    pub in_flight: u64,
    /// Bytes of packets stranded when the path went silent (their data was resent on other
    /// paths) that its link may still hold: not yet acknowledged or declared lost.
    #[serde(default)]
    pub stranded: u64,
    /// Sending rate (UDP payload) over the last [`crate::rates::RATE_WINDOW`], bit/s.
    pub send_bps: f64,
    /// Receiving rate (UDP payload) over the same window, bit/s.
    pub recv_bps: f64,
    /// New stream bytes received over the same window (the path's goodput), bit/s.
    #[serde(default)]
    pub goodput_bps: f64,
    /// The path monitor's capacity estimate (saturated delivery rate or packet pair), bit/s;
    /// 0 before the first.
    #[serde(default)]
    pub capacity_bps: f64,
    /// What the capacity rests on: the latest delivery-rate sample, the latest packet pair
    /// (0 before one) and the congestion controller's bottleneck model (BBR; 0 for others),
    /// bit/s. A shaper's burst shows as a pair far above the delivery rate.
    #[serde(default)]
    pub delivery_rate_bps: f64,
    /// See `delivery_rate_bps`.
    #[serde(default)]
    pub packet_pair_bps: f64,
    /// See `delivery_rate_bps`.
    #[serde(default)]
    pub model_bps: f64,
    /// Smoothed loss fraction.
    pub loss: f64,
    /// The share of that loss that came with no queue: the link's own (random) loss, with
    /// congestion losses left out (seeds 001, 003).
    #[serde(default)]
    pub impairment_loss: f64,
    /// RTT jitter, ms.
    pub jitter_ms: f64,
    /// Bytes sent.
    pub bytes_sent: u64,
    /// Bytes received.
    pub bytes_received: u64,
    /// New stream bytes received on this path (its share of the goodput).
    pub stream_bytes_received: u64,
    /// Packets declared lost.
    pub packets_lost: u64,
    /// Times the path went silent.
    pub blackouts: u64,
    /// Maximum UDP payload the path carries now, bytes (lower than configured after a path
    /// MTU black hole).
    #[serde(default)]
    pub mtu: usize,
    /// Path MTU black holes found on this path (each lowered `mtu`).
    #[serde(default)]
    pub mtu_black_holes: u32,
    /// Path admission's verdict: false while the path waits in standby as not worth using
    /// (always true with admission off).
    #[serde(default = "yes")]
    pub admitted: bool,
}

fn yes() -> bool {
    true
}

/// One session, as published.
#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct SessionStatus {
    /// Session id: the server's, the same on client and server (16 hex digits, as in both
    /// sides' logs); empty on a client until the handshake completes.
    pub id: String,
    /// The peer's label (server side: client name; client side: server address).
    pub peer: String,
    /// Established.
    pub established: bool,
    /// Scheduler.
    pub scheduler: String,
    /// The scheduler of client-to-server traffic (uploads): the client's own; on the server,
    /// the one the client asked for (empty before its policy arrived).
    #[serde(default)]
    pub scheduler_up: String,
    /// The scheduler of server-to-client traffic (downloads): on the server, the one it runs
    /// for this session (the client's choice once its policy arrived); on the client, the one
    /// it asked the server for.
    #[serde(default)]
    pub scheduler_down: String,
    /// The packet AEAD agreed in the handshake (empty before it).
    #[serde(default)]
    pub cipher: String,
    /// Generation of the packet keys (key updates so far).
    #[serde(default)]
    pub key_phase: u64,
    /// Open streams.
    pub streams: usize,
    /// Paths.
    pub paths: Vec<PathStatus>,
    /// Datagrams dropped by reason.
    pub dropped: BTreeMap<String, u64>,
    /// Stream bytes sent again.
    pub retransmitted_bytes: u64,
    /// ACK packets this side, as receiver, sent on the secondary path for the primary (seed
    /// 003's Offloader, `ack_path = "secondary"`; 0 with the other ACK paths).
    #[serde(default)]
    pub acks_offloaded: u64,
    /// Replaceable ACKs the Offloader dropped because the secondary had no room for them
    /// (the next ACK superseded each).
    #[serde(default)]
    pub acks_dropped: u64,
    /// Path admission (seed 000's bound, seed 002's rules): paths it finds not worth using
    /// wait in standby (`admitted: false` on the path).
    #[serde(default)]
    pub path_admission: bool,
    /// Whether other senders may share this session's bottlenecks (`bbr-shared` then drains
    /// ProbeRTT to half a BDP, else to one): on a server, whether another session is sending
    /// at the same time; on a client, whether its server last said that other sessions'
    /// uploads arrive too (`braid_core::crowd`).
    #[serde(default = "yes")]
    pub shared_bottleneck: bool,
    /// The daemon's uptime when these counters were read, s: a reader turns the counters of
    /// two documents into rates over exactly its own sampling interval.
    #[serde(default)]
    pub sampled_s: f64,
}

/// The whole document.
#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct Status {
    /// "client" or "server".
    pub role: String,
    /// braid version.
    pub version: String,
    /// Seconds since start.
    pub uptime_s: f64,
    /// Sessions (one on a client).
    pub sessions: Vec<SessionStatus>,
    /// Datagrams dropped before reaching a session (server), by reason.
    pub endpoint_dropped: BTreeMap<String, u64>,
    /// Answers the server sent to unauthenticated packets: cookie replies (under load),
    /// stateless resets (packets of sessions it does not know), refusals (keys not admitted).
    #[serde(default)]
    pub endpoint_replies: BTreeMap<String, u64>,
    /// Handshakes waiting for their public-key work (server).
    #[serde(default)]
    pub handshakes_in_progress: usize,
    /// Datagrams received on each of the server's sockets (one per core, `SO_REUSEPORT`):
    /// how evenly the sessions spread over them (every datagram of a session reaches one
    /// socket, by its id: `udp::steer_by_session`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub received_per_socket: Vec<u64>,
    /// What the daemon is doing when it has no session (client: "connecting", "retrying").
    pub note: Option<String>,
    /// The client's front ends (SOCKS5, forwards): connections, refusals, UDP associations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frontend: Option<FrontendStatus>,
    /// The client's links: tier, weight, rate cap, usage in the current period, data cap.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub links: Vec<LinkStatus>,
}

/// Reads the front ends' counters when a snapshot is taken.
type FrontendSource = Arc<dyn Fn() -> FrontendStatus + Send + Sync>;
/// Reads the client's links when a snapshot is taken.
type LinksSource = Arc<dyn Fn() -> Vec<LinkStatus> + Send + Sync>;
/// Changes one link setting (`POST /link`): link name, key, value; says what it did.
type LinkControl = Arc<dyn Fn(&str, &str, &str) -> Result<String, String> + Send + Sync>;

/// Shared status, written by drivers, read by the HTTP server.
#[derive(Clone)]
pub struct StatusBoard {
    inner: Arc<RwLock<Status>>,
    started: Instant,
    /// The scheduler an operator asked for (`POST /scheduler`); drivers watch it.
    scheduler: Arc<watch::Sender<Option<Kind>>>,
    /// Path admission as an operator asked for it (`POST /admission`); drivers watch it.
    admission: Arc<watch::Sender<Option<bool>>>,
    /// The client's front ends, once attached.
    frontend: Arc<OnceLock<FrontendSource>>,
    /// The client's links, once attached.
    links: Arc<OnceLock<(LinksSource, LinkControl)>>,
}

impl StatusBoard {
    /// A board for `role`.
    pub fn new(role: &str) -> Self {
        let status =
            Status { role: role.into(), version: env!("CARGO_PKG_VERSION").into(), ..Default::default() };
        StatusBoard {
            inner: Arc::new(RwLock::new(status)),
            started: Instant::now(),
            scheduler: Arc::new(watch::Sender::new(None)),
            admission: Arc::new(watch::Sender::new(None)),
            frontend: Arc::default(),
            links: Arc::default(),
        }
    }

    /// Publishes the client's links (read at each snapshot) and takes `POST /link` changes.
    pub fn attach_links(
        &self,
        source: impl Fn() -> Vec<LinkStatus> + Send + Sync + 'static,
        control: impl Fn(&str, &str, &str) -> Result<String, String> + Send + Sync + 'static,
    ) {
        let _ = self.links.set((Arc::new(source), Arc::new(control)));
    }

    /// Changes one setting of link `name` (`tier=backup`, `cap=20GB`, …).
    pub fn set_link(&self, name: &str, key: &str, value: &str) -> Result<String, String> {
        match self.links.get() {
            Some((_, control)) => control(name, key, value),
            None => Err("this daemon has no links to set (only a client has)".into()),
        }
    }

    /// Publishes the front ends' counters (read at each snapshot).
    pub fn attach_frontend(&self, source: impl Fn() -> FrontendStatus + Send + Sync + 'static) {
        let _ = self.frontend.set(Arc::new(source));
    }

    /// Replaces the entry published as `previous` (a client's session gets its id at the
    /// end of the handshake), or the one with the same id, or adds one; stamps it with the
    /// time its counters were read.
    pub fn put_session(&self, previous: Option<&str>, mut s: SessionStatus) {
        s.sampled_s = self.started.elapsed().as_secs_f64();
        let mut st = self.inner.write().unwrap_or_else(|e| e.into_inner());
        let old = previous.unwrap_or(&s.id).to_string();
        match st.sessions.iter_mut().find(|x| x.id == old || x.id == s.id) {
            Some(x) => *x = s,
            None => st.sessions.push(s),
        }
    }

    /// Removes a session's entry.
    pub fn remove_session(&self, id: &str) {
        self.inner.write().unwrap_or_else(|e| e.into_inner()).sessions.retain(|s| s.id != id);
    }

    /// Sets the endpoint's counters: drops by reason, answers by kind, handshakes in progress.
    pub fn set_endpoint(&self, e: &braid_core::Endpoint) {
        let mut st = self.inner.write().unwrap_or_else(|e| e.into_inner());
        st.endpoint_dropped = e.dropped.iter().map(|(r, n)| (r.label().to_string(), *n)).collect();
        let r = e.replied;
        st.endpoint_replies =
            [("cookie", r.cookies), ("reset", r.resets), ("refusal", r.refusals), ("version", r.versions)]
                .map(|(k, n)| (k.to_string(), n))
                .into();
        st.handshakes_in_progress = e.handshakes_in_progress();
    }

    /// Sets the datagrams received per server socket, and those the receive loops dropped
    /// because the endpoint loop's queue was full (shown with the endpoint's drops, as
    /// `receive_queue_full`).
    pub fn set_received(&self, counts: Vec<u64>, queue_full: u64) {
        let mut st = self.inner.write().unwrap_or_else(|e| e.into_inner());
        st.received_per_socket = counts;
        if queue_full > 0 {
            st.endpoint_dropped.insert("receive_queue_full".to_string(), queue_full);
        }
    }

    /// Sets the note.
    pub fn set_note(&self, note: Option<String>) {
        self.inner.write().unwrap_or_else(|e| e.into_inner()).note = note;
    }

    /// Asks every session's driver to switch to `kind` (now, and for sessions that start later).
    pub fn request_scheduler(&self, kind: Kind) {
        self.scheduler.send_replace(Some(kind));
    }

    /// Asks every driver to turn path admission on or off (seed 000's bound, seed 002's
    /// rules), live.
    pub fn request_admission(&self, on: bool) {
        self.admission.send_replace(Some(on));
    }

    /// The operator's admission requests, for a driver to follow.
    pub fn admission_requests(&self) -> watch::Receiver<Option<bool>> {
        self.admission.subscribe()
    }

    /// The operator's scheduler requests, for a driver to follow.
    pub fn scheduler_requests(&self) -> watch::Receiver<Option<Kind>> {
        self.scheduler.subscribe()
    }

    /// A copy of the document.
    pub fn snapshot(&self) -> Status {
        let mut s = self.inner.read().unwrap_or_else(|e| e.into_inner()).clone();
        s.uptime_s = self.started.elapsed().as_secs_f64();
        s.frontend = self.frontend.get().map(|f| f());
        s.links = self.links.get().map(|(l, _)| l()).unwrap_or_default();
        s
    }
}

/// Builds a session's status entry.
pub fn session_status(
    s: &Session,
    peer: String,
    links: &BTreeMap<u8, String>,
    mem: &mut RateMemory,
) -> SessionStatus {
    let now = Instant::now();
    let paths = s
        .path_ids()
        .into_iter()
        .filter_map(|id| s.path_info(id))
        .map(|p| {
            let counters = Counters {
                sent: p.stats.bytes_sent,
                received: p.stats.bytes_received,
                stream_received: p.stats.stream_bytes_received,
            };
            let rates = mem.record(p.id, now, counters);
            let state = match (p.state, p.status) {
                (braid_core::PathState::Validating, _) => "probing",
                (braid_core::PathState::Suspect, _) => "suspect",
                (braid_core::PathState::Closed, _) => "down",
                (_, braid_core::wire::PathStatusKind::Standby) => "standby",
                (_, braid_core::wire::PathStatusKind::Backup) => "backup",
                (_, braid_core::wire::PathStatusKind::Secondary) => "secondary",
                _ => "active",
            };
            PathStatus {
                id: p.id,
                local: p.local.map(|a| a.to_string()),
                remote: p.remote.to_string(),
                link: links.get(&p.id).cloned(),
                state: state.into(),
                rtt_ms: p.srtt.as_secs_f64() * 1e3,
                min_rtt_ms: p.min_rtt.as_secs_f64() * 1e3,
                rttvar_ms: p.rttvar.as_secs_f64() * 1e3,
                cwnd: p.cwnd,
                in_flight: p.in_flight,
                stranded: p.stranded,
                send_bps: rates.send_bps,
                recv_bps: rates.recv_bps,
                goodput_bps: rates.goodput_bps,
                capacity_bps: p.capacity * 8.0,
                delivery_rate_bps: p.delivery_rate * 8.0,
                packet_pair_bps: p.packet_pair.unwrap_or(0.0) * 8.0,
                model_bps: p.model.unwrap_or(0.0) * 8.0,
                loss: p.loss_rate,
                impairment_loss: p.impairment_loss,
                jitter_ms: p.jitter.as_secs_f64() * 1e3,
                bytes_sent: p.stats.bytes_sent,
                bytes_received: p.stats.bytes_received,
                stream_bytes_received: p.stats.stream_bytes_received,
                packets_lost: p.stats.packets_lost,
                blackouts: p.stats.blackouts,
                mtu: p.mtu,
                mtu_black_holes: p.mtu_black_holes,
                admitted: p.admitted,
            }
        })
        .collect::<Vec<_>>();
    mem.retain(|id| paths.iter().any(|p| p.id == id));
    let offload = s.ack_offload_stats();
    SessionStatus {
        id: session_label(s),
        peer,
        established: s.is_established(),
        scheduler: s.scheduler_name().into(),
        scheduler_up: match s.side() {
            braid_core::Side::Client => s.scheduler_name().into(),
            braid_core::Side::Server => s.peer_scheduler().map_or(String::new(), |k| k.name().to_string()),
        },
        scheduler_down: s.scheduler_name().into(),
        cipher: s.cipher().map_or("", |c| c.name()).into(),
        key_phase: s.key_phase(),
        streams: s.stream_count(),
        paths,
        dropped: s.stats().dropped.iter().map(|(r, n)| (r.label().to_string(), *n)).collect(),
        retransmitted_bytes: s.retransmitted_bytes(),
        acks_offloaded: offload.offloaded,
        acks_dropped: offload.dropped,
        path_admission: s.policy().admission,
        shared_bottleneck: s.shared_bottleneck(),
        sampled_s: 0.0,
    }
}

/// How the daemons name a session in logs and status: the server's id (16 hex digits), the
/// same on both ends; empty on a client still in its handshake.
pub fn session_label(s: &Session) -> String {
    let id = s.server_id();
    if id.0 == 0 {
        String::new()
    } else {
        id.to_string()
    }
}

const PAGE: &str = include_str!("status_page.html");

/// `POST /scheduler`: the body names a scheduler (`braid sim --help` lists them).
async fn set_scheduler(State(b): State<StatusBoard>, body: String) -> (StatusCode, String) {
    match body.trim().parse::<Kind>() {
        Ok(kind) => {
            b.request_scheduler(kind);
            let n = b.snapshot().sessions.len();
            (StatusCode::OK, format!("scheduler {} requested for {n} session(s)\n", kind.name()))
        }
        Err(e) => (StatusCode::BAD_REQUEST, format!("{e}\n")),
    }
}

/// `POST /admission`: the body is `on` or `off`; every session follows at once (a client's
/// choice also reaches its server in the policy it sends).
async fn set_admission(State(b): State<StatusBoard>, body: String) -> (StatusCode, String) {
    let on = match body.trim() {
        "on" | "true" => true,
        "off" | "false" => false,
        other => {
            return (StatusCode::BAD_REQUEST, format!("path admission is 'on' or 'off', not '{other}'\n"))
        }
    };
    b.request_admission(on);
    let n = b.snapshot().sessions.len();
    (StatusCode::OK, format!("path admission {} for {n} session(s)\n", if on { "on" } else { "off" }))
}

/// `POST /link`: the body is `NAME KEY=VALUE [KEY=VALUE…]` (`wwan0 tier=backup cap=20GB`);
/// each change applies at once and the session's server is told.
async fn set_link(State(b): State<StatusBoard>, body: String) -> (StatusCode, String) {
    let mut words = body.split_whitespace();
    let Some(name) = words.next() else {
        return (StatusCode::BAD_REQUEST, "expected: NAME KEY=VALUE [KEY=VALUE...]\n".into());
    };
    let mut out = String::new();
    for w in words {
        let Some((k, v)) = w.split_once('=') else {
            return (StatusCode::BAD_REQUEST, format!("'{w}' is not KEY=VALUE\n"));
        };
        match b.set_link(name, k, v) {
            Ok(line) => out.push_str(&format!("{line}\n")),
            Err(e) => return (StatusCode::BAD_REQUEST, format!("{out}{e}\n")),
        }
    }
    if out.is_empty() {
        return (StatusCode::BAD_REQUEST, format!("no change given for link {name}: add KEY=VALUE\n"));
    }
    (StatusCode::OK, out)
}

/// Serves the status API on `addr` until the task is dropped; returns the bound address. The
/// control token goes to `token_file` (default: [`crate::control::default_token_path`] of the
/// bound address); the task owns the file and removes it when it is dropped.
pub async fn serve(
    addr: SocketAddr,
    board: StatusBoard,
    token_file: Option<PathBuf>,
) -> std::io::Result<(SocketAddr, tokio::task::JoinHandle<()>)> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    if !bound.ip().is_loopback() {
        tracing::warn!(%bound, "the status port listens beyond loopback: whoever reaches it sees every session and path (changes still need the token)");
    }
    let (access, token) = crate::control::Access::start(bound, token_file);
    let app = Router::new()
        .route("/status", get(|State(b): State<StatusBoard>| async move { Json(b.snapshot()) }))
        .route(
            "/metrics",
            get(|State(b): State<StatusBoard>| async move {
                ([(header::CONTENT_TYPE, crate::exposition::CONTENT_TYPE)], prometheus(&b.snapshot()))
                    .into_response()
            }),
        )
        .route("/scheduler", post(set_scheduler))
        .route("/link", post(set_link))
        .route("/admission", post(set_admission))
        .route("/", get(|| async { Html(PAGE) }))
        .layer(axum::middleware::from_fn_with_state(access, crate::control::guard))
        .with_state(board);
    let task = tokio::spawn(async move {
        let _token = token;
        let _ = axum::serve(listener, app).await;
    });
    Ok((bound, task))
}
