//! Prometheus text of the status document (OpenMetrics, through [`crate::exposition`]):
//! per-path gauges and counters, streams, drops and offloaded ACKs per session, and the
//! client's front-end counters.
//!
//! Labels name what outlives a session, so that a series goes on across reconnects: `peer`
//! is the client's name on a server (one session per client key) and the server's address on
//! a client; `link` is the client's link label (the path's address on a server). The session
//! id, which is new at each reconnect, and the scheduler and cipher are values of
//! `braid_session_info`; a path's state is the state set `braid_path_state` (one series per
//! state, 1 for the current one) rather than a label that would start a new series at each
//! change.

use crate::exposition::{self, Families, Labels};
use crate::status::{PathStatus, SessionStatus, Status};
use std::fmt;

/// Every state a path can be in, as the status names them.
pub const PATH_STATES: [&str; 7] = ["probing", "active", "secondary", "standby", "backup", "suspect", "down"];

/// `peer`, `link`: what identifies a path's series across reconnects.
fn path_labels(peer: &str, p: &PathStatus) -> Labels {
    vec![("peer", peer.to_string()), ("link", p.link.clone().unwrap_or_else(|| p.remote.clone()))]
}

/// Every path of every session, with its session.
fn paths(st: &Status) -> impl Iterator<Item = (&SessionStatus, &PathStatus)> {
    st.sessions.iter().flat_map(|s| s.paths.iter().map(move |p| (s, p)))
}

/// Prometheus text of the document.
pub fn prometheus(st: &Status) -> String {
    exposition::render(st.clone(), families)
}

fn families(st: &Status, o: &mut Families<'_>) -> fmt::Result {
    o.gauge(
        "braid_uptime_seconds",
        "Seconds since the daemon started.",
        [(vec![("role", st.role.clone())], st.uptime_s)],
    )?;
    o.gauge1("braid_sessions", "Sessions.", st.sessions.len() as u64)?;
    o.gauge(
        "braid_session_info",
        "A session: its id (new at each reconnect), scheduler and cipher.",
        st.sessions.iter().map(|s| {
            let labels = vec![
                ("peer", s.peer.clone()),
                ("session", s.id.clone()),
                ("scheduler", s.scheduler.clone()),
                ("cipher", s.cipher.clone()),
            ];
            (labels, 1u64)
        }),
    )?;
    o.gauge(
        "braid_path_state",
        "The state of a path (1 for the current state).",
        paths(st).flat_map(|(s, p)| {
            PATH_STATES.iter().map(move |&state| {
                let mut labels = path_labels(&s.peer, p);
                labels.push(("state", state.to_string()));
                (labels, u64::from(p.state == state))
            })
        }),
    )?;
    type Gauge = (&'static str, &'static str, fn(&PathStatus) -> f64);
    let gauges: [Gauge; 5] = [
        ("braid_path_rtt_seconds", "Smoothed RTT of a path.", |p| p.rtt_ms / 1e3),
        ("braid_path_send_bits_per_second", "Sending rate of a path.", |p| p.send_bps),
        ("braid_path_receive_bits_per_second", "Receiving rate of a path.", |p| p.recv_bps),
        ("braid_path_goodput_bits_per_second", "New stream bytes a path delivered, per second.", |p| {
            p.goodput_bps
        }),
        ("braid_path_loss_ratio", "Smoothed loss of a path.", |p| p.loss),
    ];
    for (name, help, f) in gauges {
        o.gauge(name, help, paths(st).map(|(s, p)| (path_labels(&s.peer, p), f(p))))?;
    }
    type Bytes = (&'static str, &'static str, fn(&PathStatus) -> u64);
    let bytes: [Bytes; 2] = [
        ("braid_path_cwnd_bytes", "Congestion window of a path.", |p| p.cwnd),
        ("braid_path_mtu_bytes", "Largest UDP payload a path carries now.", |p| p.mtu as u64),
    ];
    for (name, help, f) in bytes {
        o.gauge(name, help, paths(st).map(|(s, p)| (path_labels(&s.peer, p), f(p))))?;
    }
    type Counter = (&'static str, &'static str, fn(&PathStatus) -> u64);
    let counters: [Counter; 4] = [
        ("braid_path_sent_bytes", "Bytes sent on a path.", |p| p.bytes_sent),
        ("braid_path_received_bytes", "Bytes received on a path.", |p| p.bytes_received),
        ("braid_path_lost_packets", "Packets lost on a path.", |p| p.packets_lost),
        ("braid_path_blackouts", "Times a path went silent.", |p| p.blackouts),
    ];
    for (name, help, f) in counters {
        o.counter(name, help, paths(st).map(|(s, p)| (path_labels(&s.peer, p), f(p))))?;
    }
    let peer = |s: &SessionStatus| vec![("peer", s.peer.clone())];
    o.gauge(
        "braid_key_phase",
        "Generation of a session's packet keys (key updates so far).",
        st.sessions.iter().map(|s| (peer(s), s.key_phase)),
    )?;
    o.gauge(
        "braid_shared_bottleneck",
        "1 while a session's paths drain as a crowd's (bbr-shared: ProbeRTT to half a BDP): on a server, another session sends too; on a client, its server says other uploads arrive too.",
        st.sessions.iter().map(|s| (peer(s), u64::from(s.shared_bottleneck))),
    )?;
    o.counter(
        "braid_endpoint_replies",
        "Answers to unauthenticated packets, by kind.",
        st.endpoint_replies.iter().map(|(k, n)| (vec![("kind", k.clone())], *n)),
    )?;
    o.gauge1(
        "braid_handshakes_in_progress",
        "Handshakes waiting for their public-key work.",
        st.handshakes_in_progress as u64,
    )?;
    o.counter(
        "braid_received_datagrams",
        "Datagrams received, by server socket (one per core, SO_REUSEPORT).",
        st.received_per_socket.iter().enumerate().map(|(i, n)| (vec![("socket", i.to_string())], *n)),
    )?;
    o.gauge("braid_streams", "Open streams.", st.sessions.iter().map(|s| (peer(s), s.streams as u64)))?;
    o.counter(
        "braid_offloaded_acks",
        "ACK packets sent on the secondary path for the primary (seed 003's offloading-ACK).",
        st.sessions.iter().map(|s| (peer(s), s.acks_offloaded)),
    )?;
    o.counter(
        "braid_dropped_acks",
        "Replaceable ACKs dropped because the secondary path had no room (seed 003's offloading-ACK).",
        st.sessions.iter().map(|s| (peer(s), s.acks_dropped)),
    )?;
    let endpoint = st
        .endpoint_dropped
        .iter()
        .map(|(r, n)| (vec![("scope", "endpoint".to_string()), ("reason", r.clone())], *n));
    let sessions = st.sessions.iter().flat_map(|s| {
        s.dropped.iter().map(|(r, n)| {
            (vec![("scope", "session".to_string()), ("peer", s.peer.clone()), ("reason", r.clone())], *n)
        })
    });
    o.counter("braid_dropped_datagrams", "Received datagrams dropped, by reason.", endpoint.chain(sessions))?;
    if let Some(f) = &st.frontend {
        o.gauge1(
            "braid_frontend_connections",
            "Front-end connections open (SOCKS5 and forwards).",
            f.connections as u64,
        )?;
        o.gauge1(
            "braid_frontend_max_connections",
            "The cap on front-end connections.",
            f.max_connections as u64,
        )?;
        o.gauge1("braid_frontend_udp_associations", "UDP associations open.", f.udp_associations as u64)?;
        let refused = [
            ("cap", f.refused),
            ("evicted_while_greeting", f.evicted),
            ("greeting_timeout", f.greeting_timeouts),
            ("udp_association_refused", f.udp_refused),
        ];
        o.counter(
            "braid_frontend_refused",
            "Front-end connections and UDP associations refused, by reason.",
            refused.map(|(r, n)| (vec![("reason", r.to_string())], n)),
        )?;
        o.counter1("braid_frontend_accept_errors", "Failed accepts.", f.accept_errors)?;
    }
    links(st, o)
}

