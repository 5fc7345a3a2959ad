//! Starting an iperf3 server in the server namespace and waiting until it listens.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use anyhow::{bail, Result};

use crate::sys::netns::{tcp_listening, NetFile};
use crate::sys::proc::{Proc, Stdin};
use crate::sys::signal;

/// How long a server may take to listen.
const LISTEN_LIMIT: Duration = Duration::from_secs(5);

/// Starts `iperf3 -s -p port -i 0.1 -J` in `ns` (under `mptcpize run` if `mptcp`); its JSON
/// log goes to `log`.
pub fn start_server(ns: &str, port: u16, mptcp: bool, log: &Path) -> Result<Proc> {
    let mut c = Command::new("ip");
    c.args(["netns", "exec", ns]);
    if mptcp {
        c.args(["mptcpize", "run"]);
    }
    c.args(["iperf3", "-s", "-p", &port.to_string(), "-J"]).args(["-i", &super::INTERVAL_S.to_string()]);
    let mut p = Proc::spawn(&format!("iperf3 server :{port}"), c, log, Stdin::Null)?;
    wait_listening(ns, port, &mut p, LISTEN_LIMIT)?;
    Ok(p)
}

/// Waits until TCP `port` listens in `ns`, failing early if `p` exits.
pub fn wait_listening(ns: &str, port: u16, p: &mut Proc, limit: Duration) -> Result<()> {
    let mut tcp = NetFile::open(ns, "tcp")?;
    let mut tcp6 = NetFile::open(ns, "tcp6")?;
    let mut exited = None;
    let ok = signal::poll_until(limit, Duration::from_millis(20), || {
        if let Ok(Some(s)) = p.try_wait() {
            exited = Some(s);
            return Some(false);
        }
        let (a, b) = (tcp.read().unwrap_or_default(), tcp6.read().unwrap_or_default());
        tcp_listening(&[&a, &b], port).then_some(true)
    })?;
    match (ok, exited) {
        (Some(true), _) => Ok(()),
        (_, Some(s)) => bail!("{} exited ({s}): {}", p.name(), p.log_tail(400)),
        _ => bail!(
            "{} does not listen on port {port} after {}s: {}",
            p.name(),
            limit.as_secs(),
            p.log_tail(400)
        ),
    }
}
