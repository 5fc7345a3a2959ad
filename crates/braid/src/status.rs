//! `braid status`: the per-path table of a running daemon, from its status API (pointed at a
//! `braid share`, the sharer's table: [`crate::share_status`]), and `--scheduler` to switch it
//! (a change: it sends the daemon's control token, read from the file the daemon wrote at
//! start — see `braid_daemon::control`).

use braid_core::units::{format_bytes, format_rate};
use braid_daemon::control;
use braid_daemon::share::status::{ShareStatus, ROLE as SHARER};
use braid_daemon::share::{is_neighbour_label, VIA};
use braid_daemon::status::Status;
use clap::Args;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

/// Arguments of `braid status`.
#[derive(Args, Debug)]
pub struct StatusArgs {
    /// The daemon's status address (its --status; a `braid share`'s `status`).
    #[arg(long, default_value = "127.0.0.1:7002", value_name = "ADDR:PORT")]
    addr: SocketAddr,
    /// Refresh every second until interrupted; rates are then averaged over each second from
    /// the daemon's byte counters.
    #[arg(long)]
    watch: bool,
    /// Print the raw JSON document.
    #[arg(long)]
    json: bool,
    /// Switch the daemon's sessions to this scheduler, live (streams go on), then print.
    #[arg(long, value_name = "NAME")]
    scheduler: Option<String>,
    /// Turn path admission on or off, live (seed 000's C·B/(R·√p) bound, seed 002's rules:
    /// a path that would lower the total waits in standby), then print.
    #[arg(long, value_name = "on|off", value_parser = ["on", "off"])]
    admission: Option<String>,
    /// Change a link's policy, live (a client): the link's name, then KEY=VALUE settings —
    /// tier=primary|secondary|backup|never, weight=N|auto, max_rate=RATE|none, cap=SIZE|none,
    /// cap_period=daily|weekly|monthly, cap_reset_day=N, cap_reset_hour=H,
    /// cap_action=demote|stop|throttle:RATE. Example: --link wwan0 tier=backup cap=20GB
    #[arg(long, num_args = 2.., value_name = "NAME KEY=VALUE")]
    link: Vec<String>,
    /// The daemon's control token file (its status_token_file; default: found from --addr).
    #[arg(long, value_name = "FILE")]
    token_file: Option<PathBuf>,
}

/// One exchange with the status API (through [`braid_http`]); the answer's status code and
/// body.
fn exchange(addr: SocketAddr, req: braid_http::Request<'_>) -> Result<(u16, String), String> {
    let stream = braid_http::connect(addr, Duration::from_secs(2)).map_err(|e| match e {
        braid_http::Error::Connect { source, .. } => {
            format!("cannot reach a braid daemon at {addr}: {source} (is it running with --status {addr}?)")
        }
        e => e.to_string(),
    })?;
    let answer =
        braid_http::exchange(stream, addr, req, Duration::from_secs(5)).map_err(|e| e.to_string())?;
    Ok((answer.status, answer.body))
}

/// The control token of the daemon at `addr`: from `file`, or the first of the places the
/// daemon writes it ([`control::token_candidates`]) that exists. The error says what to do.
pub fn find_token(addr: SocketAddr, file: Option<&Path>) -> Result<String, String> {
    let unreadable = |p: &Path, e: std::io::Error| {
        let hint = if e.kind() == std::io::ErrorKind::PermissionDenied {
            " — only the daemon's user may read it: run braid status as that user (e.g. with sudo)"
        } else {
            ""
        };
        format!("cannot read the control token {}: {e}{hint}", p.display())
    };
    if let Some(p) = file {
        return control::read_token(p).map_err(|e| unreadable(p, e));
    }
    let candidates = control::token_candidates(addr);
    // A file that is there, or that may be there behind a directory this user cannot enter.
    let present =
        |p: &&PathBuf| !matches!(p.symlink_metadata(), Err(e) if e.kind() == std::io::ErrorKind::NotFound);
    match candidates.iter().find(present) {
        Some(p) => control::read_token(p).map_err(|e| unreadable(p, e)),
        None => Err(format!(
            "no control token for the daemon at {addr}: it writes one at start (looked in {}); if the daemon sets status_token_file, give --token-file FILE",
            candidates.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
        )),
    }
}

/// One authenticated change: `POST path` with `body` and the daemon's control token. Errors
/// carry the exit code: 1 when the daemon cannot be reached or its token cannot be read, 2
/// when it refuses the change or the token.
fn post(addr: SocketAddr, path: &str, body: &str, token_file: Option<&Path>) -> Result<String, (u8, String)> {
    let token = find_token(addr, token_file).map_err(|e| (1, e))?;
    match exchange(addr, braid_http::Request::post(path, body, &token)).map_err(|e| (1, e))? {
        (200, body) => Ok(body.trim().to_string()),
        (_, body) => Err((2, body.trim().to_string())),
    }
}