/// The client's links: usage in the current period by direction, the data cap and whether
/// it is reached.
fn links(st: &Status, o: &mut Families<'_>) -> fmt::Result {
    if st.links.is_empty() {
        return Ok(());
    }
    let link = |name: &str| vec![("link", name.to_string())];
    o.gauge(
        "braid_link_bytes",
        "Bytes a link carried in its current period (IP packets; starts afresh when the cap's period does).",
        st.links.iter().flat_map(|l| {
            [("sent", l.usage.sent_bytes), ("received", l.usage.received_bytes)].map(|(d, n)| {
                let mut labels = link(&l.name);
                labels.push(("direction", d.to_string()));
                (labels, n)
            })
        }),
    )?;
    let capped = || st.links.iter().filter_map(|l| l.cap.as_ref().map(|c| (l, c)));
    o.gauge(
        "braid_link_cap_bytes",
        "A link's data cap per period.",
        capped().map(|(l, c)| {
            let mut labels = link(&l.name);
            labels.push(("period", c.period.to_string()));
            (labels, c.bytes)
        }),
    )?;
    o.gauge(
        "braid_link_cap_reached",
        "1 while a link's cap is reached and its action is in force.",
        capped().map(|(l, c)| (link(&l.name), u64::from(c.reached))),
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::{PathStatus, SessionStatus};

    #[test]
    fn prometheus_text_has_every_path_metric_with_its_labels() {
        let path = PathStatus {
            id: 1,
            link: Some("wg0".into()),
            state: "active".into(),
            rtt_ms: 20.0,
            mtu: 1372,
            packets_lost: 7,
            ..PathStatus::default()
        };
        let st = Status {
            role: "client".into(),
            sessions: vec![SessionStatus {
                id: "00000000000000a5".into(),
                peer: "vpn.example.net:7000".into(),
                scheduler: "minrtt".into(),
                cipher: "aes-256-gcm".into(),
                paths: vec![path],
                key_phase: 3,
                acks_offloaded: 41,
                acks_dropped: 2,
                shared_bottleneck: true,
                ..SessionStatus::default()
            }],
            endpoint_replies: [("reset".to_string(), 2)].into(),
            ..Status::default()
        };
        let text = prometheus(&st);
        let labels = "{peer=\"vpn.example.net:7000\",link=\"wg0\"}";
        assert!(text.contains(&format!("braid_path_mtu_bytes{labels} 1372")), "{text}");
        assert!(text.contains(&format!("braid_path_rtt_seconds{labels} 0.02")), "{text}");
        assert!(text.contains(&format!("braid_path_lost_packets_total{labels} 7")), "{text}");
        assert!(text.contains("# TYPE braid_path_mtu_bytes gauge"));
        assert!(text.contains("braid_sessions 1"));
        assert!(text.contains("braid_key_phase{peer=\"vpn.example.net:7000\"} 3"), "{text}");
        assert!(text.contains("braid_shared_bottleneck{peer=\"vpn.example.net:7000\"} 1"), "{text}");
        assert!(text.contains("braid_endpoint_replies_total{kind=\"reset\"} 2"), "{text}");
        assert!(text.contains("braid_offloaded_acks_total{peer=\"vpn.example.net:7000\"} 41"), "{text}");
        assert!(text.contains("braid_dropped_acks_total{peer=\"vpn.example.net:7000\"} 2"), "{text}");
        assert!(text.contains("# TYPE braid_offloaded_acks counter"), "{text}");
        assert!(!text.contains("braid_frontend"), "a server has no front ends");
        let front = crate::frontend::FrontendStatus { connections: 2, refused: 3, ..Default::default() };
        let text = prometheus(&Status { frontend: Some(front), ..st });
        assert!(text.contains("braid_frontend_connections 2"), "{text}");
        assert!(text.contains("braid_frontend_refused_total{reason=\"cap\"} 3"), "{text}");
    }

    /// Series keep their identity across a reconnect (new session id, new path ids) and a
    /// path's state change: only `braid_session_info` and the state set's values change.
    #[test]
    fn series_outlive_reconnects_and_state_changes() {
        let doc = |id: &str, path: u8, state: &str| Status {
            role: "client".into(),
            sessions: vec![SessionStatus {
                id: id.into(),
                peer: "127.0.0.1:7000".into(),
                paths: vec![PathStatus {
                    id: path,
                    link: Some("lte0".into()),
                    state: state.into(),
                    ..PathStatus::default()
                }],
                ..SessionStatus::default()
            }],
            ..Status::default()
        };
        let series = |text: &str| -> Vec<String> {
            text.lines()
                .filter(|l| !l.starts_with('#') && !l.starts_with("braid_session_info"))
                .map(|l| l.rsplit_once(' ').map_or(l, |(k, _)| k).to_string())
                .collect()
        };
        let before = prometheus(&doc("1111111111111111", 0, "active"));
        let after = prometheus(&doc("2222222222222222", 2, "suspect"));
        assert_eq!(series(&before), series(&after));
        assert!(
            !before.contains("state=\"active\"} 0")
                && before
                    .contains("braid_path_state{peer=\"127.0.0.1:7000\",link=\"lte0\",state=\"active\"} 1"),
            "{before}"
        );
        assert!(
            after.contains("link=\"lte0\",state=\"suspect\"} 1") && after.contains("state=\"active\"} 0"),
            "{after}"
        );
        assert!(
            after.contains("braid_session_info{peer=\"127.0.0.1:7000\",session=\"2222222222222222\""),
            "{after}"
        );
        assert!(!after.contains("1111111111111111"));
        for line in before.lines().filter(|l| l.starts_with("braid_path_")) {
            assert!(!line.contains("session=") && !line.contains("path="), "{line}");
        }
    }

    /// Label values are escaped by the exposition (a client's name is the operator's text);
    /// counters carry no `state` label, so a state change never splits their series.
    #[test]
    fn label_values_are_escaped_and_counters_have_no_state_label() {
        let st = Status {
            role: "server".into(),
            sessions: vec![SessionStatus {
                peer: "a\"b\\c\nd".into(),
                paths: vec![PathStatus {
                    link: Some("wg0".into()),
                    state: "active".into(),
                    ..PathStatus::default()
                }],
                ..SessionStatus::default()
            }],
            ..Status::default()
        };
        let text = prometheus(&st);
        assert!(text.contains("braid_streams{peer=\"a\\\"b\\\\c\\nd\"} 0"), "{text}");
        assert_eq!(text.lines().filter(|l| l.starts_with("braid_streams")).count(), 1, "{text}");
        assert!(text.ends_with("# EOF\n"), "{text}");
        let counters: Vec<&str> =
            text.lines().filter(|l| l.starts_with("# TYPE") && l.ends_with(" counter")).collect();
        assert!(counters.len() >= 5, "{counters:?}");
        for line in text.lines().filter(|l| l.contains("_total")) {
            assert!(!line.contains("state="), "{line}");
        }
    }
}
