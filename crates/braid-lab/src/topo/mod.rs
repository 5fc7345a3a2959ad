//! The emulated topology: a client and a server namespace joined by N links, each shaped,
//! delayed, made lossy and cuttable as its [`LinkSpec`] says.
//!
//! ```text
//!  braidlab-<pid>-cli                                   braidlab-<pid>-srv
//!  c1 10.0.1.1 ── htb ── [veth | vde+wirefilter] ── htb ── s1 10.0.1.2
//!  c2 10.0.2.1 ── htb ── [veth | vde+wirefilter] ── htb ── s2 10.0.2.2
//!  ...
//! ```
//!
//! On the client, `ip rule from 10.0.i.1 table 100+i` + `default dev ci` make traffic from
//! 10.0.i.1 leave through link i, so the server is reachable at one address (10.0.1.2) over
//! every link. Kernel MPTCP has limits set on both sides and a `subflow` endpoint on every
//! client link but the first. [`Lab`] owns everything it creates and removes it on drop.
//!
//! A piconet ([`ShareSpec`]) moves the client ends of the last links into neighbour
//! namespaces `braidlab-<pid>-nb<k>`, joined to the client by a LAN (see [`lan`]).

mod lan;
mod link;
pub mod names;
mod nft;
mod shape;
pub mod stale;
mod sysctl;

use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::time::Duration;

use anyhow::{bail, Context, Result};

pub use names::Names;

use crate::scenario::LabLink;
use crate::scenario::{LinkSpec, ShareSpec};
use crate::sys::netns::{in_netns, tcp_connect};
use crate::sys::proc::Proc;
use crate::sys::{cmd, signal};

/// A built lab. Dropping it tears everything down.
pub struct Lab {
    names: Names,
    links: Vec<LinkSpec>,
    share: Option<ShareSpec>,
    neighbours: Vec<String>,
    relays: Vec<Proc>,
    namespaces: Vec<String>,
    dir_created: bool,
    cut: Vec<bool>,
    /// Links whose rate a schedule changed (set back by [`Lab::restore_all`]).
    rate_changed: Vec<bool>,
    torn_down: bool,
}

/// What teardown could not remove.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Leftovers(pub Vec<String>);

impl Leftovers {
    /// Whether everything was removed.
    pub fn is_clean(&self) -> bool {
        self.0.is_empty()
    }
}

impl Lab {
    /// Builds the namespaces and links (and the piconet's LAN, with `share`). On error, whatever
    /// was already created is removed.
    pub fn build(names: Names, links: &[LinkSpec], share: Option<ShareSpec>) -> Result<Lab> {
        let n = share.map_or(0, |s| s.neighbours);
        if n >= links.len() {
            bail!("{n} neighbours need more than {} links: the client keeps one", links.len());
        }
        let neighbours = (1..=n).map(|k| names.neighbour(k)).collect();
        let mut lab = Lab {
            names,
            links: links.to_vec(),
            share,
            neighbours,
            relays: Vec::new(),
            namespaces: Vec::new(),
            dir_created: false,
            cut: vec![false; links.len()],
            rate_changed: vec![false; links.len()],
            torn_down: false,
        };
        lab.setup()?;
        Ok(lab)
    }

    /// The names in use.
    pub fn names(&self) -> &Names {
        &self.names
    }

    /// Client namespace name.
    pub fn cli(&self) -> &str {
        &self.names.cli
    }

    /// Server namespace name.
    pub fn srv(&self) -> &str {
        &self.names.srv
    }

    /// Scratch directory.
    pub fn dir(&self) -> &Path {
        &self.names.dir
    }

    /// The links as built.
    pub fn links(&self) -> &[LinkSpec] {
        &self.links
    }

    /// How many links leave from the client namespace (the first ones).
    pub fn own_links(&self) -> usize {
        self.links.len() - self.neighbours.len()
    }

    /// The neighbour namespaces of a piconet (empty without one).
    pub fn neighbours(&self) -> &[String] {
        &self.neighbours
    }

    /// The namespace holding link `i`'s client end: the client's, or a neighbour's.
    pub fn link_ns(&self, i: usize) -> &str {
        match i.checked_sub(self.own_links() + 1) {
            Some(k) => &self.neighbours[k],
            None => &self.names.cli,
        }
    }

