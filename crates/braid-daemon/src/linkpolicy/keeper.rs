//! Opens the usage store at start, writes counted usage every [`FLUSH_EVERY`] and once more
//! at a clean stop.

use super::store::{default_path, UsageStore, FLUSH_EVERY};
use super::table::SharedLinks;
use super::LinkPolicy;
use crate::config::UsageFile;
use braid_core::PublicKey;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Writes the table's usage to the store.
#[derive(Clone)]
pub struct UsageKeeper {
    links: SharedLinks,
    store: Option<Arc<UsageStore>>,
}

impl UsageKeeper {
    /// The link table with usage read back from the store (`file`; for the default place, a
    /// file named after `key`); without a store (turned off, or it cannot be opened: a
    /// warning says why) usage is counted in memory only.
    pub fn open(policies: BTreeMap<String, LinkPolicy>, file: &UsageFile, key: &PublicKey) -> UsageKeeper {
        let tag: String = key
            .to_string()
            .chars()
            .take(8)
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        let path = match file {
            UsageFile::Off => None,
            UsageFile::At(p) => Some(p.clone()),
            UsageFile::Default => default_path(&tag),
        };
        let store = path.and_then(|p| match UsageStore::open(&p) {
            Ok(s) => Some(s),
            Err(e) => {
                tracing::warn!(error = %e, "link usage is counted in memory only: it will not survive a restart");
                None
            }
        });
        let usage = match store.as_ref().map(UsageStore::load) {
            Some(Ok(u)) => u,
            Some(Err(e)) => {
                tracing::warn!(error = %e, "cannot read link usage; counting from zero");
                BTreeMap::new()
            }
            None => BTreeMap::new(),
        };
        if let Some(s) = &store {
            tracing::info!(file = %s.path().display(), links = usage.len(), "link usage store");
        }
        UsageKeeper { links: SharedLinks::new(policies, usage), store: store.map(Arc::new) }
    }

    /// The table.
    pub fn links(&self) -> SharedLinks {
        self.links.clone()
    }

    /// Writes what changed since the last write.
    pub async fn flush(&self) {
        let Some(store) = self.store.clone() else { return };
        let Some(usage) = self.links.lock().take_dirty() else { return };
        let r = tokio::task::spawn_blocking(move || store.save(&usage)).await;
        if let Ok(Err(e)) = r {
            tracing::warn!(error = %e, "cannot write link usage");
        }
    }

    /// Writes every [`FLUSH_EVERY`], until the task is dropped.
    pub async fn run(self) {
        let mut tick = tokio::time::interval(FLUSH_EVERY);
        loop {
            tick.tick().await;
            self.flush().await;
        }
    }
}
