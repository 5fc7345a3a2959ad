//! Sliding anti-replay window over one path's packet numbers (RFC 6479's bitmap, simplified).
//!
//! A packet number is accepted once: when it is above the highest seen, or within the last
//! [`WINDOW`] numbers and not yet seen. Anything older is refused as possibly replayed.

/// How far below the highest packet number a late packet is still accepted.
pub const WINDOW: u64 = 4096;
// One spare word so the oldest in-window number never shares a word with the highest.
const WORDS: usize = (WINDOW / 64) as usize + 1;

/// Why a packet number was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplayError {
    /// Already received.
    Duplicate,
    /// Older than the window.
    TooOld,
}

/// The window. `check` before decrypting, `commit` after the packet authenticated.
#[derive(Debug, Clone)]
pub struct ReplayWindow {
    highest: Option<u64>,
    bits: [u64; WORDS],
}

impl Default for ReplayWindow {
    fn default() -> Self {
        ReplayWindow { highest: None, bits: [0; WORDS] }
    }
}

impl ReplayWindow {
    /// The highest packet number committed so far.
    pub fn highest(&self) -> Option<u64> {
        self.highest
    }

    fn slot(pn: u64) -> (usize, u64) {
        (((pn / 64) % WORDS as u64) as usize, 1 << (pn % 64))
    }

    /// Would `pn` be accepted?
    pub fn check(&self, pn: u64) -> Result<(), ReplayError> {
        let Some(h) = self.highest else { return Ok(()) };
        if pn > h {
            return Ok(());
        }
        if h - pn >= WINDOW {
            return Err(ReplayError::TooOld);
        }
        let (w, b) = Self::slot(pn);
        if self.bits[w] & b != 0 {
            Err(ReplayError::Duplicate)
        } else {
            Ok(())
        }
    }

    /// Records `pn` as received (call only after `check` passed and the packet authenticated).
    pub fn commit(&mut self, pn: u64) {
        match self.highest {
            Some(h) if pn <= h => {}
            Some(h) => {
                // Clear the words that slide into the window between h and pn.
                let (old_word, new_word) = (h / 64, pn / 64);
                let steps = (new_word - old_word).min(WORDS as u64);
                for i in 1..=steps {
                    self.bits[((old_word + i) % WORDS as u64) as usize] = 0;
                }
                self.highest = Some(pn);
            }
            None => {
                self.bits = [0; WORDS];
                self.highest = Some(pn);
            }
        }
        let (w, b) = Self::slot(pn);
        self.bits[w] |= b;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashSet;

    #[test]
    fn duplicates_and_old_refused() {
        let mut w = ReplayWindow::default();
        for pn in [0, 1, 5, 3] {
            assert_eq!(w.check(pn), Ok(()));
            w.commit(pn);
        }
        assert_eq!(w.check(3), Err(ReplayError::Duplicate));
        assert_eq!(w.check(4), Ok(()));
        w.commit(10_000);
        assert_eq!(w.check(5), Err(ReplayError::TooOld));
        assert_eq!(w.check(10_000 - WINDOW + 1), Ok(()));
        assert_eq!(w.check(10_000), Err(ReplayError::Duplicate));
    }

    proptest! {
        #[test]
        fn matches_a_set_model(pns in proptest::collection::vec(0u64..20_000, 1..400)) {
            let mut w = ReplayWindow::default();
            let mut seen = HashSet::new();
            let mut highest = 0u64;
            for pn in pns {
                let expect = if seen.contains(&pn) {
                    Err(ReplayError::Duplicate)
                } else if !seen.is_empty() && pn + WINDOW <= highest {
                    Err(ReplayError::TooOld)
                } else {
                    Ok(())
                };
                let got = w.check(pn);
                // A duplicate older than the window may be reported as TooOld: both refuse.
                prop_assert_eq!(got.is_ok(), expect.is_ok());
                if got.is_ok() {
                    w.commit(pn);
                    seen.insert(pn);
                    highest = highest.max(pn);
                }
            }
        }
    }
}
