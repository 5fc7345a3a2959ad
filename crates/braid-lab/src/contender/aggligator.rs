//! aggligator's `agg-tunnel` as a contender: `agg-tunnel server` in the server namespace
//! forwards port 5202 (the iperf3 server); `agg-tunnel client` in the client namespace listens
//! on 127.0.0.1:5301 and opens one TCP link per local interface to 10.0.1.2 (link port from 5800)
//! (`--tcp-link-filter interface-interface`, its default: sockets bound to c1, c2, ...).
//! It opens those links for each forwarded connection (iperf3's control and data connections
//! each get one aggregated connection over all links), not ahead of time.

use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::Duration;

use anyhow::Result;

use super::{Running, IPERF_TCP_PORT};
use crate::iperf::wait_listening;
use crate::sys::proc::{Proc, Stdin};
use crate::topo::{Lab, Names};

/// First TCP port agg-tunnel's server listens on for links. Each run takes the next port
/// (wrapping after 100): agg-tunnel binds without SO_REUSEADDR, so the previous run's
/// TIME_WAIT connections would make the same port fail with "Address already in use".
pub const AGG_LINK_PORT: u16 = 5800;

static RUNS: AtomicU16 = AtomicU16::new(0);
/// Local port the agg-tunnel client forwards to the iperf3 server.
pub const AGG_LOCAL_PORT: u16 = 5301;

/// Starts both ends and waits for the links; points `running.target` at the tunnel.
pub fn start(lab: &Lab, agg: &Path, tag: &str, running: &mut Running) -> Result<()> {
    let link_port = AGG_LINK_PORT + RUNS.fetch_add(1, Ordering::Relaxed) % 100;
    let mut s = Command::new("ip");
    s.env("RUST_BACKTRACE", "0");
    s.args(["netns", "exec", lab.srv()]).arg(agg).args(["server", "--tcp", &link_port.to_string()]).args([
        "--port",
        &IPERF_TCP_PORT.to_string(),
        "-n",
    ]);
    let mut server =
        Proc::spawn("agg-tunnel server", s, &lab.dir().join(format!("agg-server-{tag}.log")), Stdin::Null)?;
    wait_listening(lab.srv(), link_port, &mut server, Duration::from_secs(10))?;
    running.procs.push(server);

    let mut c = Command::new("ip");
    c.env("RUST_BACKTRACE", "0");
    c.args(["netns", "exec", lab.cli()])
        .arg(agg)
        .args(["client", "--tcp", &format!("{}:{link_port}", Names::srv_addr(1))])
        .args(["--port", &format!("{IPERF_TCP_PORT}:{AGG_LOCAL_PORT}"), "-n"]);
    let mut client =
        Proc::spawn("agg-tunnel client", c, &lab.dir().join(format!("agg-client-{tag}.log")), Stdin::Null)?;
    wait_listening(lab.cli(), AGG_LOCAL_PORT, &mut client, Duration::from_secs(10))?;
    running.procs.push(client);

    // agg-tunnel connects its links per forwarded connection, so there is nothing more to
    // wait for here.
    running.target.host = "127.0.0.1".into();
    running.target.port = AGG_LOCAL_PORT;
    Ok(())
}
