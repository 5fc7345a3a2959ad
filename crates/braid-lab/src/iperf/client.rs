//! The iperf3 client command line for one transfer.

use std::time::Duration;

use crate::scenario::Direction;

/// What the client sends.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Traffic {
    /// Bulk TCP with CUBIC set per socket (the kernel default here is BBR).
    Tcp,
    /// Constant-bit-rate UDP.
    Udp {
        /// Bits per second.
        rate_bps: u64,
        /// UDP payload bytes.
        packet_size: u32,
    },
}

/// One iperf3 client run.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientSpec {
    /// Address to connect to.
    pub host: String,
    /// Port to connect to.
    pub port: u16,
    /// Local address to bind (`-B`), which picks the link through policy routing.
    pub bind: Option<String>,
    /// Run under `mptcpize run` (kernel MPTCP).
    pub mptcp: bool,
    /// Transfer length.
    pub duration: Duration,
    /// Data direction (`down` = `-R`).
    pub direction: Direction,
    /// TCP or UDP.
    pub traffic: Traffic,
    /// Parallel streams (`-P`, when over 1).
    pub parallel: u32,
}

/// Arguments after `ip netns exec NS`: `[mptcpize run] iperf3 -c …`.
pub fn client_args(spec: &ClientSpec) -> Vec<String> {
    let mut a: Vec<String> = Vec::new();
    if spec.mptcp {
        a.extend(["mptcpize".into(), "run".into()]);
    }
    let secs = spec.duration.as_secs_f64().ceil().max(1.0) as u64;
    a.extend(
        [
            "iperf3",
            "-c",
            &spec.host,
            "-p",
            &spec.port.to_string(),
            "-t",
            &secs.to_string(),
            "-i",
            &super::INTERVAL_S.to_string(),
            "-J",
            "--get-server-output",
            "--connect-timeout",
            "5000",
        ]
        .map(String::from),
    );
    if let Some(b) = &spec.bind {
        a.extend(["-B".into(), b.clone()]);
    }
    if spec.direction == Direction::Down {
        a.push("-R".into());
    }
    if spec.parallel > 1 {
        a.extend(["-P".into(), spec.parallel.to_string()]);
    }
    match spec.traffic {
        Traffic::Tcp => a.extend(["-C".into(), "cubic".into()]),
        Traffic::Udp { rate_bps, packet_size } => {
            a.extend(["-u".into(), "-b".into(), rate_bps.to_string(), "-l".into(), packet_size.to_string()])
        }
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_link_tcp_down() {
        let a = client_args(&ClientSpec {
            host: "10.0.2.2".into(),
            port: 5202,
            bind: Some("10.0.2.1".into()),
            mptcp: false,
            duration: Duration::from_secs(10),
            direction: Direction::Down,
            traffic: Traffic::Tcp,
            parallel: 1,
        })
        .join(" ");
        assert_eq!(
            a,
            "iperf3 -c 10.0.2.2 -p 5202 -t 10 -i 0.1 -J --get-server-output --connect-timeout 5000 -B 10.0.2.1 -R -C cubic"
        );
    }

    #[test]
    fn eight_parallel_flows() {
        let a = client_args(&ClientSpec {
            host: "10.0.1.2".into(),
            port: 5201,
            bind: None,
            mptcp: false,
            duration: Duration::from_secs(10),
            direction: Direction::Up,
            traffic: Traffic::Tcp,
            parallel: 8,
        })
        .join(" ");
        assert!(a.ends_with("--connect-timeout 5000 -P 8 -C cubic"), "{a}");
    }

    #[test]
    fn mptcp_udp() {
        let a = client_args(&ClientSpec {
            host: "10.0.1.2".into(),
            port: 5201,
            bind: None,
            mptcp: true,
            duration: Duration::from_millis(2500),
            direction: Direction::Up,
            traffic: Traffic::Udp { rate_bps: 4_000_000, packet_size: 1200 },
            parallel: 1,
        });
        assert_eq!(a[..3], ["mptcpize", "run", "iperf3"]);
        assert!(a
            .join(" ")
            .ends_with("-t 3 -i 0.1 -J --get-server-output --connect-timeout 5000 -u -b 4000000 -l 1200"));
    }
}
