//! The emulator's UDP sockets, with receive and send buffers large enough that the kernel
//! drops nothing before the link model has seen it.
//!
//! With the default 208 KB receive buffer, a relay or bottleneck task that runs a few
//! milliseconds late under load overflows its socket: 100 uploads through one
//! [`Bottleneck`](crate::bottleneck::Bottleneck) at 200 Mbit/s lost 16,000–25,000 datagrams a
//! minute there (`RcvbufErrors` in /proc/net/snmp), a tail drop no link spec asked for, and
//! shared the link far less evenly than with nothing lost (docs/benchmarks.md).

use socket2::{Domain, Protocol, Socket, Type};
use std::io;
use std::net::SocketAddr;
use tokio::net::UdpSocket;

/// What each emulator socket asks of the kernel for each buffer: over a second of a 25 Mbit/s
/// link. The kernel grants at most twice `net.core.rmem_max` / `wmem_max`: 8 MB where the cap
/// is 4 MB (160 ms of 200 Mbit/s), 416 KB at Linux's default of 208 KB (raise it for
/// `many_sessions`, which reports drops at full buffers).
const BUFFER: usize = 8 << 20;

/// Binds a non-blocking UDP socket at `addr` with [`BUFFER`]-sized buffers.
pub(crate) fn bind(addr: SocketAddr) -> io::Result<UdpSocket> {
    let s = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))?;
    // Best effort: a smaller buffer only brings back the drops this avoids.
    let _ = s.set_recv_buffer_size(BUFFER);
    let _ = s.set_send_buffer_size(BUFFER);
    s.bind(&addr.into())?;
    s.set_nonblocking(true)?;
    UdpSocket::from_std(s.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kernel grants twice what is asked, up to twice `net.core.rmem_max`.
    #[tokio::test]
    async fn the_receive_buffer_is_as_large_as_the_kernel_allows() {
        let s = bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let size = socket2::SockRef::from(&s).recv_buffer_size().unwrap();
        let cap: usize = std::fs::read_to_string("/proc/sys/net/core/rmem_max")
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(BUFFER);
        assert_eq!(size, 2 * BUFFER.min(cap), "receive buffer (rmem_max {cap} B)");
    }
}
