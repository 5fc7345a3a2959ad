//! `braid status` on a sharer (`braid share`): its link, each member's rate and usage against
//! its caps, the relays open and what was refused, from the sharer's `/status` document.

use braid_core::units::{format_bytes, format_rate};
use braid_daemon::share::members::MemberStatus;
use braid_daemon::share::status::ShareStatus;

/// Bytes/s as a rate.
fn rate(bytes_per_s: u64) -> String {
    format_rate(bytes_per_s as f64 * 8.0)
}

/// `used / cap` (or `used` alone without a cap).
fn against(used: u64, cap: Option<u64>) -> String {
    match cap {
        Some(c) => format!("{} / {}", format_bytes(used), format_bytes(c)),
        None => format_bytes(used),
    }
}

/// The first characters of a key: enough to tell members apart.
fn key_prefix(key: &str) -> &str {
    key.get(..8).unwrap_or(key)
}

/// The line about the WAN link: interface, capacity, the owner's rate and what members may use.
fn link_line(st: &ShareStatus) -> String {
    let mut parts = vec![format!("WAN {}", st.wan_interface.as_deref().unwrap_or("(routing table)"))];
    if let Some(c) = st.capacity_bps {
        parts.push(format!("capacity {}", format_rate(c as f64)));
    }
    parts.push(format!("owner priority {}", st.owner_priority));
    if let Some(o) = st.owner_rate {
        parts.push(format!("owner now {}", rate(o)));
    }
    parts.push(format!("members may use {}", st.members_rate_limit.map_or("any rate".into(), rate)));
    parts.join(" — ")
}

fn member_line(m: &MemberStatus) -> String {
    format!(
        "  {:<20} {:<8} {:<9} {:>14} {:>14} {:>21} {:>21} {:>8}\n",
        m.name,
        key_prefix(&m.key),
        if m.state.is_empty() {
            if m.capped {
                "capped"
            } else {
                "-"
            }
        } else {
            &m.state
        },
        rate(m.rate),
        m.rate_limit.map_or("-".into(), rate),
        against(m.today, m.daily_cap),
        against(m.this_month, m.monthly_cap),
        m.dropped
    )
}

