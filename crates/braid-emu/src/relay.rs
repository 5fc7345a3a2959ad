//! A shaped UDP relay between one client-facing address and one server address.
//!
//! The relay sends to the server from a socket of its own, its *outer address*: what the server
//! sees as the link's address. [`RelayHandle::rebind`] moves it to a new socket, as a NAT
//! rebinding, a DHCP renew or a phone changing cells does; the old socket can keep sending
//! [`Stale`] copies for a while (RFC 9000 §9.3 cases: reordered and duplicated packets from a
//! peer's previous address).

use braid_sim::link::{Direction, Fate, LinkSpec, Medium};
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::UdpSocket;
use tokio::sync::{mpsc, oneshot, Notify};
use tokio::time::Instant;

/// Datagrams waiting in the emulated link, per direction, at most (a guard on memory; the
/// link's own queue limit is normally far smaller).
const MAX_IN_FLIGHT: usize = 100_000;
/// The IP MTU of a link whose spec names none: Ethernet's. A larger datagram is lost, as on
/// a real link. The relay listens on loopback, whose own MTU (65,536) would otherwise let a
/// path's MTU search (`braid_core::path::mtu`) send 65,000-byte datagrams over a link
/// emulating LTE or DSL.
pub const DEFAULT_MTU: usize = 1500;

/// Datagrams to the server remembered for [`Stale::replay_every`].
pub const REPLAY_MEMORY: usize = 64;

/// Counters of a relay.
#[derive(Debug, Default)]
pub struct RelayStats {
    /// Datagrams forwarded towards the server.
    pub up_packets: AtomicU64,
    /// Datagrams forwarded towards the client.
    pub down_packets: AtomicU64,
    /// Their bytes (UDP payload): what the link carries towards the client.
    pub down_bytes: AtomicU64,
    /// Datagrams dropped (queue, loss, outage), both directions.
    pub dropped: AtomicU64,
}

/// One address the relay sent to the server from, and what the server sent to it.
#[derive(Debug)]
pub struct OuterAddress {
    /// The address.
    pub addr: SocketAddr,
    /// When the relay began to send from it.
    pub since: Instant,
    /// Datagrams the server sent to it (counted also after the relay left it).
    pub from_server: AtomicU64,
    /// Their bytes (UDP payload).
    pub from_server_bytes: AtomicU64,
    /// Stale datagrams it sent to the server after the relay left it.
    pub stale_sent: AtomicU64,
    /// When the server first and last sent to it.
    seen: Mutex<(Option<Instant>, Option<Instant>)>,
}

impl OuterAddress {
    fn new(addr: SocketAddr) -> Arc<Self> {
        Arc::new(OuterAddress {
            addr,
            since: Instant::now(),
            from_server: AtomicU64::new(0),
            from_server_bytes: AtomicU64::new(0),
            stale_sent: AtomicU64::new(0),
            seen: Mutex::new((None, None)),
        })
    }

    fn on_from_server(&self, len: usize) {
        self.from_server.fetch_add(1, Ordering::Relaxed);
        self.from_server_bytes.fetch_add(len as u64, Ordering::Relaxed);
        let now = Instant::now();
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        seen.0.get_or_insert(now);
        seen.1 = Some(now);
    }

    /// When the server first sent a datagram here.
    pub fn first_from_server(&self) -> Option<Instant> {
        self.seen.lock().unwrap_or_else(|e| e.into_inner()).0
    }

    /// When the server last sent a datagram here.
    pub fn last_from_server(&self) -> Option<Instant> {
        self.seen.lock().unwrap_or_else(|e| e.into_inner()).1
    }
}

