//! Configuration: one TOML file per side (`--config FILE`), every value also settable by flag.
//! A bad file gets one error naming the file, the line, the key and what is wrong.
//!
//! See `examples/server.toml` and `examples/client.toml` in the repository for every key.

use crate::classes::{ClassSection, Classifier};
use crate::egress::EgressPolicy;
use crate::error::Failure;
use crate::keyfile;
use crate::linkpolicy::{CapAction, CapPeriod, LinkPolicy, Tier};
use braid_core::cc::Algorithm;
use braid_core::crypto::aead::Cipher;
use braid_core::scheduler::Kind;
use braid_core::units::parse_duration;
use braid_core::{AckPath, PublicKey, SessionConfig, StaticSecret};
use serde::de::{self, Deserializer};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

/// A value parsed with `FromStr` while deserializing, so that errors carry the file position.
#[derive(Debug, Clone)]
pub struct Parsed<T>(pub T);

impl<'de, T: FromStr> Deserialize<'de> for Parsed<T>
where
    T::Err: std::fmt::Display,
{
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map(Parsed).map_err(de::Error::custom)
    }
}

/// A duration such as "30s".
#[derive(Debug, Clone, Copy)]
pub struct DurationText(pub Duration);

impl<'de> Deserialize<'de> for DurationText {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        parse_duration(&s).map(DurationText).map_err(de::Error::custom)
    }
}

/// `[session]`: protocol tuning shared by both sides.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionSection {
    scheduler: Option<Parsed<Kind>>,
    congestion: Option<Parsed<Algorithm>>,
    idle_timeout: Option<DurationText>,
    handshake_timeout: Option<DurationText>,
    keepalive: Option<DurationText>,
    max_streams: Option<u64>,
    stream_window: Option<u64>,
    session_window: Option<u64>,
    send_buffer: Option<u64>,
    max_datagram_size: Option<usize>,
    mtu_ceiling: Option<usize>,
    ack_path: Option<String>,
    blackout_freeze: Option<bool>,
    loss_discrimination: Option<bool>,
    loss_fetching: Option<bool>,
    cipher: Option<Parsed<Cipher>>,
    key_update_packets: Option<u64>,
    key_update_interval: Option<DurationText>,
    path_admission: Option<bool>,
    redundancy: Option<Parsed<braid_core::Redundancy>>,
    redundancy_first_bytes: Option<u64>,
    redundancy_share: Option<f64>,
    loss_judge: Option<Parsed<braid_core::path::judge::LossJudge>>,
    receiver_reports: Option<bool>,
    receive_window_cap: Option<u64>,
}

impl SessionSection {
    fn apply(&self, c: &mut SessionConfig) -> Result<(), String> {
        if let Some(v) = &self.scheduler {
            c.scheduler = v.0;
        }
        if let Some(v) = &self.congestion {
            c.congestion = v.0;
        }
        if let Some(v) = self.idle_timeout {
            c.idle_timeout = v.0;
        }
        if let Some(v) = self.handshake_timeout {
            c.handshake_timeout = v.0;
        }
        if let Some(v) = self.keepalive {
            c.keepalive_interval = v.0;
        }
        if let Some(v) = self.max_streams {
            c.max_streams = v;
        }
        if let Some(v) = self.stream_window {
            c.stream_window = v;
        }
        if let Some(v) = self.session_window {
            c.session_window = v;
        }
        if let Some(v) = self.send_buffer {
            c.send_buffer = v;
        }
        if let Some(v) = self.max_datagram_size {
            if !(1200..=65000).contains(&v) {
                return Err(format!("session.max_datagram_size: {v} is outside 1200..65000"));
            }
            c.max_datagram_size = v;
        }
        if let Some(v) = self.mtu_ceiling {
            if !(1200..=65000).contains(&v) {
                return Err(format!("session.mtu_ceiling: {v} is outside 1200..65000"));
            }
            c.mtu_ceiling = v;
        }
        if let Some(v) = &self.ack_path {
            c.ack_path = match v.as_str() {
                "lowest-rtt" => AckPath::LowestRtt,
                "same-path" => AckPath::SamePath,
                "secondary" => AckPath::Secondary,
                _ => {
                    return Err(format!("session.ack_path: '{v}' is not lowest-rtt, same-path or secondary"))
                }
            };
        }
        if let Some(v) = self.blackout_freeze {
            c.blackout_freeze = v;
        }
        if let Some(v) = self.loss_discrimination {
            c.loss_discrimination = v;
        }
        if let Some(v) = self.loss_fetching {
            c.loss_fetching = v;
        }
        if let Some(v) = &self.cipher {
            c.cipher = v.0;
        }
        if let Some(v) = self.key_update_packets {
            if v == 0 {
                return Err("session.key_update_packets: must be at least 1".into());
            }
            c.key_update.packets = Some(v);
        }
        if let Some(v) = self.path_admission {
            c.path_admission = v;
        }
        if let Some(v) = &self.redundancy {
            c.redundancy = v.0;
        }
        if let Some(v) = self.redundancy_first_bytes {
            c.redundancy_first_bytes = v;
        }
        if let Some(v) = self.redundancy_share {
            if !(v > 0.0 && v <= 1.0) {
                return Err(format!("session.redundancy_share: {v} is outside (0, 1]"));
            }
            c.redundancy_share = v;
        }
        if let Some(v) = &self.loss_judge {
            c.loss_judge = v.0;
        }
        if let Some(v) = self.receiver_reports {
            c.receiver_reports = v;
        }
        if let Some(v) = self.receive_window_cap {
            c.receive_window_cap = v;
        }
        if let Some(v) = self.key_update_interval {
            if v.0 < std::time::Duration::from_secs(1) {
                return Err(format!("session.key_update_interval: {:?} is shorter than 1s", v.0));
            }
            c.key_update.interval = v.0;
        }
        Ok(())
    }
}

