//! `braid server`: UDP sockets on one port (one per core, `SO_REUSEPORT`: see
//! [`crate::receive_shard`]), each read on a shard of its own ([`crate::shards`]), the
//! endpoint that admits clients, and one driver task per session, on a shard.

use crate::bridge::AppMsg;
use crate::config::ServerSettings;
use crate::driver::{Crowds, Driver, Wiring};
use crate::error::Failure;
use crate::receive_shard::{self, Routes, UNROUTED_QUEUE};
use crate::server_role::ServerRole;
use crate::shards::Shards;
use crate::status::{self, StatusBoard};
use crate::udp::{canonical, Incoming, UdpLink};
use braid_core::crowd::Crowd;
use braid_core::{DatagramEvent, Endpoint, HandshakeJob, HandshakeOutcome, Session, SessionId, Timestamp};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tokio::task::{JoinHandle, JoinSet};
use tokio::time::Instant;

/// A running server.
pub struct ServerHandle {
    /// The UDP address it listens on.
    pub addr: SocketAddr,
    /// The status API address, if serving one.
    pub status_addr: Option<SocketAddr>,
    /// Its status.
    pub board: StatusBoard,
    /// The status API.
    tasks: Vec<JoinHandle<()>>,
    /// The endpoint loop; its sessions' drivers end with it.
    endpoint: Option<JoinHandle<Result<(), Failure>>>,
    /// Asks the endpoint loop to close every session and stop.
    shutdown: Option<oneshot::Sender<()>>,
}

impl ServerHandle {
    /// Stops the server and every session at once (no CLOSE is sent; see
    /// [`ServerHandle::shutdown`]).
    pub fn stop(&self) {
        for t in &self.tasks {
            t.abort();
        }
        if let Some(t) = &self.endpoint {
            t.abort();
        }
    }

    /// Stops cleanly: every session is closed (its client is told with CLOSE and its streams
    /// are reset), then the server stops. Bounded by [`SHUTDOWN_GRACE`].
    pub async fn shutdown(mut self) -> Result<(), Failure> {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        let Some(t) = self.endpoint.take() else { return Ok(()) };
        match tokio::time::timeout(SHUTDOWN_GRACE + Duration::from_millis(500), t).await {
            Ok(r) => r.unwrap_or(Ok(())),
            Err(_) => Ok(()),
        }
    }