/// What the address left at a rebind still sends to the server. Replays and copies bypass the
/// link model (they are not the link's traffic); a cut stops them too.
#[derive(Debug, Clone, Copy, Default)]
pub struct Stale {
    /// How long after the rebind the old address keeps sending.
    pub duration: Duration,
    /// Replays the last [`REPLAY_MEMORY`] datagrams forwarded before the rebind, in turn, one
    /// every this often: packets the server has already seen.
    pub replay_every: Option<Duration>,
    /// Sends a copy of every datagram forwarded to the server, right after it.
    pub copy_current: bool,
    /// Datagrams to the server still in the link at the rebind leave from the old address this
    /// much later than due, behind newer ones from the new address: reordered packets the
    /// server has not seen yet, as those still queued on a phone's old cell.
    pub late: Option<Duration>,
}

struct Shared {
    spec: Mutex<LinkSpec>,
    down: AtomicBool,
    stats: RelayStats,
    stop: Notify,
    stopped: AtomicBool,
    outer: Mutex<Vec<Arc<OuterAddress>>>,
}

/// A request to move to a new outer address.
struct Rebind {
    stale: Stale,
    done: oneshot::Sender<io::Result<SocketAddr>>,
}

/// Controls a running relay: cut it, restore it, rebind it, read its counters.
#[derive(Clone)]
pub struct RelayHandle {
    shared: Arc<Shared>,
    rebinds: mpsc::UnboundedSender<Rebind>,
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

    /// Every outer address the relay has used, oldest first; the last is the current one.
    pub fn outer_addresses(&self) -> Vec<Arc<OuterAddress>> {
        self.shared.outer.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The address the server sees for this link now.
    pub fn outer_addr(&self) -> SocketAddr {
        self.outer_addresses().last().expect("a relay always has an outer address").addr
    }

    /// A NAT rebinding: from now on the relay sends to the server from a new socket (a new
    /// port) and takes the server's answers there. The old socket stays open until the next
    /// rebind, counting (and dropping) what the server still sends to it; it sends nothing.
    /// Returns the new outer address.
    pub async fn rebind(&self) -> io::Result<SocketAddr> {
        self.rebind_with(Stale::default()).await
    }

    /// [`rebind`](Self::rebind), with the old address sending `stale` datagrams for a while.
    pub async fn rebind_with(&self, stale: Stale) -> io::Result<SocketAddr> {
        let (done, answer) = oneshot::channel();
        let gone = || io::Error::other("the relay has stopped");
        self.rebinds.send(Rebind { stale, done }).map_err(|_| gone())?;
        answer.await.map_err(|_| gone())?
    }

    /// Stops the relay.
    pub fn stop(&self) {
        self.shared.stopped.store(true, Ordering::SeqCst);
        self.shared.stop.notify_waiters();
    }
}

/// A relay, before it runs.
pub struct Relay;

/// Where a datagram in the emulated link goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Leg {
    /// To the server, from the current outer address.
    ToServer,
    /// To the client.
    ToClient,
    /// To the server, from the address left at the last rebind.
    Stale,
}

/// A datagram in an emulated link: when it leaves the link, in what order among datagrams
/// leaving at the same instant, and where it goes (`L`: the relay's [`Leg`], or the shared
/// bottleneck's client and direction).
pub(crate) struct Pending<L> {
    pub(crate) at: Instant,
    pub(crate) seq: u64,
    pub(crate) leg: L,
    pub(crate) data: Vec<u8>,
}

impl<L> PartialEq for Pending<L> {
    fn eq(&self, o: &Self) -> bool {
        (self.at, self.seq) == (o.at, o.seq)
    }
}
impl<L> Eq for Pending<L> {}
impl<L> PartialOrd for Pending<L> {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl<L> Ord for Pending<L> {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.at, self.seq).cmp(&(o.at, o.seq))
    }
}

/// The server-facing sockets: the current one and the one left at the last rebind.
struct Outer {
    /// Where new outer sockets bind (port 0).
    bind: SocketAddr,
    current: (Arc<UdpSocket>, Arc<OuterAddress>),
    old: Option<(Arc<UdpSocket>, Arc<OuterAddress>)>,
    /// Copies of current datagrams go out of the old socket until then.
    copy_until: Option<Instant>,
}