/// A status document: a client's or server's, or a sharer's.
#[derive(Debug)]
pub enum Document {
    /// `braid client` or `braid server`.
    Daemon(Status),
    /// `braid share`.
    Sharer(ShareStatus),
}

impl Document {
    /// Reads `json`: a sharer's document says so in its `role` (one from before that field
    /// is told by its `members`).
    pub fn parse(json: &str) -> Result<Document, String> {
        let bad = |e: serde_json::Error| format!("not a braid status document: {e}");
        let v: serde_json::Value = serde_json::from_str(json).map_err(bad)?;
        let sharer = match v.get("role") {
            Some(r) => r == SHARER,
            None => v.get("members").is_some(),
        };
        if sharer {
            serde_json::from_value(v).map(Document::Sharer).map_err(bad)
        } else {
            serde_json::from_value(v).map(Document::Daemon).map_err(bad)
        }
    }

    /// As JSON, indented.
    pub fn json(&self) -> String {
        match self {
            Document::Daemon(st) => serde_json::to_string_pretty(st),
            Document::Sharer(st) => serde_json::to_string_pretty(st),
        }
        .unwrap_or_default()
    }

    /// Its table.
    pub fn table(&self) -> String {
        match self {
            Document::Daemon(st) => table(st),
            Document::Sharer(st) => crate::share_status::table(st),
        }
    }
}

/// Fetches `/status`.
pub fn fetch(addr: SocketAddr) -> Result<Document, String> {
    match exchange(addr, braid_http::Request::get("/status"))? {
        (200, json) => Document::parse(&json),
        (code, _) => Err(format!("{addr} answered HTTP {code} to GET /status: not a braid status API")),
    }
}

/// How a path travels: over one of the client's own links, or through a sharer (`via:NAME`);
/// "-" on a server, which knows only the peer's address.
fn travels(link: Option<&str>) -> String {
    match link {
        Some(l) if is_neighbour_label(l) => format!("sharer {}", &l[VIA.len()..]),
        Some(_) => "own link".into(),
        None => "-".into(),
    }
}

/// Turns the byte counters of consecutive documents into rates over exactly the interval
/// between them (`braid status --watch`): what moved in that second, whatever the daemon's own
/// averaging window. The first document keeps the daemon's rates.
#[derive(Default)]
pub struct Smoother {
    /// Per (session, path): when the counters were read and (sent, received, stream received).
    last: BTreeMap<(String, u8), (f64, [u64; 3])>,
}

impl Smoother {
    /// Replaces the rates in `st` by rates since the previous document.
    pub fn apply(&mut self, st: &mut Status) {
        let mut seen = BTreeMap::new();
        for s in &mut st.sessions {
            for p in &mut s.paths {
                let key = (s.id.clone(), p.id);
                let now = [p.bytes_sent, p.bytes_received, p.stream_bytes_received];
                match self.last.get(&key) {
                    Some(&(t, before)) if s.sampled_s > t => {
                        let rate =
                            |i: usize| now[i].saturating_sub(before[i]) as f64 * 8.0 / (s.sampled_s - t);
                        (p.send_bps, p.recv_bps, p.goodput_bps) = (rate(0), rate(1), rate(2));
                        seen.insert(key, (s.sampled_s, now));
                    }
                    // The same publication read twice: keep the base, show the daemon's rates.
                    Some(&old) => {
                        seen.insert(key, old);
                    }
                    None => {
                        seen.insert(key, (s.sampled_s, now));
                    }
                }
            }
        }
        self.last = seen;
    }
}

