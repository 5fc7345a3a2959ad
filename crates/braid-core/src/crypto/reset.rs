//! Stateless reset tokens (RFC 9000 §10.3): how a server that lost a session (it restarted,
//! or forgot the session) tells the client at once instead of after the client's idle timeout.
//!
//! ```text
//! key        = HKDF-Expand(server static secret, "braid stateless reset")
//! session id = r (32 random bits) || HMAC-SHA256(key, 0x01 || r)[..4]
//! token      = HMAC-SHA256(key, 0x02 || session id)[..16]
//! ```
//! Both depend only on the server's static key — the one secret that survives a restart — and
//! on the session id in the client's DATA headers, so a restarted server computes the token
//! from a packet alone (RFC 9000 §10.3.2's static-key construction). The client learns its
//! token sealed inside HANDSHAKE_RESP.
//!
//! Why the id carries a tag: a server answers packets of ids it does not know, so an attacker
//! could otherwise ask it for the token of every id in advance and later, having seen a live
//! session's id on one link, end the session with one forged packet. With the tag, the server
//! answers only ids it could have issued; finding one costs 2^32 guesses and yields the token
//! of an id that is one of 2^32 a future session may draw. A guessed id also cannot make the
//! server a reflector: untagged ids get no answer.

use super::keys::StaticSecret;
use crate::wire::{SessionId, RESET_TOKEN_LEN};
use ring::{hkdf, hmac};
use subtle::ConstantTimeEq;

const LABEL: &[u8] = b"braid stateless reset";
const DOMAIN_ID: u8 = 1;
const DOMAIN_TOKEN: u8 = 2;

/// The server's reset key.
pub struct ResetKey(hmac::Key);

impl std::fmt::Debug for ResetKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ResetKey(<redacted>)")
    }
}

impl ResetKey {
    /// The reset key of the server with static key `secret`.
    pub fn new(secret: &StaticSecret) -> Self {
        let prk = hkdf::Prk::new_less_safe(hkdf::HKDF_SHA256, secret.as_bytes());
        let okm = prk.expand(&[LABEL], hmac::HMAC_SHA256).expect("one HMAC key is within HKDF's limit");
        ResetKey(hmac::Key::from(okm))
    }

    fn tag(&self, r: u32) -> u32 {
        let mut input = [0u8; 5];
        input[0] = DOMAIN_ID;
        input[1..].copy_from_slice(&r.to_be_bytes());
        let t = hmac::sign(&self.0, &input);
        u32::from_be_bytes(t.as_ref()[..4].try_into().expect("SHA-256 is 32 bytes"))
    }

    /// The server session id made from 32 random bits `r`.
    pub fn session_id(&self, r: u32) -> SessionId {
        SessionId((u64::from(r) << 32) | u64::from(self.tag(r)))
    }

    /// Whether `id` is one this server could have issued.
    pub fn issued(&self, id: SessionId) -> bool {
        let tag = (id.0 as u32).to_be_bytes();
        bool::from(self.tag((id.0 >> 32) as u32).to_be_bytes().ct_eq(&tag))
    }

    /// The token of the server session `id`.
    pub fn token(&self, id: SessionId) -> [u8; RESET_TOKEN_LEN] {
        let mut input = [0u8; 9];
        input[0] = DOMAIN_TOKEN;
        input[1..].copy_from_slice(&id.0.to_be_bytes());
        let tag = hmac::sign(&self.0, &input);
        tag.as_ref()[..RESET_TOKEN_LEN].try_into().expect("SHA-256 is 32 bytes")
    }
}

/// Constant-time comparison of a received token with the expected one.
pub fn token_matches(expected: &[u8; RESET_TOKEN_LEN], got: &[u8; RESET_TOKEN_LEN]) -> bool {
    bool::from(expected.ct_eq(got))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_tokens_depend_on_the_key_and_survive_a_restart() {
        let secret = StaticSecret::from_bytes([4; 32]);
        let key = ResetKey::new(&secret);
        let id = key.session_id(7);
        assert!(key.issued(id));
        assert!(!key.issued(SessionId(id.0 ^ 1)), "a changed tag");
        assert!(!key.issued(SessionId(id.0 ^ (1 << 40))), "a changed random part");
        let restarted = ResetKey::new(&secret.clone());
        assert!(restarted.issued(id));
        assert_eq!(restarted.token(id), key.token(id), "same token after a restart");
        assert_ne!(key.token(key.session_id(8)), key.token(id));
        let other = ResetKey::new(&StaticSecret::from_bytes([5; 32]));
        assert!(!other.issued(id));
        assert_ne!(other.token(id), key.token(id));
        let a = key.token(id);
        assert!(token_matches(&a, &a));
        let mut b = a;
        b[15] ^= 1;
        assert!(!token_matches(&a, &b));
    }

    #[test]
    fn random_ids_are_almost_never_issued() {
        let key = ResetKey::new(&StaticSecret::from_bytes([4; 32]));
        let hits =
            (0..100_000u64).filter(|i| key.issued(SessionId(i.wrapping_mul(0x9e37_79b9_7f4a_7c15)))).count();
        assert_eq!(hits, 0);
    }
}
