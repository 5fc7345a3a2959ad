//! Finds and removes what an interrupted lab run left behind: namespaces named
//! `braidlab-<pid>-cli|srv|nb<k>` and scratch directories `braidlab-<pid>` whose owner is gone, the
//! processes inside those namespaces, and the VDE processes whose command line names such a
//! directory. Only things carrying the lab prefix are touched.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Result;

use super::names::{pid_of_dir, pid_of_namespace, start_time};
use crate::sys::cmd;

/// File in the scratch directory holding the owner's start time.
pub const OWNER_FILE: &str = "owner";

/// Whether lab run `pid` (scratch directory `dir`) is still alive.
fn owner_alive(pid: u32, dir: &Path) -> bool {
    if pid == std::process::id() {
        return true;
    }
    let Some(now) = start_time(pid) else {
        return false;
    };
    match std::fs::read_to_string(dir.join(OWNER_FILE)) {
        Ok(stamp) => stamp.trim().parse::<u64>().ok() == Some(now),
        // No stamp to compare: a live process with that PID may be the owner; leave it alone.
        Err(_) => true,
    }
}

/// Lab namespaces currently present (names under /run/netns with the lab prefix).
pub fn lab_namespaces() -> Vec<String> {
    let Ok(dir) = std::fs::read_dir("/run/netns") else {
        return Vec::new();
    };
    let mut v: Vec<String> = dir
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| pid_of_namespace(n).is_some())
        .collect();
    v.sort();
    v
}

/// PIDs of the processes inside namespace `ns` (`ip netns pids`).
pub fn pids_in_namespace(ns: &str) -> Vec<u32> {
    cmd::run_ok(&["ip", "netns", "pids", ns])
        .map(|out| out.split_whitespace().filter_map(|p| p.parse().ok()).collect())
        .unwrap_or_default()
}

/// PIDs of processes whose command line mentions `needle`.
pub fn pids_mentioning(needle: &str) -> Vec<u32> {
    let me = std::process::id();
    let Ok(proc_dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    proc_dir
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| pid != me)
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .map(|c| String::from_utf8_lossy(&c).contains(needle))
                .unwrap_or(false)
        })
        .collect()
}

/// SIGKILLs processes that are not our children and waits (bounded) until they are gone.
pub fn kill_foreign(pids: &[u32]) {
    for &pid in pids {
        // The callers only pass PIDs of lab processes.
        let _ =
            nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), nix::sys::signal::Signal::SIGKILL);
    }
    for _ in 0..100 {
        if pids.iter().all(|p| !alive(*p)) {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether `pid` exists and is not a zombie.
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => {
            s.rfind(')').and_then(|i| s[i + 1..].split_whitespace().next()).is_some_and(|state| state != "Z")
        }
        Err(_) => false,
    }
}

/// Removes everything stale; returns a line per removed item.
pub fn sweep() -> Result<Vec<String>> {
    let tmp = std::env::temp_dir();
    let mut removed = Vec::new();
    for ns in lab_namespaces() {
        let Some(pid) = pid_of_namespace(&ns) else {
            continue;
        };
        let dir = tmp.join(format!("{}-{pid}", super::names::PREFIX));
        if owner_alive(pid, &dir) {
            continue;
        }
        let pids = pids_in_namespace(&ns);
        kill_foreign(&pids);
        match cmd::run_ok(&["ip", "netns", "del", &ns]) {
            Ok(_) => removed.push(format!("namespace {ns} (killed {} process(es) inside)", pids.len())),
            Err(e) => removed.push(format!("namespace {ns}: could not delete: {e:#}")),
        }
    }
    for dir in stale_dirs(&tmp) {
        let needle = format!("{}/", dir.display());
        let pids = pids_mentioning(&needle);
        kill_foreign(&pids);
        let _ = std::fs::remove_dir_all(&dir);
        removed.push(format!("directory {} (killed {} process(es) using it)", dir.display(), pids.len()));
    }
    Ok(removed)
}

fn stale_dirs(tmp: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(tmp) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let pid = pid_of_dir(&name)?;
            let path = e.path();
            (path.is_dir() && !owner_alive(pid, &path)).then_some(path)
        })
        .collect()
}
