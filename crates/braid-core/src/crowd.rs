//! How many of a host's sessions are busy at once, in one direction: a session's paths share
//! the server's uplink with the others' only while they send too, and the server's ingress
//! only while the others' clients upload. `bbr-shared` drains ProbeRTT to half a
//! bandwidth-delay product so that a crowd's queue empties and every session's minimum RTT
//! meets it (`crate::cc::bbr::Bbr::shared`); a session alone needs one BDP, as `bbr` drains,
//! and the deeper drain only costs it goodput and reorder.
//!
//! The host keeps one crowd per direction. At each count (the daemon's every 500 ms) each
//! session's member records whether it is busy — sending a backlog
//! (`Session::is_busy_sending`) or receiving data (`Session::is_busy_receiving`) — and learns
//! whether another member is. The server tells each session about its uplink
//! (`Session::set_shared_bottleneck`) and each client about its ingress
//! (`Session::set_shares_ingress`, a SHARING frame). Counting only, no clock: the caller
//! decides when to count.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// A host's count of sessions busy in one direction, shared by every driver.
#[derive(Debug, Clone, Default)]
pub struct Crowd {
    /// Members counted busy now.
    busy: Arc<AtomicUsize>,
}

/// One session's place in a [`Crowd`]; it leaves the count when dropped.
#[derive(Debug)]
pub struct Member {
    /// The crowd's count.
    busy: Arc<AtomicUsize>,
    /// Counted as busy now.
    counted: bool,
    /// It was busy at the previous update.
    busy_before: bool,
}

impl Crowd {
    /// An empty crowd.
    pub fn new() -> Self {
        Crowd::default()
    }

    /// A new member, not busy.
    pub fn join(&self) -> Member {
        Member { busy: self.busy.clone(), counted: false, busy_before: false }
    }

    /// Sessions counted busy now.
    pub fn busy(&self) -> usize {
        self.busy.load(Ordering::Relaxed)
    }
}

impl Member {
    /// Records whether the session is busy now and returns whether another session is. A
    /// session counts as busy while it was busy at this update or the one before, so that one
    /// sample between two writes of a bulk transfer does not take it out.
    pub fn update(&mut self, busy_now: bool) -> bool {
        let busy = busy_now || self.busy_before;
        self.busy_before = busy_now;
        if busy != self.counted {
            if busy {
                self.busy.fetch_add(1, Ordering::Relaxed);
            } else {
                self.busy.fetch_sub(1, Ordering::Relaxed);
            }
            self.counted = busy;
        }
        self.busy.load(Ordering::Relaxed) > usize::from(self.counted)
    }
}

impl Drop for Member {
    fn drop(&mut self) {
        if self.counted {
            self.busy.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_is_shared_only_while_another_is_busy() {
        let crowd = Crowd::new();
        let (mut a, mut b) = (crowd.join(), crowd.join());
        // Alone: a's backlog makes it busy, but nobody else is.
        assert!(!a.update(true));
        assert!(b.update(false), "b idle, a busy: b would share once it sends");
        assert_eq!(crowd.busy(), 1);
        // Both busy: each sees the other.
        assert!(b.update(true));
        assert!(a.update(true));
        assert_eq!(crowd.busy(), 2);
        // b's backlog empties: one update later it still counts (one quiet sample between
        // two writes), the next it leaves, and a is alone again.
        assert!(b.update(false));
        assert_eq!(crowd.busy(), 2);
        assert!(b.update(false), "b is idle, a is busy");
        assert_eq!(crowd.busy(), 1);
        assert!(!a.update(true));
    }

    #[test]
    fn a_member_leaves_the_count_when_dropped() {
        let crowd = Crowd::new();
        let mut a = crowd.join();
        let mut b = crowd.join();
        a.update(true);
        b.update(true);
        assert_eq!(crowd.busy(), 2);
        drop(b);
        assert_eq!(crowd.busy(), 1);
        assert!(!a.update(true));
        drop(a);
        assert_eq!(crowd.busy(), 0);
    }
}
