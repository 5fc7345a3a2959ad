//! How many of the server's sessions are sending at once: a session's paths share the
//! server's uplink with the others' only while they send too. `bbr-shared` (the server's
//! default controller) drains ProbeRTT to half a bandwidth-delay product so that a crowd's
//! queue empties and every session's minimum RTT meets it (`braid_core::cc::bbr::Bbr::shared`);
//! a session sending alone needs one BDP, as `bbr` drains, and the deeper drain only costs it
//! goodput and reorder. Every 500 ms each driver counts its session busy here while it has a
//! backlog and sent data since the last count (`Session::is_busy_sending`), and tells it
//! whether another session is busy (`Session::set_shared_bottleneck`).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// The server's count of busy sessions, shared by every driver.
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
    /// It was sending a backlog at the previous update.
    sending_before: bool,
}

impl Crowd {
    /// An empty crowd.
    pub fn new() -> Self {
        Crowd::default()
    }

    /// A new member, not busy.
    pub fn join(&self) -> Member {
        Member { busy: self.busy.clone(), counted: false, sending_before: false }
    }

    /// Sessions counted busy now.
    pub fn busy(&self) -> usize {
        self.busy.load(Ordering::Relaxed)
    }
}

impl Member {
    /// Records whether the session is sending a backlog now (`Session::is_busy_sending`) and
    /// returns whether another session is busy. A session counts as busy while it was
    /// sending at this update or the one before, so that one sample between two writes of a
    /// bulk transfer does not take it out.
    pub fn update(&mut self, sending: bool) -> bool {
        let busy = sending || self.sending_before;
        self.sending_before = sending;
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
