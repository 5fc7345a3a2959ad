//! Cheap checks before public-key work: WireGuard's `mac1` / `mac2` and cookie reply
//! (WireGuard whitepaper §5.4.4, §5.4.7).
//!
//! ```text
//! mac1 = MAC(HASH("braid mac1--" || server public key), msg[..len - 32])
//! mac2 = MAC(cookie, msg[..len - 16])               zeros when the client holds no cookie
//! cookie = MAC(R, source address)                   R: 32 random bytes, renewed every 2 min
//! COOKIE_REPLY = [0x04][nonce 24][XAEAD(HASH("braid cookie" || server public key), nonce,
//!                                      cookie, aad = mac1 of the message it answers)]
//! ```
//! MAC is keyed BLAKE2s with 16 bytes of output, HASH is BLAKE2s-256, XAEAD is
//! XChaCha20-Poly1305. `mac1` lets the server drop, for the price of one BLAKE2s, every
//! HANDSHAKE_INIT not made by someone who knows its public key. Under load the server also
//! demands `mac2`: a client that can receive at its source address gets a cookie and proves
//! it; a flood from spoofed addresses cannot, and costs the server no Diffie-Hellman.

use super::keys::PublicKey;
use crate::time::Timestamp;
use crate::wire::{
    COOKIE_LEN, COOKIE_NONCE_LEN, COOKIE_REPLY_LEN, MAC2_OFFSET, MAC_LEN, TAG_LEN, TYPE_COOKIE_REPLY,
};
use blake2::digest::consts::U16;
use blake2::digest::{KeyInit, Mac};
use blake2::{Blake2s256, Blake2sMac, Digest};
use chacha20poly1305::aead::AeadInPlace;
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use rand_core::RngCore;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;
use subtle::ConstantTimeEq;

/// How long the server's cookie secret lives, and a client's cookie (WireGuard: 2 minutes).
pub const COOKIE_LIFETIME: Duration = Duration::from_secs(120);
/// A client stops using a cookie this long before it expires at the server.
const COOKIE_MARGIN: Duration = Duration::from_secs(10);

const LABEL_MAC1: &[u8] = b"braid mac1--";
const LABEL_COOKIE: &[u8] = b"braid cookie";

fn hash(label: &[u8], key: &PublicKey) -> [u8; 32] {
    let mut h = Blake2s256::new();
    h.update(label);
    h.update(key.as_bytes());
    h.finalize().into()
}

fn mac(key: &[u8], data: &[&[u8]]) -> [u8; MAC_LEN] {
    let mut m = <Blake2sMac<U16> as KeyInit>::new_from_slice(key).expect("BLAKE2s takes keys up to 32 bytes");
    for d in data {
        Mac::update(&mut m, d);
    }
    m.finalize().into_bytes().into()
}

fn address_bytes(addr: SocketAddr) -> [u8; 18] {
    let ip = match addr.ip() {
        IpAddr::V4(v4) => v4.to_ipv6_mapped(),
        IpAddr::V6(v6) => v6,
    };
    let mut b = [0u8; 18];
    b[..16].copy_from_slice(&ip.octets());
    b[16..].copy_from_slice(&addr.port().to_be_bytes());
    b
}

/// The `mac1` of a HANDSHAKE_INIT datagram, as sent (also its fingerprint: it covers the whole
/// Noise message). Read from the end, where every version keeps it (see `wire`), so that it
/// also names a message of another version; zeros for a datagram too short to hold the MACs
/// (callers check the length first).
pub fn mac1_of(init: &[u8]) -> [u8; MAC_LEN] {
    let at = init.len().saturating_sub(2 * MAC_LEN);
    init.get(at..at + MAC_LEN).and_then(|m| m.try_into().ok()).unwrap_or([0; MAC_LEN])
}

/// The server's side: checks `mac1` and `mac2`, makes cookie replies.
pub struct CookieChecker {
    mac1_key: [u8; 32],
    seal_key: [u8; 32],
    secret: [u8; 32],
    secret_born: Option<Timestamp>,
    /// The secret before, and when it was made: its cookies stay good for their lifetime.
    previous: Option<([u8; 32], Timestamp)>,
}

impl std::fmt::Debug for CookieChecker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CookieChecker(<redacted>)")
    }
}

impl CookieChecker {
    /// The checker of the server whose public key is `server`.
    pub fn new(server: &PublicKey) -> Self {
        CookieChecker {
            mac1_key: hash(LABEL_MAC1, server),
            seal_key: hash(LABEL_COOKIE, server),
            secret: [0; 32],
            secret_born: None,
            previous: None,
        }
    }

