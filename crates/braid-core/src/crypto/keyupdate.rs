//! Packet keys over a session's life: key update in both directions (RFC 9001 §6), by packet
//! count and by time, without a stall.
//!
//! The handshake yields one secret per direction. Each *key phase* derives the next secrets
//! from the current ones (`HKDF-Expand(secret, "braid key update")`, as RFC 9001 §6.1 derives
//! "quic ku"), and both directions move together. The phase's low two bits travel in every
//! DATA header, so a receiver tells the previous, current and next phase apart without trial
//! decryption (RFC 9001 has one bit and orders by packet number, which multipath packet numbers
//! do not allow).
//!
//! * **Initiating**: when this side has sealed `packet_limit` packets with the current keys,
//!   or `interval` has passed since the phase began, it moves to the next phase — but only
//!   once the peer proved it has the current keys (a packet of this phase arrived: RFC 9001
//!   §6.1 "MUST NOT initiate a subsequent key update unless it has received an acknowledgment
//!   for a packet that was sent protected with keys from the current key phase") and once the
//!   previous phase's keys were discarded.
//! * **Responding**: a packet of the next phase that opens with the precomputed next keys
//!   moves this side to that phase (RFC 9001 §6.2).
//! * **No stall**: the next receive keys are derived in advance; the previous receive keys
//!   stay for `grace` after the change (RFC 9001 §6.5: "three times the current PTO"), for
//!   packets still in flight on slow paths, then are dropped; a packet of an older phase
//!   after that is refused.
//! * **Integrity limit** (RFC 9001 §6.6): packets that fail to open are counted; past the
//!   cipher's limit the session must end.

use super::aead::{Cipher, OpenError, PacketKey};
use crate::time::Timestamp;
use crate::wire::KEY_PHASE_MASK;
use ring::hkdf;
use std::fmt;
use std::time::Duration;

/// RFC 9001 §6.6: AEAD_AES_256_GCM's confidentiality limit is 2^23 packets; braid updates at
/// half of it.
pub const AES_GCM_PACKET_LIMIT: u64 = 1 << 22;
/// ChaCha20-Poly1305's confidentiality limit exceeds any packet count (RFC 9001 §6.6: above
/// 2^62); braid still updates after 2^28 packets to bound what one key protects.
pub const CHACHA_PACKET_LIMIT: u64 = 1 << 28;
/// RFC 9001 §6.6 integrity limits: forged packets tolerated per key before the session ends.
const AES_GCM_INTEGRITY_LIMIT: u64 = 1 << 52;
const CHACHA_INTEGRITY_LIMIT: u64 = 1 << 36;
/// WireGuard's REKEY_AFTER_TIME.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(120);

const LABEL: &[u8] = b"braid key update";

/// When keys are updated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UpdatePolicy {
    /// Packets sealed with one key before the update (None: the cipher's default).
    pub packets: Option<u64>,
    /// Age of a key phase before the update.
    pub interval: Duration,
}

impl Default for UpdatePolicy {
    fn default() -> Self {
        UpdatePolicy { packets: None, interval: DEFAULT_INTERVAL }
    }
}

impl UpdatePolicy {
    fn packet_limit(&self, cipher: Cipher) -> u64 {
        let cap = match cipher {
            Cipher::Aes256Gcm => AES_GCM_PACKET_LIMIT,
            Cipher::ChaCha20Poly1305 => CHACHA_PACKET_LIMIT,
        };
        self.packets.map_or(cap, |p| p.clamp(1, cap))
    }
}

/// Why a packet did not open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenFailure {
    /// The AEAD rejected it.
    Decrypt,
    /// Sealed with keys this side no longer (or not yet) holds.
    KeyPhase,
}

/// One direction's secret of one phase.
#[derive(Clone)]
struct Secret([u8; 32]);

impl Secret {
    fn next(&self) -> Secret {
        struct Len;
        impl hkdf::KeyType for Len {
            fn len(&self) -> usize {
                32
            }
        }
        let mut out = [0u8; 32];
        hkdf::Prk::new_less_safe(hkdf::HKDF_SHA256, &self.0)
            .expand(&[LABEL], Len)
            .and_then(|okm| okm.fill(&mut out))
            .expect("32 bytes is within HKDF-SHA256's output limit");
        Secret(out)
    }
}

