//! Where usage is kept across restarts and crashes: an embedded database (redb: ACID,
//! crash-safe commits, one file), written at most every [`FLUSH_EVERY`], so a crash loses at
//! most that much counting. The client keeps its links' usage in it
//! ([`crate::linkpolicy::store`]), `braid share` its members' ([`crate::share::usage`]): each
//! a table of [`Record`]s by name.

use crate::config::UsageFile;
use braid_core::PublicKey;
use redb::{Database, ReadableTable, TableDefinition};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How often counted usage is written.
pub const FLUSH_EVERY: Duration = Duration::from_secs(1);

/// The row every table holds: three numbers, which each [`Record`] names.
pub type Row = (i64, u64, u64);

/// What one table keeps per name (a link, a member).
pub trait Record: Copy {
    /// The table's name in the file.
    const TABLE: &'static str;
    /// As stored.
    fn to_row(self) -> Row;
    /// As read back.
    fn from_row(row: Row) -> Self;
}

fn table<R: Record>() -> TableDefinition<'static, &'static str, Row> {
    TableDefinition::new(R::TABLE)
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

    fn err(&self, e: &dyn std::fmt::Display) -> String {
        format!("usage database {}: {e}", self.path.display())
    }

    /// Every record of `R`'s table as last written.
    pub fn load<R: Record>(&self) -> Result<BTreeMap<String, R>, String> {
        let tx = self.db.begin_read().map_err(|e| self.err(&e))?;
        let t = match tx.open_table(table::<R>()) {
            Ok(t) => t,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(BTreeMap::new()),
            Err(e) => return Err(self.err(&e)),
        };
        let mut out = BTreeMap::new();
        for row in t.iter().map_err(|e| self.err(&e))? {
            let (k, v) = row.map_err(|e| self.err(&e))?;
            out.insert(k.value().to_string(), R::from_row(v.value()));
        }
        Ok(out)
    }

    /// Writes these records and removes those named in `gone`, in one transaction.
    pub fn save<R: Record>(&self, records: &BTreeMap<String, R>, gone: &[String]) -> Result<(), String> {
        let tx = self.db.begin_write().map_err(|e| self.err(&e))?;
        {
            let mut t = tx.open_table(table::<R>()).map_err(|e| self.err(&e))?;
            for (name, r) in records {
                t.insert(name.as_str(), r.to_row()).map_err(|e| self.err(&e))?;
            }
            for name in gone {
                t.remove(name.as_str()).map_err(|e| self.err(&e))?;
            }
        }
        tx.commit().map_err(|e| self.err(&e))
    }
}

/// Opens the store `file` names (`default_file` in the default place); `None` when it is
/// turned off, or cannot be opened: a warning then says that `what` is counted in memory only.
pub fn open_setting(file: &UsageFile, default_file: &str, what: &str) -> Option<UsageStore> {
    let path = match file {
        UsageFile::Off => None,
        UsageFile::At(p) => Some(p.clone()),
        UsageFile::Default => default_path(default_file),
    }?;
    match UsageStore::open(&path) {
        Ok(s) => Some(s),
        Err(e) => {
            tracing::warn!(error = %e, "{what} is counted in memory only: it will not survive a restart");
            None
        }
    }
}

/// `R`'s records from `store`; none (with a warning: counting starts from zero) when there is
/// no store or it cannot be read.
pub fn load_or_warn<R: Record>(store: Option<&UsageStore>, what: &str) -> BTreeMap<String, R> {
    match store.map(UsageStore::load::<R>) {
        Some(Ok(u)) => {
            let path = store.map(|s| s.path().display().to_string()).unwrap_or_default();
            tracing::info!(file = %path, records = u.len(), "{what} store");
            u
        }
        Some(Err(e)) => {
            tracing::warn!(error = %e, "cannot read {what}; counting from zero");
            BTreeMap::new()
        }
        None => BTreeMap::new(),
    }
}

/// The first eight characters of `key`, safe in a file name: two daemons on one machine with
/// different keys keep their own files.
pub fn key_tag(key: &PublicKey) -> String {
    key.to_string().chars().take(8).map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect()
}

/// The default place of database `file`: systemd's `$STATE_DIRECTORY`, else `/var/lib/braid`
/// for root, else `$XDG_STATE_HOME/braid` (or `~/.local/state/braid`).
pub fn default_path(file: &str) -> Option<PathBuf> {
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

    #[derive(Debug, Clone, Copy, PartialEq)]
    struct A(i64);
    impl Record for A {
        const TABLE: &'static str = "a";
        fn to_row(self) -> Row {
            (self.0, 0, 0)
        }
        fn from_row(r: Row) -> A {
            A(r.0)
        }
    }
    #[derive(Debug, Clone, Copy, PartialEq)]
    struct B(u64);
    impl Record for B {
        const TABLE: &'static str = "b";
        fn to_row(self) -> Row {
            (0, 0, self.0)
        }
        fn from_row(r: Row) -> B {
            B(r.2)
        }
    }

    #[test]
    fn tables_of_one_file_keep_their_own_records_and_removals() {
        let dir = std::env::temp_dir().join(format!("braid-store-{}", std::process::id()));
        let path = dir.join("s.redb");
        let _ = std::fs::remove_file(&path);
        {
            let s = UsageStore::open(&path).unwrap();
            assert!(s.load::<A>().unwrap().is_empty());
            s.save(&[("x".to_string(), A(-5)), ("y".to_string(), A(6))].into(), &[]).unwrap();
            s.save(&[("x".to_string(), B(7))].into(), &[]).unwrap();
            s.save::<A>(&BTreeMap::new(), &["y".to_string()]).unwrap();
        }
        let s = UsageStore::open(&path).unwrap();
        assert_eq!(s.load::<A>().unwrap(), [("x".to_string(), A(-5))].into());
        assert_eq!(s.load::<B>().unwrap(), [("x".to_string(), B(7))].into());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
