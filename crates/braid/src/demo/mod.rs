//! `braid demo`: server, client and three emulated links on loopback. One download through
//! SOCKS5 measures the bonded steady state, then the fastest link is cut and restored; then the
//! fastest link alone is measured the same way. The headline compares the two steady states,
//! and the cut and the restore are figures of their own (time to recover, time back to full).

mod figures;
mod report;

use braid_emu::testbed::{download_socks, start_source, Testbed, TestbedConfig};
use braid_sim::units::format_rate;
use braid_sim::LinkSpec;
use clap::Args;
use figures::Timeline;
use report::{DemoReport, PathRow};
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Start-up left out of the steady state (every path's congestion controller at its rate).
const WARM_UP: Duration = Duration::from_secs(2);
/// The steady-state window.
const STEADY: Duration = Duration::from_secs(4);
/// How long the restored link is watched.
const AFTER_RESTORE: Duration = Duration::from_secs(3);
/// How often progress is sampled.
const SAMPLE_EVERY: Duration = Duration::from_millis(100);

/// Arguments of `braid demo`.
#[derive(Args, Debug)]
pub struct DemoArgs {
    /// The emulated links (repeatable, as in braid sim).
    #[arg(long = "link", value_name = "LINK", default_values_t = ["40mbit/15ms".to_string(), "12mbit/40ms".to_string(), "3mbit/80ms/loss=0.5%".to_string()])]
    links: Vec<String>,
    /// Payload in MB (10^6 bytes); it must outlast the start-up, the steady window, the cut
    /// and the watch after the restore (about 11 s at the links' rates).
    #[arg(long, default_value_t = 80)]
    megabytes: usize,
    /// How long the fastest link is cut, after the steady-state window.
    #[arg(long, default_value = "2s", value_parser = braid_sim::units::parse_duration)]
    cut: Duration,
    /// Print one JSON object instead of the live view and table.
    #[arg(long)]
    json: bool,
}

fn fail(msg: String) -> ExitCode {
    eprintln!("braid demo: {msg}");
    ExitCode::from(1)
}

/// When the steady window and the cut happened, seconds from the download's start.
#[derive(Debug, Default, Clone, Copy)]
struct Events {
    cut: Option<f64>,
    restore: Option<f64>,
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
    let source = match start_source(args.megabytes * 1_000_000, 42).await {
        Ok(s) => s,
        Err(e) => return fail(format!("cannot start the payload source: {e}")),
    };
    say(format!("braid demo: server, client and {} emulated links on loopback", specs.len()));
    for (i, l) in args.links.iter().enumerate() {
        say(format!("  link {i}: {l}"));
    }
    // 1. All links bonded: the steady state, then the fastest cut and restored.
    let bed = match Testbed::start(TestbedConfig { status: true, ..TestbedConfig::new(specs.clone()) }).await
    {
        Ok(b) => b,
        Err(e) => return fail(format!("testbed: {e}")),
    };
    let socks = bed.client.socks_addr.expect("testbed serves SOCKS5");
    say(format!(
        "downloading {} MB through SOCKS5 {socks}: {:.0} s to start, {:.0} s of steady state, then link {fastest} cut for {:?}",
        args.megabytes,
        WARM_UP.as_secs_f64(),
        STEADY.as_secs_f64(),
        args.cut
    ));
    let got = Arc::new(AtomicU64::new(0));
    let progress = got.clone();
    let download =
        tokio::spawn(download_socks(socks, source.addr, move |n| progress.store(n, Ordering::Relaxed)));
    let path_bytes = || -> Vec<u64> {
        let st = bed.client.board.snapshot();
        let mut v = vec![0; specs.len()];
        for p in st.sessions.first().map(|s| s.paths.as_slice()).unwrap_or_default() {
            if let Some(slot) = v.get_mut(p.id as usize) {
                *slot = p.stream_bytes_received;
            }
        }
        v
    };
    let started = Instant::now();
    let mut tl = Timeline::default();
    let mut ev = Events::default();
    let mut tick = tokio::time::interval(SAMPLE_EVERY);
    let (mut steady_paths, mut printed) = ((Vec::new(), Vec::new()), (0.0, 0u64, path_bytes()));
    let relay = bed.relays[fastest].clone();
    while !download.is_finished() {
        tick.tick().await;
        let t = started.elapsed().as_secs_f64();
        let bytes = got.load(Ordering::Relaxed);
        tl.push(t, bytes);
        if steady_paths.0.is_empty() && t >= WARM_UP.as_secs_f64() {
            steady_paths.0 = path_bytes();
        }
        if steady_paths.1.is_empty() && t >= (WARM_UP + STEADY).as_secs_f64() {
            steady_paths.1 = path_bytes();
            relay.set_down(true);
            ev.cut = Some(started.elapsed().as_secs_f64());
            say(format!("  -- link {fastest} cut --"));
        }
        if ev.restore.is_none() && ev.cut.is_some_and(|c| t >= c + args.cut.as_secs_f64()) {
            relay.set_down(false);
            ev.restore = Some(started.elapsed().as_secs_f64());
            say(format!("  -- link {fastest} restored --"));
        }
        if !args.json && t - printed.0 >= 0.5 {
            let now = path_bytes();
            let rates: Vec<String> = now
                .iter()
                .zip(&printed.2)
                .enumerate()
                .map(|(i, (n, b))| {
                    format!(
                        "path {i} {:>12}",
                        format_rate(n.saturating_sub(*b) as f64 * 8.0 / (t - printed.0))
                    )
                })
                .collect();
            println!("  {t:>5.1} s {:>6.1} MB  {}", bytes as f64 / 1e6, rates.join("  "));
            printed = (t, bytes, now);
        }
    }
    relay.set_down(false);
    let bonded = match download.await {
        Ok(Ok(d)) => d,
        Ok(Err(e)) => return fail(e),
        Err(e) => return fail(format!("download task: {e}")),
    };
    bed.stop();
    drop(bed);
    let steady_end = (WARM_UP + STEADY).as_secs_f64();
    let total = tl.goodput(WARM_UP.as_secs_f64(), steady_end);
    // 2. The best link alone: its steady state over the same window.
    say(format!("now link {fastest} alone, measured the same way"));
    let best = match single_link(&specs[fastest], &source).await {
        Ok(b) => b,
        Err(e) => return fail(e),
    };
    let sum: f64 = specs.iter().map(|s| s.rate_bps as f64).sum();
    let surviving = sum - specs[fastest].rate_bps as f64;
    let end = tl.end();
    let report = DemoReport {
        total_goodput_bps: total,
        best_single_bps: best,
        ratio: if best > 0.0 { total / best } else { 0.0 },
        sum_of_links_bps: sum,
        share_of_sum: total / sum,
        intact: bonded.sha256 == source.sha256 && bonded.bytes == source.len,
        bytes: bonded.bytes,
        seconds: bonded.elapsed.as_secs_f64(),
        download_goodput_bps: bonded.bytes as f64 * 8.0 / bonded.elapsed.as_secs_f64(),
        cut_link: args.links[fastest].clone(),
        cut_seconds: args.cut.as_secs_f64(),
        cut_goodput_bps: match ev {
            Events { cut: Some(c), restore: Some(r) } => tl.goodput(c, r),
            _ => 0.0,
        },
        recover_s: ev.cut.zip(ev.restore).and_then(|(c, r)| tl.time_to(c, r, total * surviving / sum)),
        back_to_full_s: ev
            .restore
            .and_then(|r| tl.time_to(r, (r + AFTER_RESTORE.as_secs_f64()).min(end - 0.2), total)),
        paths: steady_paths
            .1
            .iter()
            .zip(&steady_paths.0)
            .enumerate()
            .map(|(i, (b, a))| PathRow {
                link: args.links[i].clone(),
                goodput_bps: b.saturating_sub(*a) as f64 * 8.0 / STEADY.as_secs_f64(),
            })
            .collect(),
    };
    if ev.restore.is_none_or(|r| end < r + AFTER_RESTORE.as_secs_f64()) {
        eprintln!(
            "braid demo: the download ended before the restore was watched for {:?}; give a larger --megabytes",
            AFTER_RESTORE
        );
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report).unwrap_or_default());
    } else {
        println!();
        print!("{}", report.table(fastest));
    }
    if report.intact {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// The steady-state goodput of `spec` alone: the same payload, the same start-up and window.
async fn single_link(spec: &LinkSpec, source: &braid_emu::testbed::Source) -> Result<f64, String> {
    let bed = Testbed::start(TestbedConfig::new(vec![spec.clone()]))
        .await
        .map_err(|e| format!("single-link testbed: {e}"))?;
    let got = Arc::new(AtomicU64::new(0));
    let progress = got.clone();
    let socks = bed.client.socks_addr.expect("testbed serves SOCKS5");
    let addr = source.addr;
    let download = tokio::spawn(async move {
        download_socks(socks, addr, move |n| progress.store(n, Ordering::Relaxed)).await
    });
    tokio::time::sleep(WARM_UP).await;
    let (a, t0) = (got.load(Ordering::Relaxed), Instant::now());
    tokio::time::sleep(STEADY).await;
    let (b, t1) = (got.load(Ordering::Relaxed), Instant::now());
    let ended_early = download.is_finished();
    download.abort();
    bed.stop();
    if ended_early {
        return Err(
            "the single-link download ended within the steady window: give a larger --megabytes".into()
        );
    }
    Ok(b.saturating_sub(a) as f64 * 8.0 / (t1 - t0).as_secs_f64())
}
