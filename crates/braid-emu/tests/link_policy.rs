//! The user's link policy end to end over loopback relays (issue 11): a `never` link carries
//! nothing, a `backup` link only when the others are down, a data cap reached mid-transfer
//! demotes or stops its link as configured — every download byte-exact.

use braid_core::SessionConfig;
use braid_emu::testbed::{download_socks, start_source, Testbed, TestbedConfig};
use braid_emu::RelayHandle;
use braid_sim::LinkSpec;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

fn bed_config(specs: &[&str]) -> TestbedConfig {
    let links = specs.iter().map(|s| LinkSpec::parse(s).unwrap()).collect();
    let mut cfg = TestbedConfig::new(links);
    cfg.session = SessionConfig { handshake_timeout: Duration::from_secs(2), ..SessionConfig::default() };
    cfg
}

/// The client's label of the link through `relay`.
fn label_of(bed: &Testbed, relay: &RelayHandle) -> String {
    format!("{}@{}", bed.relays[0].addr.ip(), relay.addr)
}

/// Datagrams the relay carried, both directions.
fn carried(relay: &RelayHandle) -> u64 {
    relay.stats().up_packets.load(Ordering::Relaxed) + relay.stats().down_packets.load(Ordering::Relaxed)
}

/// Waits until `ok` holds, at most `limit`: how long it took, or None.
async fn within(limit: Duration, mut ok: impl FnMut() -> bool) -> Option<Duration> {
    let start = Instant::now();
    while !ok() {
        if start.elapsed() >= limit {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Some(start.elapsed())
}

/// Waits until `ok` holds (bounded).
async fn until(limit: Duration, ok: impl FnMut() -> bool) {
    assert!(within(limit, ok).await.is_some(), "condition not met within {limit:?}");
}

fn path_count(bed: &Testbed) -> usize {
    bed.client.board.snapshot().sessions.first().map_or(0, |s| s.paths.len())
}

/// Waits until both ends have closed a path down to `n` paths, and what was in flight on
/// the closed one has drained (the server may send on a path until the client's PATH_ABANDON
/// reaches it).
async fn closed_down_to(bed: &Testbed, n: usize) {
    let server_paths = || bed.server.board.snapshot().sessions.first().map_or(0, |s| s.paths.len());
    until(Duration::from_secs(3), || path_count(bed) == n && server_paths() == n).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_never_link_carries_nothing_and_a_backup_link_only_when_the_others_are_down() {
    let source = start_source(8 << 20, 21).await.unwrap();
    let bed = Testbed::start(bed_config(&["40mbit/5ms", "40mbit/5ms"])).await.unwrap();
    let spare = bed.relays[1].clone();
    let name = label_of(&bed, &spare);
    until(Duration::from_secs(5), || path_count(&bed) == 2).await;

    // never: the path is closed and the relay carries nothing more.
    bed.client.links.lock().set(&name, "tier", "never").unwrap();
    closed_down_to(&bed, 1).await;
    let before = carried(&spare);
    let d = download_socks(bed.client.socks_addr.unwrap(), source.addr, |_| {}).await.unwrap();
    assert_eq!(d.sha256, source.sha256);
    assert_eq!(carried(&spare), before, "a never link carried datagrams");
    let st = bed.client.board.snapshot();
    let link = st.links.iter().find(|l| l.name == name).expect("the link is listed");
    assert_eq!(link.tier, "never");

    // backup: the path comes back but carries (almost) nothing while the other link is up.
    bed.client.links.lock().set(&name, "tier", "backup").unwrap();
    until(Duration::from_secs(5), || {
        bed.client.board.snapshot().sessions[0]
            .paths
            .iter()
            .any(|p| p.link.as_deref() == Some(&name) && p.state == "backup")
    })
    .await;
    let (spare_before, main_before) = (carried(&spare), carried(&bed.relays[0]));
    let d = download_socks(bed.client.socks_addr.unwrap(), source.addr, |_| {}).await.unwrap();
    assert_eq!(d.sha256, source.sha256);
    let (spare_n, main_n) = (carried(&spare) - spare_before, carried(&bed.relays[0]) - main_before);
    eprintln!("backup link: {spare_n} datagrams, primary: {main_n}");
    assert!(
        spare_n * 50 < main_n,
        "a backup link carried {spare_n} datagrams next to {main_n} on the primary one"
    );

    // The primary link goes down mid-download: the backup link carries the rest.
    let main = bed.relays[0].clone();
    let cutter = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(400)).await;
        main.set_down(true);
    });
    let spare_before = carried(&spare);
    let d = download_socks(bed.client.socks_addr.unwrap(), source.addr, |_| {}).await.unwrap();
    cutter.await.unwrap();
    assert_eq!(d.sha256, source.sha256);
    assert!(carried(&spare) - spare_before > 2000, "the backup link did not take over");
}

