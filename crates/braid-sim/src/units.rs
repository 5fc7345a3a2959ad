//! Units used in specs: re-exported from the core (`braid_core::units`).

pub use braid_core::units::*;
