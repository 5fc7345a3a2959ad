//! UDP sockets for paths: bound to an interface (SO_BINDTODEVICE) or a local address, with
//! batched receive (recvmmsg, GRO) and segmented send (GSO) through quinn-udp, and the
//! packet-info needed to answer from the address a packet arrived on.
//!
//! The socket's error queue (ICMP errors, `IP_RECVERR`) is read only when a send or receive
//! fails (a pending error fails the next call) and when [`UdpLink::take_unreachable`] asks:
//! not before every call, which cost one extra `recvmsg` per send and per receive.

use bytes::BytesMut;
use quinn_udp::{RecvMeta, Transmit, TransportErrorPayload, UdpSockRef, UdpSocketState};
use smallvec::SmallVec;
use socket2::{Domain, Protocol, Socket, Type};
use std::collections::VecDeque;
use std::io::{self, IoSliceMut};
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::Interest;
use tokio::net::UdpSocket;

/// Datagrams handed to the driver in one batch.
const RECV_SLOTS: usize = 32;
/// Socket buffer sizes asked of the kernel.
const SOCKET_BUFFER: usize = 8 << 20;

/// A datagram as received.
#[derive(Debug)]
pub struct Incoming {
    /// Its bytes.
    pub data: BytesMut,
    /// Who sent it.
    pub from: SocketAddr,
    /// The local address it arrived on (when the kernel says).
    pub local: Option<SocketAddr>,
}

/// One UDP socket and its quinn-udp state.
#[derive(Clone)]
pub struct UdpLink {
    /// The socket.
    pub socket: Arc<UdpSocket>,
    state: Arc<UdpSocketState>,
    /// The bound address.
    pub local: SocketAddr,
    /// An ICMP "unreachable" arrived for this socket (the server's host or port is not there).
    pub unreachable: Arc<AtomicBool>,
    /// The interface it is bound to, if any.
    device: Option<Arc<str>>,
    /// Its `SO_MARK` (0: none), which policy routing may read (TUN mode).
    mark: Arc<AtomicU32>,
}

impl UdpLink {
    /// Binds a socket to `addr`, optionally to a network interface.
    pub fn bind(addr: SocketAddr, device: Option<&str>) -> io::Result<UdpLink> {
        Self::bind_with(addr, device, false)
    }

