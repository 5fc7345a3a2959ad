//! What TUN mode changes on the host, and how it is undone: policy-routing rules and a
//! routing table of its own, `/etc/resolv.conf`, forwarding sysctls (gateway mode).
//!
//! The plan of every change is written to a state file *before* the first change is made, so
//! that whatever happens next — a clean stop, SIGTERM, a panic, SIGKILL, a power cut — the
//! next `braid client` finds the file at start and undoes all of it. Undoing is idempotent:
//! a rule or route already gone is not an error.
//!
//! Routing (the scheme of `wg-quick`): braid's own path sockets carry a firewall mark
//! (`SO_MARK`); a rule sends every *unmarked* packet to braid's table, which routes the
//! default route (or the configured prefixes) into the TUN. In default-route mode a second
//! rule, just before it, lets the main table's more specific routes (the LAN, the links'
//! own subnets) win for unmarked packets: `not fwmark MARK lookup main suppress_prefixlength 0`.

use serde::{Deserialize, Serialize};
use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Everything TUN mode changed (or is about to), enough to undo it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Changes {
    /// The process that made them.
    pub pid: u32,
    /// The TUN device.
    pub device: String,
    /// `ip rule add` arguments, IPv4 and IPv6 (`-6` first), to delete again.
    pub rules: Vec<Vec<String>>,
    /// braid's routing table.
    pub table: u32,
    /// Whether IPv6 was set up too.
    pub ipv6: bool,
    /// `/etc/resolv.conf` as it was, when braid replaced it.
    pub resolv_conf: Option<String>,
    /// Where resolv.conf is (a test may point elsewhere).
    pub resolv_path: PathBuf,
    /// Sysctl files and their values before.
    pub sysctls: Vec<(PathBuf, String)>,
}

/// Runs `ip ARGS`; an error names the command and what it printed.
pub fn ip(args: &[String]) -> io::Result<()> {
    let out = Command::new("ip").args(args).output().map_err(|e| {
        io::Error::new(e.kind(), format!("cannot run `ip` (iproute2 is needed for TUN mode): {e}"))
    })?;
    if out.status.success() {
        return Ok(());
    }
    Err(io::Error::other(format!(
        "`ip {}` failed: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr).trim()
    )))
}

/// Whether process `pid` is alive and a braid (its command name): then its state file is no
/// crash's leftover and must not be undone.
pub fn alive_braid(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == "braid")
}

fn strings(parts: &[&str]) -> Vec<String> {
    parts.iter().map(|s| s.to_string()).collect()
}

/// The rules for `table`, `mark` at `priority`: per family `not fwmark MARK lookup TABLE`,
/// and in default-route mode `not fwmark MARK lookup main suppress_prefixlength 0` one before
/// it. Both skip marked packets, so braid's own paths meet the host's rules as if TUN mode
/// were off: a multi-homed host's per-link source rules (`from 10.0.2.1 lookup 102`) come
/// after these and must still decide which link each path leaves by.
pub fn rules(table: u32, mark: u32, priority: u32, default_route: bool, ipv6: bool) -> Vec<Vec<String>> {
    let (t, m, p, p0) = (
        table.to_string(),
        format!("{mark:#x}"),
        priority.to_string(),
        priority.saturating_sub(1).to_string(),
    );
    let mut out = Vec::new();
    for fam in if ipv6 { &["-4", "-6"][..] } else { &["-4"][..] } {
        if default_route {
            let main = ["table", "main", "suppress_prefixlength", "0", "priority", &p0];
            out.push(strings(&[&[fam, "rule", "add", "not", "fwmark", &m][..], &main[..]].concat()));
        }
        out.push(strings(&[fam, "rule", "add", "not", "fwmark", &m, "table", &t, "priority", &p]));
    }
    out
}

impl Changes {
    /// Writes the plan to `file` (mode 0600) before anything is changed.
    pub fn save(&self, file: &Path) -> io::Result<()> {
        if let Some(dir) = file.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let text = serde_json::to_string_pretty(self).map_err(io::Error::other)?;
        let tmp = file.with_extension("tmp");
        {
            use std::io::Write;
            use std::os::unix::fs::OpenOptionsExt;
            let mut f =
                std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(&tmp)?;
            f.write_all(text.as_bytes())?;
            f.sync_all()?;
        }
        std::fs::rename(&tmp, file)
    }