    /// Waits until the server stops: an error when its UDP socket failed.
    pub async fn wait(&mut self) -> Result<(), Failure> {
        match self.endpoint.as_mut() {
            Some(t) => {
                let r = t.await.unwrap_or(Ok(()));
                self.endpoint = None;
                r
            }
            None => Ok(()),
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        self.stop();
    }
}

/// How long a clean shutdown waits for sessions to send their CLOSE.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(1);

/// Starts a server.
pub async fn start_server(settings: ServerSettings) -> Result<ServerHandle, Failure> {
    let shards = Shards::start(settings.receive_socket_count())
        .map_err(|e| Failure::Other(format!("cannot start the server's threads: {e}")))?;
    let links = UdpLink::bind_group(settings.listen, shards.handles())
        .map_err(|e| Failure::bind("listen", settings.listen, &e))?;
    if let Err(e) = crate::udp::steer_by_session(&links) {
        // The kernel's hash then spreads the paths: a session's datagrams may reach another
        // shard's socket and be handed over to its own.
        tracing::warn!(error = %e, "cannot steer datagrams to their session's socket");
    }
    let board = StatusBoard::new("server");
    let mut tasks = Vec::new();
    let status_addr = match settings.status {
        Some(a) => {
            let (bound, task) = status::serve(a, board.clone(), settings.status_token_file.clone())
                .await
                .map_err(|e| Failure::bind("serve status", a, &e))?;
            tasks.push(task);
            Some(bound)
        }
        None => None,
    };
    let core = braid_core::ServerConfig {
        secret: settings.secret.clone(),
        clients: settings.clients.iter().map(|c| c.key).collect(),
        session: settings.session.clone(),
    };
    let endpoint = Endpoint::new(core, crate::keyfile::random_seed());
    let addr = links[0].local;
    tracing::info!(%addr, clients = settings.clients.len(), sockets = links.len(), "server listening");
    let (shutdown_tx, shutdown_rx) = oneshot::channel();
    let server = EndpointLoop::new(links, shards, Arc::new(settings), board.clone());
    let endpoint = Some(tokio::spawn(EndpointLoop::run(server, endpoint, shutdown_rx)));
    Ok(ServerHandle { addr, status_addr, board, tasks, endpoint, shutdown: Some(shutdown_tx) })
}

/// A running session, as the endpoint loop keeps it (its inbox is in the routes).
struct Live {
    app: mpsc::Sender<crate::bridge::AppMsg>,
    /// The address its handshake came from.
    from: SocketAddr,
}

/// The endpoint's task: judges what the receive loops could not route, hands handshakes to
/// the handshake worker (a thread of its own, so the public-key work of a flood of
/// handshakes never delays the data packets of established sessions), starts a driver per
/// admitted session.
struct EndpointLoop {
    /// Every socket of the port: the endpoint loop answers from the first; each session
    /// sends from its own shard's.
    links: Vec<UdpLink>,
    /// Each socket's receive counters.
    counters: Vec<Arc<receive_shard::Counters>>,
    /// Running sessions' inboxes, for every receive loop.
    routes: Routes,
    /// The sockets' receive loops, socket N on shard N: end with this loop.
    receivers: JoinSet<SocketAddr>,
    settings: Arc<ServerSettings>,
    board: StatusBoard,
    policy: Arc<crate::egress::EgressPolicy>,
    epoch: Instant,
    sessions: HashMap<SessionId, Live>,
    /// Session drivers: aborted with this loop (server stop), reaped as they end.
    drivers: JoinSet<()>,
    ended_tx: mpsc::UnboundedSender<SessionId>,
    jobs: mpsc::Sender<Box<HandshakeJob>>,
    /// How many sessions are sending, and how many receiving, at once (their drivers count
    /// themselves; `braid_core::crowd`).
    sending: Crowd,
    receiving: Crowd,
    /// When the endpoint's counters were last published (at most every 100 ms: under a flood
    /// every datagram may come in a batch of its own).
    published: Option<Instant>,
    /// Where the receive loops and the drivers run; declared last, so that the tasks above
    /// are aborted before their shards stop.
    shards: Shards,
}

static WORKER_GONE: crate::ratelog::RateLimited = crate::ratelog::RateLimited::new(Duration::from_secs(10));

/// Asks a session's driver to close with `code`, even when its request queue is full at the
/// moment.
fn close(app: &mpsc::Sender<AppMsg>, code: u64, why: &str) {
    let (app, why) = (app.clone(), why.to_string());
    tokio::spawn(async move {
        let _ = tokio::time::timeout(SHUTDOWN_GRACE, app.send(AppMsg::Close(code, why))).await;
    });
}

/// Runs handshake jobs one after another until the endpoint loop goes away.
fn handshake_worker(
    mut jobs: mpsc::Receiver<Box<HandshakeJob>>,
    done: mpsc::UnboundedSender<HandshakeOutcome>,
) {
    while let Some(job) = jobs.blocking_recv() {
        if done.send(job.run()).is_err() {
            return;
        }
    }
}

impl EndpointLoop {
    fn new(
        links: Vec<UdpLink>,
        shards: Shards,
        settings: Arc<ServerSettings>,
        board: StatusBoard,
    ) -> (Self, EndpointChannels) {
        let (ended_tx, ended_rx) = mpsc::unbounded_channel::<SessionId>();
        let (unrouted_tx, unrouted_rx) = mpsc::channel(UNROUTED_QUEUE);
        let routes = Routes::default();
        let counters: Vec<Arc<receive_shard::Counters>> = links.iter().map(|_| Arc::default()).collect();
        let mut receivers = JoinSet::new();
        for (k, (link, c)) in links.iter().zip(&counters).enumerate() {
            let receive = receive_shard::run(link.clone(), routes.clone(), unrouted_tx.clone(), c.clone());
            receivers.spawn_on(receive, shards.handle(k));
        }
        let (jobs, jobs_rx) = mpsc::channel(braid_core::endpoint::MAX_IN_PROGRESS);
        let (done_tx, done_rx) = mpsc::unbounded_channel();
        let worker = std::thread::Builder::new()
            .name("braid-handshake".into())
            .spawn(move || handshake_worker(jobs_rx, done_tx));
        if let Err(e) = worker {
            tracing::error!(error = %e, "cannot start the handshake thread; no client can connect");
        }
        let policy = Arc::new(settings.egress.clone());
        let me = EndpointLoop {
            links,
            counters,
            routes,
            receivers,
            settings,
            board,
            policy,
            epoch: Instant::now(),
            sessions: HashMap::new(),
            drivers: JoinSet::new(),
            ended_tx,
            jobs,
            sending: Crowd::new(),
            receiving: Crowd::new(),
            published: None,
            shards,
        };
        (me, EndpointChannels { ended_rx, done_rx, unrouted_rx })
    }
}
/// The receiving ends the endpoint loop selects on.
struct EndpointChannels {
    ended_rx: mpsc::UnboundedReceiver<SessionId>,
    done_rx: mpsc::UnboundedReceiver<HandshakeOutcome>,
    /// What the receive loops could not route.
    unrouted_rx: mpsc::Receiver<Vec<Incoming>>,
}

impl EndpointLoop {
    async fn run(
        (mut me, mut ch): (Self, EndpointChannels),
        mut endpoint: Endpoint,
        mut shutdown: oneshot::Receiver<()>,
    ) -> Result<(), Failure> {
        let mut tick = tokio::time::interval(Duration::from_millis(500));
        loop {
            tokio::select! {
                _ = tick.tick() => me.publish(&endpoint),
                Some(rest) = ch.unrouted_rx.recv() => me.on_unrouted(&mut endpoint, rest).await,
                Some(receiver) = me.receivers.join_next() => {
                    let addr = receiver.map_err(|e| Failure::Other(format!("a receive loop failed: {e}")))?;
                    return Err(Failure::Other(format!("a UDP socket on {addr} failed")));
                }
                Some(outcome) = ch.done_rx.recv() => {
                    let (from, local) = (outcome.remote(), outcome.local());
                    let ev = endpoint.complete(me.now(), outcome);
                    me.act(ev, from, local).await;
                    me.publish(&endpoint);
                }
                Some(id) = ch.ended_rx.recv() => {
                    me.forget(id);
                    endpoint.forget(id);
                    while me.drivers.try_join_next().is_some() {}
                }
                _ = &mut shutdown => return me.close_all(&mut ch).await,
            }
        }
    }

