//! Seeds: the 32 bytes every random choice of a session or endpoint grows from.
//!
//! The core never reads the OS random source (it is sans-IO and deterministic); the daemon
//! passes 32 bytes from the OS for every seed, so ephemeral keys, session ids, path challenges
//! and cookie secrets carry 256 bits of entropy. The simulator and tests expand a `u64` with
//! [`Seed::from_u64`] so that the same number gives the same bytes on the wire.

use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};
use std::fmt;

/// 32 bytes of seed material.
#[derive(Clone, PartialEq, Eq)]
pub struct Seed([u8; 32]);

impl Seed {
    /// A seed from 32 bytes (the daemon: from the OS random source).
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        Seed(bytes)
    }

    /// A seed expanded from a number, for the simulator and tests only: 64 bits of entropy.
    pub fn from_u64(n: u64) -> Self {
        let mut b = [0u8; 32];
        ChaCha20Rng::seed_from_u64(n).fill_bytes(&mut b);
        Seed(b)
    }

    /// A seed drawn from `rng` (a child of another seed).
    pub fn draw(rng: &mut impl RngCore) -> Self {
        let mut b = [0u8; 32];
        rng.fill_bytes(&mut b);
        Seed(b)
    }

    /// The generator this seed starts.
    pub fn rng(&self) -> ChaCha20Rng {
        ChaCha20Rng::from_seed(self.0)
    }
}

impl fmt::Debug for Seed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Seed(<redacted>)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expansion_is_deterministic_and_full_width() {
        assert_eq!(Seed::from_u64(7), Seed::from_u64(7));
        assert_ne!(Seed::from_u64(7), Seed::from_u64(8));
        // The bytes are not the number padded with zeros.
        assert!(Seed::from_u64(1).0[8..].iter().any(|b| *b != 0));
        let mut a = Seed::from_bytes([3; 32]).rng();
        let mut b = Seed::from_bytes([3; 32]).rng();
        assert_eq!(a.next_u64(), b.next_u64());
        assert!(!format!("{:?}", Seed::from_bytes([9; 32])).contains('9'));
    }
}