    /// Reads a state file left by an earlier run (None: there is none).
    pub fn load(file: &Path) -> io::Result<Option<Changes>> {
        match std::fs::read_to_string(file) {
            Ok(t) => serde_json::from_str(&t)
                .map(Some)
                .map_err(|e| io::Error::other(format!("state file {} unreadable: {e}", file.display()))),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Undoes every change (what is already gone is skipped) and removes the state file.
    /// Returns what could not be undone.
    pub fn undo(&self, file: &Path) -> Vec<String> {
        let mut failed = Vec::new();
        for r in &self.rules {
            let mut del = r.clone();
            if let Some(i) = del.iter().position(|a| a == "add") {
                del[i] = "del".into();
            }
            // A rule added twice (two crashed runs) is deleted twice; gone already is fine.
            for _ in 0..8 {
                if ip(&del).is_err() {
                    break;
                }
            }
        }
        for fam in if self.ipv6 { &["-4", "-6"][..] } else { &["-4"][..] } {
            let _ = ip(&strings(&[fam, "route", "flush", "table", &self.table.to_string()]));
        }
        if let Some(text) = &self.resolv_conf {
            if let Err(e) = write_in_place(&self.resolv_path, text) {
                failed.push(format!("{}: {e}", self.resolv_path.display()));
            }
        }
        for (path, value) in &self.sysctls {
            if let Err(e) = std::fs::write(path, value) {
                failed.push(format!("{}: {e}", path.display()));
            }
        }
        let _ = ip(&strings(&["link", "del", &self.device]));
        if failed.is_empty() {
            let _ = std::fs::remove_file(file);
        }
        failed
    }
}

/// Rewrites a file's contents in place: `/etc/resolv.conf` may be a bind mount (`ip netns
/// exec`, containers), which a rename would fail on.
pub fn write_in_place(path: &Path, text: &str) -> io::Result<()> {
    std::fs::write(path, text)
}

/// resolv.conf text naming `servers`, keeping the original's `search`/`domain` and
/// `options` lines.
pub fn resolv_conf(original: &str, servers: &[std::net::IpAddr]) -> String {
    let mut out = String::from("# written by braid client --tun; the original comes back when it stops\n");
    for s in servers {
        out.push_str(&format!("nameserver {s}\n"));
    }
    for line in original.lines() {
        let l = line.trim_start();
        if l.starts_with("search") || l.starts_with("domain") || l.starts_with("options") {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_cover_both_families_and_modes() {
        let r = rules(2845, 0xb1d, 2845, true, true);
        let text: Vec<String> = r.iter().map(|a| a.join(" ")).collect();
        assert_eq!(
            text,
            vec![
                "-4 rule add not fwmark 0xb1d table main suppress_prefixlength 0 priority 2844",
                "-4 rule add not fwmark 0xb1d table 2845 priority 2845",
                "-6 rule add not fwmark 0xb1d table main suppress_prefixlength 0 priority 2844",
                "-6 rule add not fwmark 0xb1d table 2845 priority 2845",
            ]
        );
        assert_eq!(rules(7, 1, 10, false, false).len(), 1);
    }

    #[test]
    fn resolv_conf_keeps_search_and_options() {
        let t =
            resolv_conf("nameserver 1.2.3.4\nsearch lan\noptions edns0\n", &["10.9.0.1".parse().unwrap()]);
        assert!(t.contains("nameserver 10.9.0.1\nsearch lan\noptions edns0\n"), "{t}");
        assert!(!t.contains("1.2.3.4"));
    }

    #[test]
    fn state_round_trips() {
        let dir = std::env::temp_dir().join(format!("braid-tunstate-{}", std::process::id()));
        let f = dir.join("tun.json");
        let c = Changes { pid: 1, device: "x".into(), table: 5, ..Default::default() };
        c.save(&f).unwrap();
        assert_eq!(Changes::load(&f).unwrap(), Some(c));
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(Changes::load(&f).unwrap(), None);
    }
}
