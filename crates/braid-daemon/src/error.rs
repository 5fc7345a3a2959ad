//! Failures a daemon reports to its operator, each with its own exit code.

use std::fmt;

/// A failure with an exit code. The message is one clear sentence for the operator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// A bad configuration file or flag (exit 2).
    Config(String),
    /// An unknown interface, or no usable link (exit 3).
    Interface(String),
    /// The server could not be reached: name not found, network or port unreachable (exit 4).
    Unreachable(String),
    /// The server did not answer the handshake: down, filtered, or holding another key (exit 5).
    NoAnswer(String),
    /// The server refused our key (exit 6).
    Refused(String),
    /// Anything else (exit 1).
    Other(String),
}

impl Failure {
    /// The process exit code.
    pub fn exit_code(&self) -> u8 {
        match self {
            Failure::Other(_) => 1,
            Failure::Config(_) => 2,
            Failure::Interface(_) => 3,
            Failure::Unreachable(_) => 4,
            Failure::NoAnswer(_) => 5,
            Failure::Refused(_) => 6,
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (Failure::Config(m)
        | Failure::Interface(m)
        | Failure::Unreachable(m)
        | Failure::NoAnswer(m)
        | Failure::Refused(m)
        | Failure::Other(m)) = self;
        f.write_str(m)
    }
}

impl std::error::Error for Failure {}

impl From<std::io::Error> for Failure {
    fn from(e: std::io::Error) -> Self {
        Failure::Other(e.to_string())
    }
}
