//! TUN mode (`braid client --tun`, and `--gateway` for a LAN behind the client): the whole
//! system's traffic — or the configured prefixes' — enters braid through a TUN device.
//!
//! * TCP is terminated on the client by a user-space TCP/IP stack (netstack-smoltcp, on
//!   smoltcp) and each connection is carried as a braid stream with a CONNECT request, as
//!   SOCKS5 would ([`tcp`]): the server opens the real connection under its egress policy.
//! * UDP travels as datagrams, one association per flow, put back in order at each end by a
//!   time-bounded reorder window ([`flows`], [`crate::reorder`]); ICMP echo as pings the server
//!   sends from an ICMP socket.
//! * Anything else (other protocols, fragments, IPv6 extension headers, malformed packets) is
//!   dropped and counted ([`TunStatus`]).
//!
//! Host changes — rules, a routing table, resolv.conf, forwarding — are planned in a state
//! file before they are made and undone at stop, at SIGTERM, and after a crash at the next
//! start ([`system`]). braid's own path sockets carry a firewall mark that keeps them out.

pub mod config;
pub mod flows;
pub mod packet;
pub mod system;
pub mod tcp;

use crate::error::Failure;
use crate::frontend::UdpRegistry;
use crate::reorder::SharedHold;
use futures::{SinkExt, StreamExt};
use packet::{Packet, Refusal};
use serde::{Deserialize, Serialize};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use system::Changes;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// The TUN's IPv4 address: the benchmarking range of RFC 2544, unlikely on a real LAN.
pub const ADDRESS_V4: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 1);
/// The TUN's IPv6 address (unique local, RFC 4193).
pub const ADDRESS_V6: Ipv6Addr = Ipv6Addr::new(0xfd00, 0xb1d, 0, 0, 0, 0, 0, 1);
/// Default device name.
pub const DEFAULT_NAME: &str = "braid0";
/// Default MTU: the largest UDP datagram it admits (1372 bytes over IPv4) still fits one braid
/// datagram with its flow header on a path of the default 1452-byte packets.
pub const DEFAULT_MTU: u16 = 1400;
/// Default firewall mark of braid's path sockets, routing table and rule priority.
pub const DEFAULT_MARK: u32 = 0xb1d;
/// Default routing table (and the priority of its rule).
pub const DEFAULT_TABLE: u32 = 2845;
/// Packets queued for the TUN before the writers wait.
const TO_TUN_QUEUE: usize = 1024;
/// Per-connection TCP buffers of the stack, each way.
const STACK_BUFFER: u32 = 1 << 20;
/// The user-space stack's MTU: the largest IP packet. TCP needs no path MTU inside the host,
/// so the stack sends segments as large as the application's kernel admits — see
/// [`ADVMSS_V4`] — and a download crosses the stack and the device in 64 KiB packets
/// instead of MTU-sized ones (one stack poll, one copy and one write each).
const STACK_MTU: usize = 65535;
/// The MSS the kernel advertises on connections routed into the TUN (the routes' `advmss`):
/// the largest TCP segment the stack's MTU carries over IPv4 (minus 20 + 20 bytes of headers)
/// and IPv6 (40 + 20). The routes keep the device MTU, so what the kernel sends into the TUN —
/// TCP segments, UDP datagrams — is no larger than before.
const ADVMSS_V4: u32 = STACK_MTU as u32 - 40;
/// See [`ADVMSS_V4`].
const ADVMSS_V6: u32 = STACK_MTU as u32 - 60;

