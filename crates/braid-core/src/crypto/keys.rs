//! Static X25519 keys as the operator handles them: 32 bytes, written in base64
//! (the habit of `wg genkey | wg pubkey`).

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use snow::params::DHChoice;
use snow::resolvers::{CryptoResolver, DefaultResolver};
use std::fmt;
use std::str::FromStr;

/// Why a key string was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// Not base64.
    #[error("not valid base64")]
    Base64,
    /// Decoded to the wrong number of bytes.
    #[error("a key is 32 bytes, this one decodes to {0}")]
    Length(usize),
}

fn decode32(s: &str) -> Result<[u8; 32], KeyError> {
    let bytes = STANDARD.decode(s.trim()).map_err(|_| KeyError::Base64)?;
    let len = bytes.len();
    bytes.try_into().map_err(|_| KeyError::Length(len))
}

/// A static private key (X25519). Its `Debug` and `Display` never show the key.
#[derive(Clone, PartialEq, Eq)]
pub struct StaticSecret([u8; 32]);

/// A static public key (X25519).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PublicKey([u8; 32]);

impl StaticSecret {
    /// A secret from 32 random bytes (clamping happens inside X25519).
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        StaticSecret(bytes)
    }

    /// The raw key, for the handshake only.
    pub(crate) fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// The matching public key.
    pub fn public_key(&self) -> PublicKey {
        let mut dh = DefaultResolver
            .resolve_dh(&DHChoice::Curve25519)
            .expect("snow's default resolver provides X25519");
        dh.set(&self.0);
        PublicKey(dh.pubkey().try_into().expect("X25519 public keys are 32 bytes"))
    }

    /// Base64 text of the private key, for writing a key file.
    pub fn to_base64(&self) -> String {
        STANDARD.encode(self.0)
    }
}

impl FromStr for StaticSecret {
    type Err = KeyError;
    fn from_str(s: &str) -> Result<Self, KeyError> {
        decode32(s).map(StaticSecret)
    }
}

impl fmt::Debug for StaticSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("StaticSecret(<redacted>)")
    }
}

impl PublicKey {
    /// A public key from its 32 bytes.
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        PublicKey(bytes)
    }

    /// The raw bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }
}

impl FromStr for PublicKey {
    type Err = KeyError;
    fn from_str(s: &str) -> Result<Self, KeyError> {
        decode32(s).map(PublicKey)
    }
}

impl fmt::Display for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&STANDARD.encode(self.0))
    }
}

impl fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PublicKey({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_round_trip_and_errors() {
        let sk = StaticSecret::from_bytes([7; 32]);
        let parsed: StaticSecret = sk.to_base64().parse().unwrap();
        assert_eq!(parsed, sk);
        let pk = sk.public_key();
        assert_eq!(pk.to_string().parse::<PublicKey>().unwrap(), pk);
        assert_ne!(pk.as_bytes(), &[7; 32]);
        assert_eq!("!!".parse::<PublicKey>(), Err(KeyError::Base64));
        assert_eq!("AAAA".parse::<PublicKey>(), Err(KeyError::Length(3)));
        assert!(!format!("{sk:?}").contains(&sk.to_base64()));
    }
}
