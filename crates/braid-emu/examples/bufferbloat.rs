//! Bufferbloat under braid (issue 11): while a bulk transfer saturates every link, how long do
//! small UDP round trips (the interactive class: calls, games) take, against the fastest
//! link's own RTT? Loopback relays, no root. Four phases in one run: the fastest link alone
//! (a relay straight to the echo server, no braid: the reference, emulator cost included),
//! braid idle, braid under a saturating download, braid under a saturating upload. The target
//! is p99 ≤ 1.2 × the fastest link's RTT.
//!
//!     cargo run --release -p braid-emu --example bufferbloat [-- SCHEDULER]

use braid_core::scheduler::Kind;
use braid_emu::testbed::{download_socks, start_source, udp_echo, Testbed, TestbedConfig};
use braid_emu::Relay;
use braid_sim::LinkSpec;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream, UdpSocket};

const LINKS: [&str; 2] = ["40mbit/10ms", "20mbit/25ms"];
/// Nominal round-trip time of the fastest link (its one-way delay twice).
const FASTEST_RTT_MS: f64 = 20.0;

/// Sends one 64-byte probe every 20 ms to `to` for `span`; the round-trip times, ms.
async fn probe(to: SocketAddr, span: Duration) -> Vec<f64> {
    let sock = Arc::new(UdpSocket::bind("127.0.0.1:0").await.unwrap());
    let mut out = Vec::new();
    let end = Instant::now() + span;
    let mut buf = [0u8; 128];
    let mut i: u32 = 0;
    while Instant::now() < end {
        let mut msg = [0u8; 64];
        msg[..4].copy_from_slice(&i.to_be_bytes());
        let sent = Instant::now();
        sock.send_to(&msg, to).await.unwrap();
        // Answers to older probes are skipped; one lost probe waits at most 500 ms.
        while let Ok(Ok((n, _))) =
            tokio::time::timeout(Duration::from_millis(500), sock.recv_from(&mut buf)).await
        {
            if n == 64 && buf[..4] == i.to_be_bytes() {
                out.push(sent.elapsed().as_secs_f64() * 1e3);
                break;
            }
        }
        i += 1;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    out
}

/// Probes for 8 s while a transfer runs; the round trips and the transfer's goodput meanwhile
/// (from `bytes`, its running byte count), bit/s.
async fn loaded(to: SocketAddr, bytes: &AtomicU64) -> (Vec<f64>, f64) {
    let (b0, t0) = (bytes.load(Ordering::Relaxed), Instant::now());
    let v = probe(to, Duration::from_secs(8)).await;
    let bps = (bytes.load(Ordering::Relaxed) - b0) as f64 * 8.0 / t0.elapsed().as_secs_f64();
    (v, bps)
}

fn percentile(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

/// A TCP server that reads and discards everything; its address.
async fn sink() -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            tokio::spawn(async move {
                let mut buf = vec![0u8; 256 * 1024];
                while matches!(s.read(&mut buf).await, Ok(n) if n > 0) {}
            });
        }
    });
    addr
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let kind: Kind =
        std::env::args().nth(1).map_or(Kind::default(), |s| s.parse().expect("a scheduler name"));
    let target = udp_echo().await.unwrap();
    let sink = sink().await;
    let links: Vec<LinkSpec> = LINKS.iter().map(|s| LinkSpec::parse(s).unwrap()).collect();

    // The reference: the fastest link alone, measured the same way, through the same emulator.
    let bare = Relay::start("127.0.0.1:0".parse().unwrap(), target, links[0].clone(), 1).await.unwrap();
    let mut reference = probe(bare.addr, Duration::from_secs(3)).await;
    bare.stop();

    let source = start_source(400 << 20, 3).await.unwrap();
    let cfg = TestbedConfig {
        forwards: vec![target.to_string(), sink.to_string()],
        ..TestbedConfig::new(links).scheduler(kind)
    };
    let bed = Testbed::start(cfg).await.unwrap();
    let (forward, upload_to) = (bed.client.forward_addrs[0], bed.client.forward_addrs[1]);
    let mut idle = probe(forward, Duration::from_secs(3)).await;

    let socks = bed.client.socks_addr.unwrap();
    let got = Arc::new(AtomicU64::new(0));
    let counter = got.clone();
    let download = tokio::spawn(async move {
        download_socks(socks, source.addr, move |n| counter.store(n, Ordering::Relaxed)).await
    });
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (mut down, down_bps) = loaded(forward, &got).await;
    download.abort();
    tokio::time::sleep(Duration::from_secs(1)).await;

    let sent = Arc::new(AtomicU64::new(0));
    let counter = sent.clone();
    let upload = tokio::spawn(async move {
        let mut s = TcpStream::connect(upload_to).await.unwrap();
        let chunk = vec![0x5au8; 64 * 1024];
        while s.write_all(&chunk).await.is_ok() {
            counter.fetch_add(chunk.len() as u64, Ordering::Relaxed);
        }
    });
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (mut up, up_bps) = loaded(forward, &sent).await;
    upload.abort();

    let ref_p99 = percentile(&mut reference, 0.99);
    println!("links {LINKS:?}, scheduler {kind}, fastest link RTT {FASTEST_RTT_MS} ms nominal, {ref_p99:.1} ms p99 measured alone");
    println!(
        "goodput while probing: download {:.1} Mbit/s, upload {:.1} Mbit/s",
        down_bps / 1e6,
        up_bps / 1e6
    );
    for (name, v) in [
        ("fastest link alone", &mut reference),
        ("braid idle", &mut idle),
        ("braid, saturating download", &mut down),
        ("braid, saturating upload", &mut up),
    ] {
        let (p50, p99) = (percentile(v, 0.5), percentile(v, 0.99));
        println!(
            "{name:<28} probes {:>4}  p50 {p50:>6.1} ms  p99 {p99:>6.1} ms  p99 / nominal RTT {:.2}  p99 / link alone {:.2}",
            v.len(),
            p99 / FASTEST_RTT_MS,
            p99 / ref_p99
        );
    }
}
