//! Contenders: the ways of moving the workload's bytes across the same links. Each one is
//! started before a transfer (its iperf3 server included), tells the iperf3 client where to
//! connect, and is stopped after.
//!
//! | contender | iperf3 client connects to | carried by |
//! | --- | --- | --- |
//! | `tcp-link<i>` | 10.0.i.2:5202, bound to 10.0.i.1 | one TCP connection on link i |
//! | `mptcp` | 10.0.1.2:5201 under `mptcpize run` | kernel MPTCP, a subflow per link |
//! | `aggligator` | 127.0.0.1:5301 | `agg-tunnel`, one TCP link per client link |
//! | `braid-<sched>` | 127.0.0.1:5300 | braid client/server, port forward, scheduler `<sched>` |
//! | `braid-tun-<sched>` | 10.0.250.2:5202, the server's address reached only through the TUN | `braid client --tun`: the namespace's default route is braid's TUN |
//!
//! In a piconet a single link that is a neighbour's runs its iperf3 client in that neighbour's
//! namespace, and braid's client adds a path through each neighbour's `braid share`.

mod aggligator;
pub mod braid;
pub mod share;
mod tools;

use std::net::SocketAddr;

use anyhow::Result;

pub use tools::{BraidBinary, Tools};

use crate::iperf::{self, Traffic};
use crate::scenario::{Workload, WorkloadKind};
use crate::sys::proc::Proc;
use crate::topo::{Lab, Names};

/// Port of the plain-TCP iperf3 server.
pub const IPERF_TCP_PORT: u16 = 5202;
/// Port of the MPTCP iperf3 server.
pub const IPERF_MPTCP_PORT: u16 = 5201;

/// One contender.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Contender {
    /// Plain TCP over link `i` (1-based) alone.
    Single(usize),
    /// Kernel MPTCP over all links.
    Mptcp,
    /// aggligator's agg-tunnel.
    Aggligator,
    /// braid with the named scheduler.
    Braid(String),
    /// braid in TUN mode with the named scheduler.
    BraidTun(String),
}

impl Contender {
    /// Name used in reports: `tcp-link1`, `mptcp`, `aggligator`, `braid-minrtt`.
    pub fn name(&self) -> String {
        match self {
            Contender::Single(i) => format!("tcp-link{i}"),
            Contender::Mptcp => "mptcp".into(),
            Contender::Aggligator => "aggligator".into(),
            Contender::Braid(s) => format!("braid-{s}"),
            Contender::BraidTun(s) => format!("braid-tun-{s}"),
        }
    }

    /// Whether it is braid (either front end): its retransmits come from its status API.
    pub fn is_braid(&self) -> bool {
        matches!(self, Contender::Braid(_) | Contender::BraidTun(_))
    }

    /// Whether it spreads one transfer over several links.
    pub fn is_multipath(&self) -> bool {
        !matches!(self, Contender::Single(_))
    }

    /// Why it cannot run `workload` with these `tools`, if it cannot.
    pub fn skip_reason(&self, tools: &Tools, workload: &Workload) -> Option<String> {
        let udp = matches!(workload.kind, WorkloadKind::Cbr { .. });
        match self {
            Contender::Single(_) => None,
            Contender::Mptcp => {
                tools.mptcpize.is_none().then(|| "mptcpize not installed (apt install mptcpize)".into())
            }
            Contender::Aggligator if tools.agg_tunnel.is_none() => {
                Some("agg-tunnel not installed (cargo install aggligator-util@0.18.12 --locked)".into())
            }
            Contender::Aggligator if udp => {
                Some("agg-tunnel forwards TCP ports only; no UDP workload".into())
            }
            Contender::Aggligator => None,
            Contender::BraidTun(_) if !std::path::Path::new("/dev/net/tun").exists() => {
                Some("no /dev/net/tun on this machine: braid's TUN mode cannot run".into())
            }
            Contender::Braid(_) | Contender::BraidTun(_) => match &tools.braid {
                BraidBinary::Ready(_) => None,
                BraidBinary::Unavailable(why) => Some(why.clone()),
            },
        }
    }
}

/// Where the iperf3 client connects for a contender.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    /// Address to connect to.
    pub host: String,
    /// Port to connect to.
    pub port: u16,
    /// Local address to bind.
    pub bind: Option<String>,
    /// Run the client under `mptcpize run`.
    pub mptcp: bool,
    /// The namespace the iperf3 client runs in, when not the client's (a neighbour's link).
    pub ns: Option<String>,
}

/// A started contender; dropping it stops its processes (last started first).
pub struct Running {
    /// Where iperf3 connects.
    pub target: Target,
    /// The client's JSON status endpoint (namespace, address).
    pub status: Option<(String, SocketAddr)>,
    /// The server's JSON status endpoint (namespace, address).
    pub server_status: Option<(String, SocketAddr)>,
    /// Each sharer's JSON status endpoint in a piconet (namespace, address).
    pub sharer_status: Vec<(String, SocketAddr)>,
    /// Remarks for the report (e.g. fewer links than expected came up).
    pub notes: Vec<String>,
    procs: Vec<Proc>,
}

impl Running {
    /// Contender processes that have exited, each with the tail of its output.
    pub fn exited_processes(&mut self) -> Vec<String> {
        self.procs
            .iter_mut()
            .filter_map(|p| match p.try_wait() {
                Ok(Some(s)) => Some(format!("{} exited ({s}): {}", p.name(), p.log_tail(300))),
                _ => None,
            })
            .collect()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        while let Some(mut p) = self.procs.pop() {
            p.stop();
        }
    }
}

/// Starts the iperf3 server and whatever else `contender` needs for `traffic`.
pub fn start(
    contender: &Contender,
    lab: &Lab,
    tools: &Tools,
    traffic: Traffic,
    tag: &str,
) -> Result<Running> {
    let mptcp = *contender == Contender::Mptcp;
    let port = if mptcp { IPERF_MPTCP_PORT } else { IPERF_TCP_PORT };
    let log = lab.dir().join(format!("iperf3-server-{tag}.json"));
    let server = iperf::start_server(lab.srv(), port, mptcp, &log)?;
    let mut running = Running {
        target: Target { host: Names::srv_addr(1), port, bind: None, mptcp, ns: None },
        status: None,
        server_status: None,
        sharer_status: Vec::new(),
        notes: Vec::new(),
        procs: vec![server],
    };
    match contender {
        Contender::Single(i) => {
            running.target.host = Names::srv_addr(*i);
            running.target.bind = Some(Names::cli_addr(*i));
            if lab.link_ns(*i) != lab.cli() {
                running.target.ns = Some(lab.link_ns(*i).to_string());
            }
        }
        Contender::Mptcp => {}
        Contender::Aggligator => {
            let path =
                tools.agg_tunnel.as_deref().ok_or_else(|| anyhow::anyhow!("agg-tunnel not installed"))?;
            aggligator::start(lab, path, tag, &mut running)?;
        }
        Contender::Braid(scheduler) | Contender::BraidTun(scheduler) => {
            let BraidBinary::Ready(path) = &tools.braid else {
                anyhow::bail!("braid binary unavailable");
            };
            let front = match contender {
                Contender::BraidTun(_) => braid::Front::Tun,
                _ => braid::Front::Forward,
            };
            braid::start(lab, path, scheduler, front, traffic, tag, &mut running)?;
        }
    }
    Ok(running)
}