/// The table.
pub fn table(st: &Status) -> String {
    let mut o = format!("braid {} {} — up {:.0} s\n", st.role, st.version, st.uptime_s);
    if let Some(n) = &st.note {
        o += &format!("{n}\n");
    }
    for s in &st.sessions {
        let up = if s.scheduler_up.is_empty() { "?" } else { &s.scheduler_up };
        o += &format!(
            "session {} — {} — scheduler up {} / down {}{} — {} (key phase {}) — {} streams\n",
            s.id,
            s.peer,
            up,
            s.scheduler_down,
            if s.path_admission { ", path admission" } else { "" },
            s.cipher,
            s.key_phase,
            s.streams
        );
        o += &format!(
            "  {:<4} {:<22} {:<16} {:<8} {:>9} {:>14} {:>14} {:>14} {:>7} {:>7} {:>5}\n",
            "path", "link", "travels", "state", "rtt", "send", "receive", "goodput", "loss", "lost", "mtu"
        );
        for p in &s.paths {
            o += &format!(
                "  {:<4} {:<22} {:<16} {:<8} {:>7.1}ms {:>14} {:>14} {:>14} {:>6.2}% {:>7} {:>5}\n",
                p.id,
                p.link.clone().unwrap_or_else(|| p.remote.clone()),
                travels(p.link.as_deref()),
                p.state,
                p.rtt_ms,
                format_rate(p.send_bps),
                format_rate(p.recv_bps),
                format_rate(p.goodput_bps),
                p.loss * 100.0,
                p.packets_lost,
                p.mtu
            );
        }
        if s.acks_offloaded + s.acks_dropped > 0 {
            o += &format!(
                "  ACKs offloaded to the secondary path: {} packets, {} replaceable dropped\n",
                s.acks_offloaded, s.acks_dropped
            );
        }
        let held: Vec<String> = s.paths.iter().filter(|p| !p.admitted).map(|p| p.id.to_string()).collect();
        if !held.is_empty() {
            o +=
                &format!("  paths in standby by path admission (not worth using now): {}\n", held.join(", "));
        }
    }
    if st.sessions.is_empty() {
        o += "no session\n";
    }
    if !st.links.is_empty() {
        o += &format!(
            "  {:<22} {:<10} {:>6} {:>14} {:>11} {:>11}  {}\n",
            "link", "tier", "weight", "max rate", "sent", "received", "cap"
        );
        for l in &st.links {
            let tier = if l.tier == l.configured_tier { l.tier.clone() } else { format!("{}*", l.tier) };
            let cap = match &l.cap {
                Some(c) => format!(
                    "{} of {} {}{}",
                    format_bytes(l.usage.sent_bytes + l.usage.received_bytes),
                    format_bytes(c.bytes),
                    c.period,
                    if c.reached {
                        format!(" — reached: {}", c.action)
                    } else {
                        format!(", then {}", c.action)
                    }
                ),
                None => "-".into(),
            };
            o += &format!(
                "  {:<22} {:<10} {:>6} {:>14} {:>11} {:>11}  {}\n",
                l.name,
                tier,
                l.weight.map_or("auto".into(), |w| w.to_string()),
                l.max_rate_bps.map_or("-".into(), format_rate),
                format_bytes(l.usage.sent_bytes),
                format_bytes(l.usage.received_bytes),
                cap
            );
        }
    }
    o
}

