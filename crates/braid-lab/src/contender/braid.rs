//! braid as a contender, driven through its command-line contract:
//!
//! ```text
//! braid genkey > FILE            braid pubkey < FILE
//! braid server --listen 0.0.0.0:7000 --key FILE --client PUBKEY --allow-private --status 127.0.0.1:7001
//! braid client --server 10.0.1.2:7000 --server-key PUBKEY --key FILE --link 10.0.1.1 --link 10.0.2.1 ...
//!              --forward 127.0.0.1:5300=10.0.1.2:5202 --scheduler NAME --status 127.0.0.1:7002
//! ```
//!
//! The iperf3 client connects to the forward (127.0.0.1:5300 in the client namespace); braid
//! carries it to the iperf3 server at 10.0.1.2:5202. `GET /status` on the client's status port
//! is snapshotted after the transfer into the report's raw files.
//!
//! In TUN mode ([`Front::Tun`]) the client runs with `--tun` instead of `--forward`: the client
//! namespace's default route is braid's TUN, and iperf3 connects straight to
//! [`TUN_TARGET`]:5202, an address of the server namespace that the client namespace has no
//! route to but the TUN's (its links' subnets stay in its main table, so 10.0.i.2 would not go
//! through braid). TCP is terminated by the client's user-space stack and carried as streams;
//! CBR UDP travels as an ordered flow of datagrams.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{bail, Context, Result};

use super::{Running, IPERF_TCP_PORT};
use crate::iperf::{wait_listening, Traffic};
use crate::sys::netns::{http_get, udp_bound, NetFile};
use crate::sys::proc::{Proc, Stdin};
use crate::sys::{cmd, signal};
use crate::topo::{Lab, Names};

/// UDP port of the braid server.
pub const BRAID_PORT: u16 = 7000;
/// Status port of the braid server (server namespace).
pub const SERVER_STATUS_PORT: u16 = 7001;
/// Status port of the braid client (client namespace).
pub const CLIENT_STATUS_PORT: u16 = 7002;
/// Local port of the client's port forward.
pub const FORWARD_PORT: u16 = 5300;
/// The server namespace's address that iperf3 reaches through the TUN.
pub const TUN_TARGET: &str = "10.0.250.2";

/// How traffic enters braid's client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Front {
    /// A port forward on 127.0.0.1:5300.
    Forward,
    /// TUN mode: the client namespace's default route.
    Tun,
}

/// How long each end may take to come up.
const START_LIMIT: Duration = Duration::from_secs(10);

/// The client's command-line arguments after the binary.
pub fn client_args(links: usize, server_pub: &str, key: &Path, scheduler: &str, front: Front) -> Vec<String> {
    let mut a: Vec<String> = vec![
        "client".into(),
        "--server".into(),
        format!("{}:{BRAID_PORT}", Names::srv_addr(1)),
        "--server-key".into(),
        server_pub.into(),
        "--key".into(),
        key.display().to_string(),
    ];
    for i in 1..=links {
        a.extend(["--link".into(), Names::cli_addr(i)]);
    }
    match front {
        Front::Forward => a.extend([
            "--forward".into(),
            format!("127.0.0.1:{FORWARD_PORT}={}:{IPERF_TCP_PORT}", Names::srv_addr(1)),
        ]),
        // The key file's folder is the run's own: the state file of TUN mode goes there.
        Front::Tun => a.extend([
            "--tun".into(),
            format!("--set=tun.state_file={}", key.with_file_name("tun-state.json").display()),
        ]),
    }
    a.extend([
        "--scheduler".into(),
        scheduler.into(),
        "--status".into(),
        format!("127.0.0.1:{CLIENT_STATUS_PORT}"),
    ]);
    a
}

