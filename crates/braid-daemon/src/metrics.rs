//! Prometheus text exposition (format 0.0.4) of the status document: per-path gauges and
//! counters, streams and drops per session, and the client's front-end counters.
//!
//! Labels name what outlives a session, so that a series goes on across reconnects: `peer`
//! is the client's name on a server (one session per client key) and the server's address on
//! a client; `link` is the client's link label (the path's address on a server). The session
//! id, which is new at each reconnect, and the scheduler and cipher are values of
//! `braid_session_info`; a path's state is the state set `braid_path_state` (one series per
//! state, 1 for the current one) rather than a label that would start a new series at each
//! change.

use crate::status::{PathStatus, Status};
use std::fmt::Write;

/// Every state a path can be in, as the status names them.
pub const PATH_STATES: [&str; 7] = ["probing", "active", "secondary", "standby", "backup", "suspect", "down"];

/// `peer="…",link="…"`: what identifies a path's series across reconnects.
fn path_labels(peer: &str, p: &PathStatus) -> String {
    format!("peer=\"{}\",link=\"{}\"", escape(peer), escape(p.link.as_deref().unwrap_or(&p.remote)))
}

/// The client's links: usage in the current period by direction, the data cap and whether
/// it is reached.
fn links(o: &mut String, st: &Status) {
    if st.links.is_empty() {
        return;
    }
    let _ = writeln!(o, "# HELP braid_link_bytes Bytes a link carried in its current period (IP packets; starts afresh when the cap's period does).\n# TYPE braid_link_bytes gauge");
    for l in &st.links {
        let name = escape(&l.name);
        let _ = writeln!(o, "braid_link_bytes{{link=\"{name}\",direction=\"sent\"}} {}", l.usage.sent_bytes);
        let _ = writeln!(
            o,
            "braid_link_bytes{{link=\"{name}\",direction=\"received\"}} {}",
            l.usage.received_bytes
        );
    }
    let _ = writeln!(
        o,
        "# HELP braid_link_cap_bytes A link's data cap per period.\n# TYPE braid_link_cap_bytes gauge"
    );
    for l in &st.links {
        if let Some(c) = &l.cap {
            let _ = writeln!(
                o,
                "braid_link_cap_bytes{{link=\"{}\",period=\"{}\"}} {}",
                escape(&l.name),
                c.period,
                c.bytes
            );
        }
    }
    let _ = writeln!(o, "# HELP braid_link_cap_reached 1 while a link's cap is reached and its action is in force.\n# TYPE braid_link_cap_reached gauge");
    for l in &st.links {
        if let Some(c) = &l.cap {
            let _ =
                writeln!(o, "braid_link_cap_reached{{link=\"{}\"}} {}", escape(&l.name), u8::from(c.reached));
        }
    }
}

/// A label value with `\`, `"` and newlines escaped (the exposition format's rules).
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

