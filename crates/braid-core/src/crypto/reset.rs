//! Stateless reset tokens (RFC 9000 §10.3): how a server that lost a session (it restarted,
//! or forgot the session) tells the client at once instead of after the client's idle timeout.
//!
//! ```text
//! token = HMAC-SHA256(HKDF-Expand(server static secret, "braid stateless reset"),
//!                     server session id)[..16]
//! ```
//! The token depends only on the server's static key — the one secret that survives a
//! restart — and the session id in the client's DATA headers, so a restarted server computes
//! it from a packet alone. The client learns it sealed inside HANDSHAKE_RESP; nobody else can
//! compute it (RFC 9000 §10.3.2's static-key construction).

use super::keys::StaticSecret;
use crate::wire::RESET_TOKEN_LEN;
use ring::{hkdf, hmac};
use subtle::ConstantTimeEq;

const LABEL: &[u8] = b"braid stateless reset";

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

    /// The token of the server session `session_id`.
    pub fn token(&self, session_id: u32) -> [u8; RESET_TOKEN_LEN] {
        let tag = hmac::sign(&self.0, &session_id.to_be_bytes());
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
    fn tokens_depend_on_key_and_session_and_survive_a_restart() {
        let secret = StaticSecret::from_bytes([4; 32]);
        let a = ResetKey::new(&secret).token(7);
        assert_eq!(ResetKey::new(&secret.clone()).token(7), a, "same key after a restart");
        assert_ne!(ResetKey::new(&secret).token(8), a);
        assert_ne!(ResetKey::new(&StaticSecret::from_bytes([5; 32])).token(7), a);
        assert!(token_matches(&a, &a));
        let mut b = a;
        b[15] ^= 1;
        assert!(!token_matches(&a, &b));
    }
}