/// TUN mode settings (`[tun]` in the client file).
#[derive(Debug, Clone, PartialEq)]
pub struct TunSettings {
    /// Device name.
    pub name: String,
    /// Device MTU.
    pub mtu: u16,
    /// Prefixes routed into the TUN; empty: the default route (IPv4 and IPv6).
    pub routes: Vec<(IpAddr, u8)>,
    /// DNS servers written to resolv.conf (reached through the TUN); empty: DNS untouched.
    pub dns: Vec<IpAddr>,
    /// Gateway mode: forward a LAN's traffic too (IP forwarding on).
    pub gateway: bool,
    /// Also IPv6.
    pub ipv6: bool,
    /// Linux GSO/GRO offloads on the device (fewer, larger reads).
    pub offload: bool,
    /// Firewall mark of braid's path sockets.
    pub fwmark: u32,
    /// braid's routing table; its rule has this priority too.
    pub table: u32,
    /// The longest a datagram waits in a flow's reorder window.
    pub reorder_max: Duration,
    /// Where the plan of host changes is kept.
    pub state_file: PathBuf,
    /// resolv.conf (a test may point elsewhere).
    pub resolv_conf: PathBuf,
}

impl TunSettings {
    /// Defaults for a device named `braid0` routing the default route.
    pub fn new() -> Self {
        TunSettings {
            name: DEFAULT_NAME.into(),
            mtu: DEFAULT_MTU,
            routes: Vec::new(),
            dns: Vec::new(),
            gateway: false,
            ipv6: true,
            offload: true,
            fwmark: DEFAULT_MARK,
            table: DEFAULT_TABLE,
            reorder_max: crate::reorder::DEFAULT_CAP,
            state_file: default_state_file(),
            resolv_conf: PathBuf::from("/etc/resolv.conf"),
        }
    }
}

impl Default for TunSettings {
    fn default() -> Self {
        Self::new()
    }
}

/// `$RUNTIME_DIRECTORY/tun-state.json`, else `/run/braid/tun-state.json`.
pub fn default_state_file() -> PathBuf {
    let dir = std::env::var_os("RUNTIME_DIRECTORY").map(PathBuf::from).unwrap_or_else(|| "/run/braid".into());
    dir.join("tun-state.json")
}

/// Parses `ADDR/LEN` (a bare address is a host route).
pub fn parse_prefix(s: &str) -> Result<(IpAddr, u8), String> {
    let (a, l) = s.split_once('/').unwrap_or((s, ""));
    let ip: IpAddr = a.trim().parse().map_err(|_| format!("'{s}' is not an IP prefix (ADDR/LEN)"))?;
    let max = if ip.is_ipv4() { 32 } else { 128 };
    let len =
        if l.is_empty() { max } else { l.trim().parse().map_err(|_| format!("'{s}': bad prefix length"))? };
    if len > max {
        return Err(format!("'{s}': prefix length over {max}"));
    }
    Ok((ip, len))
}

/// Counters of the TUN front end.
#[derive(Debug, Default)]
pub struct TunCounters {
    /// Packets read from the TUN.
    pub packets_in: AtomicU64,
    /// Packets written into it.
    pub packets_out: AtomicU64,
    /// TCP connections accepted by the stack.
    pub tcp_flows: AtomicU64,
    /// Of which the server could not connect.
    pub tcp_refused: AtomicU64,
    /// UDP flows opened.
    pub udp_flows: AtomicU64,
    /// Ping flows opened.
    pub ping_flows: AtomicU64,
    /// Flows the server refused (its max_udp, its policy).
    pub flows_refused: AtomicU64,
    /// Dropped: malformed packets (or answers that make no packet).
    pub dropped_malformed: AtomicU64,
    /// Dropped: IP fragments.
    pub dropped_fragments: AtomicU64,
    /// Dropped: protocols braid does not carry, IPv6 extension headers.
    pub dropped_protocol: AtomicU64,
    /// Dropped: ICMP other than echo requests.
    pub dropped_icmp: AtomicU64,
    /// Dropped: a full queue (a flow's, the session's).
    pub dropped_queue: AtomicU64,
    /// Dropped: the flow table was full.
    pub dropped_flows: AtomicU64,
    /// Reorder windows: datagrams released in order after a wait.
    pub reorder_held: AtomicU64,
    /// Reorder windows: gaps given up.
    pub reorder_gaps: AtomicU64,
    /// Reorder windows: datagrams passed on late.
    pub reorder_late: AtomicU64,
}

