//! Bufferbloat under braid (issue 11): while a bulk download saturates every link, how long do
//! small UDP round trips (the interactive class: calls, games) take, against the fastest
//! link's RTT? Loopback relays, no root. Prints the figures; the target is p99 ≤ 1.2 × the
//! fastest link's RTT.
//!
//!     cargo run --release -p braid-emu --example bufferbloat [-- SCHEDULER]

use braid_core::scheduler::Kind;
use braid_emu::testbed::{download_socks, start_source, Testbed, TestbedConfig};
use braid_sim::LinkSpec;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::net::UdpSocket;

const LINKS: [&str; 2] = ["40mbit/10ms", "20mbit/25ms"];
/// Round-trip time of the fastest link (its one-way delay twice).
const FASTEST_RTT_MS: f64 = 20.0;

/// Sends one 64-byte probe every 20 ms through `forward` for `span`; the round-trip times.
async fn probe(forward: std::net::SocketAddr, span: Duration) -> Vec<f64> {
    let sock = Arc::new(UdpSocket::bind("127.0.0.1:0").await.unwrap());
    let mut out = Vec::new();
    let end = Instant::now() + span;
    let mut buf = [0u8; 128];
    let mut i: u32 = 0;
    while Instant::now() < end {
        let mut msg = [0u8; 64];
        msg[..4].copy_from_slice(&i.to_be_bytes());
        let sent = Instant::now();
        sock.send_to(&msg, forward).await.unwrap();
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

fn percentile(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let kind: Kind =
        std::env::args().nth(1).map_or(Kind::default(), |s| s.parse().expect("a scheduler name"));
    let echo = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let target = echo.local_addr().unwrap();
    tokio::spawn(async move {
        let mut buf = [0u8; 2048];
        while let Ok((n, from)) = echo.recv_from(&mut buf).await {
            let _ = echo.send_to(&buf[..n], from).await;
        }
    });
    let source = start_source(400 << 20, 3).await.unwrap();
    let links = LINKS.iter().map(|s| LinkSpec::parse(s).unwrap()).collect();
    let cfg =
        TestbedConfig { forwards: vec![target.to_string()], ..TestbedConfig::new(links).scheduler(kind) };
    let bed = Testbed::start(cfg).await.unwrap();
    let forward = bed.client.forward_addrs[0];
    let mut idle = probe(forward, Duration::from_secs(3)).await;
    let socks = bed.client.socks_addr.unwrap();
    let download = tokio::spawn(async move { download_socks(socks, source.addr, |_| {}).await });
    tokio::time::sleep(Duration::from_secs(2)).await;
    let mut loaded = probe(forward, Duration::from_secs(8)).await;
    download.abort();
    println!("links {LINKS:?}, scheduler {kind}, fastest link RTT {FASTEST_RTT_MS} ms");
    for (name, v) in [("idle", &mut idle), ("under a saturating download", &mut loaded)] {
        let (p50, p99) = (percentile(v, 0.5), percentile(v, 0.99));
        println!(
            "{name:<28} probes {:>4}  p50 {p50:>6.1} ms  p99 {p99:>6.1} ms  p99 / fastest RTT {:.2}",
            v.len(),
            p99 / FASTEST_RTT_MS
        );
    }
}
