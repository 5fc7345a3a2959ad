//! `braid server`: one UDP socket, the endpoint that admits clients, and one driver task per
//! session.

use crate::config::ServerSettings;
use crate::driver::{Driver, Wiring};
use crate::error::Failure;
use crate::server_role::ServerRole;
use crate::status::{self, StatusBoard};
use crate::udp::{canonical, Incoming, UdpLink};
use braid_core::{DatagramEvent, Endpoint, Timestamp};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::sync::mpsc;
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
}

impl ServerHandle {
    /// Stops the server and every session.
    pub fn stop(&self) {
        for t in &self.tasks {
            t.abort();
        }
        if let Some(t) = &self.endpoint {
            t.abort();
        }
    }

    /// Waits until the server stops: an error when its UDP socket failed.
    pub async fn wait(mut self) -> Result<(), Failure> {
        match self.endpoint.take() {
            Some(t) => t.await.unwrap_or(Ok(())),
            None => Ok(()),
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Starts a server.
pub async fn start_server(settings: ServerSettings) -> Result<ServerHandle, Failure> {
    let link = UdpLink::bind(settings.listen, None)
        .map_err(|e| Failure::Config(format!("cannot listen on {}: {e}", settings.listen)))?;
    let board = StatusBoard::new("server");
    let mut tasks = Vec::new();
    let status_addr = match settings.status {
        Some(a) => {
            let (bound, task) = status::serve(a, board.clone())
                .await
                .map_err(|e| Failure::Config(format!("cannot serve status on {a}: {e}")))?;
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
    let endpoint = Endpoint::new(core, crate::keyfile::random_u64());
    let addr = link.local;
    tracing::info!(%addr, clients = settings.clients.len(), "server listening");
    let endpoint = Some(tokio::spawn(endpoint_loop(link, endpoint, Arc::new(settings), board.clone())));
    Ok(ServerHandle { addr, status_addr, board, tasks, endpoint })
}

struct Live {
    inbox: mpsc::Sender<Vec<Incoming>>,
    app: mpsc::Sender<crate::bridge::AppMsg>,
}

async fn endpoint_loop(
    link: UdpLink,
    mut endpoint: Endpoint,
    settings: Arc<ServerSettings>,
    board: StatusBoard,
) -> Result<(), Failure> {
    let epoch = Instant::now();
    // Session drivers: aborted with this loop (server stop), reaped as they end.
    let mut drivers = JoinSet::new();
    let mut receiver = crate::udp::Receiver::new(&link);
    let (ended_tx, mut ended_rx) = mpsc::unbounded_channel::<u32>();
    let mut sessions: HashMap<u32, Live> = HashMap::new();
    let policy = Arc::new(settings.egress.clone());
    loop {
        tokio::select! {
            batch = receiver.next(&link) => {
                let Some(batch) = batch else {
                    return Err(Failure::Other(format!("the UDP socket on {} failed", link.local)));
                };
                let now = Timestamp::from_duration(epoch.elapsed());
                let mut routed: HashMap<u32, Vec<Incoming>> = HashMap::new();
                for d in batch {
                    let from = canonical(d.from);
                    match endpoint.handle(now, d.local, from, &d.data) {
                        DatagramEvent::Route(id) => routed.entry(id).or_default().push(d),
                        DatagramEvent::Accepted { session, replaces } => {
                            if let Some(old) = replaces.and_then(|o| sessions.remove(&o)) {
                                let _ = old.app.try_send(crate::bridge::AppMsg::Close(0, "replaced by a new session".into()));
                            }
                            let id = session.id();
                            let key = session.peer_key();
                            let Some(client) = settings.clients.iter().find(|c| Some(c.key) == key).cloned() else { continue };
                            let (inbox_tx, inbox) = mpsc::channel(256);
                            let (app_tx, app_rx) = mpsc::channel(1024);
                            let role = ServerRole::new(policy.clone(), client.clone(), app_tx.clone());
                            let wiring = Wiring { inbox, inbox_tx: inbox_tx.clone(), app_rx, app_tx: app_tx.clone(), links_rx: None };
                            let mut driver = Driver::new(*session, role, epoch, wiring, Some(board.clone()), client.name.clone());
                            driver.set_default_socket(link.clone());
                            let ended = ended_tx.clone();
                            drivers.spawn(async move {
                                let _ = driver.run().await;
                                let _ = ended.send(id);
                            });
                            sessions.insert(id, Live { inbox: inbox_tx, app: app_tx });
                        }
                        DatagramEvent::Respond(bytes) => {
                            let _ = link.send(from, d.local.map(|a| a.ip()), &bytes, None).await;
                        }
                        DatagramEvent::Dropped(_) => {}
                    }
                }
                for (id, v) in routed {
                    if let Some(s) = sessions.get(&id) {
                        // A session that cannot keep up loses datagrams, as a link would.
                        let _ = s.inbox.try_send(v);
                    }
                }
                board.set_endpoint_dropped(&endpoint.dropped);
            }
            Some(id) = ended_rx.recv() => {
                sessions.remove(&id);
                endpoint.forget(id);
                while drivers.try_join_next().is_some() {}
            }
        }
    }
}