/// One admitted client in the server file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClientEntry {
    /// A label for logs and status.
    #[serde(default)]
    pub name: Option<String>,
    /// The client's public key.
    pub key: Parsed<PublicKey>,
    /// Streams this client may have open at once.
    #[serde(default)]
    pub max_streams: Option<u64>,
    /// UDP associations this client may have at once.
    #[serde(default)]
    pub max_udp: Option<usize>,
}

/// `[egress]` of the server file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EgressSection {
    #[serde(default)]
    allow_private: bool,
    #[serde(default)]
    allow: Vec<String>,
    #[serde(default)]
    deny: Vec<String>,
}

/// The server file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerFile {
    listen: Option<Parsed<SocketAddr>>,
    key: Option<PathBuf>,
    status: Option<Parsed<SocketAddr>>,
    status_token_file: Option<PathBuf>,
    receive_sockets: Option<usize>,
    #[serde(default)]
    client: Vec<ClientEntry>,
    #[serde(default)]
    egress: EgressSection,
    #[serde(default)]
    session: SessionSection,
}

/// `[links.NAME]` of the client file: one link's policy (see [`LinkPolicy::set`]).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkSection {
    tier: Option<Parsed<Tier>>,
    weight: Option<u32>,
    max_rate: Option<String>,
    cap: Option<String>,
    cap_period: Option<Parsed<CapPeriod>>,
    cap_reset_day: Option<u32>,
    cap_reset_hour: Option<u32>,
    cap_action: Option<Parsed<CapAction>>,
}

impl LinkSection {
    /// The policy, on top of `base` (which `backup = [...]` may have set).
    fn policy(&self, mut base: LinkPolicy) -> Result<LinkPolicy, String> {
        if let Some(t) = &self.tier {
            base.tier = t.0;
        }
        let texts = [
            ("weight", self.weight.map(|w| w.to_string())),
            ("max_rate", self.max_rate.clone()),
            ("cap", self.cap.clone()),
            ("cap_period", self.cap_period.as_ref().map(|p| p.0.name().to_string())),
            ("cap_reset_day", self.cap_reset_day.map(|d| d.to_string())),
            ("cap_reset_hour", self.cap_reset_hour.map(|h| h.to_string())),
            ("cap_action", self.cap_action.as_ref().map(|a| a.0.to_string())),
        ];
        for (k, v) in texts {
            if let Some(v) = v {
                base.set(k, &v)?;
            }
        }
        Ok(base)
    }
}

/// Where link usage is kept.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum UsageFile {
    /// The default place ([`crate::usage_store::default_path`]).
    #[default]
    Default,
    /// This file.
    At(PathBuf),
    /// Counted in memory only (`usage_file = "none"`).
    Off,
}

impl UsageFile {
    /// From the `usage_file` setting: absent is the default place, `"none"` turns it off.
    pub fn from_setting(file: Option<PathBuf>) -> UsageFile {
        match file {
            None => UsageFile::Default,
            Some(p) if p.as_os_str() == "none" => UsageFile::Off,
            Some(p) => UsageFile::At(p),
        }
    }
}

/// The client file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClientFile {
    #[serde(default)]
    links: BTreeMap<String, LinkSection>,
    #[serde(default)]
    class: Vec<ClassSection>,
    usage_file: Option<PathBuf>,
    server: Option<String>,
    server_key: Option<Parsed<PublicKey>>,
    key: Option<PathBuf>,
    #[serde(default)]
    link: Vec<String>,
    #[serde(default)]
    backup: Vec<String>,
    socks: Option<Parsed<SocketAddr>>,
    socks_username: Option<String>,
    socks_password: Option<String>,
    #[serde(default)]
    forward: Vec<String>,
    max_connections: Option<usize>,
    socks_timeout: Option<DurationText>,
    status: Option<Parsed<SocketAddr>>,
    status_token_file: Option<PathBuf>,
    #[serde(default)]
    session: SessionSection,
    #[serde(default)]
    tun: crate::tun::config::TunSection,
    #[serde(default)]
    neighbours: crate::share::config::NeighbourSection,
}

