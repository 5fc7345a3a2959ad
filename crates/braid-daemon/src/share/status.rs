//! The sharer's status: JSON at `/status` (its link, its members, their rates and usage against
//! their caps, the relays open now, what was refused and dropped) and Prometheus text at
//! `/metrics`. `braid status` tells the document from a client's or server's by its `role`.

use super::config::OwnerPriority;
use super::members::MemberStatus;
use super::relay::{RelayStatus, Shared};
use crate::exposition::Families;
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
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

/// Prometheus text of the status (OpenMetrics, through [`crate::exposition`]).
pub fn metrics(st: &ShareStatus) -> String {
    crate::exposition::render(st.clone(), families)
}

fn families(st: &ShareStatus, o: &mut Families<'_>) -> std::fmt::Result {
    let member = |m: &MemberStatus| vec![("member", m.name.clone())];
    o.counter(
        "braid_share_member_bytes",
        "Bytes relayed for a member, by direction.",
        st.members.iter().flat_map(|m| {
            [("up", m.up_bytes), ("down", m.down_bytes)].map(|(d, n)| {
                let mut labels = member(m);
                labels.push(("direction", d.to_string()));
                (labels, n)
            })
        }),
    )?;
    o.counter(
        "braid_share_member_dropped",
        "A member's datagrams dropped by the rate limit or a cap.",
        st.members.iter().map(|m| (member(m), m.dropped)),
    )?;
    o.gauge(
        "braid_share_member_rate_bytes",
        "Bytes per second relayed for a member, both directions, over the last second.",
        st.members.iter().map(|m| (member(m), m.rate)),
    )?;
    o.gauge(
        "braid_share_member_cap_used_ratio",
        "The larger of a member's daily and monthly cap used.",
        st.members.iter().map(|m| {
            let used = [(m.today, m.daily_cap), (m.this_month, m.monthly_cap)]
                .iter()
                .filter_map(|(u, c)| c.map(|c| *u as f64 / c.max(1) as f64))
                .fold(0.0f64, f64::max);
            (member(m), used)
        }),
    )?;
    o.gauge1("braid_share_relays", "Relays open.", st.relays.len() as u64)?;
    if let Some(r) = st.owner_rate {
        o.gauge1("braid_share_owner_rate_bytes", "The owner's own rate in bytes per second.", r)?;
    }
    for (name, help, v) in [
        ("strangers_dropped", "Datagrams from addresses without a relay, dropped.", st.strangers_dropped),
        ("malformed", "Allocation messages malformed or with a bad MAC.", st.malformed),
        ("unopened", "Allocation messages that did not open or were over the handshake rate.", st.unopened),
        ("refused", "Allocations refused.", st.refused),
        ("granted", "Allocations granted.", st.granted),
    ] {
        o.counter1(&format!("braid_share_{name}"), help, v)?;
    }
    Ok(())
}

/// Serves `/status` and `/metrics` on `addr`.
pub async fn serve(addr: SocketAddr, shared: Arc<Shared>) -> std::io::Result<(SocketAddr, JoinHandle<()>)> {
    let app = Router::new()
        .route("/status", get(|State(s): State<Arc<Shared>>| async move { Json(snapshot(&s)) }))
        .route(
            "/metrics",
            get(|State(s): State<Arc<Shared>>| async move {
                ([(header::CONTENT_TYPE, crate::exposition::CONTENT_TYPE)], metrics(&snapshot(&s)))
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
    use super::*;

    #[test]
    fn metrics_escape_member_names_and_keep_their_names() {
        let st: ShareStatus = serde_json::from_str(
            r#"{"role": "sharer", "name": "n", "key": "k", "listen": "10.0.0.1:7400", "servers": [],
            "members": [], "relays": [], "members_rate_limit": null, "owner_rate": null,
            "strangers_dropped": 4, "malformed": 0, "unopened": 0, "refused": 0, "granted": 3}"#,
        )
        .unwrap();
        let member = MemberStatus {
            name: "a\"b\\c\nd".into(),
            key: "k".into(),
            up_bytes: 10,
            down_bytes: 20,
            dropped: 1,
            rate_limit: None,
            today: 50,
            daily_cap: Some(100),
            this_month: 50,
            monthly_cap: None,
            capped: false,
            rate: 7,
            state: "relaying".into(),
        };
        let text = metrics(&ShareStatus { members: vec![member], ..st });
        let name = r#"member="a\"b\\c\nd""#;
        assert!(
            text.contains(&format!("braid_share_member_bytes_total{{{name},direction=\"down\"}} 20")),
            "{text}"
        );
        assert!(text.contains(&format!("braid_share_member_cap_used_ratio{{{name}}} 0.5")), "{text}");
        assert!(text.contains("# TYPE braid_share_strangers_dropped counter\n"), "{text}");
        assert!(text.contains("\nbraid_share_strangers_dropped_total 4\n"), "{text}");
        assert!(text.contains("\nbraid_share_relays 0\n"), "{text}");
        assert!(text.ends_with("# EOF\n"), "{text}");
    }
}