    /// Binds `runtimes.len()` sockets to `addr` with `SO_REUSEPORT`, so that the kernel spreads
    /// what arrives over them by a hash of each packet's addresses and ports (or by session,
    /// with [`steer_by_session`]): one path's packets always reach the same socket, in order.
    /// The address is first bound alone, so a port another process holds — with
    /// `SO_REUSEPORT` too — is refused rather than shared; port 0 becomes one free port for
    /// all of them.
    ///
    /// One socket per runtime of `runtimes`: socket N is registered with runtime N, whose
    /// thread then learns of its readiness (a server's shard, `crate::shards`) — a socket
    /// registered elsewhere would wake that shard from another thread at every batch.
    pub fn bind_group(addr: SocketAddr, runtimes: &[tokio::runtime::Handle]) -> io::Result<Vec<UdpLink>> {
        let bind = |rt: &tokio::runtime::Handle, addr, reuse_port| {
            let _in = rt.enter();
            Self::bind_with(addr, None, reuse_port)
        };
        let Some(rt0) = runtimes.first() else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "a socket group needs one runtime at least",
            ));
        };
        let first = bind(rt0, addr, false)?;
        if runtimes.len() == 1 {
            return Ok(vec![first]);
        }
        let addr = first.local;
        drop(first);
        runtimes.iter().map(|rt| bind(rt, addr, true)).collect()
    }

    fn bind_with(addr: SocketAddr, device: Option<&str>, reuse_port: bool) -> io::Result<UdpLink> {
        let domain = if addr.is_ipv4() { Domain::IPV4 } else { Domain::IPV6 };
        let s = Socket::new(domain, Type::DGRAM, Some(Protocol::UDP))?;
        if reuse_port {
            s.set_reuse_port(true)?;
        }
        if let Some(dev) = device {
            s.bind_device(Some(dev.as_bytes()))
                .map_err(|e| io::Error::new(e.kind(), format!("cannot bind to interface {dev}: {e}")))?;
        }
        let _ = s.set_recv_buffer_size(SOCKET_BUFFER);
        let _ = s.set_send_buffer_size(SOCKET_BUFFER);
        s.bind(&addr.into())?;
        s.set_nonblocking(true)?;
        let std_sock: std::net::UdpSocket = s.into();
        let socket = UdpSocket::from_std(std_sock)?;
        let state = UdpSocketState::new(UdpSockRef::from(&socket))?;
        let _ = state.enable_transport_errors(UdpSockRef::from(&socket));
        let local = socket.local_addr()?;
        Ok(UdpLink {
            socket: Arc::new(socket),
            state: Arc::new(state),
            local,
            unreachable: Arc::new(AtomicBool::new(false)),
            device: device.map(Arc::from),
            mark: Arc::new(AtomicU32::new(0)),
        })
    }

    /// The most UDP payload one datagram from this socket toward `remote` carries: the MTU
    /// of the route the kernel picks (its interface's, or less where the kernel has learnt a
    /// smaller path MTU), less the IP and UDP headers. RFC 8899's MAX_PLPMTU, which a path's
    /// MTU search may reach ([`braid_core::Session::set_path_mtu_ceiling`]). Read from a
    /// socket bound and connected as this one would send (`IP_MTU` is defined only on a
    /// connected socket); None where the kernel does not say.
    pub fn mtu_toward(&self, remote: SocketAddr) -> Option<usize> {
        let domain = if remote.is_ipv4() { Domain::IPV4 } else { Domain::IPV6 };
        let s = Socket::new(domain, Type::DGRAM, Some(Protocol::UDP)).ok()?;
        if let Some(dev) = &self.device {
            s.bind_device(Some(dev.as_bytes())).ok()?;
        }
        match self.mark.load(Ordering::Relaxed) {
            0 => {}
            mark => s.set_mark(mark).ok()?,
        }
        s.bind(&SocketAddr::new(self.local.ip(), 0).into()).ok()?;
        s.connect(&remote.into()).ok()?;
        route_mtu(&s, remote.is_ipv4()).map(|mtu| mtu.saturating_sub(if remote.is_ipv4() { 28 } else { 48 }))
    }

    /// Marks the socket's packets with `mark` (`SO_MARK`, needs CAP_NET_ADMIN): TUN mode's
    /// policy routing keeps marked packets out of the TUN.
    pub fn set_mark(&self, mark: u32) -> io::Result<()> {
        socket2::SockRef::from(&*self.socket).set_mark(mark)?;
        self.mark.store(mark, Ordering::Relaxed);
        Ok(())
    }

    /// Most segments one GSO send may carry.
    pub fn max_segments(&self) -> usize {
        self.state.max_gso_segments().min(64)
    }

    /// Drains ICMP errors; remembers "unreachable".
    fn drain_errors(&self) {
        while let Ok(Some(e)) = self.state.recv_transport_error(UdpSockRef::from(&*self.socket)) {
            if matches!(e.payload, TransportErrorPayload::Unreachable) {
                tracing::debug!(local = %self.local, from = ?e.addr, "ICMP unreachable");
                self.unreachable.store(true, Ordering::Relaxed);
            }
        }
    }

    /// Whether an ICMP "unreachable" arrived since the last call: reads the socket's error
    /// queue now (it is otherwise read only when the socket next sends or receives).
    pub fn take_unreachable(&self) -> bool {
        self.drain_errors();
        self.unreachable.swap(false, Ordering::Relaxed)
    }

    /// Sends `contents` (one datagram, or several of `segment` bytes each) to `dest`.
    pub async fn send(
        &self,
        dest: SocketAddr,
        src: Option<IpAddr>,
        contents: &[u8],
        segment: Option<usize>,
    ) -> io::Result<()> {
        let t = Transmit { destination: dest, ecn: None, contents, segment_size: segment, src_ip: src };
        loop {
            match self
                .socket
                .try_io(Interest::WRITABLE, || self.state.try_send(UdpSockRef::from(&*self.socket), &t))
            {
                Ok(()) => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.socket.writable().await?,
                Err(e) => {
                    self.drain_errors();
                    return Err(e);
                }
            }
        }
    }
}

