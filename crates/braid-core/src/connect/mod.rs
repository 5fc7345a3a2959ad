//! Connecting over several links: which link a client's handshake goes out on, when an
//! attempt is abandoned, which link comes next, and when the client gives up.
//!
//! A multi-homed client does not know which of its links reach the server until one answers.
//! The handshake itself (Noise IK, resends of message 1) stays in [`crate::session`]; this
//! module is the policy over links around it, sans-IO like the rest of the core: the caller
//! passes `now`, starts one [`crate::Session`] per [`Step::Attempt`] with the attempt's
//! timeout as its handshake timeout, and reports how each attempt ended. Being in the core,
//! the simulator runs the same policy the daemon does.
//!
//! A link whose attempt is answered by ICMP unreachable, or by the server's VERSION (it speaks
//! another protocol version), ends that attempt at once; the phase gives up at once only when
//! every link of a round ended so, since neither answer is authenticated. When the budget runs
//! out, the most telling answer any link got is the error: VERSION, then unreachable, then no
//! answer. (So a VERSION forged on one path, with the others silent, reads as a version
//! mismatch; it takes someone who saw the message.)
//!
//! Call order: [`Failover::new`] when a connect phase begins; then, whenever the last
//! attempt ended or [`Failover::poll_timeout`] passed, [`Failover::poll`]; after a session
//! ends unestablished, [`Failover::attempt_failed`]; once it is established,
//! [`Failover::established`].

mod failover;

pub use failover::{AttemptEnd, Failover, FailoverError, Step};

#[cfg(test)]
mod tests;
