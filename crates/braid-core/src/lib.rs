//! # braid-core: the protocol core of braid
//!
//! braid bonds several network links into one encrypted session: a client opens one *path*
//! per link to an aggregation server; a *scheduler* spreads packets over the paths; per-path
//! loss recovery and congestion control keep each link full without one link's losses
//! slowing the others; streams are reassembled in order at the far end.
//!
//! This crate is **sans-IO**: no sockets, threads, clocks or OS randomness. The caller feeds
//! datagrams and the current time in and takes datagrams and timer deadlines out. The same
//! code runs in the tokio daemon and, bit for bit reproducibly, in the simulator.
//!
//! ## The contract
//!
//! * **Time** is a [`Timestamp`] the caller passes to every entry point (`now`). It must never
//!   go backwards. The core never reads a clock.
//! * **Randomness** is a `u64` seed given at construction ([`Session::connect`],
//!   [`Endpoint::new`]); every random choice (session ids, Noise ephemeral keys, path
//!   challenges) derives from it. Same seeds and same inputs give the same bytes out.
//! * **Input**: [`Session::handle_datagram`] for every UDP payload that arrived (server side:
//!   first [`Endpoint::handle`], which admits new clients and routes by session id), and
//!   [`Session::handle_timeout`] when the deadline from [`Session::poll_timeout`] has passed.
//! * **Output**: [`Session::poll_transmit`] until it returns `None` (each call writes one
//!   datagram into the caller's buffer and says which path, source and destination), then
//!   [`Session::poll_event`] until `None`, then [`Session::poll_timeout`] for the next wake-up.
//!
//! A driver therefore loops, in this fixed order:
//!
//! ```text
//! loop {
//!     for each received datagram: session.handle_datagram(now, local, remote, bytes)
//!     if now >= deadline:         session.handle_timeout(now)
//!     while let Some(t) = session.poll_transmit(now, &mut buf) { send buf[..t.size] }
//!     while let Some(e) = session.poll_event() { act on it (read streams, …) }
//!     deadline = session.poll_timeout()   // sleep until then or until a datagram arrives
//! }
//! ```
//!
//! Application calls (open/write/read streams, send datagrams, add paths) may be made at any
//! point between these steps; their effects leave with the next `poll_transmit`.
//!
//! ## Map
//!
//! | module | concern |
//! | --- | --- |
//! | [`wire`] | packet headers and frames (every constant of the wire format) |
//! | [`crypto`] | keys, Noise IK handshake, packet AEAD, anti-replay |
//! | [`path`] | per-path packet numbers, ACKs, loss detection, RTT |
//! | [`cc`] | congestion controllers and pacing |
//! | [`stream`], [`datagram`] | what the application sends and receives |
//! | [`scheduler`] | which path carries the next packet |
//! | [`policy`] | the client's choices (scheduler, classes, path limits) for both directions |
//! | [`monitor`] | per-path measurements |
//! | [`session`], [`endpoint`] | the state machine and the server's admission of clients |

pub mod cc;
pub mod config;
pub mod connect;
pub mod crowd;
pub mod crypto;
pub mod datagram;
pub mod endpoint;
pub mod monitor;
pub mod path;
pub mod policy;
pub mod ranges;
pub mod scheduler;
pub mod session;
pub mod side;
pub mod stream;
pub mod time;
pub mod timing;
pub mod units;
pub mod wire;

pub use config::{AckPath, ClientConfig, Redundancy, ServerConfig, SessionConfig, TrafficClass};
pub use crypto::{PublicKey, Seed, StaticSecret};
pub use endpoint::{DatagramEvent, Endpoint, HandshakeJob, HandshakeOutcome};
pub use path::{PathId, PathState};
pub use session::paths::PathError;
pub use session::{CloseReason, DropReason, Event, PathEvent, PathInfo, Session, Transmit};
pub use side::Side;
pub use stream::{StreamError, StreamEvent, StreamId};
pub use time::Timestamp;
pub use wire::SessionId;