/// A client link as configured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinkKind {
    /// A network interface (socket bound with SO_BINDTODEVICE).
    Interface(String),
    /// A local address.
    Address(IpAddr),
    /// Every interface with a usable address, followed as they come and go.
    Auto,
}

/// One link: how to leave, and (optionally) a server address of its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkConfig {
    /// Interface, address or auto.
    pub kind: LinkKind,
    /// The server address to use on this link (default: the main one).
    pub server: Option<String>,
    /// Used only when the other links are down or saturated.
    pub backup: bool,
}

impl FromStr for LinkConfig {
    type Err = String;
    /// `IFACE`, `ADDRESS`, or `auto`, each optionally followed by `@HOST:PORT`.
    fn from_str(s: &str) -> Result<Self, String> {
        let (what, server) = match s.split_once('@') {
            Some((w, srv)) => (w, Some(srv.to_string())),
            None => (s, None),
        };
        let what = what.trim();
        if what.is_empty() {
            return Err(format!("link '{s}' is empty: use an interface name, a local address or auto"));
        }
        let kind = if what == "auto" {
            LinkKind::Auto
        } else if let Ok(ip) = what.parse::<IpAddr>() {
            LinkKind::Address(ip)
        } else if what.len() <= 15 && what.chars().all(|c| c.is_ascii_alphanumeric() || "-_.:".contains(c)) {
            LinkKind::Interface(what.to_string())
        } else {
            return Err(format!("link '{s}' is neither an interface name, an IP address nor auto"));
        };
        Ok(LinkConfig { kind, server, backup: false })
    }
}

/// A port forward `LISTEN=HOST:PORT` (the habit of `ssh -L`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Forward {
    /// Local address to listen on.
    pub listen: SocketAddr,
    /// Destination the server connects to.
    pub target: String,
}

impl FromStr for Forward {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (l, t) = s.split_once('=').ok_or_else(|| format!("forward '{s}' must be LISTEN=HOST:PORT"))?;
        let listen =
            l.parse().map_err(|_| format!("forward '{s}': '{l}' is not an address:port to listen on"))?;
        crate::appproto::split_host_port(t).map_err(|e| format!("forward '{s}': {e}"))?;
        Ok(Forward { listen, target: t.to_string() })
    }
}

/// Everything a server needs.
#[derive(Debug, Clone)]
pub struct ServerSettings {
    /// UDP address to listen on.
    pub listen: SocketAddr,
    /// Our key.
    pub secret: StaticSecret,
    /// Admitted clients.
    pub clients: Vec<ClientPolicy>,
    /// Where streams and datagrams may go.
    pub egress: EgressPolicy,
    /// Status and metrics HTTP address.
    pub status: Option<SocketAddr>,
    /// Where the status port's control token goes (default: derived from the address).
    pub status_token_file: Option<PathBuf>,
    /// Session tuning.
    pub session: SessionConfig,
    /// UDP sockets on the listening port (`SO_REUSEPORT`), each with a receive loop of its
    /// own; 0: one per core, at most [`MAX_RECEIVE_SOCKETS`].
    pub receive_sockets: usize,
}

/// Most receive sockets `receive_sockets = 0` opens.
pub const MAX_RECEIVE_SOCKETS: usize = 8;

impl ServerSettings {
    /// How many sockets to bind: `receive_sockets`, or one per core when it is 0.
    pub fn receive_socket_count(&self) -> usize {
        match self.receive_sockets {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get()).min(MAX_RECEIVE_SOCKETS),
            n => n,
        }
    }
}

/// One admitted client and its limits.
#[derive(Debug, Clone)]
pub struct ClientPolicy {
    /// Label.
    pub name: String,
    /// Public key.
    pub key: PublicKey,
    /// Open streams at most.
    pub max_streams: u64,
    /// UDP associations at most (each is also one of its `max_streams` streams).
    pub max_udp: usize,
}

/// Everything a client needs.
#[derive(Debug, Clone)]
pub struct ClientSettings {
    /// Server address (host:port).
    pub server: String,
    /// Server public key.
    pub server_key: PublicKey,
    /// Our key.
    pub secret: StaticSecret,
    /// Links, one path each.
    pub links: Vec<LinkConfig>,
    /// Each link's tier, weight, rate and data cap, by link name (interface or address).
    pub link_policies: BTreeMap<String, LinkPolicy>,
    /// Where link usage is kept.
    pub usage_file: UsageFile,
    /// Traffic classes and the rules that choose them.
    pub classes: Arc<Classifier>,
    /// SOCKS5 listen address.
    pub socks: Option<SocketAddr>,
    /// SOCKS5 username and password, if required.
    pub socks_auth: Option<(String, String)>,
    /// Port forwards.
    pub forwards: Vec<Forward>,
    /// Front-end connections (SOCKS5 and forwards) open at once at most.
    pub max_connections: usize,
    /// Time a SOCKS5 connection has for its greeting, authentication and request.
    pub socks_timeout: Duration,
    /// Status and metrics HTTP address.
    pub status: Option<SocketAddr>,
    /// Where the status port's control token goes (default: derived from the address).
    pub status_token_file: Option<PathBuf>,
    /// Session tuning.
    pub session: SessionConfig,
    /// TUN mode (`[tun]`, `--tun`, `--gateway`), if on.
    pub tun: Option<crate::tun::TunSettings>,
    /// Paths through neighbours' shared links (`[neighbours]`), if any.
    pub neighbours: Option<crate::share::config::NeighbourSettings>,
}

