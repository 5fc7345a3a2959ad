//! A path socket's buffers: what it asks of the kernel, and getting it past a stock cap.
//!
//! Linux caps `SO_RCVBUF` and `SO_SNDBUF` at `net.core.rmem_max` / `wmem_max`, 208 KB on a
//! stock system, and grants twice the value: 416 KB, six of the 65,000-byte datagrams braid's
//! paths reach on loopback. With that cap, one unshaped stream on loopback
//! (`bench/loopback.sh`) lost 4,172–8,217 datagrams in 8 s at full socket buffers
//! (`RcvbufErrors`; docs/benchmarks.md). A process with `CAP_NET_ADMIN` may pass the cap with
//! `SO_RCVBUFFORCE` / `SO_SNDBUFFORCE` (socket(7)), as wireguard-go does (so it also passes an
//! administrator's lower cap); without it braid asks within the cap and says once how to
//! raise it.

use socket2::Socket;
use std::sync::atomic::{AtomicBool, Ordering};

/// What each path socket asks for each of its buffers (the kernel grants twice this).
pub(super) const SOCKET_BUFFER: usize = 8 << 20;

/// Set once the cap has been reported, so that it is said once per process.
static CAP_REPORTED: AtomicBool = AtomicBool::new(false);

/// Sizes `s`'s receive and send buffers to [`SOCKET_BUFFER`], past the system's cap where
/// the process may; best effort (a smaller buffer only risks drops under bursts).
pub(super) fn size(s: &Socket) {
    let forced = force(s, Buffer::Receive).is_ok();
    if !forced {
        let _ = s.set_recv_buffer_size(SOCKET_BUFFER);
    }
    if force(s, Buffer::Send).is_err() {
        let _ = s.set_send_buffer_size(SOCKET_BUFFER);
    }
    // Granted is twice what was asked; below SOCKET_BUFFER the cap is under 4 MB, where
    // a stock system's 208 KB dropped datagrams on loopback.
    let granted = s.recv_buffer_size().unwrap_or(0);
    if !forced && granted < SOCKET_BUFFER && !CAP_REPORTED.swap(true, Ordering::Relaxed) {
        tracing::warn!(
            granted_kb = granted / 1024,
            "UDP receive buffers are capped by net.core.rmem_max: bursts may be dropped at the \
             socket; raise it (sysctl -w net.core.rmem_max={SOCKET_BUFFER}) or run with CAP_NET_ADMIN"
        );
    }
}

enum Buffer {
    Receive,
    Send,
}

/// Sets a buffer with the `…FORCE` option, which needs `CAP_NET_ADMIN`.
#[cfg(target_os = "linux")]
fn force(s: &Socket, which: Buffer) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let name = match which {
        Buffer::Receive => libc::SO_RCVBUFFORCE,
        Buffer::Send => libc::SO_SNDBUFFORCE,
    };
    let value = SOCKET_BUFFER as libc::c_int;
    // SAFETY: a plain c_int, no pointer inside.
    unsafe { super::set_option(s.as_raw_fd(), libc::SOL_SOCKET, name, &value) }
}

/// Elsewhere there is no way past the cap.
#[cfg(not(target_os = "linux"))]
fn force(_: &Socket, _: Buffer) -> std::io::Result<()> {
    Err(std::io::ErrorKind::Unsupported.into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use socket2::{Domain, Protocol, Type};

    /// With `CAP_NET_ADMIN` the buffers pass `net.core.rmem_max` / `wmem_max` (4 MB on the
    /// development machine, 208 KB on a stock system; both below the 8 MB asked, so without
    /// the force this fails there).
    #[test]
    fn with_cap_net_admin_the_buffers_pass_the_systems_cap() {
        let probe = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP)).unwrap();
        if let Err(e) = force(&probe, Buffer::Receive) {
            // Not root, or root in a container without the capability: a skip, except where
            // the tests must run whole (CI sets this).
            let required = std::env::var("BRAID_ROOT_TESTS").is_ok_and(|v| v == "1");
            assert!(!required, "BRAID_ROOT_TESTS=1 but SO_RCVBUFFORCE is refused: {e}");
            eprintln!("skipped: needs CAP_NET_ADMIN ({e})");
            return;
        }
        let s = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP)).unwrap();
        size(&s);
        let cap = |f: &str| std::fs::read_to_string(f).ok().and_then(|v| v.trim().parse::<usize>().ok());
        let (rmem, wmem) = (cap("/proc/sys/net/core/rmem_max"), cap("/proc/sys/net/core/wmem_max"));
        assert_eq!(s.recv_buffer_size().unwrap(), 2 * SOCKET_BUFFER, "rmem_max {rmem:?}");
        assert_eq!(s.send_buffer_size().unwrap(), 2 * SOCKET_BUFFER, "wmem_max {wmem:?}");
    }
}
