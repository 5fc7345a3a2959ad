//! A client session's side of the link policy: it counts each path's bytes against its link
//! and gives each path the tier, weight and rate its link runs with now.

use super::table::{Effective, SharedLinks};
use super::Tier;
use braid_core::{PathId, Session, Timestamp};
use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;

/// IPv4 + UDP headers: what the kernel counts on top of each datagram's payload.
const IPV4_UDP: u64 = 28;
/// IPv6 + UDP headers.
const IPV6_UDP: u64 = 48;

/// What the driver should do with the session's paths.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct PathChanges {
    /// Close the paths leaving from these local addresses (their link is `never`, or stopped).
    pub close: Vec<SocketAddr>,
    /// Open a path on these links (they may carry data again).
    pub open: Vec<String>,
}

/// One session's accounting and policy state.
#[derive(Debug)]
pub struct Steer {
    links: SharedLinks,
    /// Bytes (sent, received) of each path counted so far, headers included.
    counted: HashMap<PathId, (u64, u64)>,
    /// What each path was last given.
    applied: HashMap<PathId, Effective>,
}

impl Steer {
    /// A steer over `links`.
    pub fn new(links: SharedLinks) -> Self {
        Steer { links, counted: HashMap::new(), applied: HashMap::new() }
    }

    /// Counts what the paths carried since the last call and applies the policy; `labels` are
    /// the session's paths by link, `available` the links the client could open a path on.
    pub fn run(
        &mut self,
        now: Timestamp,
        session: &mut Session,
        labels: &BTreeMap<PathId, String>,
        available: &[String],
    ) -> PathChanges {
        let local_now = chrono::Local::now();
        let mut changes = PathChanges::default();
        let mut table = self.links.lock();
        for (id, label) in labels {
            let Some(info) = session.path_info(*id) else { continue };
            let header = if info.remote.is_ipv4() { IPV4_UDP } else { IPV6_UDP };
            let sent = info.stats.bytes_sent + info.stats.packets_sent * header;
            let received = info.stats.bytes_received + info.stats.packets_received * header;
            let (was_sent, was_received) = self.counted.insert(*id, (sent, received)).unwrap_or((0, 0));
            table.account(
                label,
                sent.saturating_sub(was_sent),
                received.saturating_sub(was_received),
                &local_now,
            );
            let e = table.effective(label, &local_now);
            if e.tier == Tier::Never {
                changes.close.extend(info.local);
                continue;
            }
            if self.applied.get(id) == Some(&e) {
                continue;
            }
            if let Some(status) = e.tier.path_status() {
                let _ = session.set_path_status(*id, status);
            }
            let _ = session.set_path_weight(*id, e.weight);
            let _ = session.set_path_max_rate(now, *id, e.max_rate);
            if e.capped && self.applied.get(id).is_none_or(|a| !a.capped) {
                tracing::warn!(link = %label, tier = e.tier.name(), "data cap reached");
            }
            self.applied.insert(*id, e);
        }
        self.counted.retain(|id, _| labels.contains_key(id));
        self.applied.retain(|id, _| labels.contains_key(id));
        for name in available {
            if !labels.values().any(|l| l == name) && table.effective(name, &local_now).tier != Tier::Never {
                changes.open.push(name.clone());
            }
        }
        changes
    }
}