    fn setup(&mut self) -> Result<()> {
        let dir = self.names.dir.clone();
        std::fs::create_dir(&dir).with_context(|| format!("creating scratch directory {}", dir.display()))?;
        self.dir_created = true;
        let me = std::process::id();
        let stamp = names::start_time(me).unwrap_or(0);
        std::fs::write(dir.join(stale::OWNER_FILE), format!("{stamp}\n"))?;

        let all = [self.names.cli.clone(), self.names.srv.clone()].into_iter().chain(self.neighbours.clone());
        for ns in all {
            cmd::run_ok(&["ip", "netns", "add", &ns])?;
            self.namespaces.push(ns.clone());
            cmd::run_ok(&["ip", "-n", &ns, "link", "set", "lo", "up"])?;
            let settings = sysctl::namespace_settings();
            let mut args = vec!["sysctl", "-qw"];
            args.extend(settings.iter().map(String::as_str));
            cmd::in_ns(&ns, &args)?;
        }
        for i in 1..=self.links.len() {
            signal::check()?;
            self.setup_link(i).with_context(|| format!("building link {i}"))?;
        }
        if let Some(share) = self.share {
            lan::create(&self.names, &self.neighbours, share.lan_rate_bps).context("building the LAN")?;
        }
        self.setup_mptcp()?;
        for i in 1..=self.links.len() {
            let (up, down) = self.probe(i, Duration::from_secs(3))?;
            if !(up && down) {
                bail!("link {i} does not carry traffic after setup (client->server {up}, server->client {down})");
            }
        }
        for k in 1..=self.neighbours.len() {
            let ns = &self.neighbours[k - 1];
            let listener = in_netns(ns, move || TcpListener::bind((Names::lan_addr(k).as_str(), 0)))??;
            if tcp_connect(&self.names.cli, listener.local_addr()?, Duration::from_secs(3)).is_err() {
                bail!("the LAN does not reach neighbour {k} ({}) after setup", Names::lan_addr(k));
            }
        }
        Ok(())
    }

    fn setup_link(&mut self, i: usize) -> Result<()> {
        let link = self.links[i - 1].clone();
        let cli = self.link_ns(i).to_string();
        let relays = link::create(&self.names, &cli, i, &link)?;
        self.relays.extend(relays);
        let srv = self.names.srv.clone();
        let (c, s) = (Names::cli_dev(i), Names::srv_dev(i));
        for (ns, dev, addr) in [(&cli, &c, Names::cli_addr(i)), (&srv, &s, Names::srv_addr(i))] {
            cmd::run_ok(&["ip", "-n", ns, "addr", "add", &format!("{addr}/24"), "dev", dev])?;
            shape::shape(ns, dev, &link)?;
            cmd::run_ok(&["ip", "-n", ns, "link", "set", dev, "up"])?;
            if link.loss_percent() > 0.0 {
                cmd::in_ns_input(ns, &["nft", "-f", "-"], &nft::loss_rules(dev, link.loss_percent()))?;
            }
        }
        let table = (100 + i).to_string();
        cmd::run_ok(&["ip", "-n", &cli, "rule", "add", "from", &Names::cli_addr(i), "table", &table])?;
        cmd::run_ok(&["ip", "-n", &cli, "route", "add", "default", "dev", &c, "table", &table])?;
        if cli != self.names.cli {
            // A neighbour's one WAN: `braid share` binds to the device, not the address.
            cmd::run_ok(&["ip", "-n", &cli, "route", "add", "default", "dev", &c])?;
        }
        Ok(())
    }

    fn setup_mptcp(&self) -> Result<()> {
        for ns in [&self.names.cli, &self.names.srv] {
            cmd::run_ok(&[
                "ip",
                "-n",
                ns,
                "mptcp",
                "limits",
                "set",
                "subflows",
                "8",
                "add_addr_accepted",
                "8",
            ])?;
        }
        for i in 2..=self.own_links() {
            cmd::run_ok(&[
                "ip",
                "-n",
                &self.names.cli,
                "mptcp",
                "endpoint",
                "add",
                &Names::cli_addr(i),
                "dev",
                &Names::cli_dev(i),
                "subflow",
            ])?;
        }
        Ok(())
    }

    /// Cuts link `i` (1-based): every packet arriving at either end is dropped.
    pub fn cut(&mut self, i: usize) -> Result<()> {
        for (ns, dev) in self.ends(i) {
            cmd::in_ns_input(&ns, &["nft", "-f", "-"], &nft::cut_rules(&dev))?;
        }
        self.cut[i - 1] = true;
        Ok(())
    }

