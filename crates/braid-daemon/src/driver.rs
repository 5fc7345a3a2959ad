//! The session driver: one tokio task per session that owns the sans-IO `Session` and moves
//! bytes between it, its UDP sockets and the applications' stream bridges. It holds no protocol
//! logic. Each round, in a fixed order: receive (feed datagrams), timer, application requests,
//! events (streams, paths), transmit (batched, segmented), then wait for the next of: a
//! datagram, a request, a budget release, the core's deadline, the status tick.
//!
//! A path socket of its own (the client's) is read by the driver itself, a `recvmmsg` batch
//! at a time, straight into the session: no receive task and no channel hand-off per batch.
//! The server's one socket is read by its endpoint loop, which routes batches to the
//! session's `inbox`.

use crate::bridge::{pair, AppMsg, DriverEnd, Inbound, OpenError, StreamEnds};
use crate::rates::RateMemory;
use crate::status::{session_label, session_status, StatusBoard};
use crate::udp::{canonical, Incoming, Receiver, UdpLink};
use braid_core::crowd::Member;
use braid_core::datagram::Datagram;
use braid_core::scheduler::Kind;
use braid_core::session::batch::TransmitBatch;
use braid_core::{
    CloseReason, Event, PathId, PathInfo, Session, StreamError, StreamEvent, StreamId, Timestamp,
};
use bytes::Bytes;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;
use tokio::sync::{mpsc, watch, Notify};
use tokio::time::Instant;

/// Packets one round may send before the driver looks at its inbox again.
const SEND_BUDGET: usize = 512;
/// How often the status board is refreshed.
const STATUS_EVERY: Duration = Duration::from_millis(500);
/// Bytes read from a stream per `read_chunk`.
const READ_CHUNK: usize = 64 * 1024;
/// `recvmmsg` batches one round reads from each path socket before it transmits.
const RECV_BATCHES: usize = 8;

/// What differs between the client's and the server's driver.
pub trait Role: Send + 'static {
    /// The peer opened a stream.
    fn on_stream_opened(&mut self, ends: StreamEnds);
    /// A datagram arrived.
    fn on_datagram(&mut self, d: Datagram);
    /// A session event worth knowing (paths, connection, close), after the driver handled it.
    fn on_event(&mut self, _e: &Event) {}
    /// The paths as measured now (every status refresh): TUN flows size their reorder window
    /// from them.
    fn on_paths(&mut self, _paths: &[PathInfo]) {}
    /// When the session starts, every status refresh, after paths came or went, and as the
    /// session ends: the role may count what the paths carried and change them (the client's
    /// link policy). Returns paths to open or close.
    fn steer(
        &mut self,
        _now: Timestamp,
        _session: &mut Session,
        _labels: &BTreeMap<PathId, String>,
    ) -> Vec<LinkMsg> {
        Vec::new()
    }
}

/// Requests that change the driver's sockets (client link hot-plug).
pub enum LinkMsg {
    /// Open a path over `link` to `server`, labelled `label`.
    Add { link: UdpLink, server: SocketAddr, label: String },
    /// Close the path leaving from `local`.
    Remove { local: SocketAddr },
}

/// The driver of one session.
pub struct Driver<R: Role> {
    session: Session,
    role: R,
    epoch: Instant,
    /// Socket of each path (client), or the one socket of the server.
    sockets: HashMap<PathId, UdpLink>,
    default_socket: Option<UdpLink>,
    labels: BTreeMap<PathId, String>,
    inbox: Option<mpsc::Receiver<Vec<Incoming>>>,
    app_rx: mpsc::Receiver<AppMsg>,
    app_tx: mpsc::Sender<AppMsg>,
    links_rx: Option<mpsc::Receiver<LinkMsg>>,
    kick: Arc<Notify>,
    streams: HashMap<StreamId, DriverEnd>,
    pending_opens: VecDeque<AppMsg>,
    /// Opens still waiting for the handshake when it fails go back to the application channel
    /// for the next attempt (see [`Driver::carry_opens`]) instead of being refused.
    carry_opens: bool,
    board: Option<StatusBoard>,
    peer_label: String,
    rates: RateMemory,
    /// The id the session's status entry was last published under.
    published: Option<String>,
    /// Live scheduler switches asked for on the status API.
    scheduler_rx: Option<watch::Receiver<Option<Kind>>>,
    /// Path admission switches asked for on the status API.
    admission_rx: Option<watch::Receiver<Option<bool>>>,
    /// Receive buffers of each path socket of its own (client).
    receiving: HashMap<PathId, Receiver>,
    /// Datagrams of one receive round (kept: no allocation per round).
    incoming: Vec<Incoming>,
    /// The transmit batch's buffers, kept between rounds (no allocation per batch).
    batch: TransmitBatch,
    /// Stream ids of one `pump_all` round (kept: no allocation per round).
    pumping: Vec<StreamId>,
    /// The server's counts of sessions sending and receiving at once (server; see
    /// [`braid_core::crowd`]).
    crowds: Option<Crowds>,
}