    /// Datagrams no receive loop could route (handshakes, packets of sessions the routes do
    /// not hold): the endpoint decides.
    async fn on_unrouted(&mut self, endpoint: &mut Endpoint, batch: Vec<Incoming>) {
        if batch.is_empty() {
            return;
        }
        let now = self.now();
        for d in batch {
            let from = canonical(d.from);
            match endpoint.handle(now, d.local, from, &d.data) {
                // A session a receive loop looked up just before it was started (delivered), or
                // one the endpoint still knows but the routes no longer hold (replaced or
                // ended: dropped, as its driver is closing).
                DatagramEvent::Route(id) => self.route(id, vec![d]),
                DatagramEvent::Handshake(job) => {
                    // The endpoint bounds the jobs out, so the queue has room unless the
                    // handshake thread is gone.
                    if let Err(e) = self.jobs.try_send(job) {
                        if let Some(left_out) = WORKER_GONE.hit() {
                            tracing::error!(left_out, "the handshake thread is gone: no client can connect");
                        }
                        endpoint.abandon(*e.into_inner());
                    }
                }
                other => self.act(other, from, d.local).await,
            }
        }
        self.publish(endpoint);
    }

    /// A session ended or was replaced: no more datagrams go to it.
    fn forget(&mut self, id: SessionId) -> Option<Live> {
        self.routes.write().unwrap_or_else(|e| e.into_inner()).remove(&id);
        self.sessions.remove(&id)
    }

    fn now(&self) -> Timestamp {
        Timestamp::from_duration(self.epoch.elapsed())
    }

    /// Hands datagrams to their session's driver, if the routes hold it.
    fn route(&self, id: SessionId, datagrams: Vec<Incoming>) {
        if let Some(inbox) = self.routes.read().unwrap_or_else(|e| e.into_inner()).get(&id) {
            // A session that cannot keep up loses datagrams, as a link would.
            let _ = inbox.try_send(datagrams);
        }
    }

