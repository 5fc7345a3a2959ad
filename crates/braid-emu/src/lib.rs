//! # braid-emu: the link emulator
//!
//! The simulator's link model ([`braid_sim::link`]: rate, drop-tail queue, delay, jitter,
//! loss, outages) applied to real datagrams. A [`Relay`] is a UDP relay on loopback: the client
//! sends to the relay's address as if it were the server; the relay forwards to the real server
//! from a socket of its own (so every relay is a distinct path to the server) and sends the
//! server's answers back, each direction shaped by the link model. No root is needed; `braid
//! demo` and the end-to-end tests run on these relays, assembled by [`testbed`].
//! A [`bottleneck::Bottleneck`] is one shaped link that many clients share.

pub mod bottleneck;
mod relay;
mod socket;
pub mod testbed;

pub use relay::{OuterAddress, Relay, RelayHandle, RelayStats, Stale, DEFAULT_MTU, REPLAY_MEMORY};