/// Batched receiving from one socket (recvmmsg, GRO) into buffers the datagrams keep: no copy.
///
/// Each `recvmmsg` slot is a buffer of its own. When what the kernel wrote into a slot fills
/// at least half of it (a large datagram, or a GRO train of a bulk flow), it is split off as
/// the datagrams and handed out as it is, and the rest of the buffer is lent until the
/// session lets go of them. A slot is refilled with a lent buffer whose datagrams are gone
/// (its allocation reclaimed, `BytesMut::try_reclaim`), else with a new one. Copying each
/// batch into one allocation cost 5.9 % of a downloading client's CPU (`perf record` during
/// `bench/loopback.sh --download`). Smaller datagrams are still copied, one allocation per
/// batch: lent a 64 KB slot each, a server's 1,000 idle sessions held 61–63 MB instead of 50
/// (`many_sessions --sessions 1000 --active 0`), their keepalives waiting in the sessions'
/// queues.
pub struct Receiver {
    /// The buffers the next `recvmmsg` fills, `slot` bytes each, every byte initialised.
    slots: Vec<BytesMut>,
    /// What is left of buffers whose front went out as datagrams, oldest first; at most
    /// [`LENT_KEPT`].
    lent: VecDeque<BytesMut>,
    /// Bytes of one slot.
    slot: usize,
    /// Buffers needed at once (lent ones still held plus a batch's slots), the most in the
    /// current and the previous [`DEMAND_WINDOW`]: lent buffers beyond it are let go.
    demand: Demand,
    metas: Vec<RecvMeta>,
}

/// Lent buffers a [`Receiver`] keeps track of for reuse; older ones are left to their
/// datagrams and freed with them.
const LENT_KEPT: usize = 2 * RECV_SLOTS;

impl Receiver {
    /// Buffers for `link`.
    pub fn new(link: &UdpLink) -> Self {
        let gro = link.state.gro_segments().max(1);
        let slot = 65536.min(1500 * gro).max(2048);
        Receiver {
            slots: (0..RECV_SLOTS).map(|_| BytesMut::zeroed(slot)).collect(),
            lent: VecDeque::new(),
            slot,
            demand: Demand::default(),
            metas: vec![RecvMeta::default(); RECV_SLOTS],
        }
    }

    /// The next batch of datagrams (None when the socket failed for good).
    pub async fn next(&mut self, link: &UdpLink) -> Option<Vec<Incoming>> {
        let mut batch = Vec::new();
        loop {
            link.socket.readable().await.ok()?;
            if self.try_batch(link, &mut batch) {
                return Some(batch);
            }
        }
    }

    /// Reads one batch (one `recvmmsg`) without waiting, appending its datagrams to `out`;
    /// false when nothing was waiting.
    pub fn try_batch(&mut self, link: &UdpLink, out: &mut Vec<Incoming>) -> bool {
        self.refill();
        let mut iovs: SmallVec<[IoSliceMut<'_>; RECV_SLOTS]> =
            self.slots.iter_mut().map(|b| IoSliceMut::new(b)).collect();
        let n = match link.socket.try_io(Interest::READABLE, || {
            link.state.recv(UdpSockRef::from(&*link.socket), &mut iovs, &mut self.metas)
        }) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return false,
            Err(e) => {
                // ICMP errors surface here as ECONNREFUSED and the like: note and go on.
                tracing::debug!(local = %link.local, error = %e, "receive error");
                link.drain_errors();
                return false;
            }
        };
        drop(iovs);
        // Datagrams that fill less than half their slot are copied, one allocation for the
        // batch, as a slot lent for them would hold many times their size while they wait.
        let lends = |len: usize| 2 * len >= self.slot;
        let small: usize = self.metas[..n].iter().map(|m| m.len).filter(|&l| !lends(l)).sum();
        let mut copies = BytesMut::with_capacity(small);
        for (meta, buf) in self.metas[..n].iter().zip(&mut self.slots) {
            let mut received = if lends(meta.len) {
                let received = buf.split_to(meta.len);
                self.lent.push_back(std::mem::take(buf));
                received
            } else {
                copies.extend_from_slice(&buf[..meta.len]);
                copies.split()
            };
            let stride = meta.stride.max(1);
            let local = meta.dst_ip.map(|ip| SocketAddr::new(ip, link.local.port()));
            while !received.is_empty() {
                let len = stride.min(received.len());
                out.push(Incoming { data: received.split_to(len), from: meta.addr, local });
            }
        }
        while self.lent.len() > LENT_KEPT {
            self.lent.pop_front();
        }
        n > 0
    }