/// Default of `max_connections`.
pub const DEFAULT_MAX_CONNECTIONS: usize = 512;
/// Default of `socks_timeout`.
pub const DEFAULT_SOCKS_TIMEOUT: Duration = Duration::from_secs(10);

/// Flags that override the server file.
#[derive(Debug, Default, Clone)]
pub struct ServerFlags {
    /// `--listen`.
    pub listen: Option<SocketAddr>,
    /// `--key`.
    pub key: Option<PathBuf>,
    /// `--client` (repeatable; adds to the file's).
    pub clients: Vec<String>,
    /// `--allow-private`.
    pub allow_private: bool,
    /// `--status`.
    pub status: Option<SocketAddr>,
    /// `--status-token-file`.
    pub status_token_file: Option<PathBuf>,
    /// `--scheduler`.
    pub scheduler: Option<Kind>,
    /// `--set KEY=VALUE` overrides of any file key.
    pub sets: Vec<String>,
}

/// Flags that override the client file.
#[derive(Debug, Default, Clone)]
pub struct ClientFlags {
    /// `--server`.
    pub server: Option<String>,
    /// `--server-key`.
    pub server_key: Option<String>,
    /// `--key`.
    pub key: Option<PathBuf>,
    /// `--link` (replaces the file's when given).
    pub links: Vec<String>,
    /// `--backup` (names of links used as backup).
    pub backup: Vec<String>,
    /// `--socks`.
    pub socks: Option<SocketAddr>,
    /// `--forward` (adds to the file's).
    pub forwards: Vec<String>,
    /// `--status`.
    pub status: Option<SocketAddr>,
    /// `--status-token-file`.
    pub status_token_file: Option<PathBuf>,
    /// `--scheduler`.
    pub scheduler: Option<Kind>,
    /// `--set KEY=VALUE` overrides of any file key.
    pub sets: Vec<String>,
    /// `--tun`, `--gateway`, `--tun-route`, `--tun-dns`.
    pub tun: crate::tun::config::TunFlags,
}

/// Reads and parses a TOML file, turning errors into `FILE:LINE: KEY: problem`, then applies
/// `--set KEY=VALUE` overrides (dotted keys into the same structure as the file).
pub(crate) fn load<T: for<'de> Deserialize<'de> + Default>(
    path: Option<&Path>,
    sets: &[String],
) -> Result<T, Failure> {
    let text = match path {
        Some(path) => std::fs::read_to_string(path)
            .map_err(|e| Failure::Config(format!("config file {}: cannot read it: {e}", path.display())))?,
        None => String::new(),
    };
    let parsed: T = match path {
        Some(path) => {
            toml::from_str(&text).map_err(|e| Failure::Config(describe_toml_error(path, &text, &e)))?
        }
        None => T::default(),
    };
    if sets.is_empty() {
        return Ok(parsed);
    }
    let mut table: toml::Table =
        toml::from_str(&text).map_err(|e| Failure::Config(e.message().to_string()))?;
    for set in sets {
        apply_set(&mut table, set).map_err(|e| Failure::Config(format!("--set '{set}': {e}")))?;
    }
    T::deserialize(toml::Value::Table(table)).map_err(|e| {
        Failure::Config(format!("--set {}: {}", sets.join(" --set "), e.message().trim().replace('\n', " ")))
    })
}

/// Applies one `KEY=VALUE` override: `session.congestion=cubic`, `link=["eth0","wwan0"]`.
/// The value is read as TOML, or as a string when it is not TOML.
pub fn apply_set(table: &mut toml::Table, set: &str) -> Result<(), String> {
    let (key, value) = set.split_once('=').ok_or("expected KEY=VALUE")?;
    let key = key.trim();
    if key.is_empty() || key.split('.').any(str::is_empty) {
        return Err("the key is empty".into());
    }
    let value: toml::Value = toml::from_str::<toml::Table>(&format!("v = {}", value.trim()))
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| toml::Value::String(value.trim().to_string()));
    let mut parts: Vec<&str> = key.split('.').collect();
    let last = parts.pop().expect("at least one part");
    let mut cur = table;
    for p in parts {
        cur = cur
            .entry(p)
            .or_insert_with(|| toml::Value::Table(toml::Table::new()))
            .as_table_mut()
            .ok_or_else(|| format!("'{p}' is not a table"))?;
    }
    cur.insert(last.to_string(), value);
    Ok(())
}