/// A server session's places in its host's two crowds.
#[derive(Debug)]
pub(crate) struct Crowds {
    /// Sessions sending a backlog: they share the server's uplink.
    pub(crate) sending: Member,
    /// Sessions receiving data: their clients share the server's ingress.
    pub(crate) receiving: Member,
}

/// How a driver is wired.
pub struct Wiring {
    /// Datagrams for this session routed by the server's endpoint (None for a client, whose
    /// driver reads its path sockets itself).
    pub inbox: Option<mpsc::Receiver<Vec<Incoming>>>,
    /// Application requests.
    pub app_rx: mpsc::Receiver<AppMsg>,
    /// A sender of application requests (handed to bridges).
    pub app_tx: mpsc::Sender<AppMsg>,
    /// Link hot-plug requests (client).
    pub links_rx: Option<mpsc::Receiver<LinkMsg>>,
}

impl<R: Role> Driver<R> {
    /// A driver for `session`.
    pub fn new(
        session: Session,
        role: R,
        epoch: Instant,
        wiring: Wiring,
        board: Option<StatusBoard>,
        peer_label: String,
    ) -> Self {
        Driver {
            session,
            role,
            epoch,
            sockets: HashMap::new(),
            default_socket: None,
            labels: BTreeMap::new(),
            inbox: wiring.inbox,
            app_rx: wiring.app_rx,
            app_tx: wiring.app_tx,
            links_rx: wiring.links_rx,
            kick: Arc::new(Notify::new()),
            streams: HashMap::new(),
            pending_opens: VecDeque::new(),
            carry_opens: false,
            scheduler_rx: board.as_ref().map(|b| b.scheduler_requests()),
            admission_rx: board.as_ref().map(|b| b.admission_requests()),
            receiving: HashMap::new(),
            incoming: Vec::new(),
            batch: TransmitBatch::new(),
            pumping: Vec::new(),
            crowds: None,
            board,
            peer_label,
            rates: RateMemory::default(),
            published: None,
        }
    }

    /// Uses `link` for path `id` (client) — the path must exist in the session — and receives
    /// from it until the driver ends or the path is removed.
    pub fn bind_path(&mut self, id: PathId, link: UdpLink, label: String) {
        // The path may search up to what its interface sends (RFC 8899 MAX_PLPMTU): 1472
        // bytes on Ethernet, 8972 on a jumbo-frame LAN, 65,000 on loopback (`path::mtu`).
        if let Some(ceiling) = self.session.path_info(id).and_then(|p| link.mtu_toward(p.remote)) {
            tracing::debug!(path = id, ceiling, "interface MTU read");
            let _ = self.session.set_path_mtu_ceiling(id, ceiling);
        }
        self.receiving.insert(id, Receiver::new(&link));
        self.sockets.insert(id, link);
        self.labels.insert(id, label);
    }

    /// Counts the session in the server's crowds and tells it, at every status refresh,
    /// whether another session sends at the same time, and its client whether another session
    /// receives (server).
    pub(crate) fn join_crowds(&mut self, crowds: Crowds) {
        self.crowds = Some(crowds);
    }

    /// Uses `link` for every path without a socket of its own (server).
    pub fn set_default_socket(&mut self, link: UdpLink) {
        self.default_socket = Some(link);
    }

    /// The session (for inspection).
    pub fn session(&self) -> &Session {
        &self.session
    }

    fn now(&self) -> Timestamp {
        Timestamp::from_duration(self.epoch.elapsed())
    }

