//! Handshakes the server has seen lately, by fingerprint (the message's `mac1`, a MAC over the
//! whole Noise message): a replayed HANDSHAKE_INIT costs one table lookup, never a second
//! Diffie-Hellman. Retransmissions of the message that created a session go to that session;
//! replays of a refused key get the refusal again (within the reply rate limit); replays of a
//! message being processed, or that did not open, are dropped.
//!
//! Bounded: entries live [`RECENT_LIFETIME`] (longer than a client retries one message) and
//! at most [`MAX_RECENT`] are kept, the oldest going first.

use crate::time::Timestamp;
use crate::wire::MAC_LEN;
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

/// How long a handshake is remembered.
pub const RECENT_LIFETIME: Duration = Duration::from_secs(120);
/// Most handshakes remembered.
pub const MAX_RECENT: usize = 1 << 14;

/// A fingerprint: the message's `mac1`.
pub type Fingerprint = [u8; MAC_LEN];

/// What came of a handshake message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seen {
    /// Being processed off the data path.
    Pending,
    /// It created this session.
    Session(crate::wire::SessionId),
    /// Its key is not admitted; the refusal sent (if one was).
    Refused(Option<Arc<[u8]>>),
    /// It did not open, or it was stale.
    Failed,
}

/// The table.
#[derive(Debug, Default)]
pub struct Recent {
    map: HashMap<Fingerprint, (Seen, Timestamp)>,
    order: VecDeque<(Fingerprint, Timestamp)>,
}

impl Recent {
    /// What came of `fp`, if it was seen within the lifetime.
    pub fn get(&self, now: Timestamp, fp: &Fingerprint) -> Option<&Seen> {
        self.map.get(fp).filter(|(_, at)| now < *at + RECENT_LIFETIME).map(|(s, _)| s)
    }

    /// Records what came of `fp`.
    pub fn insert(&mut self, now: Timestamp, fp: Fingerprint, seen: Seen) {
        self.expire(now);
        while self.map.len() >= MAX_RECENT && !self.map.contains_key(&fp) {
            let Some(old) = self.order.pop_front() else { break };
            self.forget(old);
        }
        self.map.insert(fp, (seen, now));
        self.order.push_back((fp, now));
    }

    /// Forgets `fp` (its handshake was never processed: a retransmission gets another try).
    pub fn remove(&mut self, fp: &Fingerprint) {
        self.map.remove(fp);
    }

    /// Entries held.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    fn expire(&mut self, now: Timestamp) {
        while let Some((fp, at)) = self.order.front().copied() {
            if now < at + RECENT_LIFETIME {
                break;
            }
            self.order.pop_front();
            self.forget((fp, at));
        }
    }

    /// Removes the entry `order` pointed at, unless it was updated since (an update leaves a
    /// newer position in `order`).
    fn forget(&mut self, (fp, at): (Fingerprint, Timestamp)) {
        if self.map.get(&fp).is_some_and(|(_, t)| *t == at) {
            self.map.remove(&fp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembers_for_a_lifetime_and_stays_bounded() {
        let mut r = Recent::default();
        let t = Timestamp::ZERO;
        r.insert(t, [1; MAC_LEN], Seen::Pending);
        r.insert(t, [1; MAC_LEN], Seen::Session(crate::wire::SessionId(5)));
        assert_eq!(r.get(t, &[1; MAC_LEN]), Some(&Seen::Session(crate::wire::SessionId(5))));
        assert_eq!(r.get(t + RECENT_LIFETIME, &[1; MAC_LEN]), None);
        r.insert(t + RECENT_LIFETIME, [2; MAC_LEN], Seen::Failed);
        assert_eq!(r.len(), 1, "the expired entry went");
        for i in 0..(MAX_RECENT + 10) as u32 {
            let mut fp = [0; MAC_LEN];
            fp[..4].copy_from_slice(&i.to_be_bytes());
            r.insert(t + RECENT_LIFETIME, fp, Seen::Failed);
        }
        assert_eq!(r.len(), MAX_RECENT);
    }
}
