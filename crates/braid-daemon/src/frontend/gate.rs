//! Admission of front-end connections, so that a flood of them cannot take the client down:
//!
//! * accept loops back off when accepting fails for want of resources (EMFILE, ENFILE,
//!   ENOBUFS, ENOMEM): the listener stays readable while the backlog holds connections, so
//!   an immediate retry would spin. They sleep [`BACKOFF`] and log once per burst.
//! * a cap on connections open at once (`max_connections`, lowered at start to what the
//!   process's file descriptor limit allows). A connection over the cap is refused at once,
//!   unless a SOCKS5 connection that has not finished its greeting holds a slot: then the
//!   oldest such one is dropped for the newcomer. Connections that never speak cannot lock
//!   out a client that does, and established connections are never dropped.

use crate::ratelog::RateLimited;
use std::collections::BTreeMap;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{oneshot, OwnedSemaphorePermit, Semaphore};

/// How long an accept loop sleeps after a resource error.
pub const BACKOFF: Duration = Duration::from_millis(100);
/// File descriptors kept for everything but front-end connections (paths, status, netlink).
const FD_RESERVE: usize = 64;

static REFUSED: RateLimited = RateLimited::new(Duration::from_secs(10));

/// Counters of the front ends, published in the status.
#[derive(Debug, Default)]
pub struct Counters {
    /// Connections refused at the cap.
    pub refused: AtomicU64,
    /// SOCKS5 connections still greeting, dropped to admit a newer one at the cap.
    pub evicted: AtomicU64,
    /// SOCKS5 connections dropped for not finishing greeting and request in time.
    pub greeting_timeouts: AtomicU64,
    /// Failed accepts.
    pub accept_errors: AtomicU64,
    /// UDP associations the server refused (over its `max_udp`, or denied).
    pub udp_refused: AtomicU64,
}

/// A connection still in its greeting, holding a slot that a newcomer may take.
struct Greeting {
    permit: OwnedSemaphorePermit,
    evict: oneshot::Sender<()>,
}

struct Inner {
    slots: Arc<Semaphore>,
    max: usize,
    /// Connections in their greeting, oldest first.
    greeting: Mutex<BTreeMap<u64, Greeting>>,
    next: AtomicU64,
    counters: Counters,
}

/// The admission state shared by every front end of a client.
#[derive(Clone)]
pub struct Gate {
    inner: Arc<Inner>,
}

/// A connection's slot. Dropping it frees the slot.
pub struct Ticket {
    gate: Gate,
    seq: u64,
    permit: Option<OwnedSemaphorePermit>,
    evicted: Option<oneshot::Receiver<()>>,
}

impl Gate {
    /// At most `max` connections at once.
    pub fn new(max: usize) -> Gate {
        Gate {
            inner: Arc::new(Inner {
                slots: Arc::new(Semaphore::new(max)),
                max,
                greeting: Mutex::default(),
                next: AtomicU64::new(1),
                counters: Counters::default(),
            }),
        }
    }

    /// The counters.
    pub fn counters(&self) -> &Counters {
        &self.inner.counters
    }

    /// The cap.
    pub fn max(&self) -> usize {
        self.inner.max
    }

    /// Connections holding a slot now.
    pub fn open(&self) -> usize {
        self.inner.max - self.inner.slots.available_permits()
    }

    fn slot(&self) -> Option<OwnedSemaphorePermit> {
        if let Ok(p) = self.inner.slots.clone().try_acquire_owned() {
            return Some(p);
        }
        let oldest = self.inner.greeting.lock().unwrap_or_else(|e| e.into_inner()).pop_first();
        match oldest {
            Some((_, g)) => {
                let _ = g.evict.send(());
                self.inner.counters.evicted.fetch_add(1, Ordering::Relaxed);
                Some(g.permit)
            }
            None => {
                self.inner.counters.refused.fetch_add(1, Ordering::Relaxed);
                if let Some(left_out) = REFUSED.hit() {
                    tracing::warn!(
                        max_connections = self.inner.max,
                        left_out,
                        "front ends at their connection cap: refusing connections"
                    );
                }
                None
            }
        }
    }

    /// Admits a connection that must greet first (SOCKS5): until [`Ticket::greeted`], a
    /// newcomer at the cap may take its slot. None: refused (the cap is reached and every
    /// slot is held by a connection past its greeting).
    pub fn admit_greeting(&self) -> Option<Ticket> {
        let permit = self.slot()?;
        let seq = self.inner.next.fetch_add(1, Ordering::Relaxed);
        let (evict, evicted) = oneshot::channel();
        self.inner.greeting.lock().unwrap_or_else(|e| e.into_inner()).insert(seq, Greeting { permit, evict });
        Some(Ticket { gate: self.clone(), seq, permit: None, evicted: Some(evicted) })
    }

