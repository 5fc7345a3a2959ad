//! Names of everything a lab run creates, all derived from one prefix `braidlab-<pid>` so a
//! later run can recognise (and remove) what an interrupted run left behind.

use std::path::PathBuf;

/// Common prefix of every namespace and directory the lab creates.
pub const PREFIX: &str = "braidlab";

/// The names one lab run uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Names {
    /// `braidlab-<pid>`.
    pub id: String,
    /// Client namespace `braidlab-<pid>-cli`.
    pub cli: String,
    /// Server namespace `braidlab-<pid>-srv`.
    pub srv: String,
    /// Scratch directory (VDE sockets, logs, keys): `$TMPDIR/braidlab-<pid>`.
    pub dir: PathBuf,
}

impl Names {
    /// Names for the lab run by process `pid`.
    pub fn for_pid(pid: u32) -> Names {
        let id = format!("{PREFIX}-{pid}");
        Names { cli: format!("{id}-cli"), srv: format!("{id}-srv"), dir: std::env::temp_dir().join(&id), id }
    }

    /// Client-side device of link `i` (1-based).
    pub fn cli_dev(i: usize) -> String {
        format!("c{i}")
    }

    /// Server-side device of link `i` (1-based).
    pub fn srv_dev(i: usize) -> String {
        format!("s{i}")
    }

    /// Client address of link `i`.
    pub fn cli_addr(i: usize) -> String {
        format!("10.0.{i}.1")
    }

    /// Server address of link `i`. The server is reachable at `10.0.1.2` over every link.
    pub fn srv_addr(i: usize) -> String {
        format!("10.0.{i}.2")
    }

    /// Namespace of neighbour `k` (1-based) in a piconet: `braidlab-<pid>-nb<k>`.
    pub fn neighbour(&self, k: usize) -> String {
        format!("{}-nb{k}", self.id)
    }

    /// The LAN bridge in the client namespace.
    pub const LAN_BRIDGE: &'static str = "lan0";

    /// The client's LAN address (on [`Names::LAN_BRIDGE`]).
    pub const LAN_CLIENT_ADDR: &'static str = "10.0.200.1";

    /// Neighbour `k`'s LAN device (in its namespace).
    pub fn lan_dev(k: usize) -> String {
        format!("l{k}")
    }

    /// The bridge port facing neighbour `k` (in the client namespace).
    pub fn lan_port(k: usize) -> String {
        format!("b{k}")
    }

    /// Neighbour `k`'s LAN address.
    pub fn lan_addr(k: usize) -> String {
        format!("10.0.200.{}", 10 + k)
    }
}

/// The owning PID encoded in a namespace name `braidlab-<pid>-cli|srv|nb<k>`.
pub fn pid_of_namespace(name: &str) -> Option<u32> {
    let rest = name.strip_prefix(PREFIX)?.strip_prefix('-')?;
    let (pid, side) = rest.split_once('-')?;
    let neighbour =
        side.strip_prefix("nb").is_some_and(|k| !k.is_empty() && k.bytes().all(|b| b.is_ascii_digit()));
    (matches!(side, "cli" | "srv") || neighbour).then_some(())?;
    pid.parse().ok()
}

/// The owning PID encoded in a scratch directory name `braidlab-<pid>`.
pub fn pid_of_dir(name: &str) -> Option<u32> {
    name.strip_prefix(PREFIX)?.strip_prefix('-')?.parse().ok()
}

/// Start time (clock ticks since boot) of process `pid`, from `/proc/<pid>/stat`; together with
/// the PID it identifies a process across PID reuse.
pub fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may contain spaces and parentheses: fields restart after the last ')'.
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(19)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        let n = Names::for_pid(4242);
        assert_eq!(n.cli, "braidlab-4242-cli");
        assert_eq!(pid_of_namespace(&n.cli), Some(4242));
        assert_eq!(pid_of_namespace(&n.srv), Some(4242));
        assert_eq!(pid_of_namespace("braidlab-4242-xyz"), None);
        assert_eq!(pid_of_namespace(&n.neighbour(3)), Some(4242));
        assert_eq!(pid_of_namespace("braidlab-4242-nb"), None);
        assert_eq!(pid_of_namespace("braidlab-4242-nbx"), None);
        assert_eq!(pid_of_namespace("cli"), None);
        assert_eq!(pid_of_dir("braidlab-17"), Some(17));
        assert_eq!(pid_of_dir("braidlab-17-cli"), None);
    }

    #[test]
    fn own_start_time() {
        assert!(start_time(std::process::id()).is_some());
    }
}
