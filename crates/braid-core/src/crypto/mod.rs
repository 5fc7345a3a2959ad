//! Keys, the Noise IK handshake, per-packet AEAD and the anti-replay window.
//!
//! Key material never reaches a log: [`keys::StaticSecret`] and [`aead::PacketKey`] print as
//! `<redacted>`.

pub mod aead;
pub mod handshake;
pub mod keys;
pub mod replay;

pub use keys::{KeyError, PublicKey, StaticSecret};
