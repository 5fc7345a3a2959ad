//! Operating-system plumbing: commands with time limits, owned child processes, signals and
//! network-namespace access.

pub mod cmd;
pub mod netns;
pub mod proc;
pub mod signal;
