//! What only the host running many sessions knows: whether other senders share the paths'
//! bottlenecks. A server that sends to one client at a time is alone on its uplink, and
//! `bbr-shared`'s deep ProbeRTT drain (half a BDP, there for a crowd: `cc::bbr::Bbr::shared`)
//! then only costs it goodput and reorder; the daemon counts its busy sessions
//! (`braid_daemon::crowd`) and tells each session here.

use super::Session;

impl Session {
    /// Stream bytes the application has written that no packet has carried yet (within the
    /// peer's flow-control credit): the session has more to send than its paths took.
    pub fn unsent_bytes(&self) -> u64 {
        self.streams.unsent_total()
    }

    /// Whether other senders may share this session's bottlenecks (true until told otherwise).
    /// Every path's controller is told on the next transmit
    /// ([`crate::cc::Controller::set_shared_bottleneck`]).
    pub fn set_shared_bottleneck(&mut self, shared: bool) {
        self.shared_bottleneck = shared;
    }

    /// Whether the session was told that other senders may share its bottlenecks.
    pub fn shared_bottleneck(&self) -> bool {
        self.shared_bottleneck
    }
}
