//! Working inside a named network namespace without spawning a process: a short-lived thread
//! joins the namespace (`setns(2)` affects only the calling thread) and opens sockets or
//! `/proc/thread-self/net/*` files there. Sockets and those files stay bound to the namespace
//! they were opened in, so the caller can keep using them from any thread.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};

/// Runs `f` on a fresh thread that has joined network namespace `ns` (a name under
/// /run/netns).
pub fn in_netns<T: Send>(ns: &str, f: impl FnOnce() -> T + Send) -> Result<T> {
    let path = Path::new("/run/netns").join(ns);
    let file = File::open(&path).with_context(|| format!("namespace {ns} not found"))?;
    std::thread::scope(|s| {
        s.spawn(|| -> Result<T> {
            // Changes this thread's network namespace only.
            nix::sched::setns(&file, nix::sched::CloneFlags::CLONE_NEWNET)
                .map_err(|e| anyhow!("setns({ns}): {e}"))?;
            Ok(f())
        })
        .join()
        .map_err(|_| anyhow!("thread inside namespace {ns} panicked"))?
    })
}

/// A `/proc/net/<name>` file of a namespace, re-readable from any thread.
pub struct NetFile {
    file: File,
}

impl NetFile {
    /// Opens `/proc/net/<name>` (e.g. `dev`, `snmp`, `netstat`, `tcp`) of namespace `ns`.
    pub fn open(ns: &str, name: &str) -> Result<NetFile> {
        let path = format!("/proc/thread-self/net/{name}");
        let file = in_netns(ns, || File::open(&path))?.with_context(|| format!("opening {path} in {ns}"))?;
        Ok(NetFile { file })
    }

    /// The file's current contents.
    pub fn read(&mut self) -> Result<String> {
        self.file.seek(SeekFrom::Start(0))?;
        let mut s = String::new();
        self.file.read_to_string(&mut s)?;
        Ok(s)
    }
}

/// Reads `/proc/net/<name>` of namespace `ns` once.
pub fn read_net_file(ns: &str, name: &str) -> Result<String> {
    NetFile::open(ns, name)?.read()
}

/// Connects a TCP socket from inside `ns`, with a time limit.
pub fn tcp_connect(ns: &str, addr: SocketAddr, limit: Duration) -> Result<TcpStream> {
    in_netns(ns, || TcpStream::connect_timeout(&addr, limit))?
        .with_context(|| format!("connecting to {addr} from {ns}"))
}

/// `GET path` from inside `ns` ([`braid_http`] over a socket opened in the namespace, so the
/// exchange itself may run on any thread); returns the body of a 200 reply.
pub fn http_get(ns: &str, addr: SocketAddr, path: &str, limit: Duration) -> Result<String> {
    let s = tcp_connect(ns, addr, limit)?;
    match braid_http::exchange(s, addr, braid_http::Request::get(path), limit)? {
        braid_http::Response { status: 200, body } => Ok(body),
        r => bail!("GET {addr}{path} from {ns}: HTTP {}", r.status),
    }
}

/// Whether something listens on TCP `port` (any address) in the given `/proc/net/tcp` and
/// `/proc/net/tcp6` texts.
pub fn tcp_listening(tables: &[&str], port: u16) -> bool {
    socket_in_state(tables, port, "0A")
}

/// Whether a UDP socket is bound to `port` in the given `/proc/net/udp{,6}` texts.
pub fn udp_bound(tables: &[&str], port: u16) -> bool {
    socket_in_state(tables, port, "07")
}

fn socket_in_state(tables: &[&str], port: u16, state: &str) -> bool {
    let want = format!("{port:04X}");
    tables.iter().flat_map(|t| t.lines().skip(1)).any(|line| {
        let mut cols = line.split_whitespace();
        let local = cols.nth(1).unwrap_or_default();
        let st = cols.nth(1).unwrap_or_default();
        st == state && local.rsplit(':').next() == Some(want.as_str())
    })
}

/// Counts established TCP connections whose remote port is `port`.
pub fn tcp_established_to(tables: &[&str], port: u16) -> usize {
    let want = format!("{port:04X}");
    tables
        .iter()
        .flat_map(|t| t.lines().skip(1))
        .filter(|line| {
            let cols: Vec<&str> = line.split_whitespace().collect();
            cols.len() > 3 && cols[3] == "01" && cols[2].rsplit(':').next() == Some(want.as_str())
        })
        .count()
}

/// Sum of (rx_bytes, tx_bytes) over devices whose name satisfies `pick`, from `/proc/net/dev`.
pub fn dev_bytes(text: &str, pick: impl Fn(&str) -> bool) -> (u64, u64) {
    let mut rx = 0;
    let mut tx = 0;
    for line in text.lines().skip(2) {
        let Some((name, rest)) = line.split_once(':') else {
            continue;
        };
        if !pick(name.trim()) {
            continue;
        }
        let cols: Vec<u64> = rest.split_whitespace().map(|c| c.parse().unwrap_or(0)).collect();
        if cols.len() >= 9 {
            rx += cols[0];
            tx += cols[8];
        }
    }
    (rx, tx)
}

/// Reads counter `field` of group `group` (e.g. `Tcp` / `RetransSegs`, `MPTcpExt` /
/// `MPJoinSynAckRx`) from a `/proc/net/snmp` or `/proc/net/netstat` text.
pub fn counter(text: &str, group: &str, field: &str) -> Option<u64> {
    let prefix = format!("{group}:");
    let mut lines = text.lines().filter(|l| l.starts_with(&prefix));
    while let (Some(names), Some(values)) = (lines.next(), lines.next()) {
        let pos = names.split_whitespace().position(|n| n == field);
        if let Some(pos) = pos {
            return values.split_whitespace().nth(pos)?.parse().ok();
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const TCP: &str = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:14B4 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0000000000000000 100 0 0 10 0
   1: 0101000A:9C40 0201000A:16A8 01 00000000:00000000 00:00000000 00000000     0        0 2 1 0000000000000000 100 0 0 10 0
";

    #[test]
    fn proc_net_tcp() {
        assert!(tcp_listening(&[TCP], 5300));
        assert!(!tcp_listening(&[TCP], 5301));
        assert_eq!(tcp_established_to(&[TCP], 5800), 1);
        assert_eq!(tcp_established_to(&[TCP], 5300), 0);
    }

    #[test]
    fn proc_net_dev() {
        let text = "Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo:     100       1    0    0    0     0          0         0      100       1    0    0    0     0       0          0
    c1:    1000      10    0    0    0     0          0         0     2000      20    0    0    0     0       0          0
    c2:      10       1    0    0    0     0          0         0       20       2    0    0    0     0       0          0
";
        assert_eq!(dev_bytes(text, |d| d.starts_with('c')), (1010, 2020));
    }

    #[test]
    fn snmp_counters() {
        let text = "Ip: Forwarding DefaultTTL\nIp: 1 64\nTcp: RtoAlgorithm RetransSegs\nTcp: 1 42\n";
        assert_eq!(counter(text, "Tcp", "RetransSegs"), Some(42));
        assert_eq!(counter(text, "Tcp", "Nope"), None);
        assert_eq!(counter(text, "Udp", "RetransSegs"), None);
    }
}
