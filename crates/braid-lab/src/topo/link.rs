//! Creating the two devices of one link: a veth pair when the link has no delay, otherwise
//! `tap c<i>` (client namespace) — `vde_switch` — `wirefilter -d` — `vde_switch` — `tap s<i>`
//! (server namespace). wirefilter is a user-space relay between the two switches' sockets; it
//! delays each direction by the one-way delay (plus uniform jitter; packet order is kept).
//! Measured on this 2-core VM: 47.7 Mbit/s of TCP through a 50 Mbit/s htb with 5 ms of delay,
//! i.e. the same 0.954 of the rate a plain veth gives, so no custom forwarder is needed.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use anyhow::{bail, Result};

use super::names::Names;
use crate::scenario::{LabLink, LinkSpec};
use crate::sys::netns::{read_net_file, NetFile};
use crate::sys::proc::{Proc, Stdin};
use crate::sys::{cmd, signal};

/// How long a vde_switch may take to create its tap and control socket.
const VDE_START: Duration = Duration::from_secs(5);

/// The wirefilter `-d` argument: one-way delay in ms, with `+J U` for uniform jitter. wirefilter's
/// `D+JU` spreads the delay over D ± J; the link spec's jitter is extra delay uniform in
/// [0, jitter] (as in the simulator), so D is the delay plus half the jitter and J half of it.
pub fn wirefilter_delay(link: &LinkSpec) -> String {
    let ms = |d: Duration| {
        let s = format!("{:.3}", d.as_secs_f64() * 1e3);
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    };
    if link.jitter.is_zero() {
        ms(link.delay)
    } else {
        format!("{}+{}U", ms(link.delay + link.jitter / 2), ms(link.jitter / 2))
    }
}

/// Creates link `i`'s devices `c<i>` (in `cli`: the client's namespace or a neighbour's) and
/// `s<i>` (in `names.srv`). Returns the relay processes, which must outlive the link.
pub fn create(names: &Names, cli: &str, i: usize, link: &LinkSpec) -> Result<Vec<Proc>> {
    let (c, s) = (Names::cli_dev(i), Names::srv_dev(i));
    if !link.needs_delay_emulation() {
        cmd::run_ok(&[
            "ip", "link", "add", &c, "netns", cli, "type", "veth", "peer", "name", &s, "netns", &names.srv,
        ])?;
        return Ok(Vec::new());
    }
    let sw_c = names.dir.join(format!("vde-{c}"));
    let sw_s = names.dir.join(format!("vde-{s}"));
    let mut procs = vec![switch(names, cli, &c, &sw_c)?, switch(names, &names.srv, &s, &sw_s)?];
    let mut wf = Command::new("wirefilter");
    wf.arg("-v").arg(format!("{}:{}", sw_c.display(), sw_s.display())).arg("-d").arg(wirefilter_delay(link));
    let mut p = Proc::spawn(
        &format!("wirefilter link {i}"),
        wf,
        &names.dir.join(format!("wirefilter-{i}.log")),
        Stdin::KeepOpen,
    )?;
    signal::sleep(Duration::from_millis(100))?;
    if let Some(status) = p.try_wait()? {
        bail!("wirefilter for link {i} exited ({status}): {}", p.log_tail(500));
    }
    procs.push(p);
    Ok(procs)
}

/// Starts a vde_switch in namespace `ns` that owns tap `tap`, and waits for both to exist.
fn switch(names: &Names, ns: &str, tap: &str, sock: &Path) -> Result<Proc> {
    let mut c = Command::new("ip");
    c.args(["netns", "exec", ns, "vde_switch", "-s"]).arg(sock).args(["-t", tap]);
    let mut p = Proc::spawn(
        &format!("vde_switch {tap}"),
        c,
        &names.dir.join(format!("vde_switch-{tap}.log")),
        Stdin::KeepOpen,
    )?;
    let mut dev = NetFile::open(ns, "dev")?;
    let needle = format!("{tap}:");
    let ready = signal::poll_until(VDE_START, Duration::from_millis(20), || {
        let has_tap =
            dev.read().map(|t| t.lines().any(|l| l.trim_start().starts_with(&needle))).unwrap_or(false);
        (has_tap && sock.join("ctl").exists()).then_some(())
    })?;
    if ready.is_none() {
        let exited = p.try_wait()?;
        bail!(
            "vde_switch for {tap} in {ns} not ready after {}s (exited: {exited:?}): {}",
            VDE_START.as_secs(),
            p.log_tail(500)
        );
    }
    Ok(p)
}

/// Whether device `dev` exists in namespace `ns`.
pub fn device_exists(ns: &str, dev: &str) -> bool {
    let needle = format!("{dev}:");
    read_net_file(ns, "dev").map(|t| t.lines().any(|l| l.trim_start().starts_with(&needle))).unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(delay_ms: u64, jitter_ms: u64) -> LinkSpec {
        let mut l = LinkSpec::new(1_000_000, Duration::from_millis(delay_ms));
        l.jitter = Duration::from_millis(jitter_ms);
        l
    }

    #[test]
    fn delay_argument() {
        assert_eq!(wirefilter_delay(&link(5, 0)), "5");
        assert_eq!(wirefilter_delay(&link(40, 5)), "42.5+2.5U");
        let mut l = link(0, 0);
        l.delay = Duration::from_micros(2500);
        assert_eq!(wirefilter_delay(&l), "2.5");
    }
}