/// The keys of one phase, both directions.
struct Phase {
    send: Secret,
    recv: Secret,
    seal: PacketKey,
    open: PacketKey,
}

impl Phase {
    fn new(cipher: Cipher, send: Secret, recv: Secret) -> Phase {
        Phase { seal: PacketKey::new(cipher, &send.0), open: PacketKey::new(cipher, &recv.0), send, recv }
    }

    fn next(&self, cipher: Cipher) -> Phase {
        Phase::new(cipher, self.send.next(), self.recv.next())
    }
}

/// A session's packet keys.
pub struct KeySchedule {
    cipher: Cipher,
    policy: UpdatePolicy,
    /// Generation of the current keys (the header carries its low two bits).
    phase: u64,
    current: Phase,
    /// The next phase, derived in advance.
    next: Phase,
    /// The previous phase's receive key and when it is dropped.
    previous: Option<(PacketKey, Timestamp)>,
    /// When the current phase began.
    started: Timestamp,
    /// Packets sealed in the current phase.
    sealed: u64,
    /// A packet of the current phase arrived: the peer has these keys.
    confirmed: bool,
    /// Packets that failed to open, all phases.
    failed: u64,
}

impl fmt::Debug for KeySchedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeySchedule")
            .field("cipher", &self.cipher)
            .field("phase", &self.phase)
            .field("sealed", &self.sealed)
            .finish_non_exhaustive()
    }
}

impl KeySchedule {
    /// The schedule of a session whose handshake gave these secrets at `now`. The initiator of
    /// the handshake holds the first phase confirmed only once a packet of the peer arrives;
    /// so does the responder.
    pub fn new(cipher: Cipher, send: [u8; 32], recv: [u8; 32], policy: UpdatePolicy, now: Timestamp) -> Self {
        let current = Phase::new(cipher, Secret(send), Secret(recv));
        let next = current.next(cipher);
        KeySchedule {
            cipher,
            policy,
            phase: 0,
            current,
            next,
            previous: None,
            started: now,
            sealed: 0,
            confirmed: false,
            failed: 0,
        }
    }

    /// The AEAD.
    pub fn cipher(&self) -> Cipher {
        self.cipher
    }

    /// Generation of the current keys (0 after the handshake).
    pub fn phase(&self) -> u64 {
        self.phase
    }

    /// Packets that failed to open.
    pub fn failed_opens(&self) -> u64 {
        self.failed
    }

    /// True once more packets failed to open than the cipher tolerates (RFC 9001 §6.6): the
    /// session must end.
    pub fn integrity_exhausted(&self) -> bool {
        let limit = match self.cipher {
            Cipher::Aes256Gcm => AES_GCM_INTEGRITY_LIMIT,
            Cipher::ChaCha20Poly1305 => CHACHA_INTEGRITY_LIMIT,
        };
        self.failed >= limit
    }

    /// Seals `packet[header_len..]`, writing the key phase into the header's type byte first
    /// (the header is associated data). Updates the keys first when the policy says so and
    /// the peer is ready; `grace` is how long the previous receive key is kept.
    pub fn seal(
        &mut self,
        now: Timestamp,
        grace: Duration,
        path_id: u8,
        pn: u64,
        packet: &mut Vec<u8>,
        header_len: usize,
    ) {
        self.expire(now);
        if self.update_due(now) {
            self.advance(now, grace);
        }
        packet[0] = (packet[0] & !KEY_PHASE_MASK) | self.phase_bits();
        self.current.seal.seal(path_id, pn, packet, header_len);
        self.sealed += 1;
    }