    /// Restores link `i` after [`Lab::cut`].
    pub fn restore(&mut self, i: usize) -> Result<()> {
        for (ns, dev) in self.ends(i) {
            cmd::in_ns(&ns, &["nft", "delete", "table", "netdev", &nft::cut_table(&dev)])?;
        }
        self.cut[i - 1] = false;
        Ok(())
    }

    /// Shapes link `i` (1-based) to `bps` at both ends (a `capacity=` change).
    pub fn set_rate(&mut self, i: usize, bps: u64) -> Result<()> {
        for (ns, dev) in self.ends(i) {
            shape::set_rate(&ns, &dev, bps)?;
        }
        self.rate_changed[i - 1] = true;
        Ok(())
    }

    /// Restores every cut link and sets every changed rate back to the link's start rate.
    pub fn restore_all(&mut self) -> Result<()> {
        for i in 1..=self.links.len() {
            if self.cut[i - 1] {
                self.restore(i)?;
            }
            if self.rate_changed[i - 1] {
                self.set_rate(i, self.links[i - 1].start_rate())?;
                self.rate_changed[i - 1] = false;
            }
        }
        Ok(())
    }

    fn ends(&self, i: usize) -> [(String, String); 2] {
        [(self.link_ns(i).to_string(), Names::cli_dev(i)), (self.names.srv.clone(), Names::srv_dev(i))]
    }

    /// Checks link `i` in both directions with a TCP handshake across it (client→server and
    /// server→client), each allowed `limit`. Returns (client→server ok, server→client ok).
    pub fn probe(&self, i: usize, limit: Duration) -> Result<(bool, bool)> {
        let one_way = |listen_ns: &str, listen_addr: String, from_ns: &str| -> Result<bool> {
            let listener = in_netns(listen_ns, || TcpListener::bind((listen_addr.as_str(), 0)))??;
            let addr: SocketAddr = listener.local_addr()?;
            Ok(tcp_connect(from_ns, addr, limit).is_ok())
        };
        let up = one_way(&self.names.srv, Names::srv_addr(i), self.link_ns(i))?;
        let down = one_way(self.link_ns(i), Names::cli_addr(i), &self.names.srv)?;
        Ok((up, down))
    }

    /// Removes everything; returns what could not be removed. Idempotent.
    pub fn teardown(&mut self) -> Leftovers {
        if self.torn_down {
            return Leftovers::default();
        }
        self.torn_down = true;
        let mut left = Vec::new();
        for mut p in self.relays.drain(..).rev() {
            if !p.stop() {
                left.push(format!("{} (pid {}) still running", p.name(), p.pid()));
            }
        }
        for ns in self.namespaces.drain(..) {
            let stray = stale::pids_in_namespace(&ns);
            if !stray.is_empty() {
                eprintln!("braid lab: killing {} stray process(es) in {ns}: {stray:?}", stray.len());
                stale::kill_foreign(&stray);
            }
            if let Err(e) = cmd::run_ok(&["ip", "netns", "del", &ns]) {
                left.push(format!("namespace {ns}: {e:#}"));
            }
        }
        if self.dir_created {
            let needle = format!("{}/", self.names.dir.display());
            let stray = stale::pids_mentioning(&needle);
            if !stray.is_empty() {
                stale::kill_foreign(&stray);
            }
            if let Err(e) = std::fs::remove_dir_all(&self.names.dir) {
                left.push(format!("directory {}: {e}", self.names.dir.display()));
            }
        }
        let ours: Vec<String> = stale::lab_namespaces()
            .into_iter()
            .filter(|n| n.starts_with(&format!("{}-", self.names.id)))
            .collect();
        for n in ours {
            left.push(format!("namespace {n} still listed by ip netns"));
        }
        Leftovers(left)
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        let left = self.teardown();
        for l in left.0 {
            eprintln!("braid lab: teardown left behind: {l}");
        }
    }
}

/// Whether link `i`'s devices exist (used by tests).
pub fn link_exists(lab: &Lab, i: usize) -> bool {
    link::device_exists(lab.link_ns(i), &Names::cli_dev(i))
        && link::device_exists(lab.srv(), &Names::srv_dev(i))
}