/// The TUN's counters as published in the status (`frontend.tun`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct TunStatus {
    pub device: String,
    pub packets_in: u64,
    pub packets_out: u64,
    pub tcp_flows: u64,
    pub tcp_refused: u64,
    pub udp_flows: u64,
    pub ping_flows: u64,
    pub flows_refused: u64,
    pub dropped_malformed: u64,
    pub dropped_fragments: u64,
    pub dropped_protocol: u64,
    pub dropped_icmp: u64,
    pub dropped_queue: u64,
    pub dropped_flows: u64,
    pub reorder_held: u64,
    pub reorder_gaps: u64,
    pub reorder_late: u64,
    pub reorder_hold_us: u64,
}

/// A running TUN front end. Stopping it (or dropping it) undoes the host changes.
pub struct TunHandle {
    /// Its counters.
    pub counters: Arc<TunCounters>,
    device: String,
    hold: SharedHold,
    changes: Changes,
    state_file: PathBuf,
    undone: AtomicBool,
    tasks: Mutex<Vec<JoinHandle<()>>>,
}

impl TunHandle {
    /// The counters now.
    pub fn status(&self) -> TunStatus {
        let c = &self.counters;
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        TunStatus {
            device: self.device.clone(),
            packets_in: g(&c.packets_in),
            packets_out: g(&c.packets_out),
            tcp_flows: g(&c.tcp_flows),
            tcp_refused: g(&c.tcp_refused),
            udp_flows: g(&c.udp_flows),
            ping_flows: g(&c.ping_flows),
            flows_refused: g(&c.flows_refused),
            dropped_malformed: g(&c.dropped_malformed),
            dropped_fragments: g(&c.dropped_fragments),
            dropped_protocol: g(&c.dropped_protocol),
            dropped_icmp: g(&c.dropped_icmp),
            dropped_queue: g(&c.dropped_queue),
            dropped_flows: g(&c.dropped_flows),
            reorder_held: g(&c.reorder_held),
            reorder_gaps: g(&c.reorder_gaps),
            reorder_late: g(&c.reorder_late),
            reorder_hold_us: self.hold.get().as_micros() as u64,
        }
    }

    /// Stops the device's tasks and undoes the host changes (once).
    pub fn stop(&self) {
        for t in self.tasks.lock().unwrap_or_else(|e| e.into_inner()).drain(..) {
            t.abort();
        }
        if self.undone.swap(true, Ordering::SeqCst) {
            return;
        }
        let failed = self.changes.undo(&self.state_file);
        if failed.is_empty() {
            tracing::info!(device = %self.device, "TUN mode: routes, rules and DNS restored");
        } else {
            tracing::warn!(device = %self.device, failed = ?failed, "TUN mode: could not restore everything");
        }
    }
}

