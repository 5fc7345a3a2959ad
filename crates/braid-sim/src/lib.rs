//! # braid-sim: the deterministic simulator
//!
//! A discrete-event network of links — rate, bounded drop-tail queue, propagation delay,
//! jitter, random and bursty loss, duplication, outages, capacity changes (see [`link`]) —
//! drives one client and one server [`braid_core::Session`] in virtual time. Every random
//! choice comes from the run's seed: the same seed gives the same bytes on the wire
//! ([`SimReport::wire_digest`]), every time.

mod connect;
pub mod crowd;
pub mod flow;
pub mod harness;
pub mod holes;
pub mod link;
pub mod net;
pub mod reorder;
pub mod report;
pub mod short;
pub mod units;
pub mod workload;

pub use flow::FlowSpec;
pub use harness::{run, SimConfig, SimError};
pub use link::LinkSpec;
pub use report::SimReport;
