//! Command-line overrides applied to a parsed scenario, and the expansion of its contender set
//! into the ordered list of contenders a run goes through.

use anyhow::{bail, Result};

use crate::contender::Contender;
use crate::scenario::units::parse_duration;
use crate::scenario::LabLink;
use crate::scenario::{Contenders, Scenario, WorkloadKind};

/// Replaces the scenario's contenders with a `--contenders` list.
pub fn contenders_from_list(scenario: &Scenario, list: &[String]) -> Result<Contenders> {
    let mut c = Contenders {
        singles: false,
        mptcp: false,
        aggligator: false,
        braid: Vec::new(),
        braid_tun: Vec::new(),
    };
    for item in list.iter().map(|s| s.trim()).filter(|s| !s.is_empty()) {
        match item {
            "singles" => c.singles = true,
            "mptcp" => c.mptcp = true,
            "aggligator" => c.aggligator = true,
            "braid" => {
                let from_file = if scenario.contenders.braid.is_empty() {
                    vec!["minrtt".to_string()]
                } else {
                    scenario.contenders.braid.clone()
                };
                for s in from_file {
                    if !c.braid.contains(&s) {
                        c.braid.push(s);
                    }
                }
            }
            "braid-tun" => {
                let from_file = if scenario.contenders.braid_tun.is_empty() {
                    vec!["edpf".to_string()]
                } else {
                    scenario.contenders.braid_tun.clone()
                };
                for s in from_file {
                    if !c.braid_tun.contains(&s) {
                        c.braid_tun.push(s);
                    }
                }
            }
            other => {
                let (list, s) = match (other.strip_prefix("braid-tun:"), other.strip_prefix("braid:")) {
                    (Some(s), _) => (&mut c.braid_tun, s),
                    (None, Some(s)) => (&mut c.braid, s),
                    _ => bail!(
                        "--contenders: unknown contender {other:?} (use singles, mptcp, aggligator, braid, braid:<scheduler>, braid-tun or braid-tun:<scheduler>)"
                    ),
                };
                if s.is_empty() || !s.chars().all(|ch| ch.is_ascii_alphanumeric() || "-_".contains(ch)) {
                    bail!("--contenders: {other:?}: the scheduler name is empty or not a token");
                }
                if !list.iter().any(|b| b == s) {
                    list.push(s.to_string());
                }
            }
        }
    }
    if c.is_empty() {
        bail!("--contenders: the list is empty");
    }
    Ok(c)
}

/// Applies `--duration`, `--repeats`, `--workloads` and `--contenders`.
pub fn apply(
    scenario: &mut Scenario,
    duration: Option<&str>,
    repeats: Option<u32>,
    workloads: Option<&[String]>,
    contenders: Option<&[String]>,
) -> Result<()> {
    if let Some(d) = duration {
        let d = parse_duration(d).map_err(|e| anyhow::anyhow!("--duration: {e}"))?;
        if d.as_secs_f64() < 1.0 || d.as_secs() > 600 {
            bail!("--duration must be between 1s and 600s");
        }
        for w in &mut scenario.workloads {
            w.duration = d;
        }
        if scenario.workloads.iter().any(|w| w.kind == WorkloadKind::Cut) {
            for (k, l) in scenario.links.iter().enumerate() {
                let last = l.schedule_end().unwrap_or_default();
                if last + std::time::Duration::from_secs(1) > d {
                    bail!(
                        "--duration {}s is too short for link {}'s schedule (ends at {}s)",
                        d.as_secs_f64(),
                        k + 1,
                        last.as_secs_f64()
                    );
                }
            }
        }
    }
    if let Some(r) = repeats {
        if !(1..=10).contains(&r) {
            bail!("--repeats must be 1..=10");
        }
        scenario.repeats = r;
    }
    if let Some(names) = workloads {
        let known: Vec<String> = scenario.workloads.iter().map(|w| w.name()).collect();
        for n in names {
            if !known.contains(n) {
                bail!("--workloads: no workload {n:?} in the scenario (it has: {})", known.join(", "));
            }
        }
        scenario.workloads.retain(|w| names.contains(&w.name()));
    }
    if let Some(list) = contenders {
        scenario.contenders = contenders_from_list(scenario, list)?;
        let c = &scenario.contenders;
        if scenario.share.is_some() && (c.mptcp || c.aggligator || !c.braid_tun.is_empty()) {
            bail!("--contenders: a piconet scenario runs singles and braid only (MPTCP, aggligator and the TUN cannot use a neighbour's link)");
        }
    }
    Ok(())
}

/// The contenders in run order: singles first (the reference), then MPTCP, aggligator and
/// braid's schedulers.
pub fn contender_list(scenario: &Scenario) -> Vec<Contender> {
    let c = &scenario.contenders;
    let mut v = Vec::new();
    if c.singles {
        v.extend((1..=scenario.links.len()).map(Contender::Single));
    }
    if c.mptcp {
        v.push(Contender::Mptcp);
    }
    if c.aggligator {
        v.push(Contender::Aggligator);
    }
    v.extend(c.braid.iter().cloned().map(Contender::Braid));
    v.extend(c.braid_tun.iter().cloned().map(Contender::BraidTun));
    v
}
