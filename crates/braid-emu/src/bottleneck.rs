//! A bottleneck shared by many clients: one UDP relay whose two directions are each one link
//! of the simulator's model (one queue, one rate), through which every client reaches the
//! server. Each client gets an outer socket of its own towards the server (as a NAT gives each
//! inside address a port), so the server sees distinct clients, while all of them compete for
//! the same queue: what a home router's uplink or an ISP's shaper is to the sessions behind it.
//! Used to measure how evenly sessions share one link (issue 13's fairness target).

use crate::relay::Pending;
use braid_sim::link::{Direction, Fate, LinkSpec};
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::net::UdpSocket;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// Clients a bottleneck serves at most (each costs an outer socket and a task).
pub const MAX_CLIENTS: usize = 4096;

/// Datagrams in flight through the bottleneck at most (a guard on memory).
const MAX_IN_FLIGHT: usize = 200_000;

/// A running bottleneck; stops when dropped.
pub struct Bottleneck {
    /// The address clients send to as if it were the server.
    pub addr: SocketAddr,
    task: JoinHandle<()>,
}

impl Drop for Bottleneck {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Bottleneck {
    /// Starts a bottleneck on 127.0.0.1 towards `server`, each direction shaped by `spec`.
    pub async fn start(server: SocketAddr, spec: LinkSpec, seed: u64) -> io::Result<Bottleneck> {
        let front = Arc::new(crate::socket::bind(([127, 0, 0, 1], 0).into())?);
        let addr = front.local_addr()?;
        let task = tokio::spawn(run(front, server, spec, seed));
        Ok(Bottleneck { addr, task })
    }
}

async fn run(front: Arc<UdpSocket>, server: SocketAddr, mut spec: LinkSpec, seed: u64) {
    // Ethernet-sized unless the spec says otherwise, as the relay's links (`relay::DEFAULT_MTU`).
    spec.mtu = spec.mtu.or(Some(crate::relay::DEFAULT_MTU));
    let start = Instant::now();
    let mut up = Direction::new(ChaCha8Rng::seed_from_u64(seed));
    let mut down = Direction::new(ChaCha8Rng::seed_from_u64(seed ^ 0xd0));
    let mut queue: BinaryHeap<Reverse<Pending<(SocketAddr, bool)>>> = BinaryHeap::new();
    // Each client's outer socket; what the server sends to one comes back on `from_server`.
    let mut outer: HashMap<SocketAddr, (Arc<UdpSocket>, Reader)> = HashMap::new();
    let (to_main, mut from_server) = mpsc::channel::<(SocketAddr, Vec<u8>)>(4096);
    let mut seq = 0u64;
    let mut buf = vec![0u8; 65536];
    loop {
        let next = queue.peek().map(|Reverse(p)| p.at);
        let sleep = async {
            match next {
                Some(t) => tokio::time::sleep_until(t).await,
                None => std::future::pending().await,
            }
        };
        let (client, to_server, data) = tokio::select! {
            r = front.recv_from(&mut buf) => match r {
                Ok((n, from)) => (from, true, buf[..n].to_vec()),
                Err(_) => continue,
            },
            Some((client, data)) = from_server.recv() => (client, false, data),
            _ = sleep => {
                let now = Instant::now();
                while queue.peek().is_some_and(|Reverse(p)| p.at <= now) {
                    let Reverse(p) = queue.pop().expect("peeked");
                    let (client, to_server) = p.leg;
                    if to_server {
                        if let Some((s, _)) = outer.get(&client) {
                            let _ = s.send_to(&p.data, server).await;
                        }
                    } else {
                        let _ = front.send_to(&p.data, client).await;
                    }
                }
                continue;
            }
        };
        if to_server && !outer.contains_key(&client) {
            if outer.len() >= MAX_CLIENTS {
                continue;
            }
            let Ok(socket) = crate::socket::bind(([127, 0, 0, 1], 0).into()) else { continue };
            let socket = Arc::new(socket);
            let (rx, tx) = (socket.clone(), to_main.clone());
            let reader = tokio::spawn(async move {
                let mut b = vec![0u8; 65536];
                while let Ok((n, _)) = rx.recv_from(&mut b).await {
                    if tx.send((client, b[..n].to_vec())).await.is_err() {
                        return;
                    }
                }
            });
            outer.insert(client, (socket, Reader(reader)));
        }
        let now = Instant::now();
        let t = now - start;
        let dir = if to_server { &mut up } else { &mut down };
        if queue.len() >= MAX_IN_FLIGHT {
            continue;
        }
        if let Fate::Arrives(at, dup) = dir.offer(&spec, t, data.len()) {
            for at in std::iter::once(at).chain(dup) {
                seq += 1;
                let when = start + at.max(t);
                queue.push(Reverse(Pending { at: when, seq, leg: (client, to_server), data: data.clone() }));
            }
        }
    }
}

/// A client's outer-socket reader task, stopped with the bottleneck.
struct Reader(JoinHandle<()>);

impl Drop for Reader {
    fn drop(&mut self) {
        self.0.abort();
    }
}
