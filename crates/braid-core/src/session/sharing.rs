//! What only the host running many sessions knows: whether other senders share the paths'
//! bottlenecks. `bbr-shared`'s deep ProbeRTT drain (half a BDP, there for a crowd:
//! `cc::bbr::Bbr::shared`) evens out a crowd's windows, and costs a sender that is alone on
//! its bottleneck goodput and reorder.
//!
//! - Downloads: the server's sessions share its uplink. The daemon counts its busy senders
//!   (`braid_daemon::crowd`) and tells each session ([`Session::set_shared_bottleneck`]).
//! - Uploads: the clients' sessions share the server's ingress, which no client can see. The
//!   server counts its sessions receiving data ([`Session::is_busy_receiving`]) and tells each
//!   client in a SHARING frame ([`Session::set_shares_ingress`]); the client's paths then drain
//!   as a crowd's. A client starts alone: its paths are its own until its server says
//!   otherwise, so a lone upload never pays for the crowd's drain, and a client of a server
//!   that never says so behaves as plain `bbr`.
//!
//! 100 sessions uploading through one 200 Mbit/s bottleneck, the last 50 starting late
//! (`many_sessions --direction upload --stagger 10ms --late 50`): the largest deviation from
//! the mean goodput was 20–31 % with the clients' `bbr`, and 6.8–11.2 % with `bbr-shared`
//! told by the server (docs/benchmarks.md).

use super::{Session, Side};
use crate::path::sent::SentFrame;
use crate::time::Timestamp;
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
    pub(super) due: bool,
    /// Client: the number of the newest SHARING applied.
    peer_seq: Option<u64>,
    /// When stream bytes or a datagram last arrived.
    pub(super) last_data_received: Option<Timestamp>,
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

    /// Server: the SHARING frame owed now, as (seq, shared).
    pub(super) fn frame(&self) -> (u64, bool) {
        (self.seq, self.ingress)
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

    /// Server: what it last decided about its ingress ([`Session::set_shares_ingress`]).
    pub fn shares_ingress(&self) -> bool {
        self.sharing.ingress
    }

    /// Client: a SHARING frame arrived.
    pub(super) fn on_sharing(&mut self, seq: u64, shared: bool) -> Result<(), String> {
        if self.side == Side::Server {
            return Err("SHARING from the client".into());
        }
        let s = &mut self.sharing;
        if s.peer_seq.is_some_and(|p| seq <= p) {
            return Ok(()); // an older copy
        }
        s.peer_seq = Some(seq);
        if s.bottleneck != shared {
            tracing::debug!(session = %self.local_id, shared, "server says uploads share its ingress");
        }
        s.bottleneck = shared;
        Ok(())
    }

    /// Server: the SHARING frame numbered `seq` was lost; it is owed again unless a newer one
    /// replaced it.
    pub(super) fn on_sharing_lost(&mut self, seq: u64) {
        if seq == self.sharing.seq {
            self.sharing.due = true;
        }
    }

    /// Server: records a SHARING frame in a packet being built.
    pub(super) fn sharing_sent(&mut self, frames: &mut crate::path::sent::FrameRecords) {
        self.sharing.due = false;
        frames.push(SentFrame::Sharing { seq: self.sharing.seq });
    }
}