    /// Opens a packet whose header says `key_phase`; returns the plaintext length. A packet of
    /// the next phase that opens moves this side to that phase.
    #[allow(clippy::too_many_arguments)]
    pub fn open(
        &mut self,
        now: Timestamp,
        grace: Duration,
        key_phase: u8,
        path_id: u8,
        pn: u64,
        packet: &mut [u8],
        header_len: usize,
    ) -> Result<usize, OpenFailure> {
        self.expire(now);
        let bits = key_phase & KEY_PHASE_MASK;
        let result = if bits == self.phase_bits() {
            let r = self.current.open.open(path_id, pn, packet, header_len);
            if r.is_ok() {
                self.confirmed = true;
            }
            r
        } else if bits == self.phase.wrapping_add(1) as u8 & KEY_PHASE_MASK {
            let r = self.next.open.open(path_id, pn, packet, header_len);
            if r.is_ok() {
                // RFC 9001 §6.2: the peer updated; follow it.
                self.advance(now, grace);
                self.confirmed = true;
            }
            r
        } else if bits == self.phase.wrapping_sub(1) as u8 & KEY_PHASE_MASK {
            match &self.previous {
                Some((key, _)) => key.open(path_id, pn, packet, header_len),
                None => return Err(OpenFailure::KeyPhase),
            }
        } else {
            return Err(OpenFailure::KeyPhase);
        };
        result.map_err(|OpenError| {
            self.failed += 1;
            OpenFailure::Decrypt
        })
    }

    /// When the previous receive key is dropped, if one is held (it is dropped lazily, at the
    /// first seal or open after this time).
    pub fn previous_expiry(&self) -> Option<Timestamp> {
        self.previous.as_ref().map(|(_, t)| *t)
    }

    /// When a time-based update becomes due (None: waiting for the peer's confirmation); it
    /// happens at the first seal after this time (idle paths send keepalives every second).
    pub fn update_deadline(&self) -> Option<Timestamp> {
        self.confirmed.then_some(self.started + self.policy.interval)
    }

    /// Drops the previous receive key once its grace is over.
    pub fn expire(&mut self, now: Timestamp) {
        if self.previous.as_ref().is_some_and(|(_, t)| now >= *t) {
            self.previous = None;
        }
    }

    fn phase_bits(&self) -> u8 {
        self.phase as u8 & KEY_PHASE_MASK
    }

    fn update_due(&self, now: Timestamp) -> bool {
        self.confirmed
            && self.previous.is_none()
            && (self.sealed >= self.policy.packet_limit(self.cipher)
                || now >= self.started + self.policy.interval)
    }