/// One line: `FILE:LINE: KEY: message`.
pub fn describe_toml_error(path: &Path, text: &str, e: &toml::de::Error) -> String {
    let message = e.message().trim().replace('\n', " ");
    match e.span() {
        Some(span) => {
            let line_no = text[..span.start.min(text.len())].matches('\n').count() + 1;
            let line = text.lines().nth(line_no - 1).unwrap_or("");
            let key = line.split('=').next().map(str::trim).filter(|k| !k.is_empty() && !k.starts_with('['));
            match key {
                Some(k) if line.contains('=') => {
                    format!("config file {}:{line_no}: {k}: {message}", path.display())
                }
                _ => format!("config file {}:{line_no}: {message}", path.display()),
            }
        }
        None => format!("config file {}: {message}", path.display()),
    }
}

fn secret_from(path: Option<PathBuf>, what: &str) -> Result<StaticSecret, Failure> {
    let path =
        path.ok_or_else(|| Failure::Config(format!("no {what} key: give --key FILE or key = \"FILE\"")))?;
    keyfile::read_secret(&path, |w| tracing::warn!("{w}"))
}

/// The name of a client admitted without one: the start of its public key, as `wg show`
/// abbreviates peers — the same wherever the key is listed, and recognisable in a key list.
pub fn key_name(key: &PublicKey) -> String {
    let text = key.to_string();
    format!("{}…", &text[..text.len().min(8)])
}

/// The server's congestion controller unless its file says otherwise: `bbr-shared`, whose
/// ProbeRTT drains to half a bandwidth-delay product (`braid_core::cc::bbr::Bbr::shared`). A
/// server's downloads to many clients share its uplink, and with plain `bbr` a session that
/// connects while the others keep that queue full takes several times its share (100
/// downloads through 200 Mbit/s, the last 100 connecting into the queue: largest deviation
/// from the mean 1557 % and 47 %, against 6.6 % and 7.9 % with `bbr-shared`;
/// docs/benchmarks-notes.md). While only one session sends, the server tells it so
/// (`braid_core::crowd`) and its ProbeRTT drains to one BDP, as `bbr`'s does: a lone download
/// does not pay for the crowd's drain.
pub const SERVER_CONGESTION: Algorithm = Algorithm::BbrShared;

/// The client's congestion controller unless its file says otherwise: `bbr-shared` too. The
/// clients' uploads share the server's ingress, which only the server sees; a client starts
/// alone (its ProbeRTT drains to one BDP, as `bbr`'s) and drains as a crowd's while its
/// server says in a SHARING frame that other sessions' uploads arrive too
/// (`braid_core::session::sharing`). Against a server that never says so it runs as `bbr`.
pub const CLIENT_CONGESTION: Algorithm = Algorithm::BbrShared;

impl ServerSettings {
    /// Builds the server settings from an optional file and flags.
    pub fn load(file: Option<&Path>, flags: ServerFlags) -> Result<ServerSettings, Failure> {
        let f: ServerFile = load(file, &flags.sets)?;
        let mut session = SessionConfig {
            cipher: Cipher::fastest_here(),
            congestion: SERVER_CONGESTION,
            ..SessionConfig::default()
        };
        f.session.apply(&mut session).map_err(Failure::Config)?;
        if let Some(k) = flags.scheduler {
            session.scheduler = k;
        }
        let listen = flags.listen.or(f.listen.map(|p| p.0)).ok_or_else(|| {
            Failure::Config("no listen address: give --listen ADDR:PORT or listen = \"...\"".into())
        })?;
        let secret = secret_from(flags.key.or(f.key), "server")?;
        let default_streams = session.max_streams;
        let mut clients: Vec<ClientPolicy> = f
            .client
            .into_iter()
            .map(|c| ClientPolicy {
                name: c.name.unwrap_or_else(|| key_name(&c.key.0)),
                key: c.key.0,
                max_streams: c.max_streams.unwrap_or(default_streams),
                max_udp: c.max_udp.unwrap_or(64),
            })
            .collect();
        for k in &flags.clients {
            let key = k.parse().map_err(|e| Failure::Config(format!("--client '{k}': {e}")))?;
            clients.push(ClientPolicy {
                name: key_name(&key),
                key,
                max_streams: default_streams,
                max_udp: 64,
            });
        }
        if clients.is_empty() {
            return Err(Failure::Config(
                "no clients admitted: add [[client]] key = \"...\" entries or --client PUBKEY".into(),
            ));
        }
        let egress =
            EgressPolicy::new(f.egress.allow_private || flags.allow_private, &f.egress.allow, &f.egress.deny)
                .map_err(|e| Failure::Config(format!("egress: {e}")))?;
        Ok(ServerSettings {
            listen,
            secret,
            clients,
            egress,
            status: flags.status.or(f.status.map(|p| p.0)),
            status_token_file: flags.status_token_file.or(f.status_token_file),
            session,
            receive_sockets: match f.receive_sockets {
                Some(n) if n > 64 => {
                    return Err(Failure::Config(format!(
                        "receive_sockets = {n}: at most 64 (0: one per core)"
                    )))
                }
                n => n.unwrap_or(0),
            },
        })
    }
}

