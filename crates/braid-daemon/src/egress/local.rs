//! The server's own addresses. A client that asks the server to connect to the server's own
//! public address reaches the services listening there (an admin panel, a database bound to
//! 0.0.0.0, the status port) from the inside — the way a braid server would become a way
//! into its own host — so the egress policy treats them like loopback.
//!
//! They come from netlink (every interface's global addresses, up or not), read on first use
//! and again when the list is older than [`REFRESH`]: addresses change (DHCP, SLAAC) while
//! the server runs, and one netlink dump every half minute costs nothing.

use crate::ratelog::RateLimited;
use std::net::IpAddr;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

/// How old the list may get before it is read again.
pub const REFRESH: Duration = Duration::from_secs(30);

static LIST_FAILED: RateLimited = RateLimited::new(Duration::from_secs(300));

#[derive(Default)]
struct Inner {
    /// The addresses and when they were read (None: never).
    list: RwLock<(Vec<IpAddr>, Option<Instant>)>,
    /// Held while one caller reads the interfaces; the others go on with the list they have.
    refreshing: tokio::sync::Mutex<()>,
}

/// The server's own addresses, shared by every clone.
#[derive(Clone, Default)]
pub struct LocalAddresses {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for LocalAddresses {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let list = self.inner.list.read().unwrap_or_else(|e| e.into_inner());
        f.debug_struct("LocalAddresses").field("addrs", &list.0).finish()
    }
}

impl LocalAddresses {
    /// Whether `ip` is one of the server's addresses (as last read).
    pub fn contains(&self, ip: IpAddr) -> bool {
        self.inner.list.read().unwrap_or_else(|e| e.into_inner()).0.contains(&ip)
    }

    /// Replaces the list (the refresh does this; tests set it directly).
    pub fn set(&self, addrs: Vec<IpAddr>) {
        *self.inner.list.write().unwrap_or_else(|e| e.into_inner()) = (addrs, Some(Instant::now()));
    }

    fn stale(&self) -> Option<bool> {
        let at = self.inner.list.read().unwrap_or_else(|e| e.into_inner()).1;
        at.map(|t| t.elapsed() >= REFRESH)
    }

    /// Reads the interfaces' addresses when the list is missing or older than [`REFRESH`].
    /// The first caller waits for the list; later ones, while a refresh runs elsewhere, go on
    /// with the previous list. A netlink failure keeps the previous list (and is tried again
    /// after [`REFRESH`]).
    pub async fn refresh_if_stale(&self) {
        let _guard = match self.stale() {
            Some(false) => return,
            Some(true) => match self.inner.refreshing.try_lock() {
                Ok(g) => g,
                Err(_) => return,
            },
            None => self.inner.refreshing.lock().await,
        };
        if self.stale() == Some(false) {
            return; // another caller refreshed it while this one waited
        }
        match crate::netlink::interfaces().await {
            Ok(ifs) => {
                let mut addrs: Vec<IpAddr> = ifs.into_values().flat_map(|i| i.addrs).collect();
                addrs.sort();
                addrs.dedup();
                tracing::debug!(?addrs, "the server's own addresses");
                self.set(addrs);
            }
            Err(e) => {
                if LIST_FAILED.hit().is_some() {
                    tracing::warn!(error = %e, "cannot list this host's addresses; the egress policy cannot tell them apart from the internet");
                }
                let mut list = self.inner.list.write().unwrap_or_else(|e| e.into_inner());
                list.1 = Some(Instant::now());
            }
        }
    }
}
