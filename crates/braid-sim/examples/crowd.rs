//! Many sessions through one simulated link ([`braid_sim::crowd`]): each session's goodput over
//! the second half, the largest deviation from the mean and Jain's index.
//!
//!     cargo run --release -p braid-sim --example crowd -- [SESSIONS] [LINK] [SECONDS] [SEED] [CC]
//!     cargo run --release -p braid-sim --example crowd -- 100 200mbit/10ms 60 1 bbr-shared
//!
//! CROWD_PATHS=1 also prints each session's path at the end (lifetime minimum RTT, smoothed
//! RTT, window).

use braid_core::SessionConfig;
use braid_sim::crowd::{run, CrowdConfig};
use braid_sim::LinkSpec;
use std::time::{Duration, Instant};

fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize, default: &str| args.get(i).cloned().unwrap_or_else(|| default.to_string());
    let sessions: usize = arg(0, "100").parse().map_err(|e| format!("sessions: {e}"))?;
    let link = LinkSpec::parse(&arg(1, "200mbit/10ms"))?;
    let secs: f64 = arg(2, "20").parse().map_err(|e| format!("seconds: {e}"))?;
    let seed: u64 = arg(3, "1").parse().map_err(|e| format!("seed: {e}"))?;
    let congestion = arg(4, "bbr").parse().map_err(|e| format!("congestion: {e}"))?;
    // The cipher of `braid sim` (a run's figures do not depend on it; its wall time does).
    let cipher = braid_core::crypto::aead::Cipher::Aes256Gcm;
    let session = SessionConfig { congestion, cipher, ..SessionConfig::default() };
    let cfg = CrowdConfig {
        sessions,
        link,
        duration: Duration::try_from_secs_f64(secs).map_err(|e| format!("seconds: {e}"))?,
        stagger: Duration::from_millis(10),
        seed,
        session,
    };
    let wall = Instant::now();
    let r = run(&cfg).map_err(|e| e.to_string())?;
    let mut order: Vec<usize> = (0..r.goodput_bps.len()).collect();
    order.sort_by(|&a, &b| r.goodput_bps[b].total_cmp(&r.goodput_bps[a]));
    let top: Vec<String> =
        order.iter().take(5).map(|&i| format!("#{i} {:.2}", r.goodput_bps[i] / 1e6)).collect();
    println!("fastest: {}", top.join(", "));
    if std::env::var_os("CROWD_PATHS").is_some() {
        for (i, (g, p)) in r.goodput_bps.iter().zip(&r.paths).enumerate() {
            if let Some((min, srtt, cwnd)) = p {
                println!(
                    "#{i} {:.2} Mbit/s lifetime min RTT {:.1} ms srtt {:.1} ms cwnd {cwnd}",
                    g / 1e6,
                    min.as_secs_f64() * 1e3,
                    srtt.as_secs_f64() * 1e3
                );
            }
        }
    }
    let mut g: Vec<f64> = r.goodput_bps.iter().map(|b| b / 1e6).collect();
    g.sort_by(f64::total_cmp);
    println!(
        "{sessions} sessions: utilisation {:.3}; each min {:.3} median {:.3} max {:.3} Mbit/s; \
         largest deviation {:.1} % of the mean; Jain {:.4}; intact {}; {:.1} s wall",
        r.utilisation,
        g[0],
        g[g.len() / 2],
        g[g.len() - 1],
        100.0 * r.max_deviation,
        r.jain,
        r.intact,
        wall.elapsed().as_secs_f64()
    );
    Ok(())
}