impl ClientSettings {
    /// Builds the client settings from an optional file and flags.
    pub fn load(file: Option<&Path>, flags: ClientFlags) -> Result<ClientSettings, Failure> {
        let f: ClientFile = load(file, &flags.sets)?;
        let mut session = SessionConfig {
            cipher: Cipher::fastest_here(),
            congestion: CLIENT_CONGESTION,
            ..SessionConfig::default()
        };
        f.session.apply(&mut session).map_err(Failure::Config)?;
        if let Some(k) = flags.scheduler {
            session.scheduler = k;
        }
        let server = flags.server.or(f.server).ok_or_else(|| {
            Failure::Config("no server: give --server HOST:PORT or server = \"...\"".into())
        })?;
        crate::appproto::split_host_port(&server)
            .map_err(|e| Failure::Config(format!("server '{server}': {e}")))?;
        let server_key = match flags.server_key {
            Some(k) => k.parse().map_err(|e| Failure::Config(format!("--server-key: {e}")))?,
            None => {
                f.server_key
                    .ok_or_else(|| {
                        Failure::Config(
                            "no server key: give --server-key PUBKEY or server_key = \"...\"".into(),
                        )
                    })?
                    .0
            }
        };
        let secret = secret_from(flags.key.or(f.key), "client")?;
        let link_texts = if flags.links.is_empty() { f.link } else { flags.links };
        let backups: Vec<String> = f.backup.into_iter().chain(flags.backup).collect();
        let mut links = Vec::new();
        for l in &link_texts {
            let mut link: LinkConfig = l.parse().map_err(|e| Failure::Config(format!("link: {e}")))?;
            link.backup = backups.iter().any(|b| l == b || l.split('@').next() == Some(b.as_str()));
            links.push(link);
        }
        if links.is_empty() {
            links.push(LinkConfig { kind: LinkKind::Auto, server: None, backup: false });
        }
        let mut link_policies = BTreeMap::new();
        for b in &backups {
            let name = b.split('@').next().unwrap_or(b).to_string();
            link_policies.insert(name, LinkPolicy { tier: Tier::Backup, ..LinkPolicy::default() });
        }
        for (name, section) in &f.links {
            let base = link_policies.get(name).copied().unwrap_or_default();
            let p = section.policy(base).map_err(|e| Failure::Config(format!("links.{name}: {e}")))?;
            link_policies.insert(name.clone(), p);
        }
        let classes = Classifier::from_sections(&f.class).map_err(Failure::Config)?;
        let usage_file = UsageFile::from_setting(f.usage_file);
        let mut forwards = Vec::new();
        for fw in f.forward.iter().chain(&flags.forwards) {
            forwards.push(fw.parse().map_err(Failure::Config)?);
        }
        let socks_auth = match (f.socks_username, f.socks_password) {
            (Some(u), Some(p)) => Some((u, p)),
            (None, None) => None,
            _ => return Err(Failure::Config("socks_username and socks_password go together".into())),
        };
        let max_connections = f.max_connections.unwrap_or(DEFAULT_MAX_CONNECTIONS);
        if max_connections == 0 {
            return Err(Failure::Config("max_connections: 0 would refuse every connection".into()));
        }
        if f.socks_timeout.is_some_and(|d| d.0.is_zero()) {
            return Err(Failure::Config("socks_timeout: 0 would drop every SOCKS5 connection".into()));
        }
        Ok(ClientSettings {
            server,
            server_key,
            secret,
            links,
            link_policies,
            usage_file,
            classes: Arc::new(classes),
            socks: flags.socks.or(f.socks.map(|p| p.0)),
            socks_auth,
            forwards,
            max_connections,
            socks_timeout: f.socks_timeout.map_or(DEFAULT_SOCKS_TIMEOUT, |d| d.0),
            status: flags.status.or(f.status.map(|p| p.0)),
            status_token_file: flags.status_token_file.or(f.status_token_file),
            session,
            tun: f.tun.settings(&flags.tun).map_err(Failure::Config)?,
            neighbours: f.neighbours.settings().map_err(|e| Failure::Config(format!("neighbours: {e}")))?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(name: &str, text: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("braid-cfg-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn errors_name_file_line_and_key() {
        let p = write("bad1.toml", "server = \"h:1\"\nserver_key = \"!!notbase64\"\n");
        let e = ClientSettings::load(Some(&p), ClientFlags::default()).unwrap_err();
        let m = e.to_string();
        assert!(m.contains("bad1.toml:2: server_key:") && m.contains("base64"), "{m}");
        assert_eq!(e.exit_code(), 2);
        let p = write("bad2.toml", "listen = \"0.0.0.0:7000\"\nlisten_port = 5\n");
        let m = ServerSettings::load(Some(&p), ServerFlags::default()).unwrap_err().to_string();
        assert!(m.contains("bad2.toml:2") && m.contains("listen_port"), "{m}");
        let p = write("bad3.toml", "[session]\nscheduler = \"fastest\"\n");
        let m = ServerSettings::load(Some(&p), ServerFlags::default()).unwrap_err().to_string();
        assert!(m.contains("bad3.toml:2: scheduler:") && m.contains("unknown scheduler"), "{m}");
        let m = ServerSettings::load(None, ServerFlags::default()).unwrap_err().to_string();
        assert!(m.contains("no listen address"), "{m}");
    }

    #[test]
    fn set_overrides_any_key() {
        let p = write("base.toml", "server = \"h:1\"\n[session]\ncongestion = \"bbr\"\n");
        let mut t: toml::Table = toml::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        apply_set(&mut t, "session.congestion=cubic").unwrap();
        apply_set(&mut t, "link=[\"eth0\", \"wwan0\"]").unwrap();
        apply_set(&mut t, "session.idle_timeout=5s").unwrap();
        let f: ClientFile = ClientFile::deserialize(toml::Value::Table(t)).unwrap();
        assert_eq!(f.link, vec!["eth0", "wwan0"]);
        assert!(matches!(f.session.congestion, Some(Parsed(Algorithm::Cubic))));
        assert!(apply_set(&mut toml::Table::new(), "novalue").is_err());
        let flags = ServerFlags { sets: vec!["session.scheduler=warp".into()], ..Default::default() };
        let m = ServerSettings::load(None, flags).unwrap_err().to_string();
        assert!(m.contains("--set session.scheduler=warp") && m.contains("unknown scheduler"), "{m}");
    }

    #[test]
    fn the_papers_session_keys_reach_the_session_config() {
        let text = "[session]\nloss_judge = \"arrival\"\nreceiver_reports = true\n\
                    receive_window_cap = 1000000\nredundancy_first_bytes = 500\nredundancy_share = 0.2\n";
        let f: ClientFile = toml::from_str(&format!("server = \"h:1\"\n{text}")).unwrap();
        let mut c = SessionConfig::default();
        f.session.apply(&mut c).unwrap();
        assert_eq!(c.loss_judge, braid_core::path::judge::LossJudge::Arrival);
        assert!(c.receiver_reports);
        assert_eq!((c.receive_window_cap, c.redundancy_first_bytes), (1_000_000, 500));
        assert_eq!(c.redundancy_share, 0.2);
        for (bad, why) in
            [("loss_judge = \"guess\"", "unknown loss judge"), ("redundancy_share = 1.5", "outside")]
        {
            let p = write("papers-bad.toml", &format!("listen = \"127.0.0.1:0\"\n[session]\n{bad}\n"));
            let m = ServerSettings::load(Some(&p), ServerFlags::default()).unwrap_err().to_string();
            assert!(m.contains(why), "{bad}: {m}");
        }
    }

    #[test]
    fn the_mtu_ceiling_is_a_session_key_with_the_datagram_bounds() {
        let flags = server_flags("mtu.key");
        let s = ServerSettings::load(None, flags(vec![])).unwrap();
        assert_eq!(s.session.mtu_ceiling, braid_core::path::mtu::MAX_CEILING);
        let s = ServerSettings::load(None, flags(vec!["session.mtu_ceiling=1452".into()])).unwrap();
        assert_eq!(s.session.mtu_ceiling, 1452);
        let m = ServerSettings::load(None, flags(vec!["session.mtu_ceiling=70000".into()]))
            .unwrap_err()
            .to_string();
        assert!(m.contains("session.mtu_ceiling: 70000 is outside 1200..65000"), "{m}");
    }

    #[test]
    fn clients_without_a_name_are_named_by_their_key() {
        let key = write("s.key", &format!("{}\n", keyfile::generate().to_base64()));
        let public = keyfile::generate().public_key();
        let flags = ServerFlags {
            listen: Some("127.0.0.1:0".parse().unwrap()),
            key: Some(key),
            clients: vec![public.to_string()],
            ..Default::default()
        };
        let s = ServerSettings::load(None, flags).unwrap();
        let text = public.to_string();
        assert_eq!(s.clients[0].name, format!("{}…", &text[..8]));
    }

    /// Flags for a server with a fresh key (written to `key_file`), one client and `sets`.
    fn server_flags(key_file: &str) -> impl Fn(Vec<String>) -> ServerFlags {
        let key = write(key_file, &format!("{}\n", keyfile::generate().to_base64()));
        move |sets| ServerFlags {
            listen: Some("127.0.0.1:0".parse().unwrap()),
            key: Some(key.clone()),
            clients: vec![keyfile::generate().public_key().to_string()],
            sets,
            ..Default::default()
        }
    }

    #[test]
    fn the_daemon_defaults_to_bbr_shared_and_a_file_may_choose_another() {
        let flags = server_flags("cc.key");
        let s = ServerSettings::load(None, flags(vec![])).unwrap();
        assert_eq!(s.session.congestion, Algorithm::BbrShared);
        let s = ServerSettings::load(None, flags(vec!["session.congestion=bbr".into()])).unwrap();
        assert_eq!(s.session.congestion, Algorithm::Bbr);
        // The client's too (`link_policies_come_from_the_file_and_backup`); the core's own
        // default (the simulator's) stays plain BBR.
        assert_eq!(SessionConfig::default().congestion, Algorithm::Bbr);
    }

    #[test]
    fn receive_sockets_default_to_one_per_core_and_are_bounded() {
        let flags = server_flags("rs.key");
        let s = ServerSettings::load(None, flags(vec![])).unwrap();
        assert_eq!(s.receive_sockets, 0);
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert_eq!(s.receive_socket_count(), cores.min(MAX_RECEIVE_SOCKETS));
        let s = ServerSettings::load(None, flags(vec!["receive_sockets=3".into()])).unwrap();
        assert_eq!(s.receive_socket_count(), 3);
        let m = ServerSettings::load(None, flags(vec!["receive_sockets=65".into()])).unwrap_err().to_string();
        assert!(m.contains("receive_sockets = 65: at most 64"), "{m}");
    }

    #[test]
    fn the_example_files_parse() {
        // The example's key is a placeholder; a real one takes its place.
        let mut t: toml::Table = toml::from_str(include_str!("../../../examples/client.toml")).unwrap();
        t.insert("server_key".into(), toml::Value::String(keyfile::generate().public_key().to_string()));
        let c = ClientFile::deserialize(toml::Value::Table(t)).unwrap();
        let classes = Classifier::from_sections(&c.class).unwrap();
        assert!(classes.classes().iter().any(|k| k.name == "calls"));
        for (name, section) in &c.links {
            section.policy(LinkPolicy::default()).unwrap_or_else(|e| panic!("links.{name}: {e}"));
        }
        let placeholder = "REPLACE-WITH-CLIENT-PUBLIC-KEY";
        let text = include_str!("../../../examples/server.toml");
        assert!(text.contains(placeholder));
        let text = text.replace(placeholder, &keyfile::generate().public_key().to_string());
        let _: ServerFile = toml::from_str(&text).unwrap();
    }

    #[test]
    fn link_policies_come_from_the_file_and_backup() {
        let key = write("c.key", &format!("{}\n", keyfile::generate().to_base64()));
        let text = format!(
            "server = \"h:1\"\nserver_key = \"{}\"\nkey = \"{}\"\nlink = [\"eth0\", \"wwan0\"]\nbackup = [\"eth0\"]\n\
             [links.wwan0]\ntier = \"secondary\"\nweight = 2\nmax_rate = \"8mbit\"\ncap = \"20GB\"\n\
             cap_period = \"weekly\"\ncap_reset_day = 1\ncap_action = \"throttle:1mbit\"\n",
            keyfile::generate().public_key(),
            key.display()
        );
        let p = write("links.toml", &text);
        let s = ClientSettings::load(Some(&p), ClientFlags::default()).unwrap();
        assert_eq!(s.link_policies["eth0"].tier, Tier::Backup);
        let w = s.link_policies["wwan0"];
        assert_eq!((w.tier, w.weight, w.max_rate), (Tier::Secondary, Some(2), Some(1_000_000)));
        assert_eq!(w.cap.unwrap().action, CapAction::Throttle(125_000));
        assert_eq!(s.usage_file, UsageFile::Default);
        assert_eq!(s.session.congestion, Algorithm::BbrShared, "a client file without [session] congestion");
        let bad = write("links2.toml", &text.replace("cap_reset_day = 1", "cap_reset_day = 9"));
        let m = ClientSettings::load(Some(&bad), ClientFlags::default()).unwrap_err().to_string();
        assert!(m.contains("links.wwan0: cap_reset_day 9 is outside 1..=7"), "{m}");
        let bad = write("links3.toml", &text.replace("tier = \"secondary\"", "tier = \"sometimes\""));
        let m = ClientSettings::load(Some(&bad), ClientFlags::default()).unwrap_err().to_string();
        assert!(m.contains("links3.toml:") && m.contains("unknown tier"), "{m}");
        let flags = ClientFlags {
            sets: vec!["links.eth0.tier=never".into(), "usage_file=none".into()],
            ..Default::default()
        };
        let s = ClientSettings::load(Some(&p), flags).unwrap();
        assert_eq!(s.link_policies["eth0"].tier, Tier::Never);
        assert_eq!(s.usage_file, UsageFile::Off);
    }

    #[test]
    fn links_and_forwards_parse() {
        assert_eq!("wwan0".parse::<LinkConfig>().unwrap().kind, LinkKind::Interface("wwan0".into()));
        let l: LinkConfig = "127.0.0.1@127.0.0.1:9001".parse().unwrap();
        assert_eq!(l.kind, LinkKind::Address("127.0.0.1".parse().unwrap()));
        assert_eq!(l.server.as_deref(), Some("127.0.0.1:9001"));
        assert_eq!("auto".parse::<LinkConfig>().unwrap().kind, LinkKind::Auto);
        assert!("".parse::<LinkConfig>().is_err());
        assert!("has space".parse::<LinkConfig>().is_err());
        let f: Forward = "127.0.0.1:8080=example.com:80".parse().unwrap();
        assert_eq!(f.target, "example.com:80");
        assert!("127.0.0.1:8080".parse::<Forward>().is_err());
        assert!("127.0.0.1:8080=nope".parse::<Forward>().is_err());
    }
}