    /// Runs until the session ends; returns why it ended, the application channel and the link
    /// channel (so a client can hand them to its next session).
    pub async fn run(mut self) -> (CloseReason, mpsc::Receiver<AppMsg>, Option<mpsc::Receiver<LinkMsg>>) {
        let mut status_at = Instant::now();
        let mut received: Vec<Vec<Incoming>> = Vec::new();
        let mut requests: Vec<AppMsg> = Vec::new();
        let mut link_msgs: Vec<LinkMsg> = Vec::new();
        let mut switch_to = self.scheduler_rx.as_mut().and_then(|rx| *rx.borrow_and_update());
        let mut admit = self.admission_rx.as_mut().and_then(|rx| *rx.borrow_and_update());
        self.steer(self.now());
        loop {
            if let Some(kind) = switch_to.take() {
                tracing::info!(session = %session_label(&self.session), scheduler = kind.name(), "scheduler switched");
                self.session.set_scheduler(kind);
                self.publish();
            }
            if let Some(on) = admit.take() {
                tracing::info!(session = %session_label(&self.session), on, "path admission switched");
                self.session.set_path_admission(on);
                self.publish();
            }
            let now = self.now();
            // 1. Receive.
            self.receive_own(now);
            if let Some(inbox) = self.inbox.as_mut() {
                while let Ok(b) = inbox.try_recv() {
                    received.push(b);
                }
            }
            for batch in received.drain(..) {
                for d in batch {
                    self.session.handle_datagram(now, d.local, canonical(d.from), d.data);
                }
            }
            // 2. Timer.
            if self.session.poll_timeout().is_some_and(|t| t <= now) {
                self.session.handle_timeout(now);
            }
            // 3. Application and link requests.
            for _ in 0..1024 {
                match self.app_rx.try_recv() {
                    Ok(m) => requests.push(m),
                    Err(_) => break,
                }
            }
            for m in requests.drain(..) {
                self.on_app(now, m);
            }
            if let Some(rx) = self.links_rx.as_mut() {
                while let Ok(m) = rx.try_recv() {
                    link_msgs.push(m);
                }
            }
            if !link_msgs.is_empty() {
                for m in link_msgs.drain(..) {
                    self.on_link(now, m);
                }
                self.steer(now);
            }
            // 4. Events, and streams waiting for budget.
            let mut closed = None;
            while let Some(e) = self.session.poll_event() {
                if let Event::Closed(r) = &e {
                    closed = Some(r.clone());
                }
                self.on_event(now, &e);
                self.role.on_event(&e);
            }
            self.pump_all();
            // 5. Transmit.
            let more = self.transmit(now).await;
            if status_at.elapsed() >= STATUS_EVERY {
                status_at = Instant::now();
                if let Some(crowds) = self.crowds.as_mut() {
                    let shared = crowds.sending.update(self.session.is_busy_sending(now, STATUS_EVERY));
                    if shared != self.session.shared_bottleneck() {
                        tracing::debug!(session = %session_label(&self.session), shared, "bottleneck sharing changed");
                        self.session.set_shared_bottleneck(shared);
                    }
                    let ingress = crowds.receiving.update(self.session.is_busy_receiving(now, STATUS_EVERY));
                    self.session.set_shares_ingress(ingress);
                }
                self.steer(now);
                self.publish();
                let paths: Vec<PathInfo> =
                    self.session.path_ids().into_iter().filter_map(|id| self.session.path_info(id)).collect();
                self.role.on_paths(&paths);
            }
            if let Some(reason) =
                closed.or_else(|| self.session.close_reason().filter(|_| self.session.is_closed()).cloned())
            {
                self.steer(now);
                self.publish();
                self.end_streams();
                return (reason, self.app_rx, self.links_rx);
            }
            if more {
                tokio::task::yield_now().await;
                continue;
            }
            // 6. Wait.
            let deadline = self.session.poll_timeout().map(|t| self.epoch + t.as_duration());
            let sleep = async {
                match deadline {
                    Some(d) => tokio::time::sleep_until(d).await,
                    None => std::future::pending().await,
                }
            };
            let status_tick = tokio::time::sleep_until(status_at + STATUS_EVERY);
            let links = async {
                match self.links_rx.as_mut() {
                    Some(rx) => rx.recv().await,
                    None => std::future::pending().await,
                }
            };
            let switch = async {
                match self.scheduler_rx.as_mut() {
                    Some(rx) => match rx.changed().await {
                        Ok(()) => *rx.borrow_and_update(),
                        Err(_) => std::future::pending().await,
                    },
                    None => std::future::pending().await,
                }
            };
            let admission = async {
                match self.admission_rx.as_mut() {
                    Some(rx) => match rx.changed().await {
                        Ok(()) => *rx.borrow_and_update(),
                        Err(_) => std::future::pending().await,
                    },
                    None => std::future::pending().await,
                }
            };
            let inbox = async {
                match self.inbox.as_mut() {
                    Some(rx) => rx.recv().await,
                    None => std::future::pending().await,
                }
            };
            let sockets = &self.sockets;
            let receiving = &self.receiving;
            let readable = std::future::poll_fn(|cx| {
                // Any path socket with datagrams waiting (each registers the waker).
                let mut ready = false;
                for id in receiving.keys() {
                    if let Some(l) = sockets.get(id) {
                        ready |= l.socket.poll_recv_ready(cx).is_ready();
                    }
                }
                if ready {
                    Poll::Ready(())
                } else {
                    Poll::Pending
                }
            });
            tokio::select! {
                biased;
                () = readable => {}
                Some(b) = inbox => received.push(b),
                Some(m) = self.app_rx.recv() => requests.push(m),
                Some(m) = links => link_msgs.push(m),
                Some(k) = switch => switch_to = Some(k),
                Some(on) = admission => admit = Some(on),
                _ = self.kick.notified() => {}
                _ = sleep => {}
                _ = status_tick => {}
            }
        }
    }

