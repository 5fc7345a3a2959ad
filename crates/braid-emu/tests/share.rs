//! `braid share` end to end over loopback: a client with its own (emulated) link and a path
//! through a sharer whose WAN is a second emulated link, both to one braid server. A tap on the
//! sharer's WAN side records what the sharer relays.

use braid_core::{SessionConfig, StaticSecret};
use braid_daemon::config::{Parsed, UsageFile};
use braid_daemon::share::config::{
    Limits, MemberPolicy, NeighbourSettings, OwnerPriority, ShareSettings, StaticSharer,
};
use braid_daemon::share::member::{AllocError, Ask};
use braid_daemon::share::{start_share, ShareHandle};
use braid_daemon::udp::UdpLink;
use braid_daemon::{start_client, start_server, ClientHandle, ServerHandle};
use braid_emu::testbed::{client_settings, download_socks, server_settings, Keys, TestbedConfig};
use braid_emu::{Relay, RelayHandle};
use braid_sim::LinkSpec;
use sha2::{Digest, Sha256};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, UdpSocket};
use tokio::task::JoinHandle;

/// A line the payload repeats: any relayed packet carrying stream data in the clear would hold
/// a whole copy of it.
const MARKER: &[u8] = b"braid-share-known-plaintext:the sharer must never see this line\n";

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// A TCP server sending `len` bytes of repeated MARKER; returns its address and SHA-256.
async fn marker_source(len: usize) -> (SocketAddr, [u8; 32], JoinHandle<()>) {
    let data: Vec<u8> = MARKER.iter().copied().cycle().take(len).collect();
    let sha: [u8; 32] = Sha256::digest(&data).into();
    let data = Arc::new(data);
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    let t = tokio::spawn(async move {
        while let Ok((mut c, _)) = l.accept().await {
            let d = data.clone();
            tokio::spawn(async move {
                let _ = c.write_all(&d).await;
                let _ = c.shutdown().await;
            });
        }
    });
    (addr, sha, t)
}

/// A UDP forwarder between the sharer's WAN sockets and the WAN link: counts the bytes and
/// notes whether any datagram held MARKER in the clear.
struct Tap {
    addr: SocketAddr,
    bytes: Arc<AtomicU64>,
    saw_marker: Arc<AtomicBool>,
    task: JoinHandle<()>,
}

