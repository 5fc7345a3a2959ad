//! A shaped UDP relay between one client-facing address and one server address.

use braid_sim::link::{Direction, Fate, LinkSpec};
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::UdpSocket;
use tokio::sync::Notify;
use tokio::time::Instant;

/// Datagrams waiting in the emulated link, per direction, at most (a guard on memory; the
/// link's own queue limit is normally far smaller).
const MAX_IN_FLIGHT: usize = 100_000;

/// Counters of a relay.
#[derive(Debug, Default)]
pub struct RelayStats {
    /// Datagrams forwarded towards the server.
    pub up_packets: AtomicU64,
    /// Datagrams forwarded towards the client.
    pub down_packets: AtomicU64,
    /// Datagrams dropped (queue, loss, outage), both directions.
    pub dropped: AtomicU64,
}

struct Shared {
    spec: Mutex<LinkSpec>,
    down: AtomicBool,
    stats: RelayStats,
    stop: Notify,
    stopped: AtomicBool,
}

/// Controls a running relay: cut it, restore it, read its counters. Dropping the last handle
/// stops the relay.
#[derive(Clone)]
pub struct RelayHandle {
    shared: Arc<Shared>,
    /// The address clients send to.
    pub addr: SocketAddr,
}

impl RelayHandle {
    /// Cuts (`true`) or restores (`false`) the link: while cut, nothing passes either way.
    pub fn set_down(&self, down: bool) {
        self.shared.down.store(down, Ordering::SeqCst);
    }

    /// True while cut.
    pub fn is_down(&self) -> bool {
        self.shared.down.load(Ordering::SeqCst)
    }

    /// Counters.
    pub fn stats(&self) -> &RelayStats {
        &self.shared.stats
    }

    /// The link spec in force.
    pub fn spec(&self) -> LinkSpec {
        self.shared.spec.lock().map(|s| s.clone()).unwrap_or_else(|e| e.into_inner().clone())
    }

    /// Stops the relay.
    pub fn stop(&self) {
        self.shared.stopped.store(true, Ordering::SeqCst);
        self.shared.stop.notify_waiters();
    }
}

/// A relay, before it runs.
pub struct Relay;

struct Pending {
    at: Instant,
    seq: u64,
    to_server: bool,
    data: Vec<u8>,
}

impl PartialEq for Pending {
    fn eq(&self, o: &Self) -> bool {
        (self.at, self.seq) == (o.at, o.seq)
    }
}
impl Eq for Pending {}
impl PartialOrd for Pending {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Pending {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.at, self.seq).cmp(&(o.at, o.seq))
    }
}

impl Relay {
    /// Starts a relay listening on `listen` (port 0 picks one) that forwards to `server`
    /// through a link shaped by `spec`; `seed` drives its randomness.
    pub async fn start(
        listen: SocketAddr,
        server: SocketAddr,
        spec: LinkSpec,
        seed: u64,
    ) -> io::Result<RelayHandle> {
        let front = Arc::new(UdpSocket::bind(listen).await?);
        let back_bind: SocketAddr = if server.is_ipv4() { "127.0.0.1:0".parse() } else { "[::1]:0".parse() }
            .expect("literal address");
        let back = Arc::new(UdpSocket::bind(back_bind).await?);
        let addr = front.local_addr()?;
        let shared = Arc::new(Shared {
            spec: Mutex::new(spec),
            down: AtomicBool::new(false),
            stats: RelayStats::default(),
            stop: Notify::new(),
            stopped: AtomicBool::new(false),
        });
        let handle = RelayHandle { shared: shared.clone(), addr };
        tokio::spawn(run(front, back, server, shared, seed));
        Ok(handle)
    }
}

