//! UDP sockets for paths: bound to an interface (SO_BINDTODEVICE) or a local address, with
//! batched receive (recvmmsg, GRO) and segmented send (GSO) through quinn-udp, and the
//! packet-info needed to answer from the address a packet arrived on.
//!
//! The socket's error queue (ICMP errors, `IP_RECVERR`) is read only when a send or receive
//! fails (a pending error fails the next call) and when [`UdpLink::take_unreachable`] asks:
//! not before every call, which cost one extra `recvmsg` per send and per receive.

use quinn_udp::{Transmit, TransportErrorPayload, UdpSockRef, UdpSocketState};
use socket2::{Domain, Protocol, Socket, Type};
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use tokio::io::Interest;
use tokio::net::UdpSocket;

mod buffers;
mod receive;
pub use receive::{Incoming, Receiver};

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
        buffers::size(&s);
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
    unsafe { set_option(first.socket.as_raw_fd(), libc::SOL_SOCKET, SO_ATTACH_REUSEPORT_CBPF, &prog) }
}

/// setsockopt(2) for the options socket2 does not offer: `value` as the option's bytes.
///
/// # Safety
/// Any pointer inside `value` must be valid for what the kernel reads through it during the
/// call (the kernel copies what it keeps).
#[cfg(target_os = "linux")]
unsafe fn set_option<T>(
    fd: std::os::fd::RawFd,
    level: libc::c_int,
    name: libc::c_int,
    value: &T,
) -> io::Result<()> {
    // SAFETY: `value` is a live T and its size is passed; the caller vouches for what it
    // points at.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (value as *const T).cast(),
            std::mem::size_of::<T>() as libc::socklen_t,
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

    #[tokio::test]
    async fn one_socket_is_bound_without_reuse_port() {
        let one = UdpLink::bind_group("127.0.0.1:0".parse().unwrap(), &here(1)).unwrap();
        assert_eq!(one.len(), 1);
        assert!(!socket2::SockRef::from(&*one[0].socket).reuse_port().unwrap());
    }
}
