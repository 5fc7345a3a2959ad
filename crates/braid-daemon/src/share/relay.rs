//! The sharer's data plane: one LAN socket members send to, and per granted member address one
//! WAN socket connected to the member's server. A path packet from a granted address leaves on
//! its WAN socket as it came (sealed member↔server: the sharer never opens it); what the server
//! sends back on that socket goes to the member from the LAN socket. Seed 000 (§IV, §VI) joins
//! its proxy to each piconet member's WAN link by a GRE tunnel per member; here that tunnel is
//! one UDP 4-tuple each way, and the packets inside stay sealed end to end.
//!
//! Hostile input costs little: a datagram from an address without a relay is counted and
//! dropped after one hash-map lookup (no allocation); an allocation message costs one BLAKE2s
//! MAC before any Diffie-Hellman, and they are rate-limited per source address and in all.

use super::bucket::Bucket;
use super::config::ShareSettings;
use super::members::{Member, Members};
use super::noise::SharerKeys;
use super::usage::UsageKeeper;
use super::wire::{Grant, Status, INIT_LEN, TYPE_ALLOC_INIT};
use crate::udp::canonical;
use braid_core::PublicKey;
use chrono::NaiveDate;
use socket2::{Domain, Protocol, Socket, Type};
use std::collections::{HashMap, HashSet};
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};
use tokio::net::UdpSocket;
use tokio::task::JoinHandle;

/// Allocation messages handled per second, all sources together.
const HANDSHAKES_PER_SEC: u64 = 200;
/// Allocation messages handled per second from one IP address.
const HANDSHAKES_PER_SOURCE: u64 = 10;
/// Source addresses whose allocation rate is tracked (the table starts afresh when full).
const TRACKED_SOURCES: usize = 1024;
/// Relays one member may hold at once (one per path it opens through this sharer).
const RELAYS_PER_MEMBER: usize = 8;
/// Largest datagram relayed.
const MAX_DATAGRAM: usize = 65535;

/// Counters of the sharer.
#[derive(Debug, Default)]
pub struct Counters {
    /// Datagrams from addresses without a relay, dropped.
    pub strangers: AtomicU64,
    /// Allocation messages malformed or with a bad mac1.
    pub malformed: AtomicU64,
    /// Allocation messages that did not open, or over the handshake rate.
    pub unopened: AtomicU64,
    /// Allocations refused (key, server, cap, replay, full).
    pub refused: AtomicU64,
    /// Allocations granted.
    pub granted: AtomicU64,
    /// Bytes relayed, both directions.
    pub relayed_bytes: AtomicU64,
    /// Datagrams relayed, both directions.
    pub relayed_packets: AtomicU64,
}

/// One member address and its WAN socket.
pub struct Relay {
    /// The member.
    pub member: Arc<Member>,
    /// Its address on the LAN.
    pub from: SocketAddr,
    /// Its server.
    pub server: SocketAddr,
    wan: Arc<UdpSocket>,
    /// Milliseconds since the sharer started when the member last sent.
    heard: AtomicU64,
    since: Instant,
    task: Mutex<Option<JoinHandle<()>>>,
}

impl Relay {
    fn stop(&self) {
        if let Some(t) = self.task.lock().unwrap_or_else(|e| e.into_inner()).take() {
            t.abort();
        }
    }
}

/// The sharer's state, shared by its tasks.
pub struct Shared {
    /// Settings.
    pub settings: ShareSettings,
    keys: SharerKeys,
    /// Members.
    pub members: Members,
    /// Where their usage is kept.
    pub usage: UsageKeeper,
    relays: RwLock<HashMap<SocketAddr, Arc<Relay>>>,
    /// The LAN socket.
    pub lan: Arc<UdpSocket>,
    /// All members together: the spare capacity the owner leaves (unlimited without priority).
    pub gate: Mutex<Bucket>,
    handshakes: Mutex<Bucket>,
    /// Allocation messages per source IP: one source cannot take every member's turn.
    per_source: Mutex<HashMap<IpAddr, Bucket>>,
    /// Counters.
    pub counters: Counters,
    /// The owner's own rate on the WAN link, bytes/s (owner priority only).
    pub owner_rate: AtomicU64,
    epoch: Instant,
    day: AtomicI32,
}

