//! `braid demo`: server, client and three emulated links on loopback. One download through
//! SOCKS5 measures the bonded steady state, then the fastest link is cut and restored; then the
//! fastest link alone is measured the same way. The headline compares the two steady states,
//! and the cut and the restore are figures of their own (time to recover, time back to full).

mod figures;
mod report;

use braid_daemon::status::Status;
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
/// A restored link carries data again once a sampling interval sees it forward this share of
/// its rate towards the client (its probes and ACKs alone are a few small packets).
const CARRYING_SHARE: f64 = 0.25;

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
    // What each link carries towards the client, read off its relay: immediate, unlike the
    // status board, which the client refreshes every 500 ms.
    let link_bytes =
        || -> Vec<u64> { bed.relays.iter().map(|r| r.stats().down_bytes.load(Ordering::Relaxed)).collect() };
    let started = Instant::now();
    let (mut tl, mut cut_link) = (Timeline::default(), Timeline::default());
    let mut ev = Events::default();
    let mut tick = tokio::time::interval(SAMPLE_EVERY);
    let mut steady: (Option<Status>, Option<Status>) = (None, None);
    let mut printed = (0.0, link_bytes());
    let relay = bed.relays[fastest].clone();
    while !download.is_finished() {
        tick.tick().await;
        let t = started.elapsed().as_secs_f64();
        let bytes = got.load(Ordering::Relaxed);
        let links = link_bytes();
        tl.push(t, bytes);
        cut_link.push(t, links[fastest]);
        if steady.0.is_none() && t >= WARM_UP.as_secs_f64() {
            steady.0 = Some(bed.client.board.snapshot());
        }
        if steady.1.is_none() && t >= (WARM_UP + STEADY).as_secs_f64() {
            steady.1 = Some(bed.client.board.snapshot());
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
            let rates: Vec<String> = links
                .iter()
                .zip(&printed.1)
                .enumerate()
                .map(|(i, (n, b))| {
                    format!(
                        "link {i} {:>12}",
                        format_rate(n.saturating_sub(*b) as f64 * 8.0 / (t - printed.0))
                    )
                })
                .collect();
            println!("  {t:>5.1} s {:>6.1} MB  {}", bytes as f64 / 1e6, rates.join("  "));
            printed = (t, links);
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
        link_back_s: ev
            .restore
            .and_then(|r| cut_link.first_reaching(r, CARRYING_SHARE * specs[fastest].rate_bps as f64)),
        back_to_full_s: ev
            .restore
            .and_then(|r| tl.time_to(r, (r + AFTER_RESTORE.as_secs_f64()).min(end), total)),
        paths: path_rows(&args.links, &steady),
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

/// Each path's goodput over the steady-state window, from two status documents: stream bytes
/// over the interval between the two samplings (`sampled_s`).
fn path_rows(links: &[String], steady: &(Option<Status>, Option<Status>)) -> Vec<PathRow> {
    let session = |s: &Option<Status>| s.as_ref().and_then(|s| s.sessions.first().cloned());
    let (Some(a), Some(b)) = (session(&steady.0), session(&steady.1)) else { return Vec::new() };
    let span = b.sampled_s - a.sampled_s;
    links
        .iter()
        .enumerate()
        .map(|(i, link)| {
            let bytes = |s: &braid_daemon::status::SessionStatus| {
                s.paths.iter().find(|p| p.id as usize == i).map_or(0, |p| p.stream_bytes_received)
            };
            let goodput_bps =
                if span > 0.0 { bytes(&b).saturating_sub(bytes(&a)) as f64 * 8.0 / span } else { 0.0 };
            PathRow { link: link.clone(), goodput_bps }
        })
        .collect()
}
