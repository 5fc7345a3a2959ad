//! Keys, the Noise IK handshake, per-packet AEAD, key update, the anti-replay window, and the
//! cheap checks that guard the handshake (mac1/mac2 cookies, stateless reset tokens).
//!
//! Key material never reaches a log: [`keys::StaticSecret`] and [`aead::PacketKey`] print as
//! `<redacted>`.

pub mod aead;
pub mod cookie;
pub mod handshake;
pub mod keys;
pub mod keyupdate;
pub mod replay;
pub mod reset;
pub mod seed;

pub use keys::{KeyError, PublicKey, StaticSecret};
pub use seed::Seed;