/// Runs `braid status`.
pub fn run(args: StatusArgs) -> ExitCode {
    let changes = [
        args.scheduler.clone().map(|name| ("/scheduler", name)),
        args.admission.clone().map(|on| ("/admission", on)),
        (!args.link.is_empty()).then(|| ("/link", args.link.join(" "))),
    ];
    for (path, body) in changes.into_iter().flatten() {
        match post(args.addr, path, &body, args.token_file.as_deref()) {
            Ok(msg) => eprintln!("braid status: {msg}"),
            Err((code, e)) => {
                eprintln!("braid status: {e}");
                return ExitCode::from(code);
            }
        }
    }
    let mut smoother = Smoother::default();
    loop {
        match fetch(args.addr) {
            Ok(doc) if args.json => println!("{}", doc.json()),
            Ok(mut doc) => {
                if let (Document::Daemon(st), true) = (&mut doc, args.watch) {
                    smoother.apply(st);
                }
                if args.watch {
                    print!("\x1b[2J\x1b[H");
                }
                print!("{}", doc.table());
            }
            Err(e) => {
                eprintln!("braid status: {e}");
                return ExitCode::from(1);
            }
        }
        if !args.watch {
            return ExitCode::SUCCESS;
        }
        std::thread::sleep(Duration::from_secs(1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use braid_daemon::status::{PathStatus, SessionStatus};

    #[test]
    fn each_path_shows_how_it_travels() {
        let path = |id: u8, link: &str| PathStatus { id, link: Some(link.into()), ..PathStatus::default() };
        let st = Status {
            role: "client".into(),
            sessions: vec![SessionStatus {
                paths: vec![path(0, "wwan0"), path(1, "via:alice-phone")],
                ..SessionStatus::default()
            }],
            ..Status::default()
        };
        let t = table(&st);
        let lines: Vec<&str> = t.lines().collect();
        let col = lines[2].find("travels").expect("a travels column");
        assert_eq!(&lines[3][col..col + 8], "own link", "{t}");
        assert_eq!(&lines[4][col..col + 19], "sharer alice-phone ", "{t}");
        // A server knows only the peer's address.
        let server = Status {
            role: "server".into(),
            sessions: vec![SessionStatus {
                paths: vec![PathStatus { remote: "198.51.100.4:40000".into(), ..PathStatus::default() }],
                ..SessionStatus::default()
            }],
            ..Status::default()
        };
        let t = table(&server);
        let lines: Vec<&str> = t.lines().collect();
        assert!(lines[3].contains("198.51.100.4:40000") && lines[3][col..].starts_with('-'), "{t}");
    }

    #[test]
    fn a_sharers_document_is_told_from_a_daemons() {
        let sharer = r#"{"role": "sharer", "name": "n", "key": "k", "listen": "10.0.0.1:7400",
            "servers": [], "members": [], "relays": [], "members_rate_limit": null,
            "owner_rate": null, "strangers_dropped": 0, "malformed": 0, "unopened": 0,
            "refused": 0, "granted": 3}"#;
        match Document::parse(sharer).unwrap() {
            Document::Sharer(s) => assert_eq!((s.name.as_str(), s.granted), ("n", 3)),
            d => panic!("{d:?}"),
        }
        // A sharer from before the role field, told by its members.
        let old = sharer.replace(r#""role": "sharer","#, "");
        assert!(matches!(Document::parse(&old).unwrap(), Document::Sharer(_)));
        let client = serde_json::to_string(&Status { role: "client".into(), ..Status::default() }).unwrap();
        match Document::parse(&client).unwrap() {
            Document::Daemon(s) => assert_eq!(s.role, "client"),
            d => panic!("{d:?}"),
        }
        assert!(Document::parse("{\"role\": \"sharer\"}").unwrap_err().starts_with("not a braid status"));
    }

    #[test]
    fn the_table_shows_each_path_with_its_mtu() {
        let path = |id: u8, link: &str, mtu: usize| PathStatus {
            id,
            link: Some(link.into()),
            state: "active".into(),
            rtt_ms: 12.5,
            send_bps: 20e6,
            mtu,
            ..PathStatus::default()
        };
        let st = Status {
            role: "client".into(),
            sessions: vec![SessionStatus {
                paths: vec![path(0, "lte0", 1452), path(1, "wg-tunnel", 1372)],
                ..SessionStatus::default()
            }],
            ..Status::default()
        };
        let t = table(&st);
        let lines: Vec<&str> = t.lines().collect();
        assert!(lines[2].trim_end().ends_with("mtu"), "{t}");
        assert!(lines[3].contains("lte0") && lines[3].trim_end().ends_with("1452"), "{t}");
        assert!(lines[4].contains("wg-tunnel") && lines[4].trim_end().ends_with("1372"), "{t}");
        assert!(lines[4].contains("12.5ms"), "{t}");
    }

    /// Seed 003's Offloader counters get a line of their own once it has acted (and none
    /// with the other ACK paths, where they stay 0).
    #[test]
    fn the_table_shows_offloaded_acks() {
        let doc = |offloaded: u64, dropped: u64| Status {
            role: "client".into(),
            sessions: vec![SessionStatus {
                acks_offloaded: offloaded,
                acks_dropped: dropped,
                paths: vec![PathStatus { id: 0, ..PathStatus::default() }],
                ..SessionStatus::default()
            }],
            ..Status::default()
        };
        let t = table(&doc(1234, 5));
        assert!(
            t.contains("ACKs offloaded to the secondary path: 1234 packets, 5 replaceable dropped"),
            "{t}"
        );
        assert!(!table(&doc(0, 0)).contains("ACKs offloaded"));
    }

    /// A rate-limited download: 8.5 MB arrive between two samples a second apart, in a burst
    /// the daemon's own window may have left behind: the watch shows them over its second.
    #[test]
    fn watch_rates_are_byte_counters_over_the_sampling_interval() {
        let doc = |at: f64, received: u64, daemon_bps: f64| Status {
            sessions: vec![SessionStatus {
                id: "00000000000000a5".into(),
                sampled_s: at,
                paths: vec![PathStatus {
                    id: 0,
                    bytes_received: received,
                    stream_bytes_received: received / 2,
                    recv_bps: daemon_bps,
                    ..PathStatus::default()
                }],
                ..SessionStatus::default()
            }],
            ..Status::default()
        };
        let mut w = Smoother::default();
        let mut first = doc(10.0, 1_000_000, 7.0);
        w.apply(&mut first);
        assert_eq!(first.sessions[0].paths[0].recv_bps, 7.0, "the first sample keeps the daemon's rate");
        let mut second = doc(11.0, 9_500_000, 0.0);
        w.apply(&mut second);
        let p = &second.sessions[0].paths[0];
        assert!((p.recv_bps - 68e6).abs() < 1.0, "{}", p.recv_bps);
        assert!((p.goodput_bps - 34e6).abs() < 1.0, "{}", p.goodput_bps);
        // The same publication read again: no division by zero, no zero rate.
        let mut again = doc(11.0, 9_500_000, 5.0);
        w.apply(&mut again);
        assert_eq!(again.sessions[0].paths[0].recv_bps, 5.0);
        let mut third = doc(11.5, 10_500_000, 0.0);
        w.apply(&mut third);
        assert!((third.sessions[0].paths[0].recv_bps - 16e6).abs() < 1.0);
    }
}
