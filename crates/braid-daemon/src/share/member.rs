//! The member's side of the allocation exchange: before a path through a sharer is added, its
//! socket asks the sharer (ALLOC_INIT) and waits for the grant (ALLOC_RESP). The same socket
//! then carries the path, so the sharer relays exactly the address it granted. While the path
//! lives, the request is repeated every third of the lease (the answer then reaches the
//! session, which ignores what it cannot open), so a restarted sharer relays again.

use super::noise::{HandshakeError, MemberHandshake};
use super::wire::{Grant, Request, Status, RESP_LEN};
use crate::udp::{canonical, UdpLink};
use braid_core::{PublicKey, StaticSecret};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Attempts before giving up on a sharer.
const ATTEMPTS: u32 = 3;
/// Wait for an answer per attempt.
const ANSWER_WAIT: Duration = Duration::from_millis(700);

/// Why a sharer did not grant a relay.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AllocError {
    /// It answered no.
    #[error("sharer {0} refused: {1}")]
    Refused(SocketAddr, &'static str),
    /// No (valid) answer.
    #[error("no answer from sharer {0} (it is gone, or does not hold the key it announced)")]
    NoAnswer(SocketAddr),
    /// The request could not be made.
    #[error("allocation request: {0}")]
    Handshake(#[from] HandshakeError),
    /// The socket failed.
    #[error("sharer {0}: {1}")]
    Io(SocketAddr, String),
}

/// Strictly increasing request timestamps (nanoseconds since the epoch, or one more than the
/// last), as the sharer refuses a request not newer than the last of the same key.
pub fn timestamp() -> u64 {
    static LAST: AtomicU64 = AtomicU64::new(0);
    let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    let mut prev = LAST.load(Ordering::Relaxed);
    loop {
        let next = now.max(prev + 1);
        match LAST.compare_exchange(prev, next, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => return next,
            Err(p) => prev = p,
        }
    }
}

/// What a member needs to ask a sharer.
#[derive(Clone)]
pub struct Ask {
    /// The member's key.
    pub secret: StaticSecret,
    /// The sharer's key.
    pub sharer_key: PublicKey,
    /// The sharer's LAN address.
    pub sharer: SocketAddr,
    /// The server to relay to.
    pub server: SocketAddr,
    /// Community key, if admitted by one.
    pub community: Option<[u8; 32]>,
}

impl Ask {
    fn init(&self) -> Result<(MemberHandshake, [u8; super::wire::INIT_LEN]), AllocError> {
        let req = Request { server: self.server, timestamp: timestamp() };
        Ok(MemberHandshake::start(&self.secret, &self.sharer_key, self.community.as_ref(), req)?)
    }

    /// Asks over `link` (whose socket nothing else reads yet) and waits for the grant.
    pub async fn allocate(&self, link: &UdpLink) -> Result<Grant, AllocError> {
        let mut buf = [0u8; 2048];
        for _ in 0..ATTEMPTS {
            let (hs, init) = self.init()?;
            link.socket
                .send_to(&init, self.sharer)
                .await
                .map_err(|e| AllocError::Io(self.sharer, e.to_string()))?;
            let end = tokio::time::Instant::now() + ANSWER_WAIT;
            let mut hs = Some(hs);
            while let Ok(r) = tokio::time::timeout_at(end, link.socket.recv_from(&mut buf)).await {
                let Ok((n, from)) = r else { continue };
                if canonical(from) != canonical(self.sharer) || n != RESP_LEN {
                    continue;
                }
                let Some(h) = hs.take() else { break };
                match h.finish(&buf[..n]) {
                    Ok(g) if g.status == Status::Granted => return Ok(g),
                    Ok(g) => return Err(AllocError::Refused(self.sharer, g.status.describe())),
                    // Not from the sharer we asked (or corrupted): wait for the next attempt.
                    Err(e) => tracing::debug!(sharer = %self.sharer, error = %e, "answer does not open"),
                }
            }
        }
        Err(AllocError::NoAnswer(self.sharer))
    }

    /// Repeats the request over `link` (the answer goes to whoever reads the socket).
    pub async fn renew(&self, link: &UdpLink) -> Result<(), AllocError> {
        let (_, init) = self.init()?;
        link.socket
            .send_to(&init, self.sharer)
            .await
            .map_err(|e| AllocError::Io(self.sharer, e.to_string()))?;
        Ok(())
    }
}
