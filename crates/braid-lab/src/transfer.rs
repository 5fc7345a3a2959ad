//! One iperf3 transfer through a started contender, with the links' schedule (cuts, restores,
//! rate changes) applied while it runs.
//!
//! Timing: iperf3 reports intervals relative to its own test start, which a parent cannot see.
//! The lab watches the client namespace's link byte counters instead and takes the moment the
//! data direction has moved 30 kB as t = 0; cuts are applied at `t0 + cut_at`. The error is
//! below one RTT plus the 5 ms poll, small against the 100 ms intervals.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};

use crate::iperf::{client_args, parse_result, ClientSpec, Measurement};
use crate::scenario::{Direction, LabLink, LinkSpec};
use crate::sys::netns::{counter, dev_bytes, NetFile};
use crate::sys::proc::{Proc, Stdin};
use crate::sys::signal;
use crate::topo::Lab;

/// Bytes that must cross the links before the transfer counts as started.
const START_BYTES: u64 = 30_000;
/// Poll period of the schedule loop.
const POLL: Duration = Duration::from_millis(5);
/// Extra time beyond the test length before the client is killed.
const SLACK: Duration = Duration::from_secs(30);

/// Cut, restore or a new rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// Drop everything on the link.
    Cut,
    /// Carry traffic again.
    Restore,
    /// Shape the link to `bps`; `start_bps` is its rate when the transfer started, which the
    /// lab's capacity of the link was measured at.
    Rate {
        /// The new rate, bits per second.
        bps: u64,
        /// The link's start rate, bits per second.
        start_bps: u64,
    },
}

/// A planned link event, relative to the transfer start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlannedEvent {
    /// 1-based link index.
    pub link: usize,
    /// Offset from the transfer start.
    pub at: Duration,
    /// What happens.
    pub action: Action,
}

/// A link event as it happened.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct AppliedEvent {
    /// 1-based link index.
    pub link: usize,
    /// What happened.
    pub action: Action,
    /// Planned offset, seconds.
    pub planned_s: f64,
    /// Actual offset from the detected transfer start, seconds.
    pub at_s: f64,
}

/// What one transfer produced.
#[derive(Debug, Clone)]
pub struct Transfer {
    /// iperf3's figures.
    pub measurement: Measurement,
    /// Link events applied during the transfer.
    pub events: Vec<AppliedEvent>,
    /// TCP segments retransmitted in the sending namespace during the transfer.
    pub retransmits: Option<u64>,
    /// MPTCP subflows joined (MP_JOIN SYN/ACKs received by the client).
    pub mptcp_joins: Option<u64>,
    /// Remarks (e.g. a planned event that did not happen).
    pub notes: Vec<String>,
}

/// The schedule of `links` (cuts, restores, rate changes after the start), in time order.
pub fn schedule(links: &[LinkSpec]) -> Vec<PlannedEvent> {
    let mut v = Vec::new();
    for (i, l) in links.iter().enumerate() {
        if let Some(at) = l.cut_at() {
            v.push(PlannedEvent { link: i + 1, at, action: Action::Cut });
        }
        if let Some(at) = l.restore_at() {
            v.push(PlannedEvent { link: i + 1, at, action: Action::Restore });
        }
        let start_bps = l.start_rate();
        for &(at, bps) in l.rate_changes() {
            v.push(PlannedEvent { link: i + 1, at, action: Action::Rate { bps, start_bps } });
        }
    }
    v.sort_by_key(|e| e.at);
    v
}

/// Counters read before and after a transfer.
struct Counters {
    sender_snmp: NetFile,
    cli_netstat: NetFile,
}

impl Counters {
    fn open(lab: &Lab, cli: &str, direction: Direction) -> Result<Counters> {
        let sender = match direction {
            Direction::Up => cli,
            Direction::Down => lab.srv(),
        };
        Ok(Counters {
            sender_snmp: NetFile::open(sender, "snmp")?,
            cli_netstat: NetFile::open(cli, "netstat")?,
        })
    }

    fn read(&mut self) -> (Option<u64>, Option<u64>) {
        let retrans = self.sender_snmp.read().ok().and_then(|t| counter(&t, "Tcp", "RetransSegs"));
        let joins = self.cli_netstat.read().ok().and_then(|t| counter(&t, "MPTcpExt", "MPJoinSynAckRx"));
        (retrans, joins)
    }
}