impl Drop for Tap {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn tap(to: SocketAddr) -> Tap {
    let front = Arc::new(UdpSocket::bind("127.0.0.1:0").await.unwrap());
    let addr = front.local_addr().unwrap();
    let bytes = Arc::new(AtomicU64::new(0));
    let saw_marker = Arc::new(AtomicBool::new(false));
    let (b, m) = (bytes.clone(), saw_marker.clone());
    let task = tokio::spawn(async move {
        // One back socket per sharer-side address (the sharer opens one per member relay).
        let mut backs: std::collections::HashMap<SocketAddr, Arc<UdpSocket>> = Default::default();
        let mut buf = vec![0u8; 65536];
        let mut tasks = Vec::new();
        loop {
            let Ok((n, from)) = front.recv_from(&mut buf).await else { return };
            b.fetch_add(n as u64, Ordering::Relaxed);
            if contains(&buf[..n], MARKER) {
                m.store(true, Ordering::Relaxed);
            }
            let back = match backs.get(&from) {
                Some(s) => s.clone(),
                None => {
                    let s = Arc::new(UdpSocket::bind("127.0.0.1:0").await.unwrap());
                    s.connect(to).await.unwrap();
                    let (s2, f2, b2, m2) = (s.clone(), front.clone(), b.clone(), m.clone());
                    tasks.push(tokio::spawn(async move {
                        let mut buf = vec![0u8; 65536];
                        while let Ok(n) = s2.recv(&mut buf).await {
                            b2.fetch_add(n as u64, Ordering::Relaxed);
                            if contains(&buf[..n], MARKER) {
                                m2.store(true, Ordering::Relaxed);
                            }
                            let _ = f2.send_to(&buf[..n], from).await;
                        }
                    }));
                    backs.insert(from, s.clone());
                    s
                }
            };
            let _ = back.send(&buf[..n]).await;
        }
    });
    Tap { addr, bytes, saw_marker, task }
}

struct Bed {
    server: ServerHandle,
    client: Option<ClientHandle>,
    sharer: ShareHandle,
    own: RelayHandle,
    wan: RelayHandle,
    tap: Tap,
    keys: Keys,
}

impl Drop for Bed {
    fn drop(&mut self) {
        if let Some(c) = &self.client {
            c.stop();
        }
        self.sharer.stop();
        self.own.stop();
        self.wan.stop();
        self.server.stop();
    }
}

fn quick() -> SessionConfig {
    SessionConfig { handshake_timeout: Duration::from_secs(2), ..SessionConfig::default() }
}

/// Server, own link, sharer (admitting `member` with `limits`) and its WAN link; a client
/// using both when `client` is set.
async fn bed(member: Option<StaticSecret>, limits: Limits, client: bool) -> Bed {
    bed_with(member, limits, client, "20mbit/5ms").await
}

async fn bed_with(member: Option<StaticSecret>, limits: Limits, client: bool, wan_spec: &str) -> Bed {
    let keys = Keys::generate();
    let server = start_server(server_settings(&keys, quick(), false)).await.unwrap();
    let spec = LinkSpec::parse("20mbit/5ms").unwrap();
    let own = Relay::start("127.0.0.1:0".parse().unwrap(), server.addr, spec.clone(), 1).await.unwrap();
    let wan =
        Relay::start("127.0.0.1:0".parse().unwrap(), server.addr, LinkSpec::parse(wan_spec).unwrap(), 2)
            .await
            .unwrap();
    let tap = tap(wan.addr).await;
    let sharer_key = braid_daemon::keyfile::generate();
    let member_key = member.unwrap_or_else(|| keys.client.clone()).public_key();
    let sharer = start_share(ShareSettings {
        name: "alice".into(),
        secret: sharer_key.clone(),
        listen: "127.0.0.1:0".parse().unwrap(),
        servers: vec![tap.addr],
        wan_interface: None,
        capacity: None,
        owner_priority: OwnerPriority::None,
        announce: false,
        status: None,
        members: vec![MemberPolicy { name: "bob".into(), key: member_key, limits }],
        community: None,
        lease: Duration::from_secs(30),
        max_relays: 8,
        usage_file: UsageFile::Off,
    })
    .await
    .unwrap();
    let client = if client {
        let mut cs = client_settings(&keys, server.addr, &[own.addr], &TestbedConfig::new(Vec::new()));
        cs.session = quick();
        cs.neighbours = Some(NeighbourSettings {
            sharers: vec![StaticSharer {
                name: "alice".into(),
                address: Parsed(sharer.addr),
                key: Parsed(sharer_key.public_key()),
                server: Some(tap.addr.to_string()),
            }],
            ..NeighbourSettings::default()
        });
        let c = start_client(cs).await.unwrap();
        assert!(c.wait_connected(Duration::from_secs(5)).await, "no session");
        Some(c)
    } else {
        None
    };
    Bed { server, client, sharer, own, wan, tap, keys }
}

/// Waits (bounded) until the client has a path through the sharer.
async fn wait_for_neighbour_path(c: &ClientHandle) {
    for _ in 0..100 {
        let st = c.board.snapshot();
        if st.sessions.first().is_some_and(|s| s.paths.iter().any(|p| p.link.as_deref() == Some("via:alice")))
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no path through the sharer: {:?}", c.board.snapshot().sessions);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_download_through_a_sharer_arrives_identical_and_the_sharer_sees_only_ciphertext() {
    // The search can fail: the payload holds the marker in the clear.
    let (src, sha, _t) = marker_source(12 << 20).await;
    assert!(contains(&MARKER.repeat(3)[10..150], MARKER));
    let b = bed(None, Limits::default(), true).await;
    let c = b.client.as_ref().unwrap();
    wait_for_neighbour_path(c).await;
    let d = download_socks(c.socks_addr.unwrap(), src, |_| {}).await.unwrap();
    assert_eq!(d.sha256, sha, "the download differs from the source");
    let relayed = b.tap.bytes.load(Ordering::Relaxed);
    assert!(relayed > 3 << 20, "the sharer carried only {relayed} bytes of 12 MiB");
    assert!(!b.tap.saw_marker.load(Ordering::Relaxed), "plaintext crossed the sharer");
    // Both ways of travelling show in the client's status, and the member in the sharer's.
    let st = c.board.snapshot();
    let links: Vec<Option<String>> = st.sessions[0].paths.iter().map(|p| p.link.clone()).collect();
    assert!(links.iter().any(|l| l.as_deref() == Some("via:alice")), "{links:?}");
    assert!(links.iter().any(|l| l.as_deref().is_some_and(|l| !l.starts_with("via:"))), "{links:?}");
    let s = braid_daemon::share::status::snapshot(&b.sharer.shared);
    assert_eq!(s.members[0].name, "bob");
    assert!(s.members[0].down_bytes > 3 << 20, "{:?}", s.members[0]);
    assert_eq!(s.relays.len(), 1, "{:?}", s.relays);
    assert_eq!(s.strangers_dropped, 0);
    let m = braid_daemon::share::status::metrics(&s);
    assert!(m.contains("braid_share_member_bytes_total{member=\"bob\",direction=\"down\"}"), "{m}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_strangers_key_is_refused_and_its_packets_go_nowhere() {
    let b = bed(Some(braid_daemon::keyfile::generate()), Limits::default(), false).await;
    let link = UdpLink::bind("127.0.0.1:0".parse().unwrap(), None).unwrap();
    let ask = ask(&b, &b.sharer);
    match ask.allocate(&link).await {
        Err(AllocError::Refused(_, why)) => assert!(why.contains("not admitted"), "{why}"),
        other => panic!("a stranger was not refused: {other:?}"),
    }
    // A community request to a sharer without a community key does not even open: no answer.
    let community = Ask { community: Some([9; 32]), ..ask.clone() };
    let link2 = UdpLink::bind("127.0.0.1:0".parse().unwrap(), None).unwrap();
    assert!(matches!(community.allocate(&link2).await, Err(AllocError::NoAnswer(_))));
    // Its datagrams are dropped at the sharer: nothing reaches the WAN.
    for i in 0..200u32 {
        let mut junk = vec![0x10u8; 1200];
        junk[1..5].copy_from_slice(&i.to_be_bytes());
        link.socket.send_to(&junk, b.sharer.addr).await.unwrap();
        if i % 16 == 15 {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }
    // A truncated and a garbage allocation message are counted, not answered.
    link.socket.send_to(&[0xB1, 1, 0, 5], b.sharer.addr).await.unwrap();
    link.socket.send_to(&[0xB1; 141], b.sharer.addr).await.unwrap();
    let mut st = braid_daemon::share::status::snapshot(&b.sharer.shared);
    for _ in 0..100 {
        if st.strangers_dropped >= 200 && st.malformed >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        st = braid_daemon::share::status::snapshot(&b.sharer.shared);
    }
    assert_eq!(st.strangers_dropped, 200, "{st:?}");
    assert_eq!(st.malformed, 2, "{st:?}");
    assert_eq!(st.refused, 1, "{st:?}");
    assert_eq!(st.granted, 0, "{st:?}");
    assert!(st.relays.is_empty());
    assert_eq!(b.tap.bytes.load(Ordering::Relaxed), 0, "a stranger's bytes crossed the sharer");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_over_its_cap_is_stopped_and_the_stream_goes_on_over_the_own_link() {
    let cap = 2_000_000u64;
    let (src, sha, _t) = marker_source(10 << 20).await;
    let b = bed(None, Limits { daily_cap: Some(cap), ..Limits::default() }, true).await;
    let c = b.client.as_ref().unwrap();
    wait_for_neighbour_path(c).await;
    let d = download_socks(c.socks_addr.unwrap(), src, |_| {}).await.unwrap();
    assert_eq!(d.sha256, sha, "the download differs from the source");
    let s = braid_daemon::share::status::snapshot(&b.sharer.shared);
    let m = &s.members[0];
    assert!(m.capped, "{m:?}");
    assert!(m.today >= cap && m.today < cap + 70_000, "relayed {} against a cap of {cap}", m.today);
    assert!(m.dropped > 0, "{m:?}");
    // Asking again is refused for the rest of the day.
    let link = UdpLink::bind("127.0.0.1:0".parse().unwrap(), None).unwrap();
    let ask = ask(&b, &b.sharer);
    match ask.allocate(&link).await {
        Err(AllocError::Refused(_, why)) => assert!(why.contains("cap"), "{why}"),
        other => panic!("a capped member was not refused: {other:?}"),
    }
}

/// Asks `sharer` for a relay to the bed's server as the bed's client key.
fn ask(b: &Bed, sharer: &ShareHandle) -> Ask {
    Ask {
        secret: b.keys.client.clone(),
        sharer_key: sharer.shared.settings.secret.public_key(),
        sharer: sharer.addr,
        server: b.tap.addr,
        community: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_stopped_at_its_daily_cap_stays_stopped_after_the_sharer_restarts() {
    let cap = 60_000u64;
    let b = bed(None, Limits { daily_cap: Some(cap), ..Limits::default() }, false).await;
    let dir = std::env::temp_dir().join(format!("braid-share-restart-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut settings = b.sharer.shared.settings.clone();
    settings.usage_file = UsageFile::At(dir.join("share-usage.redb"));
    let first = start_share(settings.clone()).await.unwrap();
    // The member's datagrams (opaque to the sharer) are counted until the cap stops them.
    let link = UdpLink::bind("127.0.0.1:0".parse().unwrap(), None).unwrap();
    ask(&b, &first).allocate(&link).await.expect("a listed member under its cap is granted");
    for _ in 0..100 {
        link.socket.send_to(&[0x10u8; 1000], first.addr).await.unwrap();
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let mut m = braid_daemon::share::status::snapshot(&first.shared).members[0].clone();
    for _ in 0..100 {
        if m.state == "stopped" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        m = braid_daemon::share::status::snapshot(&first.shared).members[0].clone();
    }
    assert_eq!(m.state, "stopped", "{m:?}");
    assert!(m.today >= cap, "{m:?}");
    first.shutdown().await;

    // A new sharer process with the same usage file: still stopped, refused at once.
    let second = start_share(settings).await.unwrap();
    let again = braid_daemon::share::status::snapshot(&second.shared).members[0].clone();
    assert_eq!((again.today, again.state.as_str()), (m.today, "stopped"), "{again:?}");
    let link2 = UdpLink::bind("127.0.0.1:0".parse().unwrap(), None).unwrap();
    match ask(&b, &second).allocate(&link2).await {
        Err(AllocError::Refused(_, why)) => assert!(why.contains("cap"), "{why}"),
        other => panic!("a member capped before the restart was granted after it: {other:?}"),
    }
    drop(second);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rate_limited_member_is_held_to_its_rate() {
    // 2 Mbit/s through the sharer, next to a 20 Mbit/s own link.
    let (src, sha, _t) = marker_source(6 << 20).await;
    let b = bed(None, Limits { rate: Some(250_000), ..Limits::default() }, true).await;
    let c = b.client.as_ref().unwrap();
    wait_for_neighbour_path(c).await;
    let d = download_socks(c.socks_addr.unwrap(), src, |_| {}).await.unwrap();
    assert_eq!(d.sha256, sha);
    let s = braid_daemon::share::status::snapshot(&b.sharer.shared);
    let m = &s.members[0];
    let secs = d.elapsed.as_secs_f64() + 1.0;
    let rate = (m.up_bytes + m.down_bytes) as f64 / secs;
    assert!(rate <= 250_000.0 * 1.1, "relayed {rate:.0} B/s against a limit of 250000 ({m:?})");
    assert!(m.down_bytes > 100_000, "the neighbour path carried nothing: {m:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sharer_that_stops_mid_download_leaves_the_stream_whole_and_the_own_link_full() {
    let (src, sha, _t) = marker_source(16 << 20).await;
    let mut b = bed(None, Limits::default(), true).await;
    let c = b.client.take().unwrap();
    wait_for_neighbour_path(&c).await;
    let socks = c.socks_addr.unwrap();
    let log = Arc::new(std::sync::Mutex::new(Vec::<(std::time::Instant, u64)>::new()));
    let l2 = log.clone();
    let dl = tokio::spawn(async move {
        download_socks(socks, src, move |n| l2.lock().unwrap().push((std::time::Instant::now(), n))).await
    });
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let before = b.tap.bytes.load(Ordering::Relaxed);
    assert!(before > 500_000, "the sharer carried little before it stopped: {before}");
    b.sharer.stop();
    let stopped = std::time::Instant::now();
    let d = tokio::time::timeout(Duration::from_secs(15), dl).await.expect("download hung").unwrap().unwrap();
    assert_eq!(d.sha256, sha, "the download differs from the source");
    // From 1 s after the stop, the own link (20 Mbit/s) carries the download at its rate.
    let log = log.lock().unwrap();
    let at = |t: std::time::Instant| log.iter().take_while(|(i, _)| *i <= t).last().map_or(0, |(_, n)| *n);
    let (t1, t2) = (stopped + Duration::from_secs(1), stopped + Duration::from_secs(2));
    assert!(log.last().unwrap().0 > t2, "the download ended too soon to measure the recovery");
    let second = at(t2) - at(t1);
    assert!(
        second >= 1_750_000,
        "only {second} bytes in the second after the first: not back to the own link's 2.5 MB/s"
    );
    c.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_neighbour_path_that_would_lower_the_bound_waits_in_standby() {
    // 400 ms each way and 5 % loss behind the sharer, next to a 5 ms own link: seed 000's
    // bound of the group falls with it (the remultiplexing RTT), so it is parked as backup.
    let b = bed_with(None, Limits::default(), true, "20mbit/400ms/loss=5%").await;
    let c = b.client.as_ref().unwrap();
    wait_for_neighbour_path(c).await;
    let tier = || c.links.lock().policy("via:alice").tier;
    for _ in 0..150 {
        if tier() == braid_daemon::linkpolicy::Tier::Backup {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(tier(), braid_daemon::linkpolicy::Tier::Backup, "{:?}", c.board.snapshot().sessions);
    // A good neighbour next to it stays in use.
    let good = bed(None, Limits::default(), true).await;
    let gc = good.client.as_ref().unwrap();
    wait_for_neighbour_path(gc).await;
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(gc.links.lock().policy("via:alice").tier, braid_daemon::linkpolicy::Tier::Primary);
}