/// The table.
pub fn table(st: &ShareStatus) -> String {
    let mut o = format!(
        "braid sharer {} {} — up {:.0} s — key {} — listening on {}\n",
        st.name,
        st.version,
        st.uptime_s,
        key_prefix(&st.key),
        st.listen
    );
    o += &format!("  {}\n", link_line(st));
    let servers: Vec<String> = st.servers.iter().map(|s| s.to_string()).collect();
    o += &format!("  relays to {}\n", servers.join(", "));
    o += &match &st.usage_file {
        Some(f) => format!("  usage kept in {f}\n"),
        None => "  usage in memory only: caps start afresh when the sharer restarts\n".into(),
    };
    o += &format!(
        "  {:<20} {:<8} {:<9} {:>14} {:>14} {:>21} {:>21} {:>8}\n",
        "member", "key", "state", "rate", "limit", "today / daily cap", "month / monthly cap", "dropped"
    );
    for m in &st.members {
        o += &member_line(m);
    }
    if st.members.is_empty() {
        o += "  no member yet\n";
    }
    o += &format!("  {} relays open\n", st.relays.len());
    for r in &st.relays {
        o += &format!(
            "    {} {} → {} — up {} s, idle {} ms\n",
            r.member, r.from, r.server, r.age_secs, r.idle_ms
        );
    }
    o += &format!(
        "  allocations {} granted, {} refused — dropped: {} from strangers, {} malformed, {} unopened\n",
        st.granted, st.refused, st.strangers_dropped, st.malformed, st.unopened
    );
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sharer's document as its `/status` serves it.
    const SAMPLE: &str = r#"{
        "role": "sharer", "version": "0.1.0", "uptime_s": 93.4,
        "name": "alice-phone", "key": "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNkZWY=",
        "listen": "192.168.1.5:7400", "servers": ["203.0.113.7:7000"],
        "wan_interface": "wwan0", "capacity_bps": 10000000, "owner_priority": "spare",
        "usage_file": "/var/lib/braid/share-usage-QUJDREVG.redb",
        "members": [
            {"name": "bob", "key": "Ym9iYm9iYm9iYm9iYm9iYm9iYm9iYm9iYm9iYm9iYm8=", "up_bytes": 1000,
             "down_bytes": 900000000, "dropped": 12, "rate_limit": 625000, "today": 900001000,
             "daily_cap": 1000000000, "this_month": 4200000000, "monthly_cap": 10000000000,
             "capped": false, "rate": 500000, "state": "relaying"},
            {"name": "carol", "key": "Y2Fyb2xjYXJvbGNhcm9sY2Fyb2xjYXJvbGNhcm9sY2E=", "up_bytes": 0,
             "down_bytes": 1000000000, "dropped": 340, "rate_limit": 32000, "today": 1000000000,
             "daily_cap": 1000000000, "this_month": 1000000000, "monthly_cap": null,
             "capped": true, "rate": 0, "state": "throttled"}
        ],
        "relays": [{"member": "bob", "from": "192.168.1.20:40001", "server": "203.0.113.7:7000",
                    "age_secs": 61, "idle_ms": 3}],
        "members_rate_limit": 1000000, "owner_rate": 250000,
        "strangers_dropped": 17, "malformed": 2, "unopened": 1, "refused": 4, "granted": 9
    }"#;

    #[test]
    fn a_sharers_table_shows_its_link_members_caps_and_refusals() {
        let st: ShareStatus = serde_json::from_str(SAMPLE).unwrap();
        let t = table(&st);
        let lines: Vec<&str> = t.lines().collect();
        assert!(lines[0].starts_with("braid sharer alice-phone 0.1.0 — up 93 s — key QUJDREVG"), "{t}");
        assert!(lines[1].contains("WAN wwan0 — capacity 10.00 Mbit/s — owner priority spare"), "{t}");
        assert!(lines[1].contains("owner now 2.00 Mbit/s — members may use 8.00 Mbit/s"), "{t}");
        assert!(
            lines[2].contains("203.0.113.7:7000") && lines[3].contains("share-usage-QUJDREVG.redb"),
            "{t}"
        );
        let bob = lines.iter().find(|l| l.trim_start().starts_with("bob")).unwrap();
        for want in [
            "Ym9iYm9i",
            "relaying",
            "4.00 Mbit/s",
            "5.00 Mbit/s",
            "900.00 MB / 1.00 GB",
            "4.20 GB / 10.00 GB",
        ] {
            assert!(bob.contains(want), "{want} missing in: {bob}");
        }
        assert!(bob.trim_end().ends_with(" 12"), "{bob}");
        let carol = lines.iter().find(|l| l.trim_start().starts_with("carol")).unwrap();
        assert!(carol.contains("throttled") && carol.contains("256.0 kbit/s"), "{carol}");
        assert!(carol.contains("1.00 GB / 1.00 GB") && carol.contains("  1.00 GB "), "{carol}");
        assert!(
            t.contains("1 relays open\n    bob 192.168.1.20:40001 → 203.0.113.7:7000 — up 61 s, idle 3 ms"),
            "{t}"
        );
        assert!(t.contains(
            "allocations 9 granted, 4 refused — dropped: 17 from strangers, 2 malformed, 1 unopened"
        ));
    }

    #[test]
    fn without_owner_priority_or_a_usage_file_the_table_says_so() {
        let mut st: ShareStatus = serde_json::from_str(SAMPLE).unwrap();
        (st.owner_rate, st.members_rate_limit, st.usage_file, st.wan_interface) = (None, None, None, None);
        st.owner_priority = "none".into();
        let t = table(&st);
        assert!(t.contains("WAN (routing table) — capacity 10.00 Mbit/s — owner priority none — members may use any rate"), "{t}");
        assert!(!t.contains("owner now"), "{t}");
        assert!(t.contains("usage in memory only"), "{t}");
    }
}