/// The server's command-line arguments after the binary.
pub fn server_args(key: &Path, client_pub: &str) -> Vec<String> {
    vec![
        "server".into(),
        "--listen".into(),
        format!("0.0.0.0:{BRAID_PORT}"),
        "--key".into(),
        key.display().to_string(),
        "--client".into(),
        client_pub.into(),
        "--allow-private".into(),
        "--status".into(),
        format!("127.0.0.1:{SERVER_STATUS_PORT}"),
    ]
}

/// Writes a fresh private key to `file` and returns the matching public key.
pub(super) fn keypair(braid: &Path, file: &Path) -> Result<String> {
    let mut g = Command::new(braid);
    g.arg("genkey");
    let out = cmd::run_with(g, None, cmd::SHORT)?;
    if !out.success() || out.stdout.trim().is_empty() {
        bail!("`braid genkey` failed: {}", out.stderr.trim());
    }
    std::fs::write(file, out.stdout.trim().to_string() + "\n")
        .with_context(|| format!("writing {}", file.display()))?;
    let mut p = Command::new(braid);
    p.arg("pubkey");
    let out = cmd::run_with(p, Some(&out.stdout), cmd::SHORT)?;
    let public = out.stdout.trim().to_string();
    if !out.success() || public.is_empty() {
        bail!("`braid pubkey` failed: {}", out.stderr.trim());
    }
    Ok(public)
}

/// Packets the sender of a transfer declared lost (their frames were sent again), summed over
/// its paths, from its status document; None when the document does not say.
pub fn lost_packets(status_json: &str) -> Option<u64> {
    let v: serde_json::Value = serde_json::from_str(status_json).ok()?;
    let sessions = v.get("sessions")?.as_array()?;
    let mut total = 0;
    for p in sessions.iter().filter_map(|s| s.get("paths")?.as_array()).flatten() {
        total += p.get("packets_lost")?.as_u64()?;
    }
    (!sessions.is_empty()).then_some(total)
}

/// Starts braid server and client with `scheduler`, waits until the forward listens and the
/// status port answers; points `running.target` at the forward.
pub fn start(
    lab: &Lab,
    braid: &Path,
    scheduler: &str,
    front: Front,
    traffic: Traffic,
    tag: &str,
    running: &mut Running,
) -> Result<()> {
    let keys: PathBuf = lab.dir().join(format!("braid-keys-{tag}"));
    std::fs::create_dir_all(&keys)?;
    let (srv_key, cli_key) = (keys.join("server.key"), keys.join("client.key"));
    let srv_pub = keypair(braid, &srv_key)?;
    let cli_pub = keypair(braid, &cli_key)?;

    let mut s = Command::new("ip");
    s.args(["netns", "exec", lab.srv()]).arg(braid).args(server_args(&srv_key, &cli_pub));
    let mut server =
        Proc::spawn("braid server", s, &lab.dir().join(format!("braid-server-{tag}.log")), Stdin::Null)?;
    wait_udp(lab.srv(), BRAID_PORT, &mut server)?;
    running.procs.push(server);
    super::share::start_sharers(lab, braid, &keys, &cli_pub, tag, running)?;

    let mut c = Command::new("ip");
    c.args(["netns", "exec", lab.cli()]).arg(braid).args(client_args(
        lab.own_links(),
        &srv_pub,
        &cli_key,
        scheduler,
        front,
    ));
    if !lab.neighbours().is_empty() {
        c.args(super::share::client_args());
    }
    if front == Front::Tun {
        cmd::run_ok(&["ip", "-n", lab.srv(), "addr", "replace", &format!("{TUN_TARGET}/32"), "dev", "lo"])?;
    }
    let mut client =
        Proc::spawn("braid client", c, &lab.dir().join(format!("braid-client-{tag}.log")), Stdin::Null)?;
    if front == Front::Forward {
        wait_listening(lab.cli(), FORWARD_PORT, &mut client, START_LIMIT)?;
    }
    running.procs.push(client);

    let status: SocketAddr = ([127, 0, 0, 1], CLIENT_STATUS_PORT).into();
    let answered = signal::poll_until(START_LIMIT, Duration::from_millis(100), || {
        http_get(lab.cli(), status, "/status", Duration::from_millis(500)).ok()
    })?;
    running.server_status = Some((lab.srv().to_string(), ([127, 0, 0, 1], SERVER_STATUS_PORT).into()));
    match answered {
        Some(_) if !lab.neighbours().is_empty() => {
            super::share::wait_for_paths(lab, status)?;
            running.status = Some((lab.cli().to_string(), status));
        }
        Some(_) => running.status = Some((lab.cli().to_string(), status)),
        None if front == Front::Tun => {
            // In TUN mode the status port is the only sign that the client is up.
            let tail = running.procs.last().map(|p| p.log_tail(400)).unwrap_or_default();
            bail!("braid client in TUN mode did not come up (status port {status} silent): {tail}");
        }
        None => running.notes.push(format!("braid client status port {status} did not answer GET /status")),
    }
    if front == Front::Tun {
        signal::sleep(Duration::from_secs(1))?;
        running.target.host = TUN_TARGET.into();
        running.target.port = IPERF_TCP_PORT;
        return Ok(());
    }
    if matches!(traffic, Traffic::Udp { .. }) {
        running
            .notes
            .push("CBR UDP sent to the braid forward port: relies on braid forwarding UDP on it".into());
    }
    // Give the paths time to be validated before the transfer starts.
    signal::sleep(Duration::from_secs(1))?;
    running.target.host = "127.0.0.1".into();
    running.target.port = FORWARD_PORT;
    Ok(())
}

