//! `braid demo`: server, client and three emulated links on loopback; a download through
//! SOCKS5 with one link cut midway; then the same download over the best link alone; a table.

use braid_emu::testbed::{download_socks, start_source, Testbed, TestbedConfig};
use braid_sim::units::format_rate;
use braid_sim::LinkSpec;
use clap::Args;
use serde::Serialize;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Arguments of `braid demo`.
#[derive(Args, Debug)]
pub struct DemoArgs {
    /// The emulated links (repeatable, as in braid sim).
    #[arg(long = "link", value_name = "LINK", default_values_t = ["40mbit/15ms".to_string(), "12mbit/40ms".to_string(), "3mbit/80ms/loss=0.5%".to_string()])]
    links: Vec<String>,
    /// Payload size in MB.
    #[arg(long, default_value_t = 48)]
    megabytes: usize,
    /// How long the fastest link is cut, midway through the download.
    #[arg(long, default_value = "2s", value_parser = braid_sim::units::parse_duration)]
    cut: Duration,
    /// Print one JSON object instead of the live view and table.
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct PathRow {
    link: String,
    goodput_bps: f64,
}

#[derive(Serialize)]
struct DemoReport {
    total_goodput_bps: f64,
    best_single_bps: f64,
    ratio: f64,
    intact: bool,
    bytes: u64,
    seconds: f64,
    cut_link: String,
    cut_seconds: f64,
    paths: Vec<PathRow>,
}

fn fail(msg: String) -> ExitCode {
    eprintln!("braid demo: {msg}");
    ExitCode::from(1)
}

/// Runs the demo.
pub async fn run(args: DemoArgs) -> ExitCode {
    let mut specs = Vec::new();
    for l in &args.links {
        match LinkSpec::parse(l) {
            Ok(s) => specs.push(s),
            Err(e) => {
                eprintln!("braid demo: --link '{l}': {e}");
                return ExitCode::from(2);
            }
        }
    }
    let fastest = (0..specs.len()).max_by_key(|&i| specs[i].rate_bps).unwrap_or(0);
    let say = |s: String| {
        if !args.json {
            println!("{s}");
        }
    };
    let source = match start_source(args.megabytes << 20, 42).await {
        Ok(s) => s,
        Err(e) => return fail(format!("cannot start the payload source: {e}")),
    };
    say(format!("braid demo: server, client and {} emulated links on loopback", specs.len()));
    for (i, l) in args.links.iter().enumerate() {
        say(format!("  link {i}: {l}"));
    }
    // 1. All links bonded, the fastest cut midway.
    let bed = match Testbed::start(TestbedConfig { status: true, ..TestbedConfig::new(specs.clone()) }).await
    {
        Ok(b) => b,
        Err(e) => return fail(format!("testbed: {e}")),
    };
    let socks = bed.client.socks_addr.expect("testbed serves SOCKS5");
    say(format!(
        "downloading {} MB through SOCKS5 {socks} (link {fastest} will be cut for {:?} midway)",
        args.megabytes, args.cut
    ));
    let got = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let watcher = {
        let (got, board, relay, total, cut, json) = (
            got.clone(),
            bed.client.board.clone(),
            bed.relays[fastest].clone(),
            source.len,
            args.cut,
            args.json,
        );
        tokio::spawn(async move {
            let mut cut_at = None;
            loop {
                tokio::time::sleep(Duration::from_millis(500)).await;
                let g = got.load(Ordering::Relaxed);
                if cut_at.is_none() && g >= total * 2 / 5 {
                    relay.set_down(true);
                    cut_at = Some(Instant::now());
                    if !json {
                        println!("  -- link {fastest} cut --");
                    }
                }
                if cut_at.is_some_and(|t| t.elapsed() >= cut) && relay.is_down() {
                    relay.set_down(false);
                    if !json {
                        println!("  -- link {fastest} restored --");
                    }
                }
                if !json {
                    let st = board.snapshot();
                    let rates: Vec<String> = st
                        .sessions
                        .first()
                        .map(|s| {
                            s.paths
                                .iter()
                                .map(|p| format!("path {} {:>12}", p.id, format_rate(p.recv_bps)))
                                .collect()
                        })
                        .unwrap_or_default();
                    println!(
                        "  {:>5.1} s {:>7.1} MB  {}",
                        started.elapsed().as_secs_f64(),
                        g as f64 / 1e6,
                        rates.join("  ")
                    );
                }
            }
        })
    };
    let bonded = download_socks(socks, source.addr, |n| got.store(n, Ordering::Relaxed)).await;
    watcher.abort();
    bed.relays[fastest].set_down(false);
    let bonded = match bonded {
        Ok(d) => d,
        Err(e) => return fail(e),
    };
    let snapshot = bed.client.board.snapshot();
    let per_path: Vec<u64> = snapshot
        .sessions
        .first()
        .map(|s| {
            let mut v = vec![0; specs.len()];
            for p in &s.paths {
                if let Some(slot) = v.get_mut(p.id as usize) {
                    *slot = p.stream_bytes_received;
                }
            }
            v
        })
        .unwrap_or_default();
    bed.stop();
    drop(bed);
    // 2. The best link alone, same emulation, same payload.
    say(format!("now the same download over link {fastest} alone"));
    let single_bed = match Testbed::start(TestbedConfig::new(vec![specs[fastest].clone()])).await {
        Ok(b) => b,
        Err(e) => return fail(format!("single-link testbed: {e}")),
    };
    let single = match download_socks(single_bed.client.socks_addr.expect("socks"), source.addr, |_| {}).await
    {
        Ok(d) => d,
        Err(e) => return fail(e),
    };
    single_bed.stop();
    let secs = bonded.elapsed.as_secs_f64();
    let total = bonded.bytes as f64 * 8.0 / secs;
    let best = single.bytes as f64 * 8.0 / single.elapsed.as_secs_f64();
    let intact =
        bonded.sha256 == source.sha256 && bonded.bytes == source.len && single.sha256 == source.sha256;
    let report = DemoReport {
        total_goodput_bps: total,
        best_single_bps: best,
        ratio: total / best,
        intact,
        bytes: bonded.bytes,
        seconds: secs,
        cut_link: args.links[fastest].clone(),
        cut_seconds: args.cut.as_secs_f64(),
        paths: per_path
            .iter()
            .enumerate()
            .map(|(i, b)| PathRow { link: args.links[i].clone(), goodput_bps: *b as f64 * 8.0 / secs })
            .collect(),
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report).unwrap_or_default());
    } else {
        println!();
        println!("{:<28} {:>14}", "path", "goodput");
        for (i, p) in report.paths.iter().enumerate() {
            println!("{:<28} {:>14}", format!("{i}: {}", p.link), format_rate(p.goodput_bps));
        }
        println!(
            "{:<28} {:>14}   ({} MB in {:.1} s, link {fastest} cut for {:.0} s)",
            "total (bonded)",
            format_rate(total),
            bonded.bytes >> 20,
            secs,
            report.cut_seconds
        );
        println!(
            "{:<28} {:>14}   (link {fastest} alone, same payload)",
            "best single link",
            format_rate(best)
        );
        println!("{:<28} {:>14.2}", "ratio", report.ratio);
        println!("{:<28} {:>14}", "intact (SHA-256)", if intact { "yes" } else { "NO" });
    }
    if intact {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