async fn run(
    front: Arc<UdpSocket>,
    back: Arc<UdpSocket>,
    server: SocketAddr,
    shared: Arc<Shared>,
    seed: u64,
) {
    let start = Instant::now();
    let mut up = Direction::new(ChaCha8Rng::seed_from_u64(seed));
    let mut down = Direction::new(ChaCha8Rng::seed_from_u64(seed ^ 0xd0));
    let mut queue: BinaryHeap<Reverse<Pending>> = BinaryHeap::new();
    let mut client: Option<SocketAddr> = None;
    let mut seq = 0u64;
    let mut buf_f = vec![0u8; 65536];
    let mut buf_b = vec![0u8; 65536];
    loop {
        if shared.stopped.load(Ordering::SeqCst) {
            return;
        }
        let next = queue.peek().map(|Reverse(p)| p.at);
        let sleep = async {
            match next {
                Some(t) => tokio::time::sleep_until(t).await,
                None => std::future::pending().await,
            }
        };
        let (data, to_server) = tokio::select! {
            r = front.recv_from(&mut buf_f) => match r {
                Ok((n, from)) => { client = Some(from); (buf_f[..n].to_vec(), true) }
                Err(_) => continue,
            },
            r = back.recv_from(&mut buf_b) => match r {
                Ok((n, _)) => (buf_b[..n].to_vec(), false),
                Err(_) => continue,
            },
            _ = sleep => {
                let now = Instant::now();
                while queue.peek().is_some_and(|Reverse(p)| p.at <= now) {
                    let Reverse(p) = queue.pop().expect("peeked");
                    if shared.down.load(Ordering::SeqCst) {
                        shared.stats.dropped.fetch_add(1, Ordering::Relaxed);
                        continue;
                    }
                    if p.to_server {
                        let _ = back.send_to(&p.data, server).await;
                        shared.stats.up_packets.fetch_add(1, Ordering::Relaxed);
                    } else if let Some(c) = client {
                        let _ = front.send_to(&p.data, c).await;
                        shared.stats.down_packets.fetch_add(1, Ordering::Relaxed);
                    }
                }
                continue;
            }
            _ = shared.stop.notified() => return,
        };
        let now = Instant::now();
        let t = now - start;
        let spec = shared.spec.lock().map(|s| s.clone()).unwrap_or_else(|e| e.into_inner().clone());
        let dir = if to_server { &mut up } else { &mut down };
        let fate = if shared.down.load(Ordering::SeqCst) || queue.len() >= MAX_IN_FLIGHT {
            Fate::Down
        } else {
            dir.offer(&spec, t, data.len())
        };
        match fate {
            Fate::Arrives(at, dup) => {
                for at in std::iter::once(at).chain(dup) {
                    seq += 1;
                    let when = start + at.max(t) + Duration::ZERO;
                    queue.push(Reverse(Pending { at: when, seq, to_server, data: data.clone() }));
                }
            }
            _ => {
                shared.stats.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn relays_both_ways_with_delay_and_can_be_cut() {
        let server = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let server_addr = server.local_addr().unwrap();
        let spec = LinkSpec::parse("10mbit/20ms").unwrap();
        let relay = Relay::start("127.0.0.1:0".parse().unwrap(), server_addr, spec, 1).await.unwrap();
        let client = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let t0 = Instant::now();
        client.send_to(b"ping", relay.addr).await.unwrap();
        let mut buf = [0u8; 16];
        let (n, from) = server.recv_from(&mut buf).await.unwrap();
        assert_eq!(&buf[..n], b"ping");
        assert!(t0.elapsed() >= Duration::from_millis(20));
        server.send_to(b"pong", from).await.unwrap();
        let (n, _) = client.recv_from(&mut buf).await.unwrap();
        assert_eq!(&buf[..n], b"pong");
        assert!(t0.elapsed() >= Duration::from_millis(40));
        relay.set_down(true);
        client.send_to(b"lost", relay.addr).await.unwrap();
        let r = tokio::time::timeout(Duration::from_millis(100), server.recv_from(&mut buf)).await;
        assert!(r.is_err(), "a cut relay forwarded a datagram");
        relay.set_down(false);
        client.send_to(b"back", relay.addr).await.unwrap();
        let (n, _) = server.recv_from(&mut buf).await.unwrap();
        assert_eq!(&buf[..n], b"back");
        relay.stop();
    }
}