    fn on_app(&mut self, now: Timestamp, m: AppMsg) {
        match m {
            AppMsg::Open { class, request, reply } => {
                if !self.session.is_established() {
                    self.pending_opens.push_back(AppMsg::Open { class, request, reply });
                    return;
                }
                match self.session.open_stream(class) {
                    Ok(id) => {
                        let (driver_end, ends) = pair(id, self.app_tx.clone(), self.kick.clone());
                        self.streams.insert(id, driver_end);
                        self.queue_data(id, request);
                        let _ = reply.send(Ok(ends));
                    }
                    Err(StreamError::Limit) => {
                        let _ = reply.send(Err(OpenError::Limit));
                    }
                    Err(e) => {
                        let _ = reply.send(Err(OpenError::NoSession(format!("cannot open a stream: {e}"))));
                    }
                }
            }
            AppMsg::Data(id, data) => self.queue_data(id, data),
            AppMsg::Finish(id) => {
                if let Some(s) = self.streams.get_mut(&id) {
                    s.finish_pending = true;
                }
                self.flush(id);
            }
            AppMsg::Reset(id, code) => {
                let _ = self.session.reset_stream(id, code);
                let _ = self.session.stop_stream(id, code);
                self.streams.remove(&id);
            }
            AppMsg::Close(code, reason) => self.session.close(now, code, &reason),
            AppMsg::Datagram(class, data) => {
                if let Err(e) = self.session.send_datagram(now, class, data) {
                    tracing::debug!(error = %e, "datagram not sent");
                }
            }
        }
    }

    fn on_link(&mut self, now: Timestamp, m: LinkMsg) {
        match m {
            LinkMsg::Add { link, .. } if self.sockets.values().any(|l| l.local == link.local) => {}
            LinkMsg::Add { link, server, label } => {
                match self.session.add_path(now, Some(link.local), server) {
                    Ok(id) => {
                        tracing::info!(path = id, link = %label, local = %link.local, "path added");
                        self.bind_path(id, link, label);
                    }
                    Err(e) => tracing::warn!(link = %label, error = %e, "cannot add path"),
                }
            }
            LinkMsg::Remove { local } => {
                let ids: Vec<PathId> =
                    self.sockets.iter().filter(|(_, l)| l.local == local).map(|(id, _)| *id).collect();
                for id in ids {
                    tracing::info!(path = id, %local, "path removed");
                    let _ = self.session.remove_path(now, id);
                    self.sockets.remove(&id);
                    self.labels.remove(&id);
                    self.receiving.remove(&id);
                }
            }
        }
    }

    /// Reads the path sockets of its own (client) without waiting, a few batches each, and
    /// feeds their datagrams to the session.
    fn receive_own(&mut self, now: Timestamp) {
        for (id, rx) in self.receiving.iter_mut() {
            let Some(link) = self.sockets.get(id) else { continue };
            for _ in 0..RECV_BATCHES {
                if !rx.try_batch(link, &mut self.incoming) {
                    break;
                }
                for d in self.incoming.drain(..) {
                    self.session.handle_datagram(now, d.local, canonical(d.from), d.data);
                }
            }
        }
    }