    /// Gives every slot the last batch used a whole buffer again: a lent one whose datagrams
    /// are gone, else a new one. Then lets go of lent buffers beyond what was recently
    /// needed at once ([`Receiver::demand`]): an idle receiver does not keep a burst's.
    fn refill(&mut self) {
        let slot = self.slot;
        let empty: SmallVec<[usize; RECV_SLOTS]> =
            (0..self.slots.len()).filter(|&i| self.slots[i].len() < slot).collect();
        if empty.is_empty() {
            return;
        }
        let mut to_fill = empty.iter().copied().peekable();
        let mut held = 0;
        let slots = &mut self.slots;
        self.lent.retain_mut(|b| {
            if !reclaim(b, slot) {
                held += 1;
                return true;
            }
            match to_fill.next() {
                Some(i) => {
                    slots[i] = std::mem::take(b);
                    false
                }
                None => true,
            }
        });
        for i in to_fill {
            slots[i] = BytesMut::zeroed(slot);
        }
        let demand = self.demand.note(Instant::now(), held + empty.len());
        let mut excess = self.lent.len().saturating_sub(demand);
        self.lent.retain_mut(|b| {
            if excess > 0 && reclaim(b, slot) {
                excess -= 1;
                return false;
            }
            true
        });
    }
}

/// How long a [`Receiver`] remembers how many buffers it needed at once. Datagrams are let
/// go in bursts (a driver's round, a stream read), so the need peaks now and then; a second
/// covers many peaks under load, and an idle receiver gives a burst's buffers back within
/// two.
const DEMAND_WINDOW: Duration = Duration::from_secs(1);

/// A maximum over the current and the previous [`DEMAND_WINDOW`].
#[derive(Default)]
struct Demand {
    current: usize,
    previous: usize,
    since: Option<Instant>,
}

impl Demand {
    /// `need` buffers were needed at `now`; returns the windowed maximum.
    fn note(&mut self, now: Instant, need: usize) -> usize {
        if self.since.is_none_or(|t| now.duration_since(t) >= DEMAND_WINDOW) {
            self.previous = if self.since.is_some_and(|t| now.duration_since(t) < 2 * DEMAND_WINDOW) {
                self.current
            } else {
                0
            };
            self.current = 0;
            self.since = Some(now);
        }
        self.current = self.current.max(need);
        self.current.max(self.previous)
    }
}

/// Makes `b`, what is left of a slot's buffer, a whole slot again if its datagrams are gone.
fn reclaim(b: &mut BytesMut, slot: usize) -> bool {
    b.clear();
    if !b.try_reclaim(slot) || b.capacity() < slot {
        return false;
    }
    // SAFETY: `try_reclaim` never allocates: `b` is again the start of the allocation its slot
    // was made with (`BytesMut::zeroed(slot)`), and it has `slot` bytes of room. Every byte of
    // it was initialised then, and since written only by the kernel and the datagrams' owners.
    unsafe { b.set_len(slot) };
    true
}

/// The socket of an `n`-socket group that [`steer_by_session`] gives `session`'s datagrams,
/// and so the shard its driver runs on (`crate::shards`): the random high half of the id
/// (`braid_core::crypto::reset`), modulo `n`.
pub fn socket_of(session: braid_core::SessionId, n: usize) -> usize {
    ((session.0 >> 32) as u32 % n.max(1) as u32) as usize
}

