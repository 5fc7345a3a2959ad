//! Locating the external programs contenders need, and deciding up front which contenders can
//! run.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::sys::cmd;

/// The braid binary, or why it cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BraidBinary {
    /// A braid binary with the `client` and `server` subcommands.
    Ready(PathBuf),
    /// Why braid is skipped.
    Unavailable(String),
}

/// External programs found on this machine.
#[derive(Debug, Clone)]
pub struct Tools {
    /// `mptcpize` (Debian package mptcpize).
    pub mptcpize: Option<PathBuf>,
    /// `agg-tunnel` (cargo install aggligator-util).
    pub agg_tunnel: Option<PathBuf>,
    /// The braid binary.
    pub braid: BraidBinary,
}

impl Tools {
    /// Looks everything up. `braid` and `agg_tunnel` override the defaults: for braid the
    /// `BRAID_BIN` environment variable, then `braid` next to the running executable; for
    /// agg-tunnel PATH, then `~/.cargo/bin`.
    pub fn discover(braid: Option<&Path>, agg_tunnel: Option<&Path>) -> Tools {
        let braid_path = braid
            .map(Path::to_path_buf)
            .or_else(|| std::env::var_os("BRAID_BIN").map(PathBuf::from))
            .or_else(|| std::env::current_exe().ok().and_then(|p| p.parent().map(|d| d.join("braid"))));
        let agg = match agg_tunnel {
            Some(p) => cmd::which(&p.to_string_lossy()),
            None => cmd::which("agg-tunnel").or_else(|| {
                let home = std::env::var_os("HOME")?;
                cmd::which(&Path::new(&home).join(".cargo/bin/agg-tunnel").to_string_lossy())
            }),
        };
        Tools { mptcpize: cmd::which("mptcpize"), agg_tunnel: agg, braid: check_braid(braid_path) }
    }
}

/// A braid binary is usable when `braid client --help` and `braid server --help` succeed.
fn check_braid(path: Option<PathBuf>) -> BraidBinary {
    let Some(path) = path else {
        return BraidBinary::Unavailable("cannot locate a braid binary (use --braid PATH)".into());
    };
    let Some(found) = cmd::which(&path.to_string_lossy()) else {
        return BraidBinary::Unavailable(format!(
            "no braid binary at {} (use --braid PATH or BRAID_BIN)",
            path.display()
        ));
    };
    for sub in ["client", "server", "genkey"] {
        let mut c = Command::new(&found);
        c.args([sub, "--help"]);
        match cmd::run_with(c, None, Duration::from_secs(5)) {
            Ok(out) if out.success() => {}
            _ => {
                return BraidBinary::Unavailable(format!(
                    "{} has no `{sub}` subcommand yet (daemon not built)",
                    found.display()
                ))
            }
        }
    }
    BraidBinary::Ready(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_braid_is_a_reason_not_an_error() {
        match check_braid(Some(PathBuf::from("/nonexistent/braid"))) {
            BraidBinary::Unavailable(why) => assert!(why.contains("no braid binary")),
            other => panic!("{other:?}"),
        }
        // `true` accepts any arguments and exits 0, so it passes the subcommand check; `false`
        // does not.
        match check_braid(cmd::which("false")) {
            BraidBinary::Unavailable(why) => assert!(why.contains("no `client` subcommand")),
            other => panic!("{other:?}"),
        }
    }
}