    fn publish(&mut self, endpoint: &Endpoint) {
        if self.published.is_none_or(|t| t.elapsed() >= Duration::from_millis(100)) {
            self.published = Some(Instant::now());
            self.board.set_endpoint(endpoint);
            let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
            self.board.set_received(
                self.counters.iter().map(|c| load(&c.received)).collect(),
                self.counters.iter().map(|c| load(&c.queue_full)).sum(),
            );
        }
    }

    /// Carries out what the endpoint decided about a datagram from `from`.
    async fn act(&mut self, ev: DatagramEvent, from: SocketAddr, local: Option<SocketAddr>) {
        match ev {
            DatagramEvent::Accepted { session, replaces } => self.start_session(*session, replaces),
            DatagramEvent::Respond(bytes) => {
                let _ = self.links[0].send(from, local.map(|a| a.ip()), &bytes, None).await;
            }
            DatagramEvent::Route(_) | DatagramEvent::Handshake(_) | DatagramEvent::Dropped(_) => {}
        }
    }

    fn start_session(&mut self, session: Session, replaces: Option<SessionId>) {
        let id = session.id();
        let key = session.peer_key();
        let from = session.path_info(0).map_or(SocketAddr::from(([0, 0, 0, 0], 0)), |p| p.remote);
        let settings = self.settings.clone();
        let name = settings.clients.iter().find(|c| Some(c.key) == key).map(|c| c.name.as_str());
        if let Some((old_id, old)) = replaces.and_then(|o| self.forget(o).map(|l| (o, l))) {
            // One key, one session: the newest handshake wins. Say so: two clients holding one
            // key otherwise take the session from each other without a word.
            tracing::warn!(
                client = name.unwrap_or("?"),
                session = %id,
                %from,
                replaced = %old_id,
                replaced_from = %old.from,
                "a newer session of this client key replaces the running one (two clients holding one key take it from each other)"
            );
            close(&old.app, crate::supervise::CLOSE_REPLACED, &crate::supervise::replaced_reason(from));
        }
        let Some(client) = self.settings.clients.iter().find(|c| Some(c.key) == key).cloned() else { return };
        let (inbox_tx, inbox) = mpsc::channel(256);
        let (app_tx, app_rx) = mpsc::channel(1024);
        let role = ServerRole::new(self.policy.clone(), client.clone(), app_tx.clone());
        let wiring = Wiring { inbox: Some(inbox), app_rx, app_tx: app_tx.clone(), links_rx: None };
        let mut driver =
            Driver::new(session, role, self.epoch, wiring, Some(self.board.clone()), client.name.clone());
        // A session runs on the shard whose socket receives its datagrams
        // (`udp::steer_by_session`) and sends from that socket: sessions spread over the
        // sockets, so no one socket's lock is shared by every driver.
        let k = crate::udp::socket_of(id, self.links.len());
        driver.set_default_socket(self.links[k].clone());
        driver.join_crowds(Crowds { sending: self.sending.join(), receiving: self.receiving.join() });
        let ended = self.ended_tx.clone();
        let run = async move {
            let _ = driver.run().await;
            let _ = ended.send(id);
        };
        self.drivers.spawn_on(run, self.shards.handle(k));
        self.routes.write().unwrap_or_else(|e| e.into_inner()).insert(id, inbox_tx);
        self.sessions.insert(id, Live { app: app_tx, from });
    }

    /// Closes every session (CLOSE to its client, its streams reset) and waits, up to
    /// [`SHUTDOWN_GRACE`], for their drivers to finish.
    async fn close_all(mut self, ch: &mut EndpointChannels) -> Result<(), Failure> {
        tracing::info!(sessions = self.sessions.len(), "closing every session");
        for s in self.sessions.values() {
            close(&s.app, 0, "server shutting down");
        }
        let deadline = tokio::time::sleep(SHUTDOWN_GRACE);
        tokio::pin!(deadline);
        while !self.sessions.is_empty() {
            tokio::select! {
                Some(id) = ch.ended_rx.recv() => { self.sessions.remove(&id); }
                _ = &mut deadline => break,
            }
        }
        self.drivers.shutdown().await;
        Ok(())
    }
}