impl Drop for TunHandle {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Undoes what an earlier run left in `state_file` (it did not stop cleanly); says what it did.
pub fn undo_leftovers(state_file: &std::path::Path) -> Result<Option<String>, Failure> {
    let Some(old) = Changes::load(state_file).map_err(|e| Failure::Config(e.to_string()))? else {
        return Ok(None);
    };
    if old.pid != std::process::id() && system::alive_braid(old.pid) {
        return Err(Failure::Config(format!(
            "TUN mode: another braid (pid {}) is in TUN mode with the state file {}; stop it first",
            old.pid,
            state_file.display()
        )));
    }
    let failed = old.undo(state_file);
    if !failed.is_empty() {
        return Err(Failure::Other(format!(
            "TUN mode: could not undo what an earlier run (pid {}) changed: {}",
            old.pid,
            failed.join("; ")
        )));
    }
    Ok(Some(format!(
        "undid the routes, rules and DNS of an earlier run (pid {}) that did not stop cleanly",
        old.pid
    )))
}

/// Creates the device, routes traffic into it and starts carrying it over the session behind
/// `app`. `udp` routes the server's answers to flows; `hold` is the session's reorder hold.
pub async fn start(
    settings: &TunSettings,
    front: crate::frontend::Frontend,
    udp: UdpRegistry,
    hold: SharedHold,
) -> Result<TunHandle, Failure> {
    if let Some(what) = undo_leftovers(&settings.state_file)? {
        tracing::warn!(state_file = %settings.state_file.display(), "{what}");
    }
    let default_route = settings.routes.is_empty();
    let ipv6 = settings.ipv6 && (default_route || settings.routes.iter().any(|(a, _)| a.is_ipv6()));
    let mut changes = Changes {
        pid: std::process::id(),
        device: settings.name.clone(),
        rules: system::rules(settings.table, settings.fwmark, settings.table, default_route, ipv6),
        table: settings.table,
        ipv6,
        resolv_conf: None,
        resolv_path: settings.resolv_conf.clone(),
        sysctls: Vec::new(),
    };
    if !settings.dns.is_empty() {
        let old = std::fs::read_to_string(&settings.resolv_conf).unwrap_or_default();
        changes.resolv_conf = Some(old);
    }
    if settings.gateway {
        let mut files = vec![PathBuf::from("/proc/sys/net/ipv4/ip_forward")];
        if ipv6 {
            files.push("/proc/sys/net/ipv6/conf/all/forwarding".into());
        }
        for f in files {
            let old = std::fs::read_to_string(&f)
                .map_err(|e| Failure::Config(format!("gateway mode: cannot read {}: {e}", f.display())))?;
            changes.sysctls.push((f, old.trim().to_string()));
        }
    }
    changes.save(&settings.state_file).map_err(|e| {
        Failure::Config(format!(
            "TUN mode: cannot write its state file {}: {e}",
            settings.state_file.display()
        ))
    })?;
    // From here on every exit path undoes the plan (the handle's Drop).
    let counters = Arc::new(TunCounters::default());
    let mut handle = TunHandle {
        counters: counters.clone(),
        device: settings.name.clone(),
        hold: hold.clone(),
        changes: changes.clone(),
        state_file: settings.state_file.clone(),
        undone: AtomicBool::new(false),
        tasks: Mutex::new(Vec::new()),
    };
    let dev = open_device(settings, ipv6)?;
    apply(settings, &changes, default_route, ipv6)?;
    let tasks = run(settings, dev, front, udp, hold, counters)?;
    *handle.tasks.get_mut().unwrap_or_else(|e| e.into_inner()) = tasks;
    tracing::info!(device = %settings.name, routes = if default_route { "default".to_string() } else { format!("{:?}", settings.routes) }, gateway = settings.gateway, "TUN mode on");
    Ok(handle)
}

/// The device as the configuration asks for, with offloads when the kernel has them.
fn open_device(settings: &TunSettings, ipv6: bool) -> Result<(tun_rs::AsyncDevice, bool), Failure> {
    let build = |offload: bool| {
        let mut b =
            tun_rs::DeviceBuilder::new().name(&settings.name).mtu(settings.mtu).ipv4(ADDRESS_V4, 32u8, None);
        if ipv6 {
            b = b.ipv6(ADDRESS_V6, 128u8);
        }
        b.offload(offload).build_async()
    };
    match build(settings.offload) {
        Ok(d) => Ok((d, settings.offload)),
        Err(e) if settings.offload => {
            tracing::warn!(error = %e, "TUN offloads unavailable; reading packet by packet");
            build(false).map(|d| (d, false)).map_err(|e| tun_error(settings, e))
        }
        Err(e) => Err(tun_error(settings, e)),
    }
}

fn tun_error(settings: &TunSettings, e: std::io::Error) -> Failure {
    Failure::Config(format!(
        "TUN mode: cannot create device {} ({e}); it needs root or CAP_NET_ADMIN and /dev/net/tun",
        settings.name
    ))
}

/// Routes, rules, DNS and forwarding as planned.
fn apply(settings: &TunSettings, changes: &Changes, default_route: bool, ipv6: bool) -> Result<(), Failure> {
    let fail = |e: std::io::Error| Failure::Config(format!("TUN mode: {e}"));
    let table = settings.table.to_string();
    let mut routes: Vec<(IpAddr, u8)> = settings.routes.clone();
    if default_route {
        routes.push((Ipv4Addr::UNSPECIFIED.into(), 0));
        if ipv6 {
            routes.push((Ipv6Addr::UNSPECIFIED.into(), 0));
        }
    }
    for (addr, len) in routes {
        let (fam, advmss) = if addr.is_ipv4() { ("-4", ADVMSS_V4) } else { ("-6", ADVMSS_V6) };
        let prefix = format!("{addr}/{len}");
        let advmss = advmss.to_string();
        let route =
            [fam, "route", "replace", &prefix, "dev", &settings.name, "table", &table, "advmss", &advmss];
        system::ip(&route.map(String::from)).map_err(fail)?;
    }
    for r in &changes.rules {
        system::ip(r).map_err(fail)?;
    }
    if !settings.dns.is_empty() {
        let text = system::resolv_conf(changes.resolv_conf.as_deref().unwrap_or(""), &settings.dns);
        system::write_in_place(&settings.resolv_conf, &text).map_err(|e| {
            Failure::Config(format!("TUN mode: cannot write {}: {e}", settings.resolv_conf.display()))
        })?;
    }
    for (f, _) in &changes.sysctls {
        std::fs::write(f, "1")
            .map_err(|e| Failure::Config(format!("gateway mode: cannot write {}: {e}", f.display())))?;
    }
    Ok(())
}

/// Starts the stack and the tasks that move packets between it, the flows and the device.
fn run(
    settings: &TunSettings,
    (dev, offload): (tun_rs::AsyncDevice, bool),
    front: crate::frontend::Frontend,
    udp: UdpRegistry,
    hold: SharedHold,
    counters: Arc<TunCounters>,
) -> Result<Vec<JoinHandle<()>>, Failure> {
    let (stack, runner, _, listener) = netstack_smoltcp::StackBuilder::default()
        .enable_tcp(true)
        .mtu(STACK_MTU)
        .tcp_recv_buffer_size(STACK_BUFFER)
        .tcp_send_buffer_size(STACK_BUFFER)
        .build()
        .map_err(|e| Failure::Other(format!("TUN mode: cannot start the TCP/IP stack: {e}")))?;
    let (runner, listener) = match (runner, listener) {
        (Some(r), Some(l)) => (r, l),
        _ => return Err(Failure::Other("TUN mode: the TCP/IP stack has no TCP".into())),
    };
    let dev = Arc::new(dev);
    let (to_tun, from_flows) = mpsc::channel(TO_TUN_QUEUE);
    let (sink, stream) = stack.split();
    let ends = flows::FlowEnds { front: front.clone(), udp, hold, to_tun, counters: counters.clone() };
    let mtu = usize::from(settings.mtu);
    Ok(vec![
        tokio::spawn(async move {
            if let Err(e) = runner.await {
                tracing::warn!(error = %e, "TUN: the TCP/IP stack stopped");
            }
        }),
        tokio::spawn(tcp::serve(listener, front, counters.clone())),
        tokio::spawn(read_device(dev.clone(), offload, mtu, sink, flows::Flows::new(ends), counters.clone())),
        tokio::spawn(write_device(dev, offload, stream, from_flows, counters)),
    ])
}

/// Reads packets from the device and hands each where it belongs.
async fn read_device(
    dev: Arc<tun_rs::AsyncDevice>,
    offload: bool,
    mtu: usize,
    mut stack: futures::stream::SplitSink<netstack_smoltcp::Stack, Vec<u8>>,
    mut flows: flows::Flows,
    counters: Arc<TunCounters>,
) {
    let mut original = vec![0u8; tun_rs::VIRTIO_NET_HDR_LEN + 65535];
    let batch = if offload { tun_rs::IDEAL_BATCH_SIZE } else { 1 };
    let mut bufs = vec![vec![0u8; mtu.max(1500) + 128]; batch];
    let mut sizes = vec![0usize; batch];
    loop {
        let n = match dev.recv_multiple(&mut original, &mut bufs, &mut sizes, 0).await {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                // A malformed offload header is one bad read, not the device's end.
                counters.dropped_malformed.fetch_add(1, Ordering::Relaxed);
                tracing::debug!(error = %e, "TUN read failed");
                if dev.readable().await.is_err() {
                    return;
                }
                continue;
            }
        };
        counters.packets_in.fetch_add(n as u64, Ordering::Relaxed);
        let mut fed = false;
        for (buf, &size) in bufs.iter().zip(&sizes).take(n) {
            let p = &buf[..size.min(buf.len())];
            match packet::parse(p) {
                Ok(Packet::Tcp) => {
                    if stack.feed(p.to_vec()).await.is_err() {
                        return;
                    }
                    fed = true;
                }
                Ok(Packet::Udp { src, dst, payload }) => flows.udp(src, dst, payload),
                Ok(Packet::Echo { src, dst, ident, message }) => flows.echo(src, dst, ident, message),
                Err(r) => {
                    let c = match r {
                        Refusal::Malformed(_) => &counters.dropped_malformed,
                        Refusal::Fragment => &counters.dropped_fragments,
                        Refusal::Protocol(_) => &counters.dropped_protocol,
                        Refusal::OtherIcmp(_) => &counters.dropped_icmp,
                    };
                    c.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        if fed && stack.flush().await.is_err() {
            return;
        }
    }
}

/// Writes the stack's and the flows' packets into the device. What is ready at once is
/// written as one batch: with offloads on, tun-rs coalesces a batch's TCP segments of one
/// connection into GRO writes (one syscall and one pass up the kernel's stack for many
/// segments), which is most of the cost of a download through the TUN.
async fn write_device(
    dev: Arc<tun_rs::AsyncDevice>,
    offload: bool,
    mut stack: futures::stream::SplitStream<netstack_smoltcp::Stack>,
    mut flows: mpsc::Receiver<Vec<u8>>,
    counters: Arc<TunCounters>,
) {
    use futures::FutureExt;
    // Headroom before each packet: the virtio-net header that tun-rs fills in.
    let head = if offload { tun_rs::VIRTIO_NET_HDR_LEN } else { 0 };
    let batch = if offload { tun_rs::IDEAL_BATCH_SIZE } else { 1 };
    let mut gro = tun_rs::GROTable::default();
    let mut bufs: Vec<Vec<u8>> = Vec::with_capacity(batch);
    let framed = |p: &[u8]| {
        let mut b = Vec::with_capacity(head + p.len());
        b.resize(head, 0);
        b.extend_from_slice(p);
        b
    };
    let mut open = true;
    while open {
        let first = tokio::select! {
            p = stack.next() => match p {
                Some(Ok(p)) => p,
                Some(Err(_)) => continue,
                None => return,
            },
            p = flows.recv() => match p {
                Some(p) => p,
                None => return,
            },
        };
        bufs.push(framed(&first));
        // The stack's runner makes one segment per connection each round (smoltcp's egress
        // is bounded per poll); yielding lets it make the next while this batch gathers.
        // Two yields in a row that bring nothing end the batch.
        let mut idle = 0;
        while bufs.len() < batch {
            match stack.next().now_or_never() {
                Some(Some(Ok(p))) => {
                    bufs.push(framed(&p));
                    idle = 0;
                }
                Some(Some(Err(_))) => {}
                Some(None) => {
                    open = false;
                    break;
                }
                None if offload && idle < 2 => {
                    idle += 1;
                    tokio::task::yield_now().await;
                }
                None => break,
            }
        }
        while bufs.len() < batch {
            match flows.try_recv() {
                Ok(p) => bufs.push(framed(&p)),
                Err(_) => break,
            }
        }
        let n = bufs.len() as u64;
        let sent = if offload {
            dev.send_multiple(&mut gro, &mut bufs, head).await.map(|_| ())
        } else {
            dev.send(&bufs[0]).await.map(|_| ())
        };
        match sent {
            Ok(()) => {
                counters.packets_out.fetch_add(n, Ordering::Relaxed);
            }
            Err(e) => tracing::debug!(error = %e, "TUN write failed"),
        }
        bufs.clear();
    }
}
