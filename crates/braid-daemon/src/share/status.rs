//! The sharer's status: JSON at `/status` (its link, its members, their rates and usage against
//! their caps, the relays open now, what was refused and dropped) and Prometheus text at
//! `/metrics`. `braid status` tells the document from a client's or server's by its `role`.

use super::config::OwnerPriority;
use super::members::MemberStatus;
use super::relay::{RelayStatus, Shared};
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use std::fmt::Write;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio::task::JoinHandle;

/// The `role` of a sharer's status document.
pub const ROLE: &str = "sharer";

/// The sharer's status document.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ShareStatus {
    /// [`ROLE`].
    #[serde(default)]
    pub role: String,
    /// braid version.
    #[serde(default)]
    pub version: String,
    /// Seconds since start.
    #[serde(default)]
    pub uptime_s: f64,
    /// Announced name.
    pub name: String,
    /// Public key.
    pub key: String,
    /// LAN address.
    pub listen: SocketAddr,
    /// Servers relayed to.
    pub servers: Vec<SocketAddr>,
    /// The WAN interface relayed sockets leave on (null: the routing table's choice).
    #[serde(default)]
    pub wan_interface: Option<String>,
    /// The WAN link's capacity, bit/s (null: not configured).
    #[serde(default)]
    pub capacity_bps: Option<u64>,
    /// "spare" (members get only what the owner leaves) or "none".
    #[serde(default)]
    pub owner_priority: String,
    /// Where members' usage is kept across restarts (null: in memory only).
    #[serde(default)]
    pub usage_file: Option<String>,
    /// Members and their usage.
    pub members: Vec<MemberStatus>,
    /// Relays open now.
    pub relays: Vec<RelayStatus>,
    /// What all members together may use now, bytes/s (null: no limit).
    pub members_rate_limit: Option<u64>,
    /// The owner's own rate, bytes/s (null: not measured, without owner priority).
    pub owner_rate: Option<u64>,
    /// Datagrams from addresses without a relay, dropped.
    pub strangers_dropped: u64,
    /// Allocation messages malformed or with a bad MAC.
    pub malformed: u64,
    /// Allocation messages that did not open or were over the handshake rate.
    pub unopened: u64,
    /// Allocations refused.
    pub refused: u64,
    /// Allocations granted.
    pub granted: u64,
}

/// The status now.
pub fn snapshot(s: &Shared) -> ShareStatus {
    let c = &s.counters;
    let set = &s.settings;
    let measured = set.owner_priority == OwnerPriority::Spare && set.capacity.is_some();
    ShareStatus {
        role: ROLE.into(),
        version: env!("CARGO_PKG_VERSION").into(),
        uptime_s: s.uptime().as_secs_f64(),
        name: set.name.clone(),
        key: set.secret.public_key().to_string(),
        listen: s.lan.local_addr().unwrap_or(set.listen),
        servers: set.servers.clone(),
        wan_interface: set.wan_interface.clone(),
        capacity_bps: set.capacity,
        owner_priority: match set.owner_priority {
            OwnerPriority::Spare => "spare",
            OwnerPriority::None => "none",
        }
        .into(),
        usage_file: s.usage.path().map(|p| p.display().to_string()),
        members: s.members.status(s.day(), &s.relaying()),
        relays: s.relays(),
        members_rate_limit: s.gate.lock().unwrap_or_else(|e| e.into_inner()).rate(),
        owner_rate: measured.then(|| s.owner_rate.load(Ordering::Relaxed)),
        strangers_dropped: c.strangers.load(Ordering::Relaxed),
        malformed: c.malformed.load(Ordering::Relaxed),
        unopened: c.unopened.load(Ordering::Relaxed),
        refused: c.refused.load(Ordering::Relaxed),
        granted: c.granted.load(Ordering::Relaxed),
    }
}

/// A label value in Prometheus text: backslash, quote and newline escaped.
fn label(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

/// Prometheus text of the status.
pub fn metrics(st: &ShareStatus) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "# TYPE braid_share_member_bytes_total counter");
    for m in &st.members {
        let _ = writeln!(
            o,
            "braid_share_member_bytes_total{{member=\"{}\",direction=\"up\"}} {}",
            label(&m.name),
            m.up_bytes
        );
        let _ = writeln!(
            o,
            "braid_share_member_bytes_total{{member=\"{}\",direction=\"down\"}} {}",
            label(&m.name),
            m.down_bytes
        );
    }
    let _ = writeln!(o, "# TYPE braid_share_member_dropped_total counter");
    for m in &st.members {
        let _ =
            writeln!(o, "braid_share_member_dropped_total{{member=\"{}\"}} {}", label(&m.name), m.dropped);
    }
    let _ = writeln!(o, "# TYPE braid_share_member_rate_bytes gauge");
    for m in &st.members {
        let _ = writeln!(o, "braid_share_member_rate_bytes{{member=\"{}\"}} {}", label(&m.name), m.rate);
    }
    let _ = writeln!(o, "# TYPE braid_share_member_cap_used_ratio gauge");
    for m in &st.members {
        let used = [(m.today, m.daily_cap), (m.this_month, m.monthly_cap)]
            .iter()
            .filter_map(|(u, c)| c.map(|c| *u as f64 / c.max(1) as f64))
            .fold(0.0f64, f64::max);
        let _ = writeln!(o, "braid_share_member_cap_used_ratio{{member=\"{}\"}} {used}", label(&m.name));
    }
    let _ = writeln!(o, "# TYPE braid_share_relays gauge\nbraid_share_relays {}", st.relays.len());
    if let Some(r) = st.owner_rate {
        let _ = writeln!(o, "# TYPE braid_share_owner_rate_bytes gauge\nbraid_share_owner_rate_bytes {r}");
    }
    for (name, v) in [
        ("strangers_dropped", st.strangers_dropped),
        ("malformed", st.malformed),
        ("unopened", st.unopened),
        ("refused", st.refused),
        ("granted", st.granted),
    ] {
        let _ = writeln!(o, "# TYPE braid_share_{name}_total counter\nbraid_share_{name}_total {v}");
    }
    o
}

/// Serves `/status` and `/metrics` on `addr`.
pub async fn serve(addr: SocketAddr, shared: Arc<Shared>) -> std::io::Result<(SocketAddr, JoinHandle<()>)> {
    let app = Router::new()
        .route("/status", get(|State(s): State<Arc<Shared>>| async move { Json(snapshot(&s)) }))
        .route(
            "/metrics",
            get(|State(s): State<Arc<Shared>>| async move {
                ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], metrics(&snapshot(&s)))
                    .into_response()
            }),
        )
        .with_state(shared);
    let l = tokio::net::TcpListener::bind(addr).await?;
    let bound = l.local_addr()?;
    let t = tokio::spawn(async move {
        let _ = axum::serve(l, app).await;
    });
    Ok((bound, t))
}

#[cfg(test)]
mod tests {
    #[test]
    fn label_values_are_escaped() {
        assert_eq!(super::label("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }
}
