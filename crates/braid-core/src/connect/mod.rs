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
//! Call order: [`Failover::new`] when a connect phase begins; then, whenever the last
//! attempt ended or [`Failover::poll_timeout`] passed, [`Failover::poll`]; after a session
//! ends unestablished, [`Failover::attempt_failed`]; once it is established,
//! [`Failover::established`].

mod failover;

pub use failover::{AttemptEnd, Failover, FailoverError, Step};

#[cfg(test)]
mod tests;
