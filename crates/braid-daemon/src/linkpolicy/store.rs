//! Where link usage is kept across restarts and crashes: an embedded database (redb: ACID,
//! crash-safe commits, one file), written at most every [`FLUSH_EVERY`], so a crash loses at
//! most that much counting.

use redb::{Database, ReadableTable, TableDefinition};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How often counted usage is written.
pub const FLUSH_EVERY: Duration = Duration::from_secs(1);

/// link name → (period start, unix seconds; bytes sent; bytes received).
const USAGE: TableDefinition<&str, (i64, u64, u64)> = TableDefinition::new("usage");

/// One link's usage in its current period.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Usage {
    /// When the period began (unix seconds).
    pub period_start: i64,
    /// Bytes sent on the link (IP packets, as the kernel counts them).
    pub sent: u64,
    /// Bytes received on the link.
    pub received: u64,
}

impl Usage {
    /// Both directions, as carriers count against a cap.
    pub fn total(&self) -> u64 {
        self.sent.saturating_add(self.received)
    }
}

/// The usage database.
pub struct UsageStore {
    db: Database,
    path: PathBuf,
}

impl UsageStore {
    /// Opens (or creates) the database at `path`, creating its directory.
    pub fn open(path: &Path) -> Result<UsageStore, String> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        }
        let db = Database::create(path).map_err(|e| format!("usage database {}: {e}", path.display()))?;
        Ok(UsageStore { db, path: path.to_path_buf() })
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every link's usage as last written.
    pub fn load(&self) -> Result<BTreeMap<String, Usage>, String> {
        let err = |e: &dyn std::fmt::Display| format!("usage database {}: {e}", self.path.display());
        let tx = self.db.begin_read().map_err(|e| err(&e))?;
        let table = match tx.open_table(USAGE) {
            Ok(t) => t,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(BTreeMap::new()),
            Err(e) => return Err(err(&e)),
        };
        let mut out = BTreeMap::new();
        for row in table.iter().map_err(|e| err(&e))? {
            let (k, v) = row.map_err(|e| err(&e))?;
            let (period_start, sent, received) = v.value();
            out.insert(k.value().to_string(), Usage { period_start, sent, received });
        }
        Ok(out)
    }

    /// Writes these links' usage in one transaction.
    pub fn save(&self, usage: &BTreeMap<String, Usage>) -> Result<(), String> {
        let err = |e: &dyn std::fmt::Display| format!("usage database {}: {e}", self.path.display());
        let tx = self.db.begin_write().map_err(|e| err(&e))?;
        {
            let mut table = tx.open_table(USAGE).map_err(|e| err(&e))?;
            for (link, u) in usage {
                table.insert(link.as_str(), (u.period_start, u.sent, u.received)).map_err(|e| err(&e))?;
            }
        }
        tx.commit().map_err(|e| err(&e))
    }
}

/// The default database file: systemd's `$STATE_DIRECTORY`, else `/var/lib/braid` for root,
/// else `$XDG_STATE_HOME/braid` (or `~/.local/state/braid`); one file per client key, so that
/// two clients on one machine keep their own counts.
pub fn default_path(key_tag: &str) -> Option<PathBuf> {
    let file = format!("usage-{key_tag}.redb");
    if let Some(d) = std::env::var_os("STATE_DIRECTORY").filter(|d| !d.is_empty()) {
        // systemd may list several directories, separated by colons.
        let first = d.to_string_lossy().split(':').next().unwrap_or_default().to_string();
        return Some(PathBuf::from(first).join(file));
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        return Some(PathBuf::from("/var/lib/braid").join(file));
    }
    let base = std::env::var_os("XDG_STATE_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/state")))?;
    Some(base.join("braid").join(file))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_survives_reopening() {
        let dir = std::env::temp_dir().join(format!("braid-usage-{}", std::process::id()));
        let path = dir.join("u.redb");
        let _ = std::fs::remove_file(&path);
        {
            let s = UsageStore::open(&path).unwrap();
            assert!(s.load().unwrap().is_empty());
            let mut m = BTreeMap::new();
            m.insert("wwan0".to_string(), Usage { period_start: 1_700_000_000, sent: 5, received: 7 });
            s.save(&m).unwrap();
            m.insert("wwan0".to_string(), Usage { period_start: 1_700_000_000, sent: 50, received: 70 });
            m.insert("eth0".to_string(), Usage { period_start: 1, sent: 1, received: 2 });
            s.save(&m).unwrap();
        }
        let s = UsageStore::open(&path).unwrap();
        let m = s.load().unwrap();
        assert_eq!(m["wwan0"], Usage { period_start: 1_700_000_000, sent: 50, received: 70 });
        assert_eq!(m["eth0"].total(), 3);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