    /// Admits a connection that holds its slot from the start (a port forward). None: refused.
    pub fn admit(&self) -> Option<Ticket> {
        let permit = self.slot()?;
        Some(Ticket { gate: self.clone(), seq: 0, permit: Some(permit), evicted: None })
    }
}

impl Ticket {
    /// The connection finished its greeting: it keeps its slot for good. False when it was
    /// evicted already (the caller drops it).
    pub fn greeted(&mut self) -> bool {
        if self.permit.is_some() {
            return true;
        }
        let g = self.gate.inner.greeting.lock().unwrap_or_else(|e| e.into_inner()).remove(&self.seq);
        match g {
            Some(g) => {
                self.permit = Some(g.permit);
                true
            }
            None => false,
        }
    }

    /// Resolves when a newcomer took this connection's slot (never once it greeted). Await it
    /// once: a second call never resolves.
    pub async fn evicted(&mut self) {
        if let Some(rx) = self.evicted.take() {
            if rx.await.is_ok() {
                return;
            }
        }
        std::future::pending().await
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        if self.permit.is_none() {
            self.gate.inner.greeting.lock().unwrap_or_else(|e| e.into_inner()).remove(&self.seq);
        }
    }
}

/// Whether an accept error is about the process or system running short (retrying at once
/// would fail the same way) rather than about one connection.
fn out_of_resources(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM))
}

/// Accepts the next connection. Errors about one connection (it was reset while queued) are
/// skipped; any other error sleeps [`BACKOFF`] before the next try, logged once per burst.
pub async fn accept(listener: &TcpListener, what: &str, counters: &Counters) -> (TcpStream, SocketAddr) {
    let mut failed = 0u64;
    loop {
        match listener.accept().await {
            Ok(c) => {
                if failed > 0 {
                    tracing::info!(front = what, failed, "accepting connections again");
                }
                return c;
            }
            Err(e) => {
                counters.accept_errors.fetch_add(1, Ordering::Relaxed);
                if matches!(e.kind(), io::ErrorKind::ConnectionAborted | io::ErrorKind::ConnectionReset) {
                    continue;
                }
                if failed == 0 {
                    let why = if out_of_resources(&e) { "out of file descriptors or memory; " } else { "" };
                    tracing::warn!(front = what, error = %e, "cannot accept connections: {why}retrying every {} ms", BACKOFF.as_millis());
                }
                failed += 1;
                tokio::time::sleep(BACKOFF).await;
            }
        }
    }
}

/// The soft limit on open files of this process (Linux: /proc/self/limits).
fn fd_limit() -> Option<usize> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line.split_whitespace().nth(3)?.parse().ok()
}

/// `wanted`, lowered to what the file descriptor limit allows (two each: a UDP association
/// holds a TCP connection and a UDP socket), keeping [`FD_RESERVE`] for the rest.
pub fn connection_cap(wanted: usize) -> usize {
    let Some(limit) = fd_limit() else { return wanted };
    let fits = (limit.saturating_sub(FD_RESERVE) / 2).max(8);
    if fits < wanted {
        tracing::warn!(max_connections = wanted, fd_limit = limit, using = fits, "max_connections lowered to what the open-file limit allows (raise it with ulimit -n or LimitNOFILE=)");
        return fits;
    }
    wanted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_oldest_greeting_connection_makes_room_and_greeted_ones_stay() {
        let gate = Gate::new(2);
        let mut a = gate.admit_greeting().unwrap();
        let mut b = gate.admit_greeting().unwrap();
        assert!(b.greeted());
        assert_eq!(gate.open(), 2);
        let mut c = gate.admit_greeting().expect("a greeting connection makes room");
        tokio::time::timeout(Duration::from_secs(5), a.evicted()).await.expect("a was told");
        assert!(!a.greeted(), "an evicted connection cannot keep its slot");
        assert_eq!(gate.counters().evicted.load(Ordering::Relaxed), 1);
        assert!(c.greeted());
        assert!(gate.admit_greeting().is_none(), "every slot is past its greeting");
        assert!(gate.admit().is_none());
        assert_eq!(gate.counters().refused.load(Ordering::Relaxed), 2);
        drop(a);
        assert_eq!(gate.open(), 2, "the evicted ticket's slot went to c");
        drop(b);
        assert_eq!(gate.open(), 1);
        let d = gate.admit().expect("a freed slot");
        drop((c, d));
        assert_eq!(gate.open(), 0);
        let e = gate.admit_greeting().unwrap();
        drop(e);
        assert_eq!(gate.open(), 0, "a ticket dropped while greeting frees its slot");
    }

    #[test]
    fn the_cap_fits_the_fd_limit() {
        let limit = fd_limit().expect("Linux reports the open-file limit");
        assert_eq!(connection_cap(4), 4);
        assert!(connection_cap(usize::MAX) <= limit / 2);
    }
}
