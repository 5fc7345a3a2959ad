//! Ctrl-C / SIGTERM / SIGHUP handling: the handler only raises a flag; every wait in the lab is
//! a bounded loop of short sleeps that checks it, so an interrupted run unwinds through the
//! normal error path and the RAII guards tear everything down.

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::time::{Duration, Instant};

use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);
static SIGNAL: AtomicI32 = AtomicI32::new(0);

const SIGNALS: [Signal; 3] = [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP];

extern "C" fn on_signal(sig: std::ffi::c_int) {
    // Only async-signal-safe work here: two atomic stores.
    SIGNAL.store(sig, Ordering::SeqCst);
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// The error a wait returns once a signal has arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Interrupted(pub i32);

impl fmt::Display for Interrupted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "interrupted by signal {}", self.0)
    }
}

impl std::error::Error for Interrupted {}

/// Installs the handlers; dropping the guard restores the previous ones.
pub struct SignalGuard {
    old: Vec<(Signal, SigAction)>,
}

impl SignalGuard {
    /// Installs handlers for SIGINT, SIGTERM and SIGHUP and clears any earlier interrupt.
    pub fn install() -> std::io::Result<Self> {
        INTERRUPTED.store(false, Ordering::SeqCst);
        SIGNAL.store(0, Ordering::SeqCst);
        let action = SigAction::new(SigHandler::Handler(on_signal), SaFlags::SA_RESTART, SigSet::empty());
        let mut guard = SignalGuard { old: Vec::new() };
        for sig in SIGNALS {
            // SAFETY: the handler is an `extern "C"` function that only stores to atomics, which
            // is async-signal-safe.
            let prev = unsafe { sigaction(sig, &action) }.map_err(std::io::Error::from)?;
            guard.old.push((sig, prev));
        }
        Ok(guard)
    }
}

impl Drop for SignalGuard {
    fn drop(&mut self) {
        for (sig, prev) in &self.old {
            // SAFETY: restores the action `install` replaced.
            let _ = unsafe { sigaction(*sig, prev) };
        }
    }
}

/// Whether a signal has arrived since the handlers were installed.
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// Fails with [`Interrupted`] once a signal has arrived.
pub fn check() -> Result<(), Interrupted> {
    if interrupted() {
        Err(Interrupted(SIGNAL.load(Ordering::SeqCst)))
    } else {
        Ok(())
    }
}

/// Sleeps for `total` in short slices, returning early with [`Interrupted`] on a signal.
pub fn sleep(total: Duration) -> Result<(), Interrupted> {
    let end = Instant::now() + total;
    loop {
        check()?;
        let now = Instant::now();
        if now >= end {
            return Ok(());
        }
        std::thread::sleep((end - now).min(Duration::from_millis(20)));
    }
}

/// Polls `ready` every `every` until it returns `Some`, the `limit` passes (returns `None`) or a
/// signal arrives.
pub fn poll_until<T>(
    limit: Duration,
    every: Duration,
    mut ready: impl FnMut() -> Option<T>,
) -> Result<Option<T>, Interrupted> {
    let end = Instant::now() + limit;
    loop {
        if let Some(v) = ready() {
            return Ok(Some(v));
        }
        if Instant::now() >= end {
            return Ok(None);
        }
        sleep(every)?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn poll_until_is_bounded() {
        let start = Instant::now();
        let r = poll_until(Duration::from_millis(50), Duration::from_millis(10), || None::<()>);
        assert_eq!(r, Ok(None));
        assert!(start.elapsed() < Duration::from_secs(1));
        let mut n = 0;
        let r = poll_until(Duration::from_secs(1), Duration::from_millis(1), || {
            n += 1;
            (n == 3).then_some(n)
        });
        assert_eq!(r, Ok(Some(3)));
    }
}