    /// Whether `init` (a whole HANDSHAKE_INIT, of this version or another: `mac1` is read
    /// from the end) carries a valid `mac1`.
    pub fn mac1_ok(&self, init: &[u8]) -> bool {
        let Some(covered) = init.len().checked_sub(2 * MAC_LEN) else { return false };
        let want = mac(&self.mac1_key, &[&init[..covered]]);
        bool::from(want.ct_eq(&mac1_of(init)))
    }

    /// Whether `init` carries a `mac2` made with the cookie of `source`. A secret hands out
    /// cookies for one lifetime and each cookie lives one lifetime, so a secret is honoured
    /// for two.
    pub fn mac2_ok(&self, now: Timestamp, init: &[u8], source: SocketAddr) -> bool {
        let got = &init[MAC2_OFFSET..];
        let check = |secret: &[u8; 32], born: Timestamp| {
            now < born + 2 * COOKIE_LIFETIME && {
                let cookie = mac(secret, &[&address_bytes(source)]);
                bool::from(mac(&cookie, &[&init[..MAC2_OFFSET]]).ct_eq(got))
            }
        };
        self.secret_born.is_some_and(|b| check(&self.secret, b))
            || self.previous.as_ref().is_some_and(|(p, b)| check(p, *b))
    }

    /// The COOKIE_REPLY to `init` from `source`, renewing the secret when it is older than
    /// [`COOKIE_LIFETIME`].
    pub fn reply(
        &mut self,
        now: Timestamp,
        rng: &mut impl RngCore,
        init: &[u8],
        source: SocketAddr,
    ) -> [u8; COOKIE_REPLY_LEN] {
        if self.secret_born.is_none_or(|b| now >= b + COOKIE_LIFETIME) {
            self.previous = self.secret_born.map(|b| (self.secret, b));
            rng.fill_bytes(&mut self.secret);
            self.secret_born = Some(now);
        }
        let cookie = mac(&self.secret, &[&address_bytes(source)]);
        let mut out = [0u8; COOKIE_REPLY_LEN];
        out[0] = TYPE_COOKIE_REPLY;
        let (nonce, body) = out[1..].split_at_mut(COOKIE_NONCE_LEN);
        rng.fill_bytes(nonce);
        let (sealed, tag_out) = body.split_at_mut(COOKIE_LEN);
        sealed.copy_from_slice(&cookie);
        let tag = XChaCha20Poly1305::new((&self.seal_key).into())
            .encrypt_in_place_detached(XNonce::from_slice(nonce), &mac1_of(init), sealed)
            .expect("16 bytes are within XChaCha20-Poly1305's limits");
        tag_out.copy_from_slice(&tag);
        out
    }
}

/// Why a cookie reply was not taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CookieError;

/// The client's side: stamps `mac1` and `mac2` on its HANDSHAKE_INIT, takes cookie replies.
pub struct CookieJar {
    mac1_key: [u8; 32],
    seal_key: [u8; 32],
    cookie: Option<([u8; COOKIE_LEN], Timestamp)>,
    last_mac1: Option<[u8; MAC_LEN]>,
    /// The message whose cookie reply was taken: one reply per message, so a recorded reply
    /// replayed at us cannot make us resend again and again.
    answered: Option<[u8; MAC_LEN]>,
}

impl std::fmt::Debug for CookieJar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CookieJar").field("has_cookie", &self.cookie.is_some()).finish()
    }
}

impl CookieJar {
    /// The jar of a client of the server whose public key is `server`.
    pub fn new(server: &PublicKey) -> Self {
        CookieJar {
            mac1_key: hash(LABEL_MAC1, server),
            seal_key: hash(LABEL_COOKIE, server),
            cookie: None,
            last_mac1: None,
            answered: None,
        }
    }

    /// Writes `mac1`, and `mac2` when a fresh cookie is held, into the last `2 × MAC_LEN`
    /// bytes of `init` (where every version keeps them; see `wire`). A message too short to
    /// hold them is left as it is.
    pub fn stamp(&mut self, now: Timestamp, init: &mut [u8]) {
        let Some(mac1_at) = init.len().checked_sub(2 * MAC_LEN) else { return };
        let mac2_at = mac1_at + MAC_LEN;
        let m1 = mac(&self.mac1_key, &[&init[..mac1_at]]);
        init[mac1_at..mac2_at].copy_from_slice(&m1);
        self.last_mac1 = Some(m1);
        let m2 = match self.cookie {
            Some((c, at)) if now + COOKIE_MARGIN < at + COOKIE_LIFETIME => mac(&c, &[&init[..mac2_at]]),
            _ => [0; MAC_LEN],
        };
        init[mac2_at..].copy_from_slice(&m2);
    }

