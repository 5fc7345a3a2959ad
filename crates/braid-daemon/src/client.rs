//! `braid client`: one path per link, front ends, and a supervisor that keeps a session up —
//! reconnecting after the session ends, except when the first handshake shows a configuration
//! problem (refused key, no answer, server unreachable, another protocol version), which is
//! reported with its own exit code.

use crate::appproto::{decode_udp, split_host_port, Target};
use crate::bridge::{AppMsg, OpenError, StreamEnds};
use crate::config::{ClientSettings, LinkKind};
use crate::driver::{Driver, LinkMsg, Role, Wiring};
use crate::error::Failure;
use crate::failover::ConnectPhase;
use crate::frontend::{Frontend, UdpRegistry};
use crate::linkpolicy::keeper::UsageKeeper;
use crate::linkpolicy::steer::Steer;
use crate::linkpolicy::table::SharedLinks;
use crate::linkpolicy::Tier;
use crate::netlink::{self, Interface};
use crate::status::{self, StatusBoard};
use crate::supervise::{TAKEOVER_WAIT, TAKEOVER_WAIT_MAX};
use crate::udp::UdpLink;
use braid_core::connect::AttemptEnd;
use braid_core::datagram::Datagram;
use braid_core::{ClientConfig, CloseReason, Event, PathId, Session, Timestamp};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// A link in use: a socket and the server address it talks to.
#[derive(Clone)]
pub struct ActiveLink {
    /// Label: interface name or address.
    pub label: String,
    /// Socket.
    pub link: UdpLink,
    /// Server address over this link.
    pub server: SocketAddr,
    /// Used as backup only.
    pub backup: bool,
}

/// A running client.
pub struct ClientHandle {
    /// Its status.
    pub board: StatusBoard,
    /// SOCKS5 address, if serving.
    pub socks_addr: Option<SocketAddr>,
    /// Port forward listen addresses, in configuration order.
    pub forward_addrs: Vec<SocketAddr>,
    /// Status API address, if serving.
    pub status_addr: Option<SocketAddr>,
    /// Sends requests to the current session (open streams, datagrams).
    pub app: mpsc::Sender<AppMsg>,
    /// Becomes true once a session is established (and false while reconnecting).
    pub connected: Arc<AtomicBool>,
    /// Each link's policy and usage (live changes apply within one status refresh).
    pub links: SharedLinks,
    usage: UsageKeeper,
    supervisor: Option<JoinHandle<Result<(), Failure>>>,
    tasks: Vec<JoinHandle<()>>,
    stopping: watch::Sender<bool>,
    /// TUN mode; stopping it restores routes and DNS.
    tun: Option<Arc<crate::tun::TunHandle>>,
}

impl ClientHandle {
    /// Waits until the client gives up (it only does on a configuration problem) or was shut
    /// down.
    pub async fn wait(&mut self) -> Result<(), Failure> {
        match self.supervisor.as_mut() {
            Some(t) => {
                let r = t.await.unwrap_or_else(|e| Err(Failure::Other(format!("client task failed: {e}"))));
                self.supervisor = None;
                r
            }
            None => Ok(()),
        }
    }

    /// Stops cleanly: the session is closed (the server is told with CLOSE and frees it at
    /// once; every stream is reset towards its application), then the client stops. Bounded
    /// by [`crate::server::SHUTDOWN_GRACE`].
    pub async fn shutdown(mut self) -> Result<(), Failure> {
        self.stopping.send_replace(true);
        let grace = crate::server::SHUTDOWN_GRACE + Duration::from_millis(500);
        let close = AppMsg::Close(0, "client shutting down".into());
        let _ = tokio::time::timeout(grace / 2, self.app.send(close)).await;
        let r = match tokio::time::timeout(grace, self.wait()).await {
            Ok(r) => r,
            Err(_) => Ok(()),
        };
        self.stop();
        self.usage.flush().await;
        r
    }

