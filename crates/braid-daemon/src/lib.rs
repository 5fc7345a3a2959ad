//! # braid-daemon: `braid client` and `braid server`
//!
//! Thin tokio drivers around the protocol core ([`driver`]): UDP sockets per link ([`udp`],
//! interfaces from [`netlink`]), the client's front ends ([`frontend`]: SOCKS5 and port
//! forwards), the server's egress ([`server_role`], [`server_udp`], [`egress`] policy),
//! configuration ([`config`]), key files ([`keyfile`]) and the status API ([`status`],
//! guarded by [`control`]); `braid share` and the client's neighbour paths ([`share`]).

pub mod appproto;
pub mod bridge;
pub mod classes;
pub mod client;
pub mod config;
pub mod control;
pub mod driver;
pub mod egress;
pub mod error;
pub mod exposition;
pub mod failover;
pub mod frontend;
pub mod keyfile;
pub mod linkpick;
pub mod linkpolicy;
pub mod metrics;
pub mod netlink;
pub mod ratelog;
pub mod rates;
pub mod receive_shard;
pub mod reorder;
pub mod server;
pub mod server_role;
pub mod server_udp;
pub mod shards;
pub mod share;
pub mod splice;
pub mod status;
pub mod supervise;
pub mod tun;
pub mod udp;
pub mod usage_store;

pub use client::{start_client, ClientHandle};
pub use config::{ClientFlags, ClientSettings, ServerFlags, ServerSettings};
pub use error::Failure;
pub use server::{start_server, ServerHandle};