    /// Takes a COOKIE_REPLY addressed to the last stamped message (one per message).
    pub fn on_reply(
        &mut self,
        now: Timestamp,
        nonce: &[u8; COOKIE_NONCE_LEN],
        sealed: &[u8; COOKIE_LEN + TAG_LEN],
    ) -> Result<(), CookieError> {
        let aad = self.last_mac1.ok_or(CookieError)?;
        if self.answered == Some(aad) {
            return Err(CookieError);
        }
        let (body, tag) = sealed.split_at(COOKIE_LEN);
        let mut cookie: [u8; COOKIE_LEN] = body.try_into().expect("16 bytes");
        XChaCha20Poly1305::new((&self.seal_key).into())
            .decrypt_in_place_detached(XNonce::from_slice(nonce), &aad, &mut cookie, tag.into())
            .map_err(|_| CookieError)?;
        self.cookie = Some((cookie, now));
        self.answered = Some(aad);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::StaticSecret;
    use crate::wire::HANDSHAKE_INIT_LEN;
    use rand_chacha::ChaCha20Rng;
    use rand_core::SeedableRng;

    fn setup() -> (CookieChecker, CookieJar, Vec<u8>) {
        let server = StaticSecret::from_bytes([5; 32]).public_key();
        let mut init = vec![0x01; HANDSHAKE_INIT_LEN];
        init[2..40].copy_from_slice(&[9; 38]);
        (CookieChecker::new(&server), CookieJar::new(&server), init)
    }

    #[test]
    fn mac1_binds_the_server_key_and_the_message() {
        let (checker, mut jar, mut init) = setup();
        let t = Timestamp::ZERO;
        assert!(!checker.mac1_ok(&init), "no mac1 yet");
        jar.stamp(t, &mut init);
        assert!(checker.mac1_ok(&init));
        let mut altered = init.clone();
        altered[10] ^= 1;
        assert!(!checker.mac1_ok(&altered));
        let other = CookieChecker::new(&StaticSecret::from_bytes([6; 32]).public_key());
        assert!(!other.mac1_ok(&init));
    }

    #[test]
    fn cookie_round_trip_proves_the_address() {
        let (mut checker, mut jar, mut init) = setup();
        let mut rng = ChaCha20Rng::seed_from_u64(1);
        let t = Timestamp::ZERO;
        let me: SocketAddr = "192.0.2.1:4000".parse().unwrap();
        jar.stamp(t, &mut init);
        assert!(!checker.mac2_ok(t, &init, me));
        let reply = checker.reply(t, &mut rng, &init, me);
        let (nonce, sealed) = reply[1..].split_at(COOKIE_NONCE_LEN);
        jar.on_reply(t, nonce.try_into().unwrap(), sealed.try_into().unwrap()).unwrap();
        assert_eq!(
            jar.on_reply(t, nonce.try_into().unwrap(), sealed.try_into().unwrap()),
            Err(CookieError),
            "one reply per message: a replayed reply is not taken"
        );
        jar.stamp(t, &mut init);
        assert!(checker.mac2_ok(t, &init, me));
        assert!(!checker.mac2_ok(t, &init, "192.0.2.1:4001".parse().unwrap()), "another port");
        assert!(!checker.mac2_ok(t, &init, "192.0.2.2:4000".parse().unwrap()), "another host");
        // A cookie reply does not open for another message's mac1.
        let mut other = init.clone();
        other[20] ^= 1;
        jar.stamp(t, &mut other);
        assert_eq!(jar.on_reply(t, nonce.try_into().unwrap(), sealed.try_into().unwrap()), Err(CookieError));
        // A renewed secret still honours the cookies of the one before, for their lifetime.
        let renewed = t + COOKIE_LIFETIME;
        let _ = checker.reply(renewed, &mut rng, &init, me);
        assert!(checker.mac2_ok(renewed, &init, me));
        let late = t + 2 * COOKIE_LIFETIME;
        assert!(!checker.mac2_ok(late, &init, me), "past two lifetimes the cookie is worthless");
    }
}
