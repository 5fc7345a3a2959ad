//! A link's usage in its current period, as the usage database ([`crate::usage_store`]) keeps
//! it: link name → (period start, sent, received).

use crate::usage_store::{Record, Row};

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

impl Record for Usage {
    const TABLE: &'static str = "usage";
    fn to_row(self) -> Row {
        (self.period_start, self.sent, self.received)
    }
    fn from_row((period_start, sent, received): Row) -> Usage {
        Usage { period_start, sent, received }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::usage_store::UsageStore;
    use std::collections::BTreeMap;

    #[test]
    fn usage_survives_reopening() {
        let dir = std::env::temp_dir().join(format!("braid-usage-{}", std::process::id()));
        let path = dir.join("u.redb");
        let _ = std::fs::remove_file(&path);
        {
            let s = UsageStore::open(&path).unwrap();
            assert!(s.load::<Usage>().unwrap().is_empty());
            let mut m = BTreeMap::new();
            m.insert("wwan0".to_string(), Usage { period_start: 1_700_000_000, sent: 5, received: 7 });
            s.save(&m, &[]).unwrap();
            m.insert("wwan0".to_string(), Usage { period_start: 1_700_000_000, sent: 50, received: 70 });
            m.insert("eth0".to_string(), Usage { period_start: 1, sent: 1, received: 2 });
            s.save(&m, &[]).unwrap();
        }
        let s = UsageStore::open(&path).unwrap();
        let m = s.load::<Usage>().unwrap();
        assert_eq!(m["wwan0"], Usage { period_start: 1_700_000_000, sent: 50, received: 70 });
        assert_eq!(m["eth0"].total(), 3);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
