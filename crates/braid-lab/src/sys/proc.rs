//! Long-running child processes (vde_switch, wirefilter, iperf3, agg-tunnel, braid) owned by a
//! guard that kills them by PID and reaps them when dropped.
//!
//! Every child gets its own process group (so a terminal's Ctrl-C reaches only the lab, which
//! then tears down in order) and `PR_SET_PDEATHSIG = SIGKILL` (so a lab killed with SIGKILL
//! does not leave children running; the next run's stale sweep removes its namespaces).
//! Children must be spawned from the main thread: the death signal follows the spawning thread.

use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use super::signal;

/// Grace period between SIGTERM and SIGKILL.
const TERM_GRACE: Duration = Duration::from_millis(1500);
/// How long to wait for the kernel to reap a SIGKILLed child.
const KILL_WAIT: Duration = Duration::from_secs(3);

/// A spawned child process, killed and reaped on drop.
pub struct Proc {
    name: String,
    child: Child,
    /// Held open for programs that exit on EOF on stdin (vde_switch, wirefilter).
    stdin: Option<ChildStdin>,
    log: PathBuf,
    done: Option<ExitStatus>,
}

/// Whether the child's stdin stays open (a pipe the guard holds) or is /dev/null.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stdin {
    /// /dev/null.
    Null,
    /// A pipe kept open for the life of the child.
    KeepOpen,
}

impl Proc {
    /// Spawns `cmd` with stdout and stderr appended to `log`.
    pub fn spawn(name: &str, cmd: Command, log: &Path, stdin: Stdin) -> Result<Proc> {
        Self::spawn_split(name, cmd, log, log, stdin)
    }

    /// Spawns `cmd` with stdout written to `out` and stderr appended to `log`.
    pub fn spawn_split(name: &str, mut cmd: Command, out: &Path, log: &Path, stdin: Stdin) -> Result<Proc> {
        let open = |p: &Path| {
            File::options()
                .create(true)
                .append(true)
                .open(p)
                .with_context(|| format!("opening {}", p.display()))
        };
        let err = open(log)?;
        let out = if out == log { err.try_clone()? } else { open(out)? };
        cmd.stdout(Stdio::from(out)).stderr(Stdio::from(err));
        cmd.stdin(match stdin {
            Stdin::Null => Stdio::null(),
            Stdin::KeepOpen => Stdio::piped(),
        });
        cmd.process_group(0);
        // SAFETY: prctl(PR_SET_PDEATHSIG) is async-signal-safe and touches no memory of the
        // parent.
        unsafe {
            cmd.pre_exec(|| {
                nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)
                    .map_err(std::io::Error::from)
            });
        }
        let line = describe(&cmd);
        let mut child = cmd.spawn().with_context(|| format!("starting {name}: {line}"))?;
        let stdin = child.stdin.take();
        Ok(Proc { name: name.to_string(), child, stdin, log: log.to_path_buf(), done: None })
    }

    /// The child's PID.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Short name given at spawn time.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The file holding the child's output.
    pub fn log(&self) -> &Path {
        &self.log
    }

    /// The exit status if the child has exited (reaps it).
    pub fn try_wait(&mut self) -> Result<Option<ExitStatus>> {
        if self.done.is_none() {
            self.done = self.child.try_wait()?;
        }
        Ok(self.done)
    }

    /// Waits up to `limit` for the child to exit on its own; `None` if it is still running.
    pub fn wait_for(&mut self, limit: Duration) -> Result<Option<ExitStatus>> {
        let end = Instant::now() + limit;
        loop {
            if let Some(s) = self.try_wait()? {
                return Ok(Some(s));
            }
            if Instant::now() >= end {
                return Ok(None);
            }
            signal::sleep(Duration::from_millis(10))?;
        }
    }

    /// The last `max` bytes of the child's log, for error messages.
    pub fn log_tail(&self, max: usize) -> String {
        tail(&self.log, max)
    }

    /// Stops the child: SIGTERM, a grace period, then SIGKILL; always reaps it. Returns
    /// whether it is gone (false only if even SIGKILL did not reap it within a few seconds).
    pub fn stop(&mut self) -> bool {
        self.stdin.take();
        if matches!(self.try_wait(), Ok(Some(_))) {
            return true;
        }
        // Our own unreaped child: its PID cannot have been reused.
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        if self.wait_quietly(TERM_GRACE) {
            return true;
        }
        let _ = self.child.kill();
        self.wait_quietly(KILL_WAIT)
    }

    fn wait_quietly(&mut self, limit: Duration) -> bool {
        let end = Instant::now() + limit;
        loop {
            if let Ok(Some(s)) = self.child.try_wait() {
                self.done = Some(s);
                return true;
            }
            if Instant::now() >= end {
                return false;
            }
            // Not interruptible on purpose: this runs during teardown.
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if !self.stop() {
            eprintln!("braid lab: {} (pid {}) did not exit after SIGKILL", self.name, self.child.id());
        }
    }
}

/// The command line of `cmd`, for messages.
pub fn describe(cmd: &Command) -> String {
    let mut s = cmd.get_program().to_string_lossy().into_owned();
    for a in cmd.get_args() {
        s.push(' ');
        s.push_str(&a.to_string_lossy());
    }
    s
}

/// The last `max` bytes of a file (lossy UTF-8), or an empty string.
pub fn tail(path: &Path, max: usize) -> String {
    let Ok(bytes) = std::fs::read(path) else {
        return String::new();
    };
    let start = bytes.len().saturating_sub(max);
    String::from_utf8_lossy(&bytes[start..]).trim().to_string()
}