/// Steers what arrives on a `SO_REUSEPORT` group ([`UdpLink::bind_group`], in its order) by
/// session, not by the kernel's hash of addresses: a classic BPF program
/// (`SO_ATTACH_REUSEPORT_CBPF`, socket(7)) picks socket [`socket_of`] for each datagram, from
/// the session id at [`braid_core::wire::SESSION_ID_OFFSET`]. Every path of a session then
/// reaches the one socket whose shard runs the session: no packet is handed to another
/// thread. What is not a DATA packet lands on some socket of the group, whose loop hands it
/// to the endpoint as before; one too short for the id lands on the first.
#[cfg(all(
    target_os = "linux",
    not(any(target_arch = "mips", target_arch = "mips64", target_arch = "sparc64"))
))]
pub fn steer_by_session(group: &[UdpLink]) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    /// socket(7); asm-generic's number (mips and sparc have their own).
    const SO_ATTACH_REUSEPORT_CBPF: libc::c_int = 51;
    let Some(first) = group.first().filter(|_| group.len() > 1) else { return Ok(()) };
    let op = |code: u32, k: u32| libc::sock_filter { code: code as u16, jt: 0, jf: 0, k };
    let program = [
        // A = the 32-bit big-endian word at the id's offset in the UDP payload: its high half.
        op(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, braid_core::wire::SESSION_ID_OFFSET as u32),
        op(libc::BPF_ALU | libc::BPF_MOD | libc::BPF_K, group.len() as u32),
        op(libc::BPF_RET | libc::BPF_A, 0),
    ];
    let prog = libc::sock_fprog { len: program.len() as u16, filter: program.as_ptr().cast_mut() };
    // SAFETY: `prog` points at `program`, both alive for the call; the kernel copies them.
    let rc = unsafe {
        libc::setsockopt(
            first.socket.as_raw_fd(),
            libc::SOL_SOCKET,
            SO_ATTACH_REUSEPORT_CBPF,
            (&raw const prog).cast(),
            std::mem::size_of::<libc::sock_fprog>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Elsewhere the kernel's hash spreads a group's datagrams.
#[cfg(not(all(
    target_os = "linux",
    not(any(target_arch = "mips", target_arch = "mips64", target_arch = "sparc64"))
)))]
pub fn steer_by_session(group: &[UdpLink]) -> io::Result<()> {
    if group.len() <= 1 {
        return Ok(());
    }
    Err(io::ErrorKind::Unsupported.into())
}

/// Normalises an IPv4-mapped IPv6 address to IPv4 (dual-stack sockets report v4 peers so).
pub fn canonical(addr: SocketAddr) -> SocketAddr {
    match addr {
        SocketAddr::V6(v6) => match v6.ip().to_ipv4_mapped() {
            Some(v4) => SocketAddr::new(IpAddr::V4(v4), v6.port()),
            None => addr,
        },
        v4 => v4,
    }
}

/// Maps an IPv4 destination to IPv4-mapped IPv6 when sending from a dual-stack IPv6 socket.
pub fn v6_if_needed(addr: SocketAddr, sock: &UdpSocket) -> SocketAddr {
    match (addr, sock.local_addr()) {
        (SocketAddr::V4(v4), Ok(SocketAddr::V6(_))) => {
            SocketAddr::new(IpAddr::V6(v4.ip().to_ipv6_mapped()), v4.port())
        }
        _ => addr,
    }
}

/// `getsockopt(IP_MTU)` or `(IPV6_MTU)` of a connected socket: its route's MTU (Linux, ip(7)).
#[cfg(target_os = "linux")]
fn route_mtu(s: &Socket, v4: bool) -> Option<usize> {
    use std::os::fd::AsRawFd;
    let (level, name) =
        if v4 { (libc::IPPROTO_IP, libc::IP_MTU) } else { (libc::IPPROTO_IPV6, libc::IPV6_MTU) };
    let mut mtu: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `mtu` and `len` are valid for writes of a c_int and a socklen_t, as the call
    // expects; the descriptor is the live socket `s`.
    let rc = unsafe { libc::getsockopt(s.as_raw_fd(), level, name, (&raw mut mtu).cast(), &raw mut len) };
    (rc == 0 && mtu > 0).then_some(mtu as usize)
}

