//! Prometheus text exposition (format 0.0.4) of the status document: per-path gauges and
//! counters, streams and drops per session, and the client's front-end counters.

use crate::status::{PathStatus, Status};
use std::fmt::Write;

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
    type Metric = (&'static str, &'static str, &'static str, fn(&PathStatus) -> f64);
    let metrics: [Metric; 10] = [
        ("braid_path_rtt_seconds", "gauge", "Smoothed RTT of a path.", |p| p.rtt_ms / 1e3),
        ("braid_path_cwnd_bytes", "gauge", "Congestion window of a path.", |p| p.cwnd as f64),
        ("braid_path_send_bits_per_second", "gauge", "Sending rate of a path.", |p| p.send_bps),
        ("braid_path_receive_bits_per_second", "gauge", "Receiving rate of a path.", |p| p.recv_bps),
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
                let _ = writeln!(
                    o,
                    "{name}{{session=\"{}\",path=\"{}\",link=\"{}\",state=\"{}\"}} {}",
                    s.id,
                    p.id,
                    p.link.as_deref().unwrap_or(&p.remote),
                    p.state,
                    f(p)
                );
            }
        }
    }
    let _ = writeln!(o, "# HELP braid_key_phase Generation of a session's packet keys (key updates so far).\n# TYPE braid_key_phase gauge");
    for s in &st.sessions {
        let _ = writeln!(o, "braid_key_phase{{session=\"{}\"}} {}", s.id, s.key_phase);
    }
    let _ = writeln!(o, "# HELP braid_endpoint_replies_total Answers to unauthenticated packets, by kind.\n# TYPE braid_endpoint_replies_total counter");
    for (k, n) in &st.endpoint_replies {
        let _ = writeln!(o, "braid_endpoint_replies_total{{kind=\"{k}\"}} {n}");
    }
    let _ = writeln!(o, "# HELP braid_handshakes_in_progress Handshakes waiting for their public-key work.\n# TYPE braid_handshakes_in_progress gauge\nbraid_handshakes_in_progress {}", st.handshakes_in_progress);
    let _ = writeln!(o, "# HELP braid_streams Open streams.\n# TYPE braid_streams gauge");
    for s in &st.sessions {
        let _ = writeln!(o, "braid_streams{{session=\"{}\"}} {}", s.id, s.streams);
    }
    let _ = writeln!(o, "# HELP braid_dropped_datagrams_total Received datagrams dropped, by reason.\n# TYPE braid_dropped_datagrams_total counter");
    for (r, n) in &st.endpoint_dropped {
        let _ = writeln!(o, "braid_dropped_datagrams_total{{scope=\"endpoint\",reason=\"{r}\"}} {n}");
    }
    for s in &st.sessions {
        for (r, n) in &s.dropped {
            let _ = writeln!(
                o,
                "braid_dropped_datagrams_total{{scope=\"session\",session=\"{}\",reason=\"{r}\"}} {n}",
                s.id
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
                id: "5".into(),
                paths: vec![path],
                key_phase: 3,
                ..SessionStatus::default()
            }],
            endpoint_replies: [("reset".to_string(), 2)].into(),
            ..Status::default()
        };
        let text = prometheus(&st);
        let labels = "{session=\"5\",path=\"1\",link=\"wg0\",state=\"active\"}";
        assert!(text.contains(&format!("braid_path_mtu_bytes{labels} 1372")), "{text}");
        assert!(text.contains(&format!("braid_path_rtt_seconds{labels} 0.02")), "{text}");
        assert!(text.contains(&format!("braid_path_lost_packets_total{labels} 7")), "{text}");
        assert!(text.contains("# TYPE braid_path_mtu_bytes gauge"));
        assert!(text.contains("braid_sessions 1"));
        assert!(text.contains("braid_key_phase{session=\"5\"} 3"), "{text}");
        assert!(text.contains("braid_endpoint_replies_total{kind=\"reset\"} 2"), "{text}");
        assert!(!text.contains("braid_frontend"), "a server has no front ends");
        let front = crate::frontend::FrontendStatus { connections: 2, refused: 3, ..Default::default() };
        let text = prometheus(&Status { frontend: Some(front), ..st });
        assert!(text.contains("braid_frontend_connections 2"), "{text}");
        assert!(text.contains("braid_frontend_refused_total{reason=\"cap\"} 3"), "{text}");
    }
}
