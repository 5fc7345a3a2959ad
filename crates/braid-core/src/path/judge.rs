//! Which loss judge decides whether a loss was random (the link's) or congestion (seeds 001,
//! 003): the sender's RTT-trend judge ([`crate::monitor::Monitor::judge_loss`]) or the
//! receiver's inter-arrival verdict reported in PATH_REPORT ([`crate::path::arrivals`]).

use super::Path;
use std::fmt;
use std::str::FromStr;

/// The loss judge of a session.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum LossJudge {
    /// At the sender: no queue in the RTT and no growing RTT trend (today's default).
    #[default]
    Rtt,
    /// At the receiver: the gap left a hole in the arrivals and the inter-arrival times were
    /// not growing (seed 001 §4.3); needs the peer's PATH_REPORTs.
    Arrival,
}

impl FromStr for LossJudge {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "rtt" => Ok(LossJudge::Rtt),
            "arrival" => Ok(LossJudge::Arrival),
            other => Err(format!("unknown loss judge '{other}' (rtt, arrival)")),
        }
    }
}

impl fmt::Display for LossJudge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LossJudge::Rtt => "rtt",
            LossJudge::Arrival => "arrival",
        })
    }
}

impl Path {
    /// The judge's verdict on the loss at hand: true when random. `consume` marks the
    /// receiver's verdicts as used by this loss event.
    pub fn loss_verdict(&mut self, consume: bool) -> bool {
        match self.loss_judge {
            LossJudge::Rtt => self.monitor.judge_loss(&self.rtt),
            LossJudge::Arrival => self.peer.arrival_verdict(consume),
        }
    }

    /// A loss event: returns whether the congestion controller should treat it as random (only
    /// when loss discrimination is on), and counts the verdict in the monitor.
    pub fn classify_loss(&mut self) -> bool {
        let random = self.monitor.discriminate_loss && self.loss_verdict(true);
        self.monitor.count_verdict(random);
        random
    }
}
