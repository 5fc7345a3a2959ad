//! Opens the usage store at start, writes counted usage every [`FLUSH_EVERY`] and once more
//! at a clean stop.

use super::table::SharedLinks;
use super::LinkPolicy;
use crate::config::UsageFile;
use crate::usage_store::{key_tag, load_or_warn, open_setting, UsageStore, FLUSH_EVERY};
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
        let file_name = format!("usage-{}.redb", key_tag(key));
        let store = open_setting(file, &file_name, "link usage");
        let usage = load_or_warn(store.as_ref(), "link usage");
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
        let r = tokio::task::spawn_blocking(move || store.save(&usage, &[])).await;
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