    /// Waits until a session is established, up to `timeout`.
    pub async fn wait_connected(&self, timeout: Duration) -> bool {
        let end = Instant::now() + timeout;
        while Instant::now() < end {
            if self.connected.load(Ordering::SeqCst) {
                return true;
            }
            if self.supervisor.as_ref().is_some_and(|t| t.is_finished()) {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        false
    }

    /// Stops the client (and undoes TUN mode's routes, rules and DNS).
    pub fn stop(&self) {
        if let Some(t) = &self.supervisor {
            t.abort();
        }
        for t in &self.tasks {
            t.abort();
        }
        if let Some(t) = &self.tun {
            t.stop();
        }
    }
}

impl Drop for ClientHandle {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Resolves `host:port`, preferring IPv4.
pub async fn resolve(s: &str) -> Result<SocketAddr, Failure> {
    let (h, p) = split_host_port(s).map_err(Failure::Config)?;
    let addrs: Vec<SocketAddr> = tokio::net::lookup_host((h.as_str(), p))
        .await
        .map_err(|e| Failure::Unreachable(format!("server name '{h}' did not resolve: {e}")))?
        .collect();
    addrs
        .iter()
        .find(|a| a.is_ipv4())
        .or(addrs.first())
        .copied()
        .ok_or_else(|| Failure::Unreachable(format!("server name '{h}' has no address")))
}

/// Which links the configuration asks for, given the interfaces present now.
async fn resolve_links(
    settings: &ClientSettings,
    main: SocketAddr,
    ifs: &BTreeMap<String, Interface>,
    strict: bool,
) -> Result<Vec<ActiveLink>, Failure> {
    let mut out = Vec::new();
    for l in &settings.links {
        let server = match &l.server {
            Some(s) => resolve(s).await?,
            None => main,
        };
        match &l.kind {
            LinkKind::Address(ip) => {
                let link = UdpLink::bind(SocketAddr::new(*ip, 0), None).map_err(|e| {
                    Failure::Interface(format!(
                        "link {ip}: cannot bind to this address ({e}); is it an address of this machine?"
                    ))
                })?;
                let label = crate::linkpick::address_label(*ip, l.server.as_deref());
                out.push(ActiveLink { label, link, server, backup: l.backup });
            }
            LinkKind::Interface(name) => {
                let Some(i) = ifs.get(name) else {
                    if strict {
                        let known: Vec<&str> = ifs.keys().map(String::as_str).collect();
                        return Err(Failure::Interface(format!(
                            "unknown interface '{name}' (interfaces here: {})",
                            known.join(", ")
                        )));
                    }
                    continue;
                };
                if strict {
                    crate::linkpick::check_reaches(i, server)?;
                }
                if !i.up || !i.addrs.iter().any(|a| a.is_ipv4() == server.is_ipv4()) {
                    tracing::warn!(interface = %name, "interface is down or has no address yet; waiting for it");
                    continue;
                }
                let link = UdpLink::bind(crate::linkpick::unspecified(server), Some(name))
                    .map_err(|e| Failure::Interface(format!("interface {name}: {e}")))?;
                out.push(ActiveLink { label: name.clone(), link, server, backup: l.backup });
            }
            LinkKind::Auto => {
                for i in crate::linkpick::auto_interfaces(ifs, server) {
                    // In TUN mode the TUN device is never a link: its path would loop into it.
                    let tun = settings.tun.as_ref().is_some_and(|t| t.name == i.name);
                    if tun || out.iter().any(|a: &ActiveLink| a.label == i.name) {
                        continue;
                    }
                    match crate::linkpick::bind_auto(i, server) {
                        Ok(link) => {
                            out.push(ActiveLink { label: i.name.clone(), link, server, backup: l.backup })
                        }
                        Err(e) => tracing::warn!(interface = %i.name, error = %e, "cannot use interface"),
                    }
                }
            }
        }
    }
    if let Some(tun) = &settings.tun {
        // TUN mode routes every unmarked packet into the TUN: the paths' own must stay out.
        for l in &out {
            l.link.set_mark(tun.fwmark).map_err(|e| {
                Failure::Interface(format!(
                    "link {}: cannot mark its socket for TUN mode ({e}); it needs CAP_NET_ADMIN",
                    l.label
                ))
            })?;
        }
    }
    Ok(out)
}

/// Starts a client.
pub async fn start_client(settings: ClientSettings) -> Result<ClientHandle, Failure> {
    let main = resolve(&settings.server).await?;
    let needs_netlink = settings.links.iter().any(|l| !matches!(l.kind, LinkKind::Address(_)));
    let ifs = if needs_netlink {
        netlink::interfaces().await.map_err(|e| Failure::Interface(format!("cannot list interfaces: {e}")))?
    } else {
        BTreeMap::new()
    };
    let links = resolve_links(&settings, main, &ifs, true).await?;
    if links.is_empty() {
        let here: Vec<&str> = ifs.values().filter(|i| i.up).map(|i| i.name.as_str()).collect();
        return Err(Failure::Interface(format!(
            "no usable link: no configured interface is up with an address that reaches {main} (interfaces up here: {})",
            here.join(", ")
        )));
    }
    tracing::info!(links = %crate::linkpick::describe(&links), "links");
    let board = StatusBoard::new("client");
    let mut tasks = Vec::new();
    let usage = UsageKeeper::open(
        settings.link_policies.clone(),
        &settings.usage_file,
        &settings.secret.public_key(),
    );
    tasks.push(tokio::spawn(usage.clone().run()));
    let (app_tx, app_rx) = mpsc::channel(1024);
    let udp = UdpRegistry::default();
    let front = Frontend::new(
        app_tx.clone(),
        udp.clone(),
        settings.socks_auth.clone(),
        settings.max_connections,
        settings.socks_timeout,
        settings.classes.clone(),
    );
    let hold = crate::reorder::SharedHold::new(
        settings.tun.as_ref().map_or(crate::reorder::DEFAULT_CAP, |t| t.reorder_max),
    );
    let tun = match &settings.tun {
        Some(t) => Some(Arc::new(crate::tun::start(t, front.clone(), udp.clone(), hold.clone()).await?)),
        None => None,
    };
    let (counters, tun_status) = (front.clone(), tun.clone());
    board.attach_frontend(move || {
        let mut s = counters.status();
        s.tun = tun_status.as_ref().map(|t| t.status());
        s
    });
    let socks_addr = match settings.socks {
        Some(a) => {
            let l = TcpListener::bind(a).await.map_err(|e| Failure::bind("listen for SOCKS5", a, &e))?;
            if !a.ip().is_loopback() && settings.socks_auth.is_none() {
                tracing::warn!(%a, "SOCKS5 listens beyond loopback without a password");
            }
            let bound = l.local_addr()?;
            tasks.push(tokio::spawn(front.clone().serve_socks(l)));
            Some(bound)
        }
        None => None,
    };
    let mut forward_addrs = Vec::new();
    for f in &settings.forwards {
        let l = TcpListener::bind(f.listen)
            .await
            .map_err(|e| Failure::bind(&format!("listen for forward {}", f.target), f.listen, &e))?;
        let bound = l.local_addr()?;
        forward_addrs.push(bound);
        let target = Target::parse(&f.target).map_err(Failure::Config)?;
        // The same port carries UDP too (iperf3 -u, DNS, games: TCP and UDP side by side).
        let u = tokio::net::UdpSocket::bind(bound)
            .await
            .map_err(|e| Failure::bind(&format!("listen for UDP forward {}", f.target), bound, &e))?;
        tasks.push(tokio::spawn(front.clone().serve_udp_forward(u, target.clone())));
        tasks.push(tokio::spawn(front.clone().serve_forward(l, target)));
    }
    let status_addr = match settings.status {
        Some(a) => {
            let (bound, t) = status::serve(a, board.clone(), settings.status_token_file.clone())
                .await
                .map_err(|e| Failure::bind("serve status", a, &e))?;
            tasks.push(t);
            Some(bound)
        }
        None => None,
    };
    let shared = Arc::new(Mutex::new(links));
    attach_links(&board, usage.links(), shared.clone());
    let (links_tx, links_rx) = mpsc::channel(64);
    if needs_netlink {
        match netlink::watch() {
            Ok(changes) => tasks.push(tokio::spawn(follow_interfaces(
                settings.clone(),
                main,
                shared.clone(),
                links_tx.clone(),
                changes,
            ))),
            Err(e) => tracing::warn!(error = %e, "cannot watch interfaces; links will not follow changes"),
        }
    }
    if let Some(n) = &settings.neighbours {
        tasks.push(tokio::spawn(crate::share::neighbours::run(crate::share::neighbours::Context {
            settings: n.clone(),
            secret: settings.secret.clone(),
            server: main,
            links: shared.clone(),
            tx: links_tx.clone(),
            mark: settings.tun.as_ref().map(|t| t.fwmark),
            board: board.clone(),
            policies: usage.links(),
        })));
    }
    let connected = Arc::new(AtomicBool::new(false));
    let (stopping, stop_rx) = watch::channel(false);
    let sup = Supervisor {
        stopping: stop_rx,
        settings,
        shared,
        board: board.clone(),
        udp,
        connected: connected.clone(),
        app_tx: app_tx.clone(),
        hold,
        links: usage.links(),
    };
    let supervisor = tokio::spawn(sup.run(app_rx, links_rx));
    Ok(ClientHandle {
        board,
        socks_addr,
        forward_addrs,
        status_addr,
        app: app_tx,
        connected,
        links: usage.links(),
        usage,
        supervisor: Some(supervisor),
        tasks,
        stopping,
        tun,
    })
}

/// Keeps the link set in step with the interfaces: paths are added and removed as interfaces
/// and addresses come and go.
async fn follow_interfaces(
    settings: ClientSettings,
    main: SocketAddr,
    shared: Arc<Mutex<Vec<ActiveLink>>>,
    tx: mpsc::Sender<LinkMsg>,
    mut changes: mpsc::Receiver<()>,
) {
    while changes.recv().await.is_some() {
        let Ok(ifs) = netlink::interfaces().await else { continue };
        let wanted = match resolve_links(&settings, main, &ifs, false).await {
            Ok(w) => w,
            Err(e) => {
                tracing::warn!(error = %e, "link update failed");
                continue;
            }
        };
        let mut msgs = Vec::new();
        {
            let mut cur = shared.lock().unwrap_or_else(|e| e.into_inner());
            cur.retain(|c| {
                // Address links and paths through sharers are not the interfaces' to remove.
                let keep = wanted.iter().any(|w| w.label == c.label)
                    || !c.label.chars().any(|ch| ch.is_ascii_alphabetic())
                    || crate::share::is_neighbour_label(&c.label);
                if !keep {
                    tracing::info!(link = %c.label, "link gone");
                    msgs.push(LinkMsg::Remove { local: c.link.local });
                }
                keep
            });
            for w in wanted {
                if !cur.iter().any(|c| c.label == w.label) {
                    tracing::info!(link = %w.label, "link appeared");
                    msgs.push(LinkMsg::Add {
                        link: w.link.clone(),
                        server: w.server,
                        label: w.label.clone(),
                    });
                    cur.push(w);
                }
            }
        }
        for m in msgs {
            let _ = tx.send(m).await;
        }
    }
}

/// A session that lived this long counts as having been up: the backoff starts afresh, and a
/// stateless reset is answered with a new session at once.
const STABLE: Duration = Duration::from_secs(2);

struct Supervisor {
    /// Becomes true when the client is shutting down: no new session is started.
    stopping: watch::Receiver<bool>,
    settings: ClientSettings,
    shared: Arc<Mutex<Vec<ActiveLink>>>,
    board: StatusBoard,
    udp: UdpRegistry,
    connected: Arc<AtomicBool>,
    app_tx: mpsc::Sender<AppMsg>,
    /// The reorder hold of TUN flows, from the session's paths.
    hold: crate::reorder::SharedHold,
    links: SharedLinks,
}

/// Shows the links in the status and takes `POST /link` changes.
fn attach_links(board: &StatusBoard, links: SharedLinks, active: Arc<Mutex<Vec<ActiveLink>>>) {
    let table = links.clone();
    board.attach_links(
        move || {
            let names: Vec<String> =
                active.lock().unwrap_or_else(|e| e.into_inner()).iter().map(|l| l.label.clone()).collect();
            table.lock().status(&names, &chrono::Local::now())
        },
        move |name, key, value| {
            let p = links.lock().set(name, key, value)?;
            tracing::info!(link = name, setting = key, value, tier = p.tier.name(), "link policy changed");
            Ok(format!("{name}: {key} = {value}"))
        },
    );
}

/// The client's role: answers to UDP associations; streams opened by the server are refused.
struct ClientRole {
    udp: UdpRegistry,
    board: StatusBoard,
    connected: Arc<AtomicBool>,
    ever: Arc<AtomicBool>,
    /// This session was established.
    this_session: Arc<AtomicBool>,
    hold: crate::reorder::SharedHold,
    /// Usage counting and link policy.
    steer: Steer,
    /// The links a path could be opened on.
    active: Arc<Mutex<Vec<ActiveLink>>>,
}

impl Role for ClientRole {
    fn on_stream_opened(&mut self, ends: StreamEnds) {
        let (_, writer) = ends.split();
        tokio::spawn(async move {
            let _ = writer.reset(0).await;
        });
    }

    fn on_datagram(&mut self, d: Datagram) {
        if let Ok((assoc, source, payload)) = decode_udp(&d.data) {
            self.udp.deliver(assoc, source, payload);
        }
    }

    fn on_event(&mut self, e: &Event) {
        match e {
            Event::Connected => {
                self.connected.store(true, Ordering::SeqCst);
                self.ever.store(true, Ordering::SeqCst);
                self.this_session.store(true, Ordering::SeqCst);
                // "connecting…" is over.
                self.board.set_note(None);
            }
            Event::Closed(_) => self.connected.store(false, Ordering::SeqCst),
            _ => {}
        }
    }

    fn on_paths(&mut self, paths: &[braid_core::PathInfo]) {
        self.hold.update(paths);
    }

    fn steer(
        &mut self,
        now: Timestamp,
        session: &mut Session,
        labels: &BTreeMap<PathId, String>,
    ) -> Vec<LinkMsg> {
        let active = self.active.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let names: Vec<String> = active.iter().map(|l| l.label.clone()).collect();
        let changes = self.steer.run(now, session, labels, &names);
        let mut msgs: Vec<LinkMsg> =
            changes.close.into_iter().map(|local| LinkMsg::Remove { local }).collect();
        if session.is_established() {
            for name in changes.open {
                if let Some(l) = active.iter().find(|l| l.label == name) {
                    msgs.push(LinkMsg::Add {
                        link: l.link.clone(),
                        server: l.server,
                        label: l.label.clone(),
                    });
                }
            }
        }
        msgs
    }
}

impl Supervisor {
    async fn run(
        mut self,
        mut app_rx: mpsc::Receiver<AppMsg>,
        mut links_rx: mpsc::Receiver<LinkMsg>,
    ) -> Result<(), Failure> {
        let ever = Arc::new(AtomicBool::new(false));
        let mut backoff = Duration::from_secs(1);
        let mut first_link = 0usize;
        // The connect phase under way: the core's handshake failover over the links usable
        // when it began (None: the next attempt begins a new one).
        let mut phase: Option<ConnectPhase> = None;
        // The last wait after a takeover (zero: none lately).
        let mut takeover_wait = Duration::ZERO;
        loop {
            if *self.stopping.borrow() {
                return Ok(());
            }
            if phase.is_none() {
                let links: Vec<ActiveLink> = {
                    let now = chrono::Local::now();
                    let mut table = self.links.lock();
                    let all = self.shared.lock().unwrap_or_else(|e| e.into_inner()).clone();
                    all.into_iter().filter(|l| table.effective(&l.label, &now).tier != Tier::Never).collect()
                };
                if links.is_empty() {
                    self.board.set_note(Some("waiting for a usable link (none is up, or every one is set to never or stopped at its cap)".into()));
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    continue;
                }
                phase = Some(ConnectPhase::new(links, first_link, self.settings.session.handshake_timeout));
            }
            let Some(connecting) = phase.as_mut() else { continue };
            let (start, attempt_timeout) = match connecting.next() {
                Ok(a) => a,
                Err(e) => {
                    let links = connecting.links().to_vec();
                    phase = None;
                    // Connections carried over the phase's failed attempts are refused now.
                    while let Ok(m) = app_rx.try_recv() {
                        if let AppMsg::Open { reply, .. } = m {
                            let _ = reply.send(Err(OpenError::NoSession(format!("no session: {e}"))));
                        }
                    }
                    if !ever.load(Ordering::SeqCst) {
                        return Err(crate::failover::give_up_failure(e, &self.settings, &links));
                    }
                    // Had a session before: keep trying, after the backoff.
                    tracing::warn!(error = %e, retry_in = ?backoff, "session ended; reconnecting");
                    self.board.set_note(Some(format!("could not reconnect ({e}); retrying")));
                    tokio::select! {
                        _ = tokio::time::sleep(backoff) => {}
                        _ = self.stopping.wait_for(|s| *s) => return Ok(()),
                    }
                    backoff = (backoff * 2).min(Duration::from_secs(30));
                    first_link += 1;
                    continue;
                }
            };
            let links = connecting.links().to_vec();
            // The classes' settings travel in the session's policy: the server runs them too.
            let mut session_cfg = self.settings.session.clone();
            session_cfg.classes.extend(self.settings.classes.settings());
            // The failover decides how long this link's handshake is waited on.
            session_cfg.handshake_timeout = attempt_timeout;
            let cfg = ClientConfig {
                secret: self.settings.secret.clone(),
                server_key: self.settings.server_key,
                session: session_cfg,
            };
            let epoch = Instant::now();
            let stamp = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
            let l0 = &links[start];
            let mut session = Session::connect(
                &cfg,
                Timestamp::ZERO,
                Some(l0.link.local),
                l0.server,
                crate::keyfile::random_seed(),
                stamp,
            );
            self.board.set_note(Some(format!("connecting to {} over {}", self.settings.server, l0.label)));
            let this_session = Arc::new(AtomicBool::new(false));
            let role = ClientRole {
                udp: self.udp.clone(),
                board: self.board.clone(),
                connected: self.connected.clone(),
                ever: ever.clone(),
                this_session: this_session.clone(),
                hold: self.hold.clone(),
                steer: Steer::new(self.links.clone()),
                active: self.shared.clone(),
            };
            let mut bound = vec![(0u8, l0.clone())];
            for (i, l) in links.iter().enumerate() {
                if i == start {
                    continue;
                }
                if let Ok(id) = session.add_path(Timestamp::ZERO, Some(l.link.local), l.server) {
                    bound.push((id, l.clone()));
                }
            }
            let wiring =
                Wiring { inbox: None, app_rx, app_tx: self.app_tx.clone(), links_rx: Some(links_rx) };
            let mut driver = Driver::new(
                session,
                role,
                epoch,
                wiring,
                Some(self.board.clone()),
                self.settings.server.clone(),
            );
            for (id, l) in &bound {
                driver.bind_path(*id, l.link.clone(), l.label.clone());
            }
            driver.carry_opens();
            let started = Instant::now();
            // A closed server port answers the handshake with ICMP: give up on this link at
            // once instead of waiting out the handshake timeout.
            let run = driver.run();
            tokio::pin!(run);
            let mut refused_by_icmp = false;
            let (reason, rx, lrx) = tokio::select! {
                r = &mut run => r,
                () = crate::supervise::refused_by_icmp(&l0.link), if !ever.load(Ordering::SeqCst) => {
                    if !this_session.load(Ordering::SeqCst) {
                        refused_by_icmp = true;
                        let _ = self.app_tx.send(AppMsg::Close(0, "unreachable".into())).await;
                    }
                    run.await
                }
            };
            let lived = started.elapsed();
            app_rx = rx;
            links_rx = lrx.unwrap_or_else(|| mpsc::channel(1).1);
            self.connected.store(false, Ordering::SeqCst);
            if this_session.load(Ordering::SeqCst) && lived >= STABLE {
                // It was up for a while: the next one starts with the shortest wait again.
                backoff = Duration::from_secs(1);
            }
            if *self.stopping.borrow() {
                tracing::info!("session closed; client stopped");
                return Ok(());
            }
            let unreachable =
                refused_by_icmp || links.iter().any(|l| l.link.unreachable.swap(false, Ordering::Relaxed));
            let reason = if refused_by_icmp { CloseReason::HandshakeTimeout } else { reason };
            if !this_session.load(Ordering::SeqCst) {
                // The handshake over this link failed: the failover picks the next link (or
                // gives up) at the top of the loop.
                let end = match reason {
                    CloseReason::Refused => Some(AttemptEnd::Refused),
                    CloseReason::VersionMismatch { server } => Some(AttemptEnd::WrongVersion(server)),
                    CloseReason::HandshakeTimeout if unreachable => Some(AttemptEnd::Unreachable),
                    CloseReason::HandshakeTimeout => Some(AttemptEnd::NoAnswer),
                    _ => None,
                };
                if let (Some(end), Some(p)) = (end, phase.as_mut()) {
                    if end != AttemptEnd::Refused {
                        tracing::info!(link = %l0.label, reason = %reason, "handshake over this link failed");
                    }
                    p.failed(end);
                    continue;
                }
            }
            // The session was established (or ended for another reason): the next one begins
            // a new connect phase.
            phase = None;
            if let Some(newer) = crate::supervise::taken_over(&reason) {
                // Another client holding this key took the session. Taking it straight back
                // would knock that one off in turn, every few seconds, for both.
                takeover_wait = (takeover_wait * 2).clamp(TAKEOVER_WAIT, TAKEOVER_WAIT_MAX);
                tracing::warn!(
                    from = newer,
                    retry_in = ?takeover_wait,
                    "the server gave this session to a newer one of the same client key: is this key in use on another machine? (each client takes the session from the other)"
                );
                self.board.set_note(Some(format!(
                    "session taken over by another client with this key (from {newer}); retrying in {} s",
                    takeover_wait.as_secs()
                )));
                tokio::select! {
                    _ = tokio::time::sleep(takeover_wait) => {}
                    _ = self.stopping.wait_for(|s| *s) => return Ok(()),
                }
                continue;
            }
            if this_session.load(Ordering::SeqCst) && lived >= TAKEOVER_WAIT_MAX {
                takeover_wait = Duration::ZERO;
            }
            if reason == CloseReason::StatelessReset && lived >= STABLE {
                // The server restarted or forgot us, and said so: a new session at once (after
                // a little jitter, so that many clients of a restarted server do not arrive in
                // one burst). A session reset soon after it began — another client holding the
                // same key takes it over, say — waits its backoff like any other end.
                let jitter = Duration::from_millis(crate::keyfile::random_u64() % 100);
                tracing::warn!(reason = %reason, retry_in = ?jitter, "session ended; reconnecting now");
                self.board.set_note(Some(format!("session ended ({reason}); reconnecting")));
                tokio::time::sleep(jitter).await;
                continue;
            }
            tracing::warn!(reason = %reason, retry_in = ?backoff, "session ended; reconnecting");
            self.board.set_note(Some(format!("session ended ({reason}); reconnecting")));
            tokio::select! {
                _ = tokio::time::sleep(backoff) => {}
                _ = self.stopping.wait_for(|s| *s) => return Ok(()),
            }
            backoff = (backoff * 2).min(Duration::from_secs(30));
            first_link += 1;
        }
    }
}
