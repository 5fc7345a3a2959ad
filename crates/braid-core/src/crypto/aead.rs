//! Per-packet AEAD for DATA packets: ChaCha20-Poly1305 (ring), sealed in place.
//!
//! The 96-bit nonce is `0u32 || path_id << 56 | packet_number`: every (path, packet number) pair
//! is used at most once per key, because packet numbers only grow on a path.

use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, CHACHA20_POLY1305};
use std::fmt;

/// One direction's packet key.
pub struct PacketKey(LessSafeKey);

/// The AEAD rejected the packet (wrong key, corrupted, or forged).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenError;

fn nonce(path_id: u8, pn: u64) -> Nonce {
    let mut n = [0u8; 12];
    n[4..].copy_from_slice(&((u64::from(path_id) << 56) | (pn & ((1 << 56) - 1))).to_be_bytes());
    Nonce::assume_unique_for_key(n)
}

impl PacketKey {
    /// A key from 32 bytes of the Noise split.
    pub fn new(key: &[u8; 32]) -> Self {
        PacketKey(LessSafeKey::new(
            UnboundKey::new(&CHACHA20_POLY1305, key).expect("32-byte ChaCha20-Poly1305 key"),
        ))
    }

    /// Seals `packet[header_len..]` in place with `packet[..header_len]` as associated data and
    /// appends the tag.
    pub fn seal(&self, path_id: u8, pn: u64, packet: &mut Vec<u8>, header_len: usize) {
        let (header, payload) = packet.split_at_mut(header_len);
        let tag = self
            .0
            .seal_in_place_separate_tag(nonce(path_id, pn), Aad::from(&*header), payload)
            .expect("payload within ChaCha20-Poly1305 limits");
        packet.extend_from_slice(tag.as_ref());
    }

    /// Opens `packet[header_len..]` (ciphertext and tag) in place; returns the plaintext length.
    pub fn open(
        &self,
        path_id: u8,
        pn: u64,
        packet: &mut [u8],
        header_len: usize,
    ) -> Result<usize, OpenError> {
        let (header, body) = packet.split_at_mut(header_len);
        self.0
            .open_in_place(nonce(path_id, pn), Aad::from(&*header), body)
            .map(|p| p.len())
            .map_err(|_| OpenError)
    }
}

impl fmt::Debug for PacketKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("PacketKey(<redacted>)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seal_open_and_binding() {
        let k = PacketKey::new(&[9; 32]);
        let mut p = b"HDRpayload".to_vec();
        k.seal(1, 5, &mut p, 3);
        assert_eq!(p.len(), 10 + 16);
        let mut q = p.clone();
        assert_eq!(k.open(1, 5, &mut q, 3), Ok(7));
        assert_eq!(&q[3..10], b"payload");
        // Wrong path, wrong number, altered header, wrong key: all rejected.
        assert!(k.open(2, 5, &mut p.clone(), 3).is_err());
        assert!(k.open(1, 6, &mut p.clone(), 3).is_err());
        let mut r = p.clone();
        r[0] ^= 1;
        assert!(k.open(1, 5, &mut r, 3).is_err());
        assert!(PacketKey::new(&[8; 32]).open(1, 5, &mut p, 3).is_err());
    }
}
