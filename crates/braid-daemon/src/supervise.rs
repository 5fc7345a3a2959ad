//! What the client's supervisor learns while a session starts and after it ends: a server
//! port that answers with ICMP "unreachable" (nothing listens there), and a session that the
//! server gave to another client holding the same key.

use crate::udp::UdpLink;
use braid_core::CloseReason;
use std::time::Duration;
use tokio::time::Instant;

/// Application close code of a session the server ended because a newer session of the same
/// client key replaced it (the reason text names the address the newer one came from).
pub const CLOSE_REPLACED: u64 = 0x5e55;

/// How long a client whose session was taken over waits before it takes it back, at least:
/// two clients holding one key would otherwise take the session from each other every few
/// seconds. Consecutive takeovers double it, up to [`TAKEOVER_WAIT_MAX`].
pub const TAKEOVER_WAIT: Duration = Duration::from_secs(30);
/// The longest wait after consecutive takeovers.
pub const TAKEOVER_WAIT_MAX: Duration = Duration::from_secs(300);

/// Time between the first handshake message and its first resend is 500 ms; two ICMP
/// "unreachable" answers at least this far apart mean both were refused.
const SECOND_REFUSAL_AFTER: Duration = Duration::from_millis(400);
/// How often the link's ICMP flag is looked at.
const POLL: Duration = Duration::from_millis(25);

/// Resolves once ICMP "unreachable" answered both the first handshake message sent on `link`
/// and its first resend (so a stray ICMP error does not end a handshake): the server's port is
/// closed or its host has no route. Never resolves otherwise.
pub async fn refused_by_icmp(link: &UdpLink) {
    let mut first: Option<Instant> = None;
    loop {
        tokio::time::sleep(POLL).await;
        if !link.take_unreachable() {
            continue;
        }
        match first {
            None => first = Some(Instant::now()),
            Some(t) if t.elapsed() >= SECOND_REFUSAL_AFTER => return,
            Some(_) => {}
        }
    }
}

/// The address a newer session of this client's key came from, when `reason` says the server
/// ended this one for it.
pub fn taken_over(reason: &CloseReason) -> Option<&str> {
    match reason {
        CloseReason::PeerClosed { code: CLOSE_REPLACED, reason } => {
            Some(reason.rsplit(' ').next().unwrap_or(reason.as_str()))
        }
        _ => None,
    }
}

/// The reason text the server sends with [`CLOSE_REPLACED`]; [`taken_over`] reads it back.
pub fn replaced_reason(newer: std::net::SocketAddr) -> String {
    format!("replaced by a newer session of this client key from {newer}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;

    #[test]
    fn a_takeover_names_the_newer_address() {
        let r = CloseReason::PeerClosed {
            code: CLOSE_REPLACED,
            reason: replaced_reason("192.0.2.7:4000".parse().unwrap()),
        };
        assert_eq!(taken_over(&r), Some("192.0.2.7:4000"));
        let other = CloseReason::PeerClosed { code: 0, reason: "server shutting down".into() };
        assert_eq!(taken_over(&other), None);
        assert_eq!(taken_over(&CloseReason::IdleTimeout), None);
    }

    #[tokio::test]
    async fn one_icmp_refusal_is_not_enough_two_apart_are() {
        let link = UdpLink::bind("127.0.0.1:0".parse().unwrap(), None).unwrap();
        let watch = refused_by_icmp(&link);
        tokio::pin!(watch);
        link.unreachable.store(true, Ordering::Relaxed);
        let early = tokio::time::timeout(Duration::from_millis(300), &mut watch).await;
        assert!(early.is_err(), "a single refusal ended the handshake");
        tokio::time::sleep(Duration::from_millis(150)).await;
        link.unreachable.store(true, Ordering::Relaxed);
        tokio::time::timeout(Duration::from_millis(300), &mut watch)
            .await
            .expect("two refusals 450 ms apart");
    }
}