fn wait_udp(ns: &str, port: u16, p: &mut Proc) -> Result<()> {
    let mut udp = NetFile::open(ns, "udp")?;
    let mut udp6 = NetFile::open(ns, "udp6")?;
    let ok = signal::poll_until(START_LIMIT, Duration::from_millis(50), || {
        if let Ok(Some(_)) = p.try_wait() {
            return Some(false);
        }
        let (a, b) = (udp.read().unwrap_or_default(), udp6.read().unwrap_or_default());
        udp_bound(&[&a, &b], port).then_some(true)
    })?;
    if ok != Some(true) {
        let exited = p.try_wait()?;
        bail!("{} is not bound to UDP port {port} (exited: {exited:?}): {}", p.name(), p.log_tail(400));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lost_packets_sum_over_paths_or_none() {
        let doc = r#"{"sessions":[{"paths":[{"packets_lost":3},{"packets_lost":4}]}]}"#;
        assert_eq!(lost_packets(doc), Some(7));
        assert_eq!(lost_packets(r#"{"sessions":[]}"#), None);
        assert_eq!(lost_packets(r#"{"sessions":[{"paths":[{"rtt_ms":1}]}]}"#), None);
        assert_eq!(lost_packets("not json"), None);
    }

    #[test]
    fn command_lines_follow_the_contract() {
        let c = client_args(2, "PUB", Path::new("/k/client.key"), "minrtt", Front::Forward).join(" ");
        assert_eq!(
            c,
            "client --server 10.0.1.2:7000 --server-key PUB --key /k/client.key --link 10.0.1.1 --link 10.0.2.1 --forward 127.0.0.1:5300=10.0.1.2:5202 --scheduler minrtt --status 127.0.0.1:7002"
        );
        let t = client_args(1, "PUB", Path::new("/k/client.key"), "edpf", Front::Tun).join(" ");
        assert_eq!(
            t,
            "client --server 10.0.1.2:7000 --server-key PUB --key /k/client.key --link 10.0.1.1 --tun --set=tun.state_file=/k/tun-state.json --scheduler edpf --status 127.0.0.1:7002"
        );
        let s = server_args(Path::new("/k/server.key"), "CPUB").join(" ");
        assert_eq!(
            s,
            "server --listen 0.0.0.0:7000 --key /k/server.key --client CPUB --allow-private --status 127.0.0.1:7001"
        );
    }
}