/// Other systems: not read (paths keep the starting size).
#[cfg(not(target_os = "linux"))]
fn route_mtu(_: &Socket, _: bool) -> Option<usize> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` times the test's own runtime.
    fn here(n: usize) -> Vec<tokio::runtime::Handle> {
        vec![tokio::runtime::Handle::current(); n]
    }

    #[tokio::test]
    async fn the_interface_mtu_toward_a_peer_is_read_less_the_headers() {
        let link = UdpLink::bind("127.0.0.1:0".parse().unwrap(), None).unwrap();
        // Loopback's MTU (`ip link`: 65536 unless changed), of which an IPv4 datagram can
        // use 65,535 bytes.
        let lo: usize = std::fs::read_to_string("/sys/class/net/lo/mtu").unwrap().trim().parse().unwrap();
        assert_eq!(link.mtu_toward("127.0.0.1:9".parse().unwrap()), Some(lo.min(65_535) - 28));
    }

    #[tokio::test]
    async fn a_group_shares_one_port_and_a_second_group_is_refused_it() {
        let group = UdpLink::bind_group("127.0.0.1:0".parse().unwrap(), &here(3)).unwrap();
        assert_eq!(group.len(), 3);
        let port = group[0].local.port();
        assert_ne!(port, 0);
        assert!(group.iter().all(|l| l.local == group[0].local), "one address for all");
        // Another server (or a second `braid server` by mistake) must not join the group and
        // take a share of its packets.
        let err = UdpLink::bind_group(group[0].local, &here(2)).err().expect("the port is taken");
        assert_eq!(err.kind(), io::ErrorKind::AddrInUse);
        assert_eq!(
            UdpLink::bind_group(group[0].local, &here(1)).err().map(|e| e.kind()),
            Some(io::ErrorKind::AddrInUse)
        );
    }

    #[tokio::test]
    async fn a_steered_group_gives_each_session_its_socket_whatever_the_sender() {
        use braid_core::wire::{DataHeader, DATA_HEADER_LEN};
        let group = UdpLink::bind_group("127.0.0.1:0".parse().unwrap(), &here(3)).unwrap();
        steer_by_session(&group).unwrap();
        // One sender, one 4-tuple: the kernel's hash alone would put everything on one socket.
        let sender = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let ids: Vec<u64> = (0..12u64).map(|i| (i * 0x9e37_79b9 + 5) << 32 | 0x1234_5678).collect();
        for &id in &ids {
            let mut d = [0u8; DATA_HEADER_LEN + 20];
            DataHeader { session_id: braid_core::SessionId(id), path_id: 0, truncated_pn: 1, key_phase: 0 }
                .write(&mut d);
            sender.send_to(&d, group[0].local).unwrap();
        }
        let mut got = vec![Vec::new(); 3];
        for (k, link) in group.iter().enumerate() {
            let mut buf = [0u8; 64];
            while let Ok(Ok(n)) =
                tokio::time::timeout(std::time::Duration::from_millis(200), link.socket.recv(&mut buf)).await
            {
                got[k].push(braid_core::endpoint::session_of(&buf[..n]).unwrap().0);
            }
        }
        for (k, ids_k) in got.iter().enumerate() {
            let want: Vec<u64> =
                ids.iter().copied().filter(|&id| socket_of(braid_core::SessionId(id), 3) == k).collect();
            assert_eq!(ids_k, &want, "socket {k}");
        }
        assert!(got.iter().all(|g| !g.is_empty()), "the ids spread over all three: {got:?}");
    }

    /// Receives what `sender` sent to `link` until `n` datagrams are in `out` (2 s at most).
    async fn receive(rx: &mut Receiver, link: &UdpLink, n: usize) -> Vec<Incoming> {
        let mut out = Vec::new();
        let until = tokio::time::Instant::now() + std::time::Duration::from_secs(2);
        while out.len() < n && tokio::time::Instant::now() < until {
            let _ = tokio::time::timeout_at(until, link.socket.readable()).await;
            rx.try_batch(link, &mut out);
        }
        out
    }

    #[tokio::test]
    async fn large_datagrams_are_the_slots_bytes_and_a_slot_is_reused_once_let_go() {
        let link = UdpLink::bind("127.0.0.1:0".parse().unwrap(), None).unwrap();
        let sender = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let mut rx = Receiver::new(&link);
        let (big, bigger) = (rx.slot / 2 + 100, rx.slot / 2 + 3000);
        let slot_starts: Vec<*const u8> = rx.slots.iter().map(|b| b.as_ptr()).collect();
        sender.send_to(&vec![1u8; bigger], link.local).unwrap();
        let first = receive(&mut rx, &link, 1).await;
        assert_eq!(first.len(), 1);
        assert_eq!(&first[0].data[..], &vec![1u8; bigger][..]);
        assert!(
            slot_starts.contains(&first[0].data.as_ptr()),
            "the datagram is the slot's bytes, not a copy"
        );
        let held = first[0].data.as_ptr();
        // Held: the next datagram goes elsewhere and this one stays as it was.
        sender.send_to(&vec![2u8; big], link.local).unwrap();
        let second = receive(&mut rx, &link, 1).await;
        assert_eq!(&second[0].data[..], &vec![2u8; big][..]);
        assert_ne!(second[0].data.as_ptr(), held);
        assert_eq!(&first[0].data[..], &vec![1u8; bigger][..], "a held datagram is not written over");
        // Let go of: the slot takes its allocation back instead of a new one.
        drop(first);
        drop(second);
        sender.send_to(&vec![3u8; big], link.local).unwrap();
        let third = receive(&mut rx, &link, 1).await;
        assert_eq!(&third[0].data[..], &vec![3u8; big][..]);
        let mut starts: Vec<*const u8> = rx.slots.iter().map(|b| b.as_ptr()).collect();
        starts.push(third[0].data.as_ptr());
        assert!(starts.contains(&held), "the first datagram's allocation serves again");
        assert!(rx.lent.len() <= LENT_KEPT);
    }

    #[test]
    fn demand_remembers_a_burst_for_a_window_and_then_forgets_it() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let mut d = Demand::default();
        assert_eq!(d.note(at(0), 50), 50);
        assert_eq!(d.note(at(500), 2), 50, "a round's peak carries over the batches between");
        assert_eq!(d.note(at(1200), 1), 50, "and into the next window");
        assert_eq!(d.note(at(2300), 1), 1, "a window of small needs lets the burst's buffers go");
        assert_eq!(d.note(at(2400), 7), 7);
        assert_eq!(d.note(at(9000), 1), 1, "a long silence forgets everything");
    }

    #[tokio::test]
    async fn small_datagrams_are_copied_and_hold_no_slot() {
        let link = UdpLink::bind("127.0.0.1:0".parse().unwrap(), None).unwrap();
        let sender = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let mut rx = Receiver::new(&link);
        let slot_starts: Vec<*const u8> = rx.slots.iter().map(|b| b.as_ptr()).collect();
        for k in 0..3u8 {
            sender.send_to(&[k; 100], link.local).unwrap();
        }
        let got = receive(&mut rx, &link, 3).await;
        assert_eq!(
            got.iter().map(|d| d.data.to_vec()).collect::<Vec<_>>(),
            (0..3u8).map(|k| vec![k; 100]).collect::<Vec<_>>()
        );
        // A keepalive waiting in a session's queue must not keep a 64 KB slot alive.
        assert!(got.iter().all(|d| !slot_starts.contains(&d.data.as_ptr())));
        assert!(rx.lent.is_empty());
        assert!(rx.slots.iter().zip(&slot_starts).all(|(b, &p)| b.as_ptr() == p && b.len() == rx.slot));
    }

    #[tokio::test]
    async fn one_socket_is_bound_without_reuse_port() {
        let one = UdpLink::bind_group("127.0.0.1:0".parse().unwrap(), &here(1)).unwrap();
        assert_eq!(one.len(), 1);
        assert!(!socket2::SockRef::from(&*one[0].socket).reuse_port().unwrap());
    }
}