    /// Connections the application opens while the handshake is under way outlive a failed
    /// attempt: they go back to the application channel, and the next attempt of the client's
    /// connect phase takes them (the client refuses them when the phase gives up). Without
    /// this, a connection made while the first link's handshake was still waiting (2 s on a
    /// 50 kbit/s link that did not answer in time) was refused although the next link's
    /// handshake succeeded at once.
    pub fn carry_opens(&mut self) {
        self.carry_opens = true;
    }

    /// Lets the role count and change the paths (see [`Role::steer`]).
    fn steer(&mut self, now: Timestamp) {
        for m in self.role.steer(now, &mut self.session, &self.labels) {
            self.on_link(now, m);
        }
    }

    fn on_event(&mut self, now: Timestamp, e: &Event) {
        match e {
            Event::Connected => {
                tracing::info!(session = %session_label(&self.session), peer = %self.peer_label, "session established");
                // The status says so at once, not at the next periodic refresh.
                self.publish();
                let waiting: Vec<AppMsg> = self.pending_opens.drain(..).collect();
                for m in waiting {
                    self.on_app(now, m);
                }
            }
            Event::Stream(StreamEvent::Opened(id)) => {
                let (driver_end, ends) = pair(*id, self.app_tx.clone(), self.kick.clone());
                self.streams.insert(*id, driver_end);
                self.role.on_stream_opened(ends);
                self.pump(*id);
            }
            Event::Stream(StreamEvent::Readable(id)) => self.pump(*id),
            Event::Stream(StreamEvent::Writable(id)) => self.flush(*id),
            Event::Stream(StreamEvent::Reset(id, code)) => {
                if let Some(s) = self.streams.get_mut(id) {
                    let _ = s.to_app.send(Inbound::Reset(*code));
                    s.delivered_end = true;
                }
                self.reap(*id);
            }
            Event::Stream(StreamEvent::Stopped(id, code)) => {
                if let Some(s) = self.streams.remove(id) {
                    let _ = s.to_app.send(Inbound::Reset(*code));
                }
            }
            Event::Stream(StreamEvent::Finished(_)) => {}
            Event::Stream(StreamEvent::Closed(id)) => {
                if let Some(s) = self.streams.get_mut(id) {
                    s.core_closed = true;
                }
                self.reap(*id);
            }
            Event::DatagramReceived => {
                while let Some(d) = self.session.recv_datagram() {
                    self.role.on_datagram(d);
                }
            }
            Event::Path(id, ev) => {
                // Path changes show in the status at once.
                self.publish();
                tracing::info!(path = id, event = ?ev, link = ?self.labels.get(id), "path")
            }
            Event::Closed(r) => {
                tracing::info!(session = %session_label(&self.session), reason = %r, "session closed")
            }
        }
    }

    fn queue_data(&mut self, id: StreamId, data: Bytes) {
        if let Some(s) = self.streams.get_mut(&id) {
            s.pending.push_back(data);
            self.flush(id);
        }
    }

    /// Moves pending application bytes into the session's send buffer.
    fn flush(&mut self, id: StreamId) {
        let Some(s) = self.streams.get_mut(&id) else { return };
        while let Some(chunk) = s.pending.pop_front() {
            let n = chunk.len();
            match self.session.write_bytes(id, chunk.clone()) {
                Ok(()) => s.write_budget.add_permits(n.min(crate::bridge::WRITE_BUDGET)),
                Err(StreamError::Blocked) => {
                    s.pending.push_front(chunk);
                    return;
                }
                Err(e) => {
                    tracing::debug!(stream = %id, error = %e, "stream write failed");
                    let _ = s.to_app.send(Inbound::Reset(0));
                    s.pending.clear();
                    return;
                }
            }
        }
        if s.finish_pending {
            s.finish_pending = false;
            let _ = self.session.finish(id);
        }
    }