/// A relay's line in the status.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct RelayStatus {
    /// Member name.
    pub member: String,
    /// Member address on the LAN.
    pub from: SocketAddr,
    /// Server.
    pub server: SocketAddr,
    /// Seconds since granted.
    pub age_secs: u64,
    /// Milliseconds since the member last sent.
    pub idle_ms: u64,
}

fn today() -> NaiveDate {
    chrono::Local::now().date_naive()
}

impl Shared {
    /// State for `settings` around the bound LAN socket; members count on from the usage
    /// kept in `settings.usage_file`.
    pub fn new(settings: ShareSettings, lan: UdpSocket) -> Result<Shared, super::noise::HandshakeError> {
        let keys = SharerKeys::new(&settings.secret, settings.community.as_ref().map(|c| c.key))?;
        let (usage, saved) = UsageKeeper::open(&settings.usage_file, &settings.secret.public_key());
        let mut members = Members::new(&settings);
        members.restore(saved, today());
        Ok(Shared {
            settings,
            keys,
            members,
            usage,
            relays: RwLock::new(HashMap::new()),
            lan: Arc::new(lan),
            gate: Mutex::new(Bucket::new(None)),
            handshakes: Mutex::new(Bucket::new(Some(HANDSHAKES_PER_SEC * INIT_LEN as u64))),
            per_source: Mutex::new(HashMap::new()),
            counters: Counters::default(),
            owner_rate: AtomicU64::new(0),
            epoch: Instant::now(),
            day: AtomicI32::new(chrono::Datelike::num_days_from_ce(&today())),
        })
    }

    /// The calendar day now (renewed by [`Shared::sweep`]).
    pub fn day(&self) -> NaiveDate {
        NaiveDate::from_num_days_from_ce_opt(self.day.load(Ordering::Relaxed)).unwrap_or_else(today)
    }

    /// Time since the sharer started.
    pub fn uptime(&self) -> Duration {
        self.epoch.elapsed()
    }

    fn ms(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64
    }