/// Prometheus text exposition of the document.
pub fn prometheus(st: &Status) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "# HELP braid_uptime_seconds Seconds since the daemon started.\n# TYPE braid_uptime_seconds gauge"
    );
    let _ = writeln!(o, "braid_uptime_seconds{{role=\"{}\"}} {:.3}", st.role, st.uptime_s);
    let _ = writeln!(
        o,
        "# HELP braid_sessions Sessions.\n# TYPE braid_sessions gauge\nbraid_sessions {}",
        st.sessions.len()
    );
    let _ = writeln!(o, "# HELP braid_session_info A session: its id (new at each reconnect), scheduler and cipher.\n# TYPE braid_session_info gauge");
    for s in &st.sessions {
        let _ = writeln!(
            o,
            "braid_session_info{{peer=\"{}\",session=\"{}\",scheduler=\"{}\",cipher=\"{}\"}} 1",
            escape(&s.peer),
            s.id,
            s.scheduler,
            s.cipher
        );
    }
    let _ = writeln!(o, "# HELP braid_path_state The state of a path (1 for the current state).\n# TYPE braid_path_state gauge");
    for s in &st.sessions {
        for p in &s.paths {
            for state in PATH_STATES {
                let _ = writeln!(
                    o,
                    "braid_path_state{{{},state=\"{state}\"}} {}",
                    path_labels(&s.peer, p),
                    u8::from(p.state == state)
                );
            }
        }
    }
    type Metric = (&'static str, &'static str, &'static str, fn(&PathStatus) -> f64);
    let metrics: [Metric; 11] = [
        ("braid_path_rtt_seconds", "gauge", "Smoothed RTT of a path.", |p| p.rtt_ms / 1e3),
        ("braid_path_cwnd_bytes", "gauge", "Congestion window of a path.", |p| p.cwnd as f64),
        ("braid_path_send_bits_per_second", "gauge", "Sending rate of a path.", |p| p.send_bps),
        ("braid_path_receive_bits_per_second", "gauge", "Receiving rate of a path.", |p| p.recv_bps),
        (
            "braid_path_goodput_bits_per_second",
            "gauge",
            "New stream bytes a path delivered, per second.",
            |p| p.goodput_bps,
        ),
        ("braid_path_loss_ratio", "gauge", "Smoothed loss of a path.", |p| p.loss),
        ("braid_path_sent_bytes_total", "counter", "Bytes sent on a path.", |p| p.bytes_sent as f64),
        ("braid_path_received_bytes_total", "counter", "Bytes received on a path.", |p| {
            p.bytes_received as f64
        }),
        ("braid_path_lost_packets_total", "counter", "Packets lost on a path.", |p| p.packets_lost as f64),
        ("braid_path_blackouts_total", "counter", "Times a path went silent.", |p| p.blackouts as f64),
        ("braid_path_mtu_bytes", "gauge", "Largest UDP payload a path carries now.", |p| p.mtu as f64),
    ];
    for (name, kind, help, f) in metrics {
        let _ = writeln!(o, "# HELP {name} {help}\n# TYPE {name} {kind}");
        for s in &st.sessions {
            for p in &s.paths {
                let _ = writeln!(o, "{name}{{{}}} {}", path_labels(&s.peer, p), f(p));
            }
        }
    }
    let _ = writeln!(o, "# HELP braid_key_phase Generation of a session's packet keys (key updates so far).\n# TYPE braid_key_phase gauge");
    for s in &st.sessions {
        let _ = writeln!(o, "braid_key_phase{{peer=\"{}\"}} {}", escape(&s.peer), s.key_phase);
    }
    let _ = writeln!(o, "# HELP braid_endpoint_replies_total Answers to unauthenticated packets, by kind.\n# TYPE braid_endpoint_replies_total counter");
    for (k, n) in &st.endpoint_replies {
        let _ = writeln!(o, "braid_endpoint_replies_total{{kind=\"{k}\"}} {n}");
    }
    let _ = writeln!(o, "# HELP braid_handshakes_in_progress Handshakes waiting for their public-key work.\n# TYPE braid_handshakes_in_progress gauge\nbraid_handshakes_in_progress {}", st.handshakes_in_progress);
    let _ = writeln!(o, "# HELP braid_streams Open streams.\n# TYPE braid_streams gauge");
    for s in &st.sessions {
        let _ = writeln!(o, "braid_streams{{peer=\"{}\"}} {}", escape(&s.peer), s.streams);
    }
    let _ = writeln!(o, "# HELP braid_dropped_datagrams_total Received datagrams dropped, by reason.\n# TYPE braid_dropped_datagrams_total counter");
    for (r, n) in &st.endpoint_dropped {
        let _ = writeln!(o, "braid_dropped_datagrams_total{{scope=\"endpoint\",reason=\"{r}\"}} {n}");
    }
    for s in &st.sessions {
        for (r, n) in &s.dropped {
            let _ = writeln!(
                o,
                "braid_dropped_datagrams_total{{scope=\"session\",peer=\"{}\",reason=\"{r}\"}} {n}",
                escape(&s.peer)
            );
        }
    }
    if let Some(f) = &st.frontend {
        let gauges = [
            (
                "braid_frontend_connections",
                "Front-end connections open (SOCKS5 and forwards).",
                f.connections as u64,
            ),
            ("braid_frontend_max_connections", "The cap on front-end connections.", f.max_connections as u64),
            ("braid_frontend_udp_associations", "UDP associations open.", f.udp_associations as u64),
        ];
        for (name, help, v) in gauges {
            let _ = writeln!(o, "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {v}");
        }
        let _ = writeln!(o, "# HELP braid_frontend_refused_total Front-end connections and UDP associations refused, by reason.\n# TYPE braid_frontend_refused_total counter");
        for (reason, n) in [
            ("cap", f.refused),
            ("evicted_while_greeting", f.evicted),
            ("greeting_timeout", f.greeting_timeouts),
            ("udp_association_refused", f.udp_refused),
        ] {
            let _ = writeln!(o, "braid_frontend_refused_total{{reason=\"{reason}\"}} {n}");
        }
        let _ = writeln!(o, "# HELP braid_frontend_accept_errors_total Failed accepts.\n# TYPE braid_frontend_accept_errors_total counter\nbraid_frontend_accept_errors_total {}", f.accept_errors);
    }
    links(&mut o, st);
    o
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
        assert!(text.contains("braid_endpoint_replies_total{kind=\"reset\"} 2"), "{text}");
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
        assert_eq!(escape("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }
}
