//! What only the host running many sessions knows: whether other senders share the paths'
//! bottlenecks. `bbr-shared`'s deep ProbeRTT drain (half a BDP, there for a crowd:
//! `cc::bbr::Bbr::shared`) evens out a crowd's windows, and costs a sender that is alone on
//! its bottleneck goodput and reorder.
//!
//! - Downloads: the server's sessions share its uplink. The daemon counts its busy senders
//!   ([`crate::crowd`]) and tells each session ([`Session::set_shared_bottleneck`]).
//! - Uploads: the clients' sessions share the server's ingress, which no client can see. The
//!   server counts its sessions receiving data ([`Session::is_busy_receiving`]) and tells each
//!   client in a SHARING frame ([`Session::set_shares_ingress`]); the client's paths then drain
//!   as a crowd's. A client starts alone: its paths are its own until its server says
//!   otherwise, so an upload does not pay for the crowd's drain while no other session sends
//!   the server data, and a client of a server that never says so behaves as plain `bbr`.
//!
//! 100 sessions uploading through one 200 Mbit/s bottleneck, the last 50 starting late
//! (`many_sessions --direction upload --stagger 10ms --late 50`): the largest deviation from
//! the mean goodput was 20–31 % with the clients' `bbr`, and 6.8–11.2 % with `bbr-shared`
//! told by the server (docs/benchmarks.md).

use super::builder::Builder;
use super::{Session, Side};
use crate::path::sent::SentFrame;
use crate::time::Timestamp;
use crate::wire::frame::encode;
use std::time::Duration;

/// Where the session's sharing stands.
#[derive(Debug)]
pub(super) struct Sharing {
    /// Whether other senders may share the paths' bottlenecks (what the controllers are told).
    bottleneck: bool,
    /// Server: whether other sessions' uploads share our ingress, as last decided.
    ingress: bool,
    /// Server: the number of that decision.
    seq: u64,
    /// Server: the SHARING frame is owed.
    due: bool,
    /// Client: the number of the newest SHARING applied.
    peer_seq: Option<u64>,
    /// When stream bytes or a datagram last arrived.
    last_data_received: Option<Timestamp>,
}

impl Sharing {
    /// A server assumes its uplink shared until its host says otherwise; a client starts alone.
    pub(super) fn new(side: Side) -> Self {
        Sharing {
            bottleneck: side == Side::Server,
            ingress: false,
            seq: 0,
            due: false,
            peer_seq: None,
            last_data_received: None,
        }
    }

    /// Stream bytes or a datagram arrived.
    pub(super) fn on_data(&mut self, now: Timestamp) {
        self.last_data_received = Some(now);
    }

    /// Server: a SHARING frame is owed.
    pub(super) fn is_due(&self) -> bool {
        self.due
    }

    /// Server: appends the owed SHARING frame to the packet being built, if it fits.
    pub(super) fn write(&mut self, b: &mut Builder, buf: &mut Vec<u8>) {
        if self.due && buf.len() + encode::sharing_len(self.seq) <= b.limit {
            encode::sharing(buf, self.seq, self.ingress);
            b.frames.push(SentFrame::Sharing { seq: self.seq });
            self.due = false;
        }
    }

    /// Server: the SHARING frame numbered `seq` was lost; it is owed again unless a newer one
    /// replaced it.
    pub(super) fn on_lost(&mut self, seq: u64) {
        if seq == self.seq {
            self.due = true;
        }
    }

    /// A SHARING frame arrived on `side`: a client applies the newest and returns what changed
    /// (None for an older copy or the same word again); a server never receives one.
    pub(super) fn on_frame(
        &mut self,
        side: Side,
        seq: u64,
        shared: bool,
    ) -> Result<Option<bool>, &'static str> {
        if side == Side::Server {
            return Err("SHARING from the client");
        }
        if self.peer_seq.is_some_and(|p| seq <= p) {
            return Ok(None);
        }
        self.peer_seq = Some(seq);
        let changed = self.bottleneck != shared;
        self.bottleneck = shared;
        Ok(changed.then_some(shared))
    }
}

impl Session {
    /// True while the session has stream bytes its paths have not taken yet (within the
    /// peer's flow-control credit) and sent application data within `within` of `now`: it
    /// keeps its bottlenecks' queues busy. A backlog behind paths that carry nothing (a
    /// blackout, a client gone) does not count.
    pub fn is_busy_sending(&self, now: Timestamp, within: Duration) -> bool {
        self.streams.unsent_total() > 0
            && self.last_data_sent.is_some_and(|t| now.saturating_since(t) <= within)
    }

    /// True when stream bytes or a datagram arrived within `within` of `now`: the peer's
    /// packets may queue at this host's ingress behind other sessions'. The receiver cannot
    /// see the peer's backlog, so a session that sends a little now and then counts too; what
    /// that costs is a deeper ProbeRTT drain for the others while it does.
    pub fn is_busy_receiving(&self, now: Timestamp, within: Duration) -> bool {
        self.sharing.last_data_received.is_some_and(|t| now.saturating_since(t) <= within)
    }

    /// Whether other senders may share this session's bottlenecks. Every path's controller is
    /// told when the session next polls for data to send
    /// ([`crate::cc::Controller::set_shared_bottleneck`]). A client is also told by its server
    /// (SHARING), the newest word winning.
    pub fn set_shared_bottleneck(&mut self, shared: bool) {
        self.sharing.bottleneck = shared;
    }

    /// Whether the session was told that other senders may share its bottlenecks (a server
    /// starts shared, a client alone).
    pub fn shared_bottleneck(&self) -> bool {
        self.sharing.bottleneck
    }

    /// Server: whether other sessions' uploads share this session's ingress now; when that
    /// changes, the client is told in a SHARING frame (sent again if lost). A client ignores it.
    pub fn set_shares_ingress(&mut self, shared: bool) {
        let s = &mut self.sharing;
        if self.side == Side::Server && s.ingress != shared {
            s.ingress = shared;
            s.seq += 1;
            s.due = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_applies_the_newest_word_and_ignores_older_copies() {
        let mut s = Sharing::new(Side::Client);
        assert!(!s.bottleneck, "a client starts alone");
        assert_eq!(s.on_frame(Side::Client, 2, true), Ok(Some(true)));
        assert_eq!(s.on_frame(Side::Client, 1, false), Ok(None), "an older copy, reordered");
        assert_eq!(s.on_frame(Side::Client, 2, false), Ok(None), "a copy of the same number");
        assert!(s.bottleneck);
        assert_eq!(s.on_frame(Side::Client, 3, true), Ok(None), "the same word again");
        assert_eq!(s.on_frame(Side::Client, 4, false), Ok(Some(false)));
    }

    #[test]
    fn a_server_refuses_sharing_and_resends_only_its_newest() {
        let mut s = Sharing::new(Side::Server);
        assert!(s.bottleneck, "a server starts shared");
        assert!(s.on_frame(Side::Server, 1, true).is_err());
        s.seq = 3;
        s.on_lost(2);
        assert!(!s.is_due(), "a lost older frame is not owed: a newer one replaced it");
        s.on_lost(3);
        assert!(s.is_due());
    }
}
