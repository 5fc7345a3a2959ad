//! The client's front ends under pressure, end to end over loopback relays: connection caps,
//! greeting timeouts, and UDP associations held to the server's limit and freed at once.

use braid_emu::testbed::{download_socks, start_source, udp_echo, Testbed, TestbedConfig};
use braid_sim::LinkSpec;
use fast_socks5::client::Socks5Datagram;
use fast_socks5::{ReplyError, SocksError};
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream, UdpSocket};
use tokio::time::{timeout, Instant};

fn links() -> Vec<LinkSpec> {
    vec![LinkSpec::parse("50mbit/5ms").unwrap()]
}

/// Opens a SOCKS5 UDP association.
async fn associate(socks: SocketAddr) -> Result<Socks5Datagram<TcpStream>, SocksError> {
    let control = TcpStream::connect(socks).await.unwrap();
    Socks5Datagram::bind(control, "127.0.0.1:0").await
}

/// Whether `echo` answers through the association (a few tries: datagrams may be lost).
async fn echoes(dg: &Socks5Datagram<TcpStream>, echo: SocketAddr, tag: u8) -> bool {
    for i in 0..10u8 {
        dg.send_to(&[tag, i], echo).await.unwrap();
        let mut buf = [0u8; 64];
        if let Ok(Ok((n, _))) = timeout(Duration::from_millis(300), dg.recv_from(&mut buf)).await {
            if n == 2 && buf[0] == tag {
                return true;
            }
        }
    }
    false
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn udp_associations_over_the_servers_limit_are_refused_and_a_closed_one_is_freed_at_once() {
    let echo = udp_echo().await.unwrap();
    let bed = Testbed::start(TestbedConfig { max_udp: 4, ..TestbedConfig::new(links()) }).await.unwrap();
    let socks = bed.client.socks_addr.unwrap();
    let mut open = Vec::new();
    for i in 0..4u8 {
        let dg = associate(socks).await.unwrap_or_else(|e| panic!("association {i}: {e}"));
        assert!(echoes(&dg, echo, i).await, "association {i} carries no datagrams");
        open.push(dg);
    }
    let fifth = associate(socks).await;
    assert!(
        matches!(fifth, Err(SocksError::ReplyError(ReplyError::GeneralFailure))),
        "the fifth association: {:?}",
        fifth.as_ref().err()
    );
    let st = bed.client.board.snapshot().frontend.unwrap();
    assert_eq!((st.udp_associations, st.udp_refused), (4, 1), "{st:?}");

    // The application closes one association's control connection: the server frees it.
    drop(open.remove(1));
    let end = Instant::now() + Duration::from_secs(1);
    let again = loop {
        match associate(socks).await {
            Ok(dg) => break dg,
            Err(e) if Instant::now() < end => {
                assert!(matches!(e, SocksError::ReplyError(ReplyError::GeneralFailure)), "{e}");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(e) => panic!("no association within 1 s of closing one: {e}"),
        }
    };
    assert!(echoes(&again, echo, 9).await, "the new association carries no datagrams");
    for (i, dg) in open.iter().enumerate() {
        assert!(echoes(dg, echo, 20 + i as u8).await, "association {i} stopped working");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_hundred_silent_connections_do_not_lock_out_a_socks_client() {
    let source = start_source(1 << 20, 21).await.unwrap();
    let cfg = TestbedConfig { max_connections: 16, ..TestbedConfig::new(links()) };
    let bed = Testbed::start(cfg).await.unwrap();
    let socks = bed.client.socks_addr.unwrap();
    let mut silent = Vec::new();
    for _ in 0..300 {
        silent.push(TcpStream::connect(socks).await.unwrap());
    }
    let d = download_socks(socks, source.addr, |_| {}).await.expect("a real client gets through");
    assert_eq!(d.sha256, source.sha256);
    let st = bed.client.board.snapshot().frontend.unwrap();
    assert_eq!(st.max_connections, 16);
    assert!(st.connections <= 16, "{st:?}");
    assert!(st.evicted + st.refused >= 300 - 16, "the cap was not enforced: {st:?}");
    // The client closed the connections it let go (bounded wait for each).
    let mut closed = 0;
    let mut buf = [0u8; 8];
    for s in &mut silent {
        if let Ok(Ok(0) | Err(_)) = timeout(Duration::from_millis(200), s.read(&mut buf)).await {
            closed += 1;
        }
    }
    assert!(closed >= 300 - 16, "only {closed} of 300 silent connections were closed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_the_cap_with_every_connection_busy_a_newcomer_is_refused() {
    // A destination that holds each connection open until its peer closes it.
    let hold = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let target = hold.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut c, _)) = hold.accept().await {
            tokio::spawn(async move {
                let mut sink = Vec::new();
                let _ = c.read_to_end(&mut sink).await;
            });
        }
    });
    let cfg = TestbedConfig { max_connections: 4, ..TestbedConfig::new(links()) };
    let bed = Testbed::start(cfg).await.unwrap();
    let socks = bed.client.socks_addr.unwrap();
    let open = || {
        fast_socks5::client::Socks5Stream::connect(
            socks,
            target.ip().to_string(),
            target.port(),
            fast_socks5::client::Config::default(),
        )
    };
    let mut busy = Vec::new();
    for i in 0..4 {
        busy.push(open().await.unwrap_or_else(|e| panic!("connection {i}: {e}")));
    }
    // The fifth is told "no acceptable methods" (X'FF') and closed.
    let mut c = TcpStream::connect(socks).await.unwrap();
    c.write_all(&[5, 1, 0]).await.unwrap();
    let mut reply = Vec::new();
    timeout(Duration::from_secs(5), c.read_to_end(&mut reply)).await.expect("closed").unwrap();
    assert_eq!(reply, [5, 0xFF]);
    // Clients that pipeline their request behind the greeting (265 bytes, more than a greeting
    // holds): a socket closed with their bytes unread, or closed before they arrive, answers
    // with a RST, and a RST can reach the client before it has read the refusal.
    let mut pipelined = vec![5, 1, 0, 5, 1, 0, 3, 255];
    pipelined.extend([b'a'; 255]);
    pipelined.extend([0, 80]);
    for round in 0..20 {
        let mut c = TcpStream::connect(socks).await.unwrap();
        c.write_all(&pipelined).await.unwrap();
        let mut reply = Vec::new();
        let read = timeout(Duration::from_secs(5), c.read_to_end(&mut reply)).await.expect("closed");
        assert!(read.is_ok(), "round {round}: the client read {read:?} after {reply:?}");
        assert_eq!(reply, [5, 0xFF]);
    }
    assert!(bed.client.board.snapshot().frontend.unwrap().refused >= 2);
    drop(busy.pop());
    let end = Instant::now() + Duration::from_secs(5);
    while open().await.is_err() {
        assert!(Instant::now() < end, "no slot came free after a connection closed");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_socks_connection_that_does_not_finish_its_request_in_time_is_dropped() {
    let cfg = TestbedConfig { socks_timeout: Duration::from_millis(300), ..TestbedConfig::new(links()) };
    let bed = Testbed::start(cfg).await.unwrap();
    let socks = bed.client.socks_addr.unwrap();
    // Says nothing.
    let mut mute = TcpStream::connect(socks).await.unwrap();
    // Greets, then stops before its request.
    let mut halfway = TcpStream::connect(socks).await.unwrap();
    halfway.write_all(&[5, 1, 0]).await.unwrap();
    let mut method = [0u8; 2];
    halfway.read_exact(&mut method).await.unwrap();
    assert_eq!(method, [5, 0]);
    for (name, s) in [("mute", &mut mute), ("halfway", &mut halfway)] {
        let mut buf = [0u8; 8];
        let r = timeout(Duration::from_secs(5), s.read(&mut buf)).await;
        assert!(matches!(r, Ok(Ok(0) | Err(_))), "{name}: the connection was not dropped: {r:?}");
    }
    // The count may land just after the close (the connection goes with the timed-out future).
    let end = Instant::now() + Duration::from_secs(2);
    let counted = loop {
        let n = bed.client.board.snapshot().frontend.unwrap().greeting_timeouts;
        if n >= 2 || Instant::now() > end {
            break n;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    assert_eq!(counted, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_udp_forward_source_over_the_servers_limit_is_dropped_and_counted() {
    let echo = udp_echo().await.unwrap();
    let cfg = TestbedConfig {
        max_udp: 1,
        socks: false,
        forwards: vec![echo.to_string()],
        ..TestbedConfig::new(links())
    };
    let bed = Testbed::start(cfg).await.unwrap();
    let fwd = bed.client.forward_addrs[0];
    let ask = |s: UdpSocket, tag: u8| async move {
        for i in 0..10u8 {
            s.send_to(&[tag, i], fwd).await.unwrap();
            let mut buf = [0u8; 8];
            if let Ok(Ok((2, _))) = timeout(Duration::from_millis(300), s.recv_from(&mut buf)).await {
                return (s, buf[0] == tag);
            }
        }
        (s, false)
    };
    let (a, a_ok) = ask(UdpSocket::bind("127.0.0.1:0").await.unwrap(), 1).await;
    assert!(a_ok, "the first source got no answer");
    let (_b, b_ok) = ask(UdpSocket::bind("127.0.0.1:0").await.unwrap(), 2).await;
    assert!(!b_ok, "a second source got an association over a limit of one");
    assert!(bed.client.board.snapshot().frontend.unwrap().udp_refused >= 1);
    let (_, a_ok) = ask(a, 3).await;
    assert!(a_ok, "the first source lost its association");
}
