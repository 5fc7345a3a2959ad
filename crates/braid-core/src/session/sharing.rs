//! What only the host running many sessions knows: whether other senders share the paths'
//! bottlenecks. A server that sends to one client at a time is alone on its uplink, and
//! `bbr-shared`'s deep ProbeRTT drain (half a BDP, there for a crowd: `cc::bbr::Bbr::shared`)
//! then only costs it goodput and reorder; the daemon counts its busy sessions
//! (`braid_daemon::crowd`) and tells each session here.

use super::Session;
use crate::time::Timestamp;
use std::time::Duration;

impl Session {
    /// True while the session has stream bytes its paths have not taken yet (within the
    /// peer's flow-control credit) and sent application data within `within` of `now`: it
    /// keeps its bottlenecks' queues busy. A backlog behind paths that carry nothing (a
    /// blackout, a client gone) does not count.
    pub fn is_busy_sending(&self, now: Timestamp, within: Duration) -> bool {
        self.streams.unsent_total() > 0
            && self.last_data_sent.is_some_and(|t| now.saturating_since(t) <= within)
    }

    /// Whether other senders may share this session's bottlenecks (true until told otherwise).
    /// Every path's controller is told when the session next polls for data to send
    /// ([`crate::cc::Controller::set_shared_bottleneck`]).
    pub fn set_shared_bottleneck(&mut self, shared: bool) {
        self.shared_bottleneck = shared;
    }

    /// Whether the session was told that other senders may share its bottlenecks.
    pub fn shared_bottleneck(&self) -> bool {
        self.shared_bottleneck
    }
}
