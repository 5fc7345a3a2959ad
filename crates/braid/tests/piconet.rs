//! Seed 000's piconet experiments on real namespaces (root; `#[ignore]`d: they take minutes).
//!
//! `cargo test --release -p braid --test piconet -- --ignored --nocapture --test-threads 1`
//!
//! - `piconet_size`: goodput of one bulk download against the number of neighbours sharing
//!   their WAN link (0–3; seed 000's Fig. 3 / Table II shape), next to the sum of the single
//!   links' TCP goodputs measured alone. Links: 10 Mbit/s, 20 ms one way each (the client's own
//!   and each neighbour's WAN), LAN 100 Mbit/s.
//! - `spare_capacity`: a neighbour's own download alone, then while a member bonds through it
//!   with `owner_priority = "spare"`.

mod nslab;
mod sharelab;

use sharelab::{can_run, must, must_run, reader, source, start_braid, Lab, Progress, Shape, SERVICE};
use std::sync::Arc;
use std::time::{Duration, Instant};

const WAN: Shape = Shape { mbit: 10, delay_ms: 20 };
const LAN: Shape = Shape { mbit: 100, delay_ms: 0 };
const ENDLESS: usize = 1 << 40;

fn skip() -> bool {
    if let Err(why) = can_run(&["ip", "tc", "vde_switch", "wirefilter"]) {
        assert!(!must_run(), "the piconet experiment cannot run here: {why}");
        eprintln!("skipped: {why}");
        return true;
    }
    false
}

/// Server, client with its own link, `n` neighbours with theirs, a LAN; nothing running yet.
fn build(n: u8) -> (Lab, String, String, Vec<String>) {
    let mut lab = Lab::new("bpn");
    let s = lab.ns("s");
    let c = lab.ns("c");
    let ns: Vec<String> = (1..=n).map(|i| lab.ns(&format!("n{i}"))).collect();
    must(&["ip", "-n", &s, "addr", "add", &format!("{SERVICE}/32"), "dev", "lo"]);
    lab.wan(&c, &s, 10, "cw", WAN);
    for (i, x) in ns.iter().enumerate() {
        let i = i as u8 + 1;
        lab.wan(x, &s, 10 + i, &format!("nw{i}"), WAN);
        lab.lan_port(&c, x, i, Some(LAN));
    }
    (lab, s, c, ns)
}

/// TCP goodput of one link alone: a source in the server namespace on the link's server-side
/// address, a reader in `ns`; bytes/s between 2 s and `secs`.
fn single(s: &str, ns: &str, link: u8, secs: u64) -> f64 {
    let addr = format!("10.78.{link}.2:{}", 5600 + link as u16);
    let src = source(s, &addr, ENDLESS);
    std::thread::sleep(Duration::from_millis(200));
    let p = Arc::new(Progress::default());
    let t0 = Instant::now();
    reader(ns, &addr, p.clone(), Duration::from_secs(secs)).join().unwrap();
    drop(src);
    p.rate(t0 + Duration::from_secs(2), t0 + Duration::from_secs(secs))
}

/// Bulk goodput through braid, bytes/s between 3 s and `secs`.
fn bonded(s: &str, c: &str, secs: u64) -> f64 {
    let src = source(s, &format!("{SERVICE}:5591"), ENDLESS);
    std::thread::sleep(Duration::from_millis(200));
    let p = Arc::new(Progress::default());
    let t0 = Instant::now();
    let (_, bad) = reader(c, "127.0.0.1:5590", p.clone(), Duration::from_secs(secs)).join().unwrap();
    assert!(!bad, "corrupted bytes");
    drop(src);
    p.rate(t0 + Duration::from_secs(3), t0 + Duration::from_secs(secs))
}

#[test]
#[ignore = "experiment: minutes, root"]
fn piconet_size() {
    if skip() {
        return;
    }
    let mut rows = Vec::new();
    for n in 0..=3u8 {
        let (mut lab, s, c, ns) = build(n);
        let mut singles = vec![single(&s, &c, 10, 6)];
        for (i, x) in ns.iter().enumerate() {
            singles.push(single(&s, x, 11 + i as u8, 6));
        }
        start_braid(&mut lab, &s, &c, &ns, "owner_priority = \"none\"");
        let g = bonded(&s, &c, 12);
        let sum: f64 = singles.iter().sum();
        eprintln!(
            "neighbours {n}: links {}, single-link TCP {:?} Mbit/s (sum {:.2}), braid {:.2} Mbit/s, ratio {:.3}",
            n + 1,
            singles.iter().map(|x| (x * 8e-4).round() / 100.0).collect::<Vec<_>>(),
            sum * 8e-6,
            g * 8e-6,
            g / sum
        );
        rows.push((n, sum, g));
    }
    eprintln!("| sharing neighbours | links | sum of single-link TCP (Mbit/s) | braid (Mbit/s) | ratio |");
    eprintln!("| --- | --- | --- | --- | --- |");
    for (n, sum, g) in &rows {
        eprintln!("| {n} | {} | {:.2} | {:.2} | {:.3} |", n + 1, sum * 8e-6, g * 8e-6, g / sum);
    }
    // Each neighbour adds capacity (seed 000's Fig. 3 shape: goodput grows with the piconet).
    for w in rows.windows(2) {
        assert!(
            w[1].2 > w[0].2 + 0.5 * 10e6 / 8.0,
            "goodput did not grow from {} to {} neighbours",
            w[0].0,
            w[1].0
        );
    }
}

#[test]
#[ignore = "experiment: a minute, root"]
fn spare_capacity() {
    if skip() {
        return;
    }
    let (mut lab, s, c, ns) = build(1);
    let alone = single(&s, &ns[0], 11, 8);
    start_braid(&mut lab, &s, &c, &ns, "owner_priority = \"spare\"\ncapacity = \"10mbit\"");
    // The member bonds (an endless download) while the owner downloads over its own link.
    let src = source(&s, &format!("{SERVICE}:5591"), ENDLESS);
    std::thread::sleep(Duration::from_millis(200));
    let member = Arc::new(Progress::default());
    let t0 = Instant::now();
    let m = reader(&c, "127.0.0.1:5590", member.clone(), Duration::from_secs(14));
    std::thread::sleep(Duration::from_secs(3));
    let before = member.rate(t0 + Duration::from_secs(1), t0 + Duration::from_secs(3));
    let owner = single(&s, &ns[0], 11, 8);
    let during = member.rate(t0 + Duration::from_secs(5), t0 + Duration::from_secs(11));
    m.join().unwrap();
    drop(src);
    eprintln!(
        "owner alone {:.2} Mbit/s; owner while a member bonds {:.2} Mbit/s (ratio {:.3}); member {:.2} Mbit/s before, {:.2} during",
        alone * 8e-6,
        owner * 8e-6,
        owner / alone,
        before * 8e-6,
        during * 8e-6
    );
    assert!(
        before > 12e6 / 8.0,
        "the member did not bond through the neighbour: {:.2} Mbit/s",
        before * 8e-6
    );
    assert!(owner > 0.9 * alone, "the owner kept only {:.3} of its link\n{}", owner / alone, lab.logs());
}