    /// Hands readable bytes to the application, as far as its budget allows.
    fn pump(&mut self, id: StreamId) {
        let Some(s) = self.streams.get_mut(&id) else { return };
        if s.delivered_end {
            return;
        }
        loop {
            let budget = s.read_budget.available_permits().min(READ_CHUNK);
            if budget == 0 {
                return;
            }
            match self.session.read_chunk(id, budget) {
                Ok(Some(chunk)) => {
                    if let Ok(p) = s.read_budget.try_acquire_many(chunk.len() as u32) {
                        p.forget();
                    }
                    if s.to_app.send(Inbound::Data(chunk)).is_err() {
                        let _ = self.session.stop_stream(id, 0);
                        self.streams.remove(&id);
                        return;
                    }
                }
                Ok(None) => {
                    let _ = s.to_app.send(Inbound::Fin);
                    s.delivered_end = true;
                    self.reap(id);
                    return;
                }
                Err(StreamError::Blocked) => return,
                Err(StreamError::Reset(code)) => {
                    let _ = s.to_app.send(Inbound::Reset(code));
                    s.delivered_end = true;
                    self.reap(id);
                    return;
                }
                Err(_) => {
                    let _ = s.to_app.send(Inbound::Reset(0));
                    s.delivered_end = true;
                    self.reap(id);
                    return;
                }
            }
        }
    }

    /// Drops the bridge of a stream whose end was delivered to the application once the
    /// core has forgotten the stream (both halves done), whichever of the two happened last.
    fn reap(&mut self, id: StreamId) {
        if self.streams.get(&id).is_some_and(|s| s.core_closed && s.delivered_end) {
            self.streams.remove(&id);
        }
    }

    fn pump_all(&mut self) {
        let mut ids = std::mem::take(&mut self.pumping);
        ids.extend(self.streams.iter().filter(|(_, s)| !s.delivered_end).map(|(id, _)| *id));
        for id in ids.drain(..) {
            self.pump(id);
        }
        self.pumping = ids;
    }

    /// Sends what the session has, a batch at a time: each batch holds packets for one path
    /// and destination, all of one size but the last, and leaves in one segmented send (GSO)
    /// when the socket supports it. Returns true when it stopped early with more to send.
    async fn transmit(&mut self, now: Timestamp) -> bool {
        let max_segments = self.max_segments();
        let mut sent = 0usize;
        while sent < SEND_BUDGET {
            let Some(b) = self.session.poll_transmit_batch(now, max_segments, &mut self.batch) else {
                return false;
            };
            sent += b.count;
            let Some((sock, choose_source)) = self.route(b.path) else { continue };
            let segment = (b.count > 1).then_some(b.segment_size);
            let src = if choose_source { b.source.map(|s| s.ip()) } else { None };
            if let Err(e) = sock.send(b.destination, src, self.batch.contents(), segment).await {
                tracing::debug!(path = b.path, dest = %b.destination, error = %e, "send failed");
            }
        }
        true
    }

    /// Most segments one send may carry on every socket of the driver (a batch's path is known
    /// only once it is built).
    fn max_segments(&self) -> usize {
        self.sockets.values().chain(&self.default_socket).map(UdpLink::max_segments).min().unwrap_or(1).max(1)
    }

    /// The socket of a path and whether the driver picks the source address (server).
    fn route(&self, path: PathId) -> Option<(&UdpLink, bool)> {
        match self.sockets.get(&path) {
            Some(s) => Some((s, false)),
            None => self.default_socket.as_ref().map(|s| (s, true)),
        }
    }

    fn publish(&mut self) {
        if let Some(b) = &self.board {
            let entry = session_status(&self.session, self.peer_label.clone(), &self.labels, &mut self.rates);
            let id = entry.id.clone();
            b.put_session(self.published.as_deref(), entry);
            self.published = Some(id);
        }
    }

    fn end_streams(&mut self) {
        for (_, s) in self.streams.drain() {
            if !s.delivered_end {
                let _ = s.to_app.send(Inbound::Reset(0));
            }
        }
        for m in self.pending_opens.drain(..) {
            let m = if self.carry_opens {
                match self.app_tx.try_send(m) {
                    Ok(()) => continue,
                    Err(e) => e.into_inner(),
                }
            } else {
                m
            };
            if let AppMsg::Open { reply, .. } = m {
                let _ = reply.send(Err(OpenError::NoSession("the session ended".into())));
            }
        }
        if let Some(b) = &self.board {
            b.remove_session(self.published.as_deref().unwrap_or_default());
        }
    }
}

#[cfg(test)]
#[path = "driver_tests.rs"]
mod tests;
