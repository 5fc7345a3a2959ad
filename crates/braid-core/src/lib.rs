//! braid protocol core (work in progress).
pub mod crypto;
pub mod ranges;
pub mod time;
pub mod wire;