    fn advance(&mut self, now: Timestamp, grace: Duration) {
        let next = self.next.next(self.cipher);
        let old = std::mem::replace(&mut self.current, std::mem::replace(&mut self.next, next));
        self.previous = Some((old.open, now + grace));
        self.phase += 1;
        self.started = now;
        self.sealed = 0;
        self.confirmed = false;
        tracing::debug!(phase = self.phase, "packet keys updated");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{DataHeader, DATA_HEADER_LEN};
    use proptest::prelude::*;

    const GRACE: Duration = Duration::from_secs(1);

    fn pair(policy: UpdatePolicy) -> (KeySchedule, KeySchedule) {
        let (a, b) = ([1u8; 32], [2u8; 32]);
        (
            KeySchedule::new(Cipher::ChaCha20Poly1305, a, b, policy, Timestamp::ZERO),
            KeySchedule::new(Cipher::ChaCha20Poly1305, b, a, policy, Timestamp::ZERO),
        )
    }

    fn packet(pn: u64) -> Vec<u8> {
        let mut p = vec![0u8; DATA_HEADER_LEN];
        DataHeader {
            session_id: crate::wire::SessionId(1),
            path_id: 0,
            truncated_pn: pn as u32,
            key_phase: 0,
        }
        .write(&mut p);
        p.extend_from_slice(b"frames");
        p
    }

    fn send(from: &mut KeySchedule, now: Timestamp, pn: u64) -> (u8, Vec<u8>) {
        let mut p = packet(pn);
        from.seal(now, GRACE, 0, pn, &mut p, DATA_HEADER_LEN);
        (p[0] & KEY_PHASE_MASK, p)
    }

    fn recv(
        to: &mut KeySchedule,
        now: Timestamp,
        pn: u64,
        (phase, mut p): (u8, Vec<u8>),
    ) -> Result<usize, OpenFailure> {
        to.open(now, GRACE, phase, 0, pn, &mut p, DATA_HEADER_LEN)
    }

    #[test]
    fn updates_by_count_follow_and_confirm() {
        let (mut a, mut b) = pair(UpdatePolicy { packets: Some(3), interval: Duration::from_secs(600) });
        let t = Timestamp::ZERO;
        // Unconfirmed: a seals past the limit without updating.
        for pn in 0..5 {
            let p = send(&mut a, t, pn);
            assert_eq!(recv(&mut b, t, pn, p), Ok(6));
        }
        assert_eq!(a.phase(), 0);
        // b answers: a is confirmed and updates at its next packet.
        let p = send(&mut b, t, 0);
        recv(&mut a, t, 0, p).unwrap();
        let p = send(&mut a, t, 5);
        assert_eq!(a.phase(), 1);
        assert_eq!(recv(&mut b, t, 5, p), Ok(6));
        assert_eq!(b.phase(), 1, "b follows");
        // a may not update again while it holds the previous key.
        let p = send(&mut b, t, 1);
        recv(&mut a, t, 1, p).unwrap();
        for pn in 6..12 {
            let p = send(&mut a, t, pn);
            recv(&mut b, t, pn, p).unwrap();
        }
        assert_eq!(a.phase(), 1);
        let later = t + GRACE;
        let p = send(&mut a, later, 12);
        assert_eq!(a.phase(), 2);
        assert_eq!(recv(&mut b, later, 12, p), Ok(6));
        assert_eq!(b.phase(), 2);
    }

    #[test]
    fn updates_by_time() {
        let (mut a, mut b) = pair(UpdatePolicy { packets: None, interval: Duration::from_secs(120) });
        let t = Timestamp::ZERO;
        let p = send(&mut b, t, 0);
        recv(&mut a, t, 0, p).unwrap();
        assert_eq!(a.update_deadline(), Some(t + Duration::from_secs(120)));
        let p = send(&mut a, t + Duration::from_secs(119), 0);
        assert_eq!(a.phase(), 0);
        recv(&mut b, t, 0, p).unwrap();
        let late = t + Duration::from_secs(120);
        let p = send(&mut a, late, 1);
        assert_eq!(a.phase(), 1);
        recv(&mut b, late, 1, p).unwrap();
        assert_eq!(b.phase(), 1);
    }

    #[test]
    fn forged_and_two_ahead_are_refused() {
        let (mut a, mut b) = pair(UpdatePolicy::default());
        let t = Timestamp::ZERO;
        let (ph, mut p) = send(&mut a, t, 0);
        p[DATA_HEADER_LEN] ^= 1;
        assert_eq!(recv(&mut b, t, 0, (ph, p)), Err(OpenFailure::Decrypt));
        assert_eq!(b.failed_opens(), 1);
        let (_, p) = send(&mut a, t, 1);
        assert_eq!(recv(&mut b, t, 1, (2, p.clone())), Err(OpenFailure::KeyPhase));
        // A packet claiming the next phase but sealed with the current key fails and does not
        // move b.
        assert_eq!(recv(&mut b, t, 1, (1, p)), Err(OpenFailure::Decrypt));
        assert_eq!(b.phase(), 0);
    }

    proptest! {
        /// A packet of the previous phase opens within the grace period after the change and is
        /// refused after it, whatever the timing.
        #[test]
        fn old_phase_dropped_after_grace(delay_ms in 0u64..3000, limit in 1u64..20) {
            let (mut a, mut b) = pair(UpdatePolicy { packets: Some(limit), interval: Duration::from_secs(600) });
            let t = Timestamp::ZERO;
            let p = send(&mut b, t, 0);
            recv(&mut a, t, 0, p).unwrap();
            // Phase 0 packets held back, then the update.
            let old: Vec<_> = (0..limit).map(|pn| (pn, send(&mut a, t, pn))).collect();
            prop_assert!(old.iter().all(|(_, (phase, _))| *phase == 0));
            let pn = limit;
            let p = send(&mut a, t, pn);
            prop_assert_eq!(a.phase(), 1);
            recv(&mut b, t, pn, p).unwrap();
            let at = t + Duration::from_millis(delay_ms);
            for (pn, p) in old {
                let r = recv(&mut b, at, pn, p);
                if delay_ms < GRACE.as_millis() as u64 {
                    prop_assert_eq!(r, Ok(6));
                } else {
                    prop_assert_eq!(r, Err(OpenFailure::KeyPhase));
                }
            }
        }
    }
}