    /// Whether `bytes` of `member` may be relayed now (member limits, then the members' gate).
    fn pass(&self, member: &Member, bytes: usize, towards_server: bool) -> bool {
        let now = Instant::now();
        if !self.gate.lock().unwrap_or_else(|e| e.into_inner()).has(now, bytes) {
            member.dropped.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        if !member.admit(now, self.day(), bytes, towards_server) {
            return false;
        }
        self.gate.lock().unwrap_or_else(|e| e.into_inner()).take(now, bytes);
        self.counters.relayed_bytes.fetch_add(bytes as u64, Ordering::Relaxed);
        self.counters.relayed_packets.fetch_add(1, Ordering::Relaxed);
        true
    }

    /// The relays now.
    pub fn relays(&self) -> Vec<RelayStatus> {
        let now = self.ms();
        let r = self.relays.read().unwrap_or_else(|e| e.into_inner());
        let mut v: Vec<RelayStatus> = r
            .values()
            .map(|r| RelayStatus {
                member: r.member.name.clone(),
                from: r.from,
                server: r.server,
                age_secs: r.since.elapsed().as_secs(),
                idle_ms: now.saturating_sub(r.heard.load(Ordering::Relaxed)),
            })
            .collect();
        v.sort_by_key(|r| r.from);
        v
    }

    /// Keys of the members with a relay open.
    pub fn relaying(&self) -> HashSet<PublicKey> {
        self.relays.read().unwrap_or_else(|e| e.into_inner()).values().map(|r| r.member.key).collect()
    }

    /// Whether an allocation message from `ip` may be opened now (per source, then in all).
    fn may_open(&self, ip: IpAddr) -> bool {
        let now = Instant::now();
        {
            let mut t = self.per_source.lock().unwrap_or_else(|e| e.into_inner());
            if t.len() >= TRACKED_SOURCES && !t.contains_key(&ip) {
                t.clear();
            }
            let b = t.entry(ip).or_insert_with(|| Bucket::new(Some(HANDSHAKES_PER_SOURCE * INIT_LEN as u64)));
            if !b.take(now, INIT_LEN) {
                return false;
            }
        }
        self.handshakes.lock().unwrap_or_else(|e| e.into_inner()).take(now, INIT_LEN)
    }

    /// Handles one allocation message from `from`.
    async fn on_init(self: &Arc<Self>, msg: &[u8], from: SocketAddr) {
        let c = &self.counters;
        if self.keys.check(msg).is_err() {
            c.malformed.fetch_add(1, Ordering::Relaxed);
            return;
        }
        if !self.may_open(from.ip()) {
            c.unopened.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let opened = match self.keys.open(msg) {
            Ok(o) => o,
            Err(e) => {
                tracing::debug!(%from, error = %e, "allocation request not opened");
                c.unopened.fetch_add(1, Ordering::Relaxed);
                return;
            }
        };
        let server = canonical(opened.request.server);
        let decision = if !self.settings.servers.iter().any(|s| canonical(*s) == server) {
            Err(Status::ServerNotAllowed)
        } else {
            match self.members.admit(&opened.member, opened.mode, opened.request.timestamp, self.day()) {
                Ok(m) => self.grant(m, from, server).await,
                Err(s) => Err(s),
            }
        };
        let grant = match decision {
            Ok(m) => {
                c.granted.fetch_add(1, Ordering::Relaxed);
                Grant {
                    status: Status::Granted,
                    rate: m.rate_now().unwrap_or(0),
                    cap_left: m.cap_left(),
                    lease_secs: self.settings.lease.as_secs().min(u16::MAX as u64) as u16,
                }
            }
            Err(s) => {
                c.refused.fetch_add(1, Ordering::Relaxed);
                // Anyone may make a key: a stranger's refusal is not worth a line each time.
                if s == Status::KeyNotAdmitted {
                    tracing::debug!(%from, member = %opened.member, reason = s.describe(), "allocation refused");
                } else {
                    tracing::info!(%from, member = %opened.member, reason = s.describe(), "allocation refused");
                }
                Grant::refused(s)
            }
        };
        if let Ok(resp) = opened.answer(grant) {
            let _ = self.lan.send_to(&resp, from).await;
        }
    }

    /// Opens (or keeps) the relay of `from` to `server` for `member`.
    async fn grant(
        self: &Arc<Self>,
        member: Arc<Member>,
        from: SocketAddr,
        server: SocketAddr,
    ) -> Result<Arc<Member>, Status> {
        {
            let relays = self.relays.read().unwrap_or_else(|e| e.into_inner());
            if let Some(r) = relays.get(&from) {
                if r.server == server && Arc::ptr_eq(&r.member, &member) {
                    r.heard.store(self.ms(), Ordering::Relaxed);
                    return Ok(member);
                }
            } else if relays.len() >= self.settings.max_relays {
                return Err(Status::Full);
            }
        }
        let wan = match bind_wan(server, self.settings.wan_interface.as_deref()) {
            Ok(w) => Arc::new(w),
            Err(e) => {
                tracing::warn!(%server, error = %e, "cannot open a WAN socket for a member");
                return Err(Status::Full);
            }
        };
        let relay = Arc::new(Relay {
            member: member.clone(),
            from,
            server,
            wan: wan.clone(),
            heard: AtomicU64::new(self.ms()),
            since: Instant::now(),
            task: Mutex::new(None),
        });
        let t = tokio::spawn(downstream(self.clone(), relay.clone()));
        *relay.task.lock().unwrap_or_else(|e| e.into_inner()) = Some(t);
        let mut relays = self.relays.write().unwrap_or_else(|e| e.into_inner());
        // One member holds a bounded number of relays: its oldest goes.
        let mine: Vec<(Instant, SocketAddr)> = relays
            .values()
            .filter(|r| Arc::ptr_eq(&r.member, &member) && r.from != from)
            .map(|r| (r.since, r.from))
            .collect();
        if mine.len() >= RELAYS_PER_MEMBER {
            if let Some((_, oldest)) = mine.iter().min() {
                if let Some(old) = relays.remove(oldest) {
                    old.stop();
                }
            }
        }
        if let Some(old) = relays.insert(from, relay) {
            old.stop();
        }
        tracing::info!(member = %member.name, %from, %server, local = ?wan.local_addr().ok(), "relay granted");
        Ok(member)
    }

    /// Forgets relays silent longer than the lease; renews the calendar day.
    pub fn sweep(&self) {
        self.day.store(chrono::Datelike::num_days_from_ce(&today()), Ordering::Relaxed);
        let now = self.ms();
        let lease = self.settings.lease.as_millis() as u64;
        let day = self.day();
        let mut relays = self.relays.write().unwrap_or_else(|e| e.into_inner());
        relays.retain(|_, r| {
            let idle = now.saturating_sub(r.heard.load(Ordering::Relaxed)) > lease;
            let stopped = r.member.stopped(day);
            if idle || stopped {
                tracing::info!(member = %r.member.name, from = %r.from, idle, stopped, "relay closed");
                r.stop();
            }
            !(idle || stopped)
        });
    }

    /// Stops every relay.
    pub fn stop_all(&self) {
        let mut relays = self.relays.write().unwrap_or_else(|e| e.into_inner());
        for r in relays.values() {
            r.stop();
        }
        relays.clear();
    }
}

/// A UDP socket towards `server`, bound to `device` when given.
fn bind_wan(server: SocketAddr, device: Option<&str>) -> io::Result<UdpSocket> {
    let (domain, any) = if server.is_ipv4() {
        (Domain::IPV4, IpAddr::V4(Ipv4Addr::UNSPECIFIED))
    } else {
        (Domain::IPV6, IpAddr::V6(Ipv6Addr::UNSPECIFIED))
    };
    let s = Socket::new(domain, Type::DGRAM, Some(Protocol::UDP))?;
    if let Some(d) = device {
        s.bind_device(Some(d.as_bytes()))?;
    }
    let _ = s.set_recv_buffer_size(4 << 20);
    let _ = s.set_send_buffer_size(4 << 20);
    s.bind(&SocketAddr::new(any, 0).into())?;
    s.connect(&server.into())?;
    s.set_nonblocking(true)?;
    UdpSocket::from_std(s.into())
}

/// Server → member, for one relay.
async fn downstream(shared: Arc<Shared>, relay: Arc<Relay>) {
    let mut buf = vec![0u8; MAX_DATAGRAM];
    loop {
        let n = match relay.wan.recv(&mut buf).await {
            Ok(n) => n,
            Err(e) => {
                // ICMP errors from the server's side surface here; the relay stays.
                tracing::debug!(server = %relay.server, error = %e, "WAN receive error");
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        if shared.pass(&relay.member, n, false) {
            let _ = shared.lan.send_to(&buf[..n], relay.from).await;
        }
    }
}

/// Member → server: the LAN socket's loop.
pub async fn upstream(shared: Arc<Shared>) {
    let mut buf = vec![0u8; MAX_DATAGRAM];
    loop {
        let (n, from) = match shared.lan.recv_from(&mut buf).await {
            Ok(x) => x,
            Err(e) => {
                tracing::debug!(error = %e, "LAN receive error");
                tokio::time::sleep(Duration::from_millis(1)).await;
                continue;
            }
        };
        let from = canonical(from);
        let pkt = &buf[..n];
        if pkt.first() == Some(&TYPE_ALLOC_INIT) {
            shared.on_init(pkt, from).await;
            continue;
        }
        let relay = shared.relays.read().unwrap_or_else(|e| e.into_inner()).get(&from).cloned();
        let Some(relay) = relay else {
            shared.counters.strangers.fetch_add(1, Ordering::Relaxed);
            continue;
        };
        relay.heard.store(shared.ms(), Ordering::Relaxed);
        if shared.pass(&relay.member, n, true) {
            let _ = relay.wan.send(pkt).await;
        }
    }
}
