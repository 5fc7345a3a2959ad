//! Reading an iperf3 client's `-J --get-server-output` document from the receiver's side:
//! for an upload the receiver is the server (`server_output_json`), for `-R` it is the client.
//! Goodput and the time series are both computed from the receiver's intervals, so bytes
//! still sitting in a send buffer never count.

use anyhow::{anyhow, bail, Result};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Goodput over one reporting interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// Interval start, seconds since the test started.
    pub start: f64,
    /// Interval end.
    pub end: f64,
    /// Received bits per second over the interval.
    pub bps: f64,
}

/// UDP receiver statistics.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct UdpStats {
    /// Datagrams lost, percent.
    pub lost_percent: f64,
    /// RFC 3550 jitter, milliseconds.
    pub jitter_ms: f64,
    /// Datagrams sent.
    pub packets: u64,
}

/// What one iperf3 run measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Measurement {
    /// Received bytes over the test time, in bits per second.
    pub goodput_bps: f64,
    /// Per-interval goodput at the receiver.
    pub series: Vec<Sample>,
    /// UDP loss and jitter (UDP runs only).
    pub udp: Option<UdpStats>,
    /// The sender's retransmit count as iperf3 reports it (TCP_INFO of its own socket).
    pub iperf_retransmits: Option<u64>,
    /// True when the server's intervals were missing and the sender's were used instead.
    pub series_from_sender: bool,
}

/// Parses the client's JSON document. `reverse` is whether the run used `-R`.
pub fn parse_result(text: &str, reverse: bool) -> Result<Measurement> {
    let root: Value = serde_json::from_str(text.trim())
        .map_err(|e| anyhow!("iperf3 output is not JSON ({e}): {}", snippet(text)))?;
    if let Some(err) = root.get("error").and_then(Value::as_str) {
        bail!("iperf3: {err}");
    }
    let server = root.get("server_output_json");
    let (receiver, from_sender) = match (reverse, server) {
        (true, _) => (&root, false),
        (false, Some(s)) if s.get("intervals").is_some() => (s, false),
        (false, _) => (&root, true),
    };
    let series = samples(receiver);
    let goodput_bps = goodput(&series)
        .or_else(|| end_bps(&root))
        .ok_or_else(|| anyhow!("iperf3 output has neither intervals nor an end summary"))?;
    let end = root.get("end");
    let udp = end.and_then(|e| e.get("sum")).filter(|s| s.get("lost_percent").is_some()).map(|s| UdpStats {
        lost_percent: s.get("lost_percent").and_then(Value::as_f64).unwrap_or(0.0),
        jitter_ms: s.get("jitter_ms").and_then(Value::as_f64).unwrap_or(0.0),
        packets: s.get("packets").and_then(Value::as_u64).unwrap_or(0),
    });
    let iperf_retransmits =
        end.and_then(|e| e.get("sum_sent")).and_then(|s| s.get("retransmits")).and_then(Value::as_u64);
    Ok(Measurement { goodput_bps, series, udp, iperf_retransmits, series_from_sender: from_sender })
}

fn samples(doc: &Value) -> Vec<Sample> {
    let Some(intervals) = doc.get("intervals").and_then(Value::as_array) else {
        return Vec::new();
    };
    intervals
        .iter()
        .filter_map(|iv| {
            let sum = iv.get("sum")?;
            if sum.get("omitted").and_then(Value::as_bool) == Some(true) {
                return None;
            }
            let start = sum.get("start")?.as_f64()?;
            let end = sum.get("end")?.as_f64()?;
            let bytes = sum.get("bytes")?.as_f64()?;
            let secs = end - start;
            (secs > 0.0).then_some(Sample { start, end, bps: bytes * 8.0 / secs })
        })
        .collect()
}

fn goodput(series: &[Sample]) -> Option<f64> {
    let first = series.first()?;
    let last = series.last()?;
    let span = last.end - first.start;
    if span <= 0.0 {
        return None;
    }
    let bits: f64 = series.iter().map(|s| s.bps * (s.end - s.start)).sum();
    Some(bits / span)
}

fn end_bps(root: &Value) -> Option<f64> {
    let end = root.get("end")?;
    ["sum_received", "sum"].iter().find_map(|k| end.get(*k)?.get("bits_per_second")?.as_f64())
}

fn snippet(text: &str) -> String {
    let t = text.trim();
    let cut: String = t.chars().take(200).collect();
    if cut.len() < t.len() {
        format!("{cut}…")
    } else {
        cut
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn interval(start: f64, end: f64, bytes: u64) -> String {
        format!(
            r#"{{"streams":[],"sum":{{"start":{start},"end":{end},"seconds":{},"bytes":{bytes},"bits_per_second":0,"omitted":false}}}}"#,
            end - start
        )
    }

    fn doc(client: &[String], server: &[String], extra_end: &str) -> String {
        format!(
            r#"{{"start":{{}},"intervals":[{}],"end":{{"sum_sent":{{"bits_per_second":1,"retransmits":7}},"sum_received":{{"bits_per_second":2}}{extra_end}}},
               "server_output_json":{{"intervals":[{}],"end":{{}}}}}}"#,
            client.join(","),
            server.join(",")
        )
    }

    #[test]
    fn upload_uses_server_intervals() {
        let client = [interval(0.0, 0.1, 999_999)];
        let server = [interval(0.0, 0.1, 125_000), interval(0.1, 0.2, 250_000)];
        let m = parse_result(&doc(&client, &server, ""), false).unwrap();
        assert_eq!(m.series.len(), 2);
        assert!((m.series[0].bps - 10e6).abs() < 1.0);
        assert!((m.goodput_bps - 15e6).abs() < 1.0);
        assert_eq!(m.iperf_retransmits, Some(7));
        assert!(!m.series_from_sender);
        assert!(m.udp.is_none());
    }

    #[test]
    fn download_uses_client_intervals() {
        let client = [interval(0.0, 0.1, 125_000)];
        let m = parse_result(&doc(&client, &[], ""), true).unwrap();
        assert!((m.goodput_bps - 10e6).abs() < 1.0);
    }

    #[test]
    fn udp_stats() {
        let client = [interval(0.0, 1.0, 500_000)];
        let extra = r#","sum":{"jitter_ms":0.5,"lost_percent":1.5,"packets":400}"#;
        let m = parse_result(&doc(&client, &client, extra), false).unwrap();
        let u = m.udp.unwrap();
        assert_eq!((u.lost_percent, u.jitter_ms, u.packets), (1.5, 0.5, 400));
    }

    #[test]
    fn errors_are_reported_not_panicked() {
        let e = parse_result(r#"{"error":"unable to connect to server"}"#, false).unwrap_err();
        assert!(e.to_string().contains("unable to connect"));
        assert!(parse_result("iperf3: garbage", false).is_err());
        assert!(parse_result("{}", false).is_err());
        assert!(parse_result(r#"{"intervals":"x","end":5}"#, true).is_err());
    }
}
