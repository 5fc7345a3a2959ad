//! iperf3: the traffic generator and meter of every workload. One server per contender run in
//! the server namespace (`-J -i 0.1`, so `--get-server-output` returns the receiver's
//! per-100 ms intervals), one client per run in the client namespace.

mod client;
mod parse;
mod server;

pub use client::{client_args, ClientSpec, Traffic};
pub use parse::{parse_result, Measurement, Sample, UdpStats};
pub use server::{start_server, wait_listening};

/// Reporting interval used by client and server, in seconds.
pub const INTERVAL_S: f64 = 0.1;
