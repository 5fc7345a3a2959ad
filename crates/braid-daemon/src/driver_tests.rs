//! The driver on a handshake nobody answers: what becomes of a connection opened meanwhile.

use super::*;
use crate::bridge::OpenError;
use braid_core::crypto::{Seed, StaticSecret};
use braid_core::{ClientConfig, SessionConfig};
use tokio::sync::oneshot;

/// A role with nothing to do: no stream or datagram arrives before a handshake.
struct Quiet;

impl Role for Quiet {
    fn on_stream_opened(&mut self, _ends: StreamEnds) {}
    fn on_datagram(&mut self, _d: Datagram) {}
}

/// Runs one handshake attempt against a UDP socket that never answers (bound, so no ICMP),
/// with a connection opened before it starts. Returns the reply of that open, if it was sent,
/// and what is left in the application channel afterwards.
async fn attempt(carry: bool) -> (Option<Result<StreamEnds, OpenError>>, Option<AppMsg>) {
    let hole = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let server = hole.local_addr().unwrap();
    let link = UdpLink::bind("127.0.0.1:0".parse().unwrap(), None).unwrap();
    let session_cfg =
        SessionConfig { handshake_timeout: Duration::from_millis(300), ..SessionConfig::default() };
    let cfg = ClientConfig {
        secret: StaticSecret::from_bytes([1; 32]),
        server_key: StaticSecret::from_bytes([2; 32]).public_key(),
        session: session_cfg,
    };
    let session =
        Session::connect(&cfg, Timestamp::ZERO, Some(link.local), server, Seed::from_bytes([3; 32]), 1);
    let (app_tx, app_rx) = mpsc::channel(16);
    let wiring = Wiring { inbox: None, app_rx, app_tx: app_tx.clone(), links_rx: None };
    let mut driver = Driver::new(session, Quiet, Instant::now(), wiring, None, "server".into());
    driver.bind_path(0, link, "link".into());
    if carry {
        driver.carry_opens();
    }
    let (reply, mut answer) = oneshot::channel();
    app_tx.send(AppMsg::Open { class: 0, request: Bytes::from_static(b"x"), reply }).await.unwrap();
    let (reason, mut rx, _) =
        tokio::time::timeout(Duration::from_secs(10), driver.run()).await.expect("the attempt ends");
    assert_eq!(reason, braid_core::CloseReason::HandshakeTimeout);
    let answered = answer.try_recv().ok();
    (answered, rx.try_recv().ok())
}

#[tokio::test]
async fn an_open_outlives_a_failed_attempt_for_the_next_one() {
    let (answered, left) = attempt(true).await;
    assert!(answered.is_none(), "the open was answered");
    assert!(matches!(left, Some(AppMsg::Open { .. })), "the open is not back in the channel");
}

#[tokio::test]
async fn without_a_next_attempt_an_open_is_refused_as_no_session() {
    let (answered, left) = attempt(false).await;
    assert!(matches!(answered, Some(Err(OpenError::NoSession(_)))));
    assert!(left.is_none());
}