impl Outer {
    /// Moves to a fresh socket; the current one becomes the old one.
    async fn rebind(&mut self, shared: &Shared) -> io::Result<SocketAddr> {
        let socket = Arc::new(crate::socket::bind(self.bind)?);
        let address = OuterAddress::new(socket.local_addr()?);
        shared.outer.lock().unwrap_or_else(|e| e.into_inner()).push(address.clone());
        self.old = Some(std::mem::replace(&mut self.current, (socket, address.clone())));
        self.copy_until = None;
        Ok(address.addr)
    }
}

/// Receives from the old outer socket, or waits forever when there is none.
async fn recv_old(old: &Option<(Arc<UdpSocket>, Arc<OuterAddress>)>, buf: &mut [u8]) -> io::Result<usize> {
    match old {
        Some((s, _)) => s.recv_from(buf).await.map(|(n, _)| n),
        None => std::future::pending().await,
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
        let front = Arc::new(crate::socket::bind(listen)?);
        let back_bind: SocketAddr = if server.is_ipv4() { "127.0.0.1:0".parse() } else { "[::1]:0".parse() }
            .expect("literal address");
        let back = Arc::new(crate::socket::bind(back_bind)?);
        let address = OuterAddress::new(back.local_addr()?);
        let addr = front.local_addr()?;
        let shared = Arc::new(Shared {
            spec: Mutex::new(spec),
            down: AtomicBool::new(false),
            stats: RelayStats::default(),
            stop: Notify::new(),
            stopped: AtomicBool::new(false),
            outer: Mutex::new(vec![address.clone()]),
        });
        let (rebinds, rebind_rx) = mpsc::unbounded_channel();
        let handle = RelayHandle { shared: shared.clone(), rebinds, addr };
        let outer = Outer { bind: back_bind, current: (back, address), old: None, copy_until: None };
        tokio::spawn(run(front, outer, server, shared, rebind_rx, seed));
        Ok(handle)
    }
}