/// Both directions of a cap: the download's bytes count as received, its requests and ACKs
/// as sent, and the total is what the cap compares.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cap_reached_mid_download_demotes_its_link_and_stop_closes_it() {
    let source = start_source(24 << 20, 22).await.unwrap();
    let bed = Testbed::start(bed_config(&["30mbit/5ms", "30mbit/5ms"])).await.unwrap();
    let metered = bed.relays[1].clone();
    let name = label_of(&bed, &metered);
    until(Duration::from_secs(5), || path_count(&bed) == 2).await;
    {
        let mut t = bed.client.links.lock();
        t.set(&name, "cap", "3MB").unwrap();
        t.set(&name, "cap_action", "demote").unwrap();
    }
    let d = download_socks(bed.client.socks_addr.unwrap(), source.addr, |_| {}).await.unwrap();
    assert_eq!(d.sha256, source.sha256);
    let st = bed.client.board.snapshot();
    let link = st.links.iter().find(|l| l.name == name).unwrap();
    let cap = link.cap.as_ref().unwrap();
    let used = link.usage.sent_bytes + link.usage.received_bytes;
    assert!(cap.reached && link.tier == "backup", "{link:?}");
    // At 30 Mbit/s a status refresh (0.5 s) lets ~2 MB more through before the demotion.
    assert!(
        (3_000_000..6_000_000).contains(&used),
        "the metered link carried {used} bytes against a 3 MB cap"
    );
    let other = st.links.iter().find(|l| l.name != name).unwrap();
    assert!(other.usage.received_bytes > 18_000_000, "{other:?}");
    // The server runs the demoted path as backup for downloads too.
    let server = bed.server.board.snapshot();
    assert!(server.sessions[0].paths.iter().any(|p| p.state == "backup"), "{:?}", server.sessions[0].paths);

    // stop: the path is closed until the period ends.
    bed.client.links.lock().set(&name, "cap_action", "stop").unwrap();
    closed_down_to(&bed, 1).await;
    let before = carried(&metered);
    let d = download_socks(bed.client.socks_addr.unwrap(), source.addr, |_| {}).await.unwrap();
    assert_eq!(d.sha256, source.sha256);
    assert_eq!(carried(&metered), before, "a stopped link carried datagrams");
    // Raising the cap brings it back.
    bed.client.links.lock().set(&name, "cap", "1GB").unwrap();
    until(Duration::from_secs(5), || path_count(&bed) == 2).await;
}

/// The client's scheduler governs its downloads: switched live on the client, the server
/// schedules the session with it, and both sides' status say so per direction.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_schedules_downloads_with_the_clients_choice() {
    let source = start_source(4 << 20, 23).await.unwrap();
    // Both start with the default; the client alone switches, live.
    let bed = Testbed::start(bed_config(&["40mbit/5ms", "20mbit/10ms"])).await.unwrap();
    assert_eq!(bed.server.board.snapshot().sessions[0].scheduler_down, "edpf");
    bed.client.board.request_scheduler("wrr".parse().unwrap());
    until(Duration::from_secs(3), || bed.server.board.snapshot().sessions[0].scheduler_down == "wrr").await;
    let d = download_socks(bed.client.socks_addr.unwrap(), source.addr, |_| {}).await.unwrap();
    assert_eq!(d.sha256, source.sha256);
    let server = bed.server.board.snapshot();
    let client = bed.client.board.snapshot();
    let (s, c) = (&server.sessions[0], &client.sessions[0]);
    assert_eq!((s.scheduler_up.as_str(), s.scheduler_down.as_str()), ("wrr", "wrr"), "{s:?}");
    assert_eq!((c.scheduler_up.as_str(), c.scheduler_down.as_str()), ("wrr", "wrr"), "{c:?}");
}

/// Path admission switched live on the client (the status API's `POST /admission`) reaches
/// the server in the session's policy: the server keeps a lossy path out of the download
/// while admission is on (seed 000's loss-disparity rule) and takes it back when it is off;
/// the download goes on unharmed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn path_admission_switched_live_governs_the_download() {
    let source = start_source(40 << 20, 29).await.unwrap();
    let bed = Testbed::start(bed_config(&["40mbit/5ms", "10mbit/10ms/loss=20%"])).await.unwrap();
    let socks = bed.client.socks_addr.unwrap();
    let download = tokio::spawn(async move { download_socks(socks, source.addr, |_| {}).await });
    let server = || bed.server.board.snapshot().sessions[0].clone();
    assert!(!server().path_admission);
    bed.client.board.request_admission(true);
    until(Duration::from_secs(3), || server().path_admission).await;
    assert!(bed.client.board.snapshot().sessions[0].path_admission);
    // The lossy path is judged once it has enough samples, then held in standby. Only losses
    // the loss judge calls random count, and BBR's standing queue makes it call most of a
    // 10 %-loss link's losses congestion (one run: 0.006–0.048 against the 0.04 limit; CI once
    // timed out): the link loses 20 %.
    let Some(took) = within(Duration::from_secs(20), || server().paths.iter().any(|p| !p.admitted)).await
    else {
        panic!("no path held in standby within 20 s: {:?}", server().paths);
    };
    eprintln!(
        "the lossy path was held in standby {:.1} s after admission was switched on",
        took.as_secs_f64()
    );
    let held = server().paths.into_iter().find(|p| !p.admitted).unwrap();
    assert!(held.loss > 0.04, "the held path is the lossy one: {held:?}");
    bed.client.board.request_admission(false);
    until(Duration::from_secs(3), || !server().path_admission && server().paths.iter().all(|p| p.admitted))
        .await;
    let d = download.await.unwrap().unwrap();
    assert_eq!(d.sha256, source.sha256);
}
