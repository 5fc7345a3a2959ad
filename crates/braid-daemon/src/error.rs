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
    /// The server speaks another protocol version (exit 7).
    Version(String),
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
            Failure::Version(_) => 7,
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
        | Failure::Version(m)
        | Failure::Other(m)) = self;
        f.write_str(m)
    }
}

impl Failure {
    /// A socket that could not be bound: a port another process holds, or a port below 1024
    /// without the privilege, is a state of the machine (exit 1), not a bad configuration; an
    /// address that is not this machine's is one (exit 2).
    pub fn bind(what: &str, addr: std::net::SocketAddr, e: &std::io::Error) -> Failure {
        use std::io::ErrorKind;
        match e.kind() {
            ErrorKind::AddrInUse => Failure::Other(format!(
                "cannot {what} on {addr}: the port is already in use (another process holds it: `ss -lntup | grep :{}` shows which)",
                addr.port()
            )),
            ErrorKind::PermissionDenied => Failure::Other(format!(
                "cannot {what} on {addr}: permission denied (ports below 1024 need root or CAP_NET_BIND_SERVICE)"
            )),
            ErrorKind::AddrNotAvailable => {
                Failure::Config(format!("cannot {what} on {addr}: {} is not an address of this machine", addr.ip()))
            }
            _ => Failure::Other(format!("cannot {what} on {addr}: {e}")),
        }
    }
}

impl std::error::Error for Failure {}

impl From<std::io::Error> for Failure {
    fn from(e: std::io::Error) -> Self {
        Failure::Other(e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Error, ErrorKind};

    #[test]
    fn a_port_in_use_is_not_a_configuration_error() {
        let addr = "127.0.0.1:7000".parse().unwrap();
        let f = Failure::bind("listen", addr, &Error::from(ErrorKind::AddrInUse));
        assert_eq!(f.exit_code(), 1);
        assert!(f.to_string().contains("already in use") && f.to_string().contains(":7000"), "{f}");
        let f = Failure::bind("listen", addr, &Error::from(ErrorKind::AddrNotAvailable));
        assert_eq!(f.exit_code(), 2);
        assert!(f.to_string().contains("not an address of this machine"), "{f}");
    }
}