/// Runs the iperf3 client `spec` in namespace `ns` (the client's unless a neighbour's link is
/// measured alone), applying `events`. The client's JSON goes to `raw`, its stderr to `log`.
/// All links are restored afterwards, even on error.
pub fn run_transfer(
    lab: &mut Lab,
    ns: Option<&str>,
    spec: &ClientSpec,
    events: &[PlannedEvent],
    raw: &Path,
    log: &Path,
) -> Result<Transfer> {
    let ns = ns.unwrap_or(lab.cli()).to_string();
    let result = run_inner(lab, &ns, spec, events, raw, log);
    let restored = lab.restore_all();
    let t = result?;
    restored?;
    Ok(t)
}

fn run_inner(
    lab: &mut Lab,
    ns: &str,
    spec: &ClientSpec,
    events: &[PlannedEvent],
    raw: &Path,
    log: &Path,
) -> Result<Transfer> {
    let mut counters = Counters::open(lab, ns, spec.direction)?;
    let (retrans0, joins0) = counters.read();
    let mut dev = NetFile::open(ns, "dev")?;
    let moved = |dev: &mut NetFile| -> u64 {
        let text = dev.read().unwrap_or_default();
        let (rx, tx) = dev_bytes(&text, |d| d.starts_with('c'));
        match spec.direction {
            Direction::Up => tx,
            Direction::Down => rx,
        }
    };
    let base = moved(&mut dev);

    let mut c = Command::new("ip");
    c.args(["netns", "exec", ns]).args(client_args(spec));
    let _ = std::fs::remove_file(raw);
    let mut client = Proc::spawn_split("iperf3 client", c, raw, log, Stdin::Null)?;
    let deadline = Instant::now() + spec.duration + SLACK;
    let mut t0: Option<Instant> = None;
    let mut next = 0;
    let mut applied = Vec::new();
    let status = loop {
        if let Some(s) = client.try_wait()? {
            break s;
        }
        if Instant::now() >= deadline {
            client.stop();
            bail!("iperf3 client still running {}s after its test length; killed", SLACK.as_secs());
        }
        if t0.is_none() && moved(&mut dev).saturating_sub(base) >= START_BYTES {
            t0 = Some(Instant::now());
        }
        if let Some(start) = t0 {
            while next < events.len() && start + events[next].at <= Instant::now() {
                let e = events[next];
                match e.action {
                    Action::Cut => lab.cut(e.link)?,
                    Action::Restore => lab.restore(e.link)?,
                    Action::Rate { bps, .. } => lab.set_rate(e.link, bps)?,
                }
                applied.push(AppliedEvent {
                    link: e.link,
                    action: e.action,
                    planned_s: e.at.as_secs_f64(),
                    at_s: start.elapsed().as_secs_f64(),
                });
                next += 1;
            }
        }
        signal::sleep(POLL)?;
    };
    let text = std::fs::read_to_string(raw).unwrap_or_default();
    if !status.success() {
        let why = parse_result(&text, spec.direction == Direction::Down)
            .err()
            .map(|e| format!("{e:#}"))
            .unwrap_or_default();
        bail!("iperf3 client exited with {status}: {} {}", why, client.log_tail(300));
    }
    let measurement = parse_result(&text, spec.direction == Direction::Down)?;
    let (retrans1, joins1) = counters.read();
    let mut notes = Vec::new();
    if next < events.len() {
        notes.push(format!(
            "{} of {} link events did not happen before the transfer ended{}",
            events.len() - next,
            events.len(),
            if t0.is_none() { " (no data seen on the links)" } else { "" }
        ));
    }
    Ok(Transfer {
        measurement,
        events: applied,
        retransmits: retrans0.zip(retrans1).map(|(a, b)| b.saturating_sub(a)),
        mptcp_joins: joins0.zip(joins1).map(|(a, b)| b.saturating_sub(a)),
        notes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedule_is_time_ordered() {
        let s = Duration::from_secs;
        let mut a = LinkSpec::new(1_000_000, Duration::ZERO);
        let mut b = a.clone();
        a.down = vec![(s(10), s(12))];
        b.down = vec![(s(5), crate::scenario::NEVER)];
        let c = LinkSpec::parse("20mbit/5ms/capacity=10mbit@0s,50kbit@11s").unwrap();
        let s = schedule(&[a, b, c]);
        let v: Vec<(usize, u64, Action)> = s.iter().map(|e| (e.link, e.at.as_secs(), e.action)).collect();
        let slower = Action::Rate { bps: 50_000, start_bps: 10_000_000 };
        // The rate at 0 s is the shaper's start, not an event.
        assert_eq!(v, [(2, 5, Action::Cut), (1, 10, Action::Cut), (3, 11, slower), (1, 12, Action::Restore)]);
    }
}