async fn run(
    front: Arc<UdpSocket>,
    mut outer: Outer,
    server: SocketAddr,
    shared: Arc<Shared>,
    mut rebinds: mpsc::UnboundedReceiver<Rebind>,
    seed: u64,
) {
    let start = Instant::now();
    let mut up = Direction::new(ChaCha8Rng::seed_from_u64(seed));
    let mut down = Direction::new(ChaCha8Rng::seed_from_u64(seed ^ 0xd0));
    let mut medium = Medium::default();
    let mut queue: BinaryHeap<Reverse<Pending<Leg>>> = BinaryHeap::new();
    let mut client: Option<SocketAddr> = None;
    let mut seq = 0u64;
    // The last datagrams forwarded to the server, for stale replays.
    let mut recent: VecDeque<Vec<u8>> = VecDeque::with_capacity(REPLAY_MEMORY);
    let mut buf_f = vec![0u8; 65536];
    let mut buf_b = vec![0u8; 65536];
    // What arrives at the old outer address is only counted: a short buffer will do.
    let mut buf_o = vec![0u8; 2048];
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
            r = outer.current.0.recv_from(&mut buf_b) => match r {
                Ok((n, _)) => {
                    outer.current.1.on_from_server(n);
                    (buf_b[..n].to_vec(), false)
                }
                Err(_) => continue,
            },
            r = recv_old(&outer.old, &mut buf_o) => {
                // The server still sends to the address we left: counted, not forwarded.
                if let (Ok(n), Some((_, address))) = (r, &outer.old) {
                    address.on_from_server(n);
                }
                continue;
            }
            Some(Rebind { stale, done }) = rebinds.recv() => {
                let result = outer.rebind(&shared).await;
                if result.is_ok() {
                    schedule_stale(&mut queue, &mut seq, &mut outer, &recent, stale);
                }
                let _ = done.send(result);
                continue;
            }
            _ = sleep => {
                let now = Instant::now();
                while queue.peek().is_some_and(|Reverse(p)| p.at <= now) {
                    let Reverse(p) = queue.pop().expect("peeked");
                    if shared.down.load(Ordering::SeqCst) {
                        shared.stats.dropped.fetch_add(1, Ordering::Relaxed);
                        continue;
                    }
                    match p.leg {
                        Leg::ToServer => {
                            let _ = outer.current.0.send_to(&p.data, server).await;
                            shared.stats.up_packets.fetch_add(1, Ordering::Relaxed);
                            let copy = outer.copy_until.is_some_and(|t| now < t);
                            if let Some((old, address)) = outer.old.as_ref().filter(|_| copy) {
                                let _ = old.send_to(&p.data, server).await;
                                address.stale_sent.fetch_add(1, Ordering::Relaxed);
                            }
                            if recent.len() == REPLAY_MEMORY {
                                recent.pop_front();
                            }
                            recent.push_back(p.data);
                        }
                        Leg::ToClient => {
                            if let Some(c) = client {
                                let _ = front.send_to(&p.data, c).await;
                                shared.stats.down_packets.fetch_add(1, Ordering::Relaxed);
                                shared.stats.down_bytes.fetch_add(p.data.len() as u64, Ordering::Relaxed);
                            }
                        }
                        Leg::Stale => {
                            if let Some((old, address)) = &outer.old {
                                let _ = old.send_to(&p.data, server).await;
                                address.stale_sent.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                    }
                }
                continue;
            }
            _ = shared.stop.notified() => return,
        };
        let now = Instant::now();
        let t = now - start;
        let mut spec = shared.spec.lock().map(|s| s.clone()).unwrap_or_else(|e| e.into_inner().clone());
        spec.mtu = spec.mtu.or(Some(DEFAULT_MTU));
        let dir = if to_server { &mut up } else { &mut down };
        let fate = if shared.down.load(Ordering::SeqCst) || queue.len() >= MAX_IN_FLIGHT {
            Fate::Down
        } else {
            dir.offer_with(&mut medium, &spec, t, data.len())
        };
        match fate {
            Fate::Arrives(at, dup) => {
                let leg = if to_server { Leg::ToServer } else { Leg::ToClient };
                for at in std::iter::once(at).chain(dup) {
                    seq += 1;
                    let when = start + at.max(t) + Duration::ZERO;
                    queue.push(Reverse(Pending { at: when, seq, leg, data: data.clone() }));
                }
            }
            _ => {
                shared.stats.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// After a rebind: schedules what `stale` asks of the old address, and drops what an earlier
/// rebind's old address had still to send.
fn schedule_stale(
    queue: &mut BinaryHeap<Reverse<Pending<Leg>>>,
    seq: &mut u64,
    outer: &mut Outer,
    recent: &VecDeque<Vec<u8>>,
    stale: Stale,
) {
    let mut pending = std::mem::take(queue).into_vec();
    pending.retain(|Reverse(p)| p.leg != Leg::Stale);
    if let Some(late) = stale.late {
        for Reverse(p) in pending.iter_mut().filter(|Reverse(p)| p.leg == Leg::ToServer) {
            (p.leg, p.at) = (Leg::Stale, p.at + late);
        }
    }
    *queue = pending.into();
    let now = Instant::now();
    if stale.copy_current {
        outer.copy_until = Some(now + stale.duration);
    }
    let Some(every) = stale.replay_every.filter(|e| !e.is_zero() && !recent.is_empty()) else { return };
    let count = (stale.duration.as_nanos() / every.as_nanos()) as u32;
    for (k, data) in (0..count).zip(recent.iter().cycle()) {
        *seq += 1;
        queue.push(Reverse(Pending { at: now + every * k, seq: *seq, leg: Leg::Stale, data: data.clone() }));
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
        assert_eq!(relay.stats().down_bytes.load(Ordering::Relaxed), 4);
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

    /// Receives one datagram on `s` within 1 s.
    async fn recv(s: &UdpSocket) -> (Vec<u8>, SocketAddr) {
        let mut buf = [0u8; 64];
        let (n, from) =
            tokio::time::timeout(Duration::from_secs(1), s.recv_from(&mut buf)).await.unwrap().unwrap();
        (buf[..n].to_vec(), from)
    }

    #[tokio::test]
    async fn a_rebind_moves_the_outer_address_and_the_old_one_replays_stale_datagrams() {
        let server = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let spec = LinkSpec::parse("10mbit/1ms").unwrap();
        let relay = Relay::start("127.0.0.1:0".parse().unwrap(), server.local_addr().unwrap(), spec, 1)
            .await
            .unwrap();
        let client = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        client.send_to(b"one", relay.addr).await.unwrap();
        let (_, old) = recv(&server).await;
        assert_eq!(old, relay.outer_addr());

        let stale = Stale {
            duration: Duration::from_millis(200),
            replay_every: Some(Duration::from_millis(20)),
            copy_current: true,
            late: None,
        };
        let new = relay.rebind_with(stale).await.unwrap();
        assert_ne!(new, old);
        assert_eq!(relay.outer_addresses().iter().map(|a| a.addr).collect::<Vec<_>>(), [old, new]);
        client.send_to(b"two", relay.addr).await.unwrap();
        // The old address replays "one"; "two" comes from the new one, its copy from the old.
        let mut got = Vec::new();
        while got.len() < 4 {
            got.push(recv(&server).await);
        }
        assert!(got.contains(&(b"one".to_vec(), old)), "{got:?}");
        assert!(got.contains(&(b"two".to_vec(), new)), "{got:?}");
        assert!(got.contains(&(b"two".to_vec(), old)), "{got:?}");

        // The server's answers to the new address reach the client; to the old one, nobody.
        server.send_to(b"to old", old).await.unwrap();
        server.send_to(b"to new", new).await.unwrap();
        assert_eq!(recv(&client).await.0, b"to new");
        let addresses = relay.outer_addresses();
        assert_eq!(addresses[0].from_server.load(Ordering::Relaxed), 1);
        assert_eq!(addresses[1].from_server.load(Ordering::Relaxed), 1);
        assert!(addresses[1].first_from_server().is_some());

        // After `duration` the old address falls silent.
        tokio::time::sleep(Duration::from_millis(250)).await;
        let sent = addresses[0].stale_sent.load(Ordering::Relaxed);
        assert!((5..=12).contains(&sent), "{sent} stale datagrams");
        client.send_to(b"three", relay.addr).await.unwrap();
        let mut buf = [0u8; 64];
        loop {
            // Only "three", from the new address, is left (replays still queued may precede it).
            let (n, from) = tokio::time::timeout(Duration::from_secs(1), server.recv_from(&mut buf))
                .await
                .unwrap()
                .unwrap();
            if &buf[..n] == b"three" {
                assert_eq!(from, new);
                break;
            }
        }
        let r = tokio::time::timeout(Duration::from_millis(100), server.recv_from(&mut buf)).await;
        assert!(r.is_err(), "the old address still sends after its stale period");
        relay.stop();
    }

    #[tokio::test]
    async fn datagrams_in_the_link_at_a_rebind_can_arrive_late_from_the_old_address() {
        let server = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let spec = LinkSpec::parse("10mbit/30ms").unwrap();
        let relay = Relay::start("127.0.0.1:0".parse().unwrap(), server.local_addr().unwrap(), spec, 1)
            .await
            .unwrap();
        let client = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        client.send_to(b"queued", relay.addr).await.unwrap();
        tokio::time::sleep(Duration::from_millis(5)).await;
        let old = relay.outer_addr();
        let late = Stale { late: Some(Duration::from_millis(100)), ..Stale::default() };
        let new = relay.rebind_with(late).await.unwrap();
        client.send_to(b"newer", relay.addr).await.unwrap();
        assert_eq!(recv(&server).await, (b"newer".to_vec(), new));
        assert_eq!(recv(&server).await, (b"queued".to_vec(), old));
        assert_eq!(relay.outer_addresses()[0].stale_sent.load(Ordering::Relaxed), 1);
        relay.stop();
    }
}
