//! Kernel settings of the lab's namespaces (client, server and a piconet's neighbours).
//!
//! The links are shaped by an `htb` + `bfifo` on each end's own device (see `shape`), so a
//! full queue drops a sender's packet *locally*: the packet never leaves the host and the
//! socket sees `NET_XMIT_DROP`. Linux then retries a flow with nothing in flight by its probe
//! timer every 500 ms (`TCP_RESOURCE_PROBE_INTERVAL`) and aborts it with `ETIMEDOUT` after
//! `tcp_retries2` (15) probes in a row (`tcp_probe_timer`): 8 s. Eight CUBIC flows over the
//! 2 Mbit/s link of `lab/three.toml` keep its 25 kB queue full, one flow whose first window was
//! dropped never gets a packet in, and iperf3 dies with "unable to write to stream socket:
//! Connection timed out" 8.1 s into a 10 s run. Behind a real bottleneck (a router) the same
//! drops are network losses: RTO back-off, no abort for ~15 min. Raising `tcp_retries2` lets a
//! locally dropped flow wait as long as a lab transfer lasts; it changes no rate or queue.

/// `tcp_retries2` in the lab's namespaces: 120 local-drop probes = 60 s before an abort (the
/// probe counter is a `u8`, so the value must stay below 256).
pub const TCP_RETRIES2: u32 = 120;

// 500 ms per probe (`TCP_RESOURCE_PROBE_INTERVAL`): at least a minute, and within the counter.
const _: () = assert!(TCP_RETRIES2 * 500 >= 60_000 && TCP_RETRIES2 < 256);

/// `sysctl -w` arguments applied to both namespaces.
pub fn namespace_settings() -> Vec<String> {
    vec![
        "net.mptcp.enabled=1".into(),
        "net.ipv4.conf.all.rp_filter=0".into(),
        "net.ipv4.conf.default.rp_filter=0".into(),
        format!("net.ipv4.tcp_retries2={TCP_RETRIES2}"),
    ]
}
