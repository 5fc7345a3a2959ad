//! A small lab of network namespaces for the TUN tests: a client namespace joined to a server
//! namespace by one or more veth links, a braid server, and services on a *target* address of
//! the server namespace that the client namespace can reach only through braid's TUN (it has
//! no route there of its own): an HTTP source, a UDP echo and a DNS server. An optional LAN
//! namespace sits behind the client (gateway mode).
//!
//! Everything is removed when the [`Lab`] drops — namespaces, the client namespace's
//! `/etc/netns` folder, processes, files — also when a test fails. Service threads poll a stop
//! flag, so every loop is bounded.

#![allow(dead_code)]

pub use crate::nslab::{in_netns, must, sh};
use sha2::{Digest, Sha256};
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub const BRAID: &str = env!("CARGO_BIN_EXE_braid");
/// The server's braid address (on its loopback, routed over every link).
pub const SERVICE: &str = "10.77.99.1";
/// The target host: reached only through the TUN.
pub const TARGET4: &str = "10.77.98.1";
pub const TARGET6: &str = "fd77:98::1";
/// The name the lab's DNS server answers with the target's addresses.
pub const NAME: &str = "web.braid.test";
pub const HTTP_PORT: u16 = 8080;
pub const ECHO_PORT: u16 = 9000;
/// The LAN behind the client (gateway mode).
pub const LAN_HOST: &str = "192.168.77.2";
pub const LAN_GW: &str = "192.168.77.1";

/// What a command printed (stdout), or panics.
pub fn out(args: &[&str]) -> String {
    let o = Command::new(args[0]).args(&args[1..]).output().unwrap_or_else(|e| panic!("{}: {e}", args[0]));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Whether the test can run: root and every tool present. Without them it is skipped with a
/// message — unless `BRAID_ROOT_TESTS=1`, where a skip is a failure.
pub fn can_run(tools: &[&str]) -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let missing: Vec<&str> =
        tools.iter().copied().filter(|t| !sh(&["sh", "-c", &format!("command -v {t}")])).collect();
    let tun = std::path::Path::new("/dev/net/tun").exists();
    if root && missing.is_empty() && tun {
        return true;
    }
    let why = format!("needs root (have: {root}), /dev/net/tun (have: {tun}) and the tools {missing:?}");
    assert!(std::env::var("BRAID_ROOT_TESTS").as_deref() != Ok("1"), "BRAID_ROOT_TESTS=1 but {why}");
    assert!(std::env::var("CI").as_deref() != Ok("true"), "CI=true but {why}");
    eprintln!("skipped: {why}");
    false
}

pub fn wait_for(what: &str, timeout: Duration, mut f: impl FnMut() -> bool) {
    let end = Instant::now() + timeout;
    while Instant::now() < end {
        if f() {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("timed out waiting for {what}");
}

pub fn sha256(b: &[u8]) -> String {
    hex(&Sha256::digest(b))
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The blob the HTTP source serves: `len` bytes that do not repeat with any short period.
pub fn blob(len: usize) -> Arc<Vec<u8>> {
    let mut out = Vec::with_capacity(len + 32);
    let mut block = Sha256::digest(b"braid tun test").to_vec();
    while out.len() < len {
        block = Sha256::digest(&block).to_vec();
        out.extend_from_slice(&block);
    }
    out.truncate(len);
    Arc::new(out)
}

/// Namespaces, processes and files of one test; removed on drop.
pub struct Lab {
    pub client: String,
    pub server: String,
    pub lan: Option<String>,
    pub dir: PathBuf,
    pub server_pub: String,
    pub client_key: PathBuf,
    pub procs: Vec<Child>,
    pub links: u8,
    stop: Arc<AtomicBool>,
}

impl Drop for Lab {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        for p in &mut self.procs {
            let _ = p.kill();
            let _ = p.wait();
        }
        for ns in [Some(&self.client), Some(&self.server), self.lan.as_ref()].into_iter().flatten() {
            sh(&["ip", "netns", "del", ns]);
        }
        let _ = std::fs::remove_dir_all(format!("/etc/netns/{}", self.client));
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Lab {
    /// `links` veth links; `rate_mbit`: a tbf on the server's end of each (the download
    /// direction), so that a transfer lasts long enough to cut a link during it.
    pub fn new(tag: &str, links: u8, rate_mbit: Option<u32>) -> Lab {
        Lab::with_egress(tag, links, rate_mbit, true)
    }

    /// As [`Lab::new`]; `allow_private: false` leaves the server's default egress policy, which
    /// denies the lab's (private) target addresses.
    pub fn with_egress(tag: &str, links: u8, rate_mbit: Option<u32>, allow_private: bool) -> Lab {
        let id = std::process::id();
        let dir = std::env::temp_dir().join(format!("braid-{tag}-{id}"));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let mut lab = Lab {
            client: format!("bt{tag}{id}c"),
            server: format!("bt{tag}{id}s"),
            lan: None,
            dir,
            server_pub: String::new(),
            client_key: PathBuf::new(),
            procs: Vec::new(),
            links,
            stop: Arc::new(AtomicBool::new(false)),
        };
        let (c, s) = (lab.client.clone(), lab.server.clone());
        must(&["ip", "netns", "add", &c]);
        must(&["ip", "netns", "add", &s]);
        for ns in [&c, &s] {
            must(&["ip", "-n", ns, "link", "set", "lo", "up"]);
        }
        must(&["ip", "-n", &s, "addr", "add", &format!("{SERVICE}/32"), "dev", "lo"]);
        must(&["ip", "-n", &s, "addr", "add", &format!("{TARGET4}/32"), "dev", "lo"]);
        must(&["ip", "-n", &s, "addr", "add", &format!("{TARGET6}/128"), "dev", "lo", "nodad"]);
        // Ping through braid: the server's ICMP datagram sockets need its group in this range.
        must(&["ip", "netns", "exec", &s, "sysctl", "-qw", "net.ipv4.ping_group_range=0 2147483647"]);
        for i in 1..=links {
            lab.add_link(i, rate_mbit);
        }
        // The client namespace's own resolv.conf (`ip netns exec` mounts it over /etc's).
        std::fs::create_dir_all(format!("/etc/netns/{c}")).unwrap();
        std::fs::write(lab.resolv_conf(), "nameserver 192.0.2.53\noptions timeout:2\n").unwrap();
        let key = |name: &str| {
            let out = Command::new(BRAID).arg("genkey").output().unwrap();
            let p = lab.dir.join(name);
            std::fs::write(&p, &out.stdout).unwrap();
            let mut child = Command::new(BRAID)
                .arg("pubkey")
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()
                .unwrap();
            child.stdin.take().unwrap().write_all(&out.stdout).unwrap();
            (p, String::from_utf8(child.wait_with_output().unwrap().stdout).unwrap().trim().to_string())
        };
        let (skey, spub) = key("s.key");
        let (ckey, cpub) = key("c.key");
        lab.server_pub = spub;
        lab.client_key = ckey;
        let server = Command::new("ip")
            .args([
                "netns",
                "exec",
                &s,
                BRAID,
                "--log",
                "warn",
                "server",
                "--listen",
                &format!("{SERVICE}:7591"),
                "--key",
            ])
            .arg(&skey)
            .args(["--client", &cpub])
            .args(allow_private.then_some("--allow-private"))
            .env("XDG_RUNTIME_DIR", &lab.dir)
            .spawn()
            .unwrap();
        lab.procs.push(server);
        lab
    }

    fn add_link(&mut self, i: u8, rate_mbit: Option<u32>) {
        let (c, s) = (&self.client, &self.server);
        let (cd, sd) = (format!("tc{i}"), format!("ts{i}"));
        must(&["ip", "link", "add", &cd, "netns", c, "type", "veth", "peer", "name", &sd, "netns", s]);
        must(&["ip", "-n", c, "addr", "add", &format!("10.77.{i}.1/24"), "dev", &cd]);
        must(&["ip", "-n", s, "addr", "add", &format!("10.77.{i}.2/24"), "dev", &sd]);
        must(&["ip", "-n", c, "link", "set", &cd, "up"]);
        must(&["ip", "-n", s, "link", "set", &sd, "up"]);
        if let Some(r) = rate_mbit {
            let rate = format!("{r}mbit");
            must(&[
                "tc", "-n", s, "qdisc", "add", "dev", &sd, "root", "tbf", "rate", &rate, "burst", "64kb",
                "latency", "100ms",
            ]);
        }
        let via = format!("10.77.{i}.2");
        must(&[
            "ip",
            "-n",
            c,
            "route",
            "add",
            &format!("{SERVICE}/32"),
            "via",
            &via,
            "dev",
            &cd,
            "metric",
            &i.to_string(),
        ]);
    }

    /// The client namespace's resolv.conf as its processes see it.
    pub fn resolv_conf(&self) -> PathBuf {
        PathBuf::from(format!("/etc/netns/{}/resolv.conf", self.client))
    }

    pub fn state_file(&self) -> PathBuf {
        self.dir.join("tun-state.json")
    }

    /// `braid client --tun` in the client namespace, with `extra` arguments.
    pub fn client_cmd(&self, extra: &[&str]) -> Command {
        let mut links = Vec::new();
        for i in 1..=self.links {
            links.push("--link".to_string());
            links.push(format!("tc{i}"));
        }
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &self.client, BRAID, "--log", "warn", "client", "--server"])
            .arg(format!("{SERVICE}:7591"))
            .args(["--server-key", &self.server_pub, "--key"])
            .arg(&self.client_key)
            .args(&links)
            .args(["--tun", "--tun-dns", TARGET4, "--status", "127.0.0.1:7590"])
            .arg(format!("--set=tun.state_file={}", self.state_file().display()))
            .arg(format!("--set=tun.resolv_conf={}", self.resolv_conf().display()))
            .args(extra)
            .env("XDG_RUNTIME_DIR", &self.dir);
        cmd
    }

    /// Starts the TUN client and waits until its session has a path and the TUN device is
    /// up; returns its index in `procs`.
    pub fn start_client_connected(&mut self, extra: &[&str]) -> usize {
        let child = self.client_cmd(extra).spawn().unwrap();
        self.procs.push(child);
        wait_for("the session and the TUN", Duration::from_secs(15), || {
            let paths = self.status()["sessions"][0]["paths"].as_array().map_or(0, |p| p.len());
            paths > 0 && sh(&["ip", "-n", &self.client, "link", "show", "braid0"])
        });
        self.procs.len() - 1
    }

    /// Starts the TUN client and waits until the TUN carries a TCP connection to the target;
    /// returns its index in `procs`.
    pub fn start_client(&mut self, extra: &[&str]) -> usize {
        let child = self.client_cmd(extra).spawn().unwrap();
        self.procs.push(child);
        let ns = self.client.clone();
        wait_for("a TCP connection through the TUN", Duration::from_secs(15), || {
            in_netns(&ns, || {
                TcpStream::connect_timeout(
                    &SocketAddr::new(TARGET4.parse().unwrap(), HTTP_PORT),
                    Duration::from_secs(1),
                )
                .is_ok()
            })
            .join()
            .unwrap()
        });
        self.procs.len() - 1
    }

    /// Sends `sig` to process `i` and waits (at most 10 s) for it to end.
    pub fn signal(&mut self, i: usize, sig: i32) -> std::process::ExitStatus {
        let p = &mut self.procs[i];
        // SAFETY: kill on the pid of a child this test started and has not reaped.
        unsafe { libc::kill(p.id() as i32, sig) };
        let end = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(s) = p.try_wait().unwrap() {
                return s;
            }
            assert!(Instant::now() < end, "the client did not end after signal {sig}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The client's status JSON.
    pub fn status(&self) -> serde_json::Value {
        in_netns(&self.client, || {
            braid_http::get_ok("127.0.0.1:7590".parse().unwrap(), "/status", Duration::from_secs(2))
                .ok()
                .and_then(|b| serde_json::from_str(&b).ok())
                .unwrap_or_default()
        })
        .join()
        .unwrap()
    }

    /// The routing state of the client namespace that TUN mode may change: rules and routes
    /// of both families in every table, the links' names and its resolv.conf. Link-local IPv6
    /// routes (they come and go with duplicate address detection) are left out.
    pub fn host_state(&self) -> String {
        let ns = &self.client;
        let mut s = String::new();
        for args in [
            &["ip", "-n", ns, "-4", "rule"][..],
            &["ip", "-n", ns, "-6", "rule"],
            &["ip", "-n", ns, "-4", "route", "show", "table", "all"],
            &["ip", "-n", ns, "-6", "route", "show", "table", "all"],
        ] {
            for line in out(args).lines().filter(|l| !l.contains("fe80:") && !l.contains("ff00::/8")) {
                s.push_str(line);
                s.push('\n');
            }
        }
        for line in out(&["ip", "-n", ns, "-o", "link", "show"]).lines() {
            let name = line.split(':').nth(1).unwrap_or("").split('@').next().unwrap_or("").trim();
            s.push_str(&format!("link {name}\n"));
        }
        s.push_str(&std::fs::read_to_string(self.resolv_conf()).unwrap_or_default());
        s
    }

    /// The HTTP source on the target's addresses: every request gets `body`.
    pub fn serve_http(&self, body: Arc<Vec<u8>>) {
        let stop = self.stop.clone();
        let ready = in_netns(&self.server, move || {
            let mut ls = Vec::new();
            for a in [format!("{TARGET4}:{HTTP_PORT}"), format!("[{TARGET6}]:{HTTP_PORT}")] {
                let l = TcpListener::bind(a.as_str()).unwrap();
                l.set_nonblocking(true).unwrap();
                ls.push(l);
            }
            std::thread::spawn(move || {
                while !stop.load(Ordering::SeqCst) {
                    let mut idle = true;
                    for l in &ls {
                        if let Ok((c, _)) = l.accept() {
                            idle = false;
                            let body = body.clone();
                            std::thread::spawn(move || http_answer(c, &body));
                        }
                    }
                    if idle {
                        std::thread::sleep(Duration::from_millis(20));
                    }
                }
            });
        });
        ready.join().unwrap();
    }

    /// A UDP echo on the target's addresses.
    pub fn serve_udp_echo(&self) {
        for a in [format!("{TARGET4}:{ECHO_PORT}"), format!("[{TARGET6}]:{ECHO_PORT}")] {
            let stop = self.stop.clone();
            in_netns(&self.server, move || {
                let u = UdpSocket::bind(a.as_str()).unwrap();
                u.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
                std::thread::spawn(move || {
                    let mut buf = vec![0u8; 65536];
                    while !stop.load(Ordering::SeqCst) {
                        if let Ok((n, from)) = u.recv_from(&mut buf) {
                            let _ = u.send_to(&buf[..n], from);
                        }
                    }
                });
            })
            .join()
            .unwrap();
        }
    }

    /// A DNS server on the target's IPv4 address: `web.braid.test` is the target (A and
    /// AAAA), every other name does not exist.
    pub fn serve_dns(&self) {
        let stop = self.stop.clone();
        in_netns(&self.server, move || {
            let u = UdpSocket::bind(format!("{TARGET4}:53")).unwrap();
            u.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
            std::thread::spawn(move || {
                let mut buf = vec![0u8; 1500];
                while !stop.load(Ordering::SeqCst) {
                    if let Ok((n, from)) = u.recv_from(&mut buf) {
                        if let Some(a) = dns_answer(&buf[..n]) {
                            let _ = u.send_to(&a, from);
                        }
                    }
                }
            });
        })
        .join()
        .unwrap();
    }

    /// Puts a LAN namespace behind the client: `LAN_HOST` routes by default via the client.
    pub fn add_lan(&mut self) -> String {
        let lan = format!("{}l", self.client.trim_end_matches('c'));
        must(&["ip", "netns", "add", &lan]);
        self.lan = Some(lan.clone());
        must(&["ip", "-n", &lan, "link", "set", "lo", "up"]);
        must(&[
            "ip",
            "link",
            "add",
            "lanc",
            "netns",
            &self.client,
            "type",
            "veth",
            "peer",
            "name",
            "lanh",
            "netns",
            &lan,
        ]);
        must(&["ip", "-n", &self.client, "addr", "add", &format!("{LAN_GW}/24"), "dev", "lanc"]);
        must(&["ip", "-n", &lan, "addr", "add", &format!("{LAN_HOST}/24"), "dev", "lanh"]);
        must(&["ip", "-n", &self.client, "link", "set", "lanc", "up"]);
        must(&["ip", "-n", &lan, "link", "set", "lanh", "up"]);
        must(&["ip", "-n", &lan, "route", "add", "default", "via", LAN_GW]);
        lan
    }
}

fn http_answer(mut c: TcpStream, body: &[u8]) {
    let _ = c.set_read_timeout(Some(Duration::from_secs(5)));
    let mut req = Vec::new();
    let mut buf = [0u8; 1024];
    while !req.windows(4).any(|w| w == b"\r\n\r\n") {
        match c.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => req.extend_from_slice(&buf[..n]),
        }
        if req.len() > 16 << 10 {
            return;
        }
    }
    let head = format!("HTTP/1.0 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len());
    let _ = c.write_all(head.as_bytes()).and_then(|_| c.write_all(body));
}

/// The answer to a DNS query (RFC 1035 §4.1): one question, answered from `NAME`.
fn dns_answer(q: &[u8]) -> Option<Vec<u8>> {
    if q.len() < 12 {
        return None;
    }
    // The question: labels up to the root, then type and class.
    let mut at = 12;
    let mut name = Vec::new();
    loop {
        let l = usize::from(*q.get(at)?);
        at += 1;
        if l == 0 {
            break;
        }
        name.push(String::from_utf8_lossy(q.get(at..at + l)?).to_ascii_lowercase());
        at += l;
    }
    let qtype = u16::from_be_bytes([*q.get(at)?, *q.get(at + 1)?]);
    let question = q.get(12..at + 4)?;
    let ours = name.join(".") == NAME;
    let rdata: Option<Vec<u8>> = match (ours, qtype) {
        (true, 1) => Some(TARGET4.parse::<std::net::Ipv4Addr>().ok()?.octets().to_vec()),
        (true, 28) => Some(TARGET6.parse::<std::net::Ipv6Addr>().ok()?.octets().to_vec()),
        _ => None,
    };
    let rcode = if ours { 0 } else { 3 };
    let mut a = Vec::new();
    a.extend_from_slice(&q[..2]);
    a.extend_from_slice(&[0x81, 0x80 | rcode]);
    a.extend_from_slice(&[0, 1, 0, u8::from(rdata.is_some()), 0, 0, 0, 0]);
    a.extend_from_slice(question);
    if let Some(r) = rdata {
        a.extend_from_slice(&[0xc0, 0x0c]);
        a.extend_from_slice(&qtype.to_be_bytes());
        a.extend_from_slice(&[0, 1, 0, 0, 0, 60]);
        a.extend_from_slice(&(r.len() as u16).to_be_bytes());
        a.extend_from_slice(&r);
    }
    Some(a)
}

/// Downloads `url` with curl in namespace `ns` into `file`; true when curl succeeded.
pub fn curl(ns: &str, url: &str, file: &std::path::Path) -> Command {
    let mut c = Command::new("ip");
    c.args(["netns", "exec", ns, "curl", "-sS", "-g", "--max-time", "30", "-o"]).arg(file).arg(url);
    c
}

/// Echoes `count` datagrams of varied sizes off `to` from namespace `ns`; each must come back
/// whole, in order.
pub fn udp_echo(ns: &str, to: SocketAddr, count: usize) -> Result<(), String> {
    in_netns(ns, move || {
        let bind = if to.is_ipv4() { "0.0.0.0:0" } else { "[::]:0" };
        let u = UdpSocket::bind(bind).map_err(|e| e.to_string())?;
        u.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        let mut buf = vec![0u8; 2048];
        for i in 0..count {
            let len = 1 + (i * 97) % 1300;
            let msg: Vec<u8> = (0..len).map(|j| (i * 7 + j) as u8).collect();
            u.send_to(&msg, to).map_err(|e| format!("send {i}: {e}"))?;
            match u.recv_from(&mut buf) {
                Ok((n, from)) if from == to && buf[..n] == msg[..] => {}
                Ok((n, from)) => return Err(format!("datagram {i}: {n} bytes from {from}, not the echo")),
                Err(e) if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::TimedOut => {
                    return Err(format!("datagram {i}: no echo within 2 s"))
                }
                Err(e) => return Err(format!("datagram {i}: {e}")),
            }
        }
        Ok(())
    })
    .join()
    .unwrap()
}

/// A QUIC server (quinn) on `addr` in the server namespace: every bidirectional stream a
/// client opens gets `body`, then the stream's end. Returns its self-signed certificate (for
/// the name `NAME`).
pub fn serve_quic(lab: &Lab, addr: SocketAddr, body: Arc<Vec<u8>>) -> Vec<u8> {
    let stop = lab.stop.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    in_netns(&lab.server, move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async move {
            let ck = rcgen::generate_simple_self_signed(vec![NAME.to_string()]).unwrap();
            let cert = ck.cert.der().clone();
            let key = quinn::rustls::pki_types::PrivateKeyDer::Pkcs8(ck.signing_key.serialize_der().into());
            let cfg = quinn::ServerConfig::with_single_cert(vec![cert.clone()], key).unwrap();
            let ep = quinn::Endpoint::server(cfg, addr).unwrap();
            tx.send(cert.to_vec()).unwrap();
            while !stop.load(Ordering::SeqCst) {
                let Ok(Some(inc)) = tokio::time::timeout(Duration::from_millis(200), ep.accept()).await
                else {
                    continue;
                };
                let body = body.clone();
                tokio::spawn(async move {
                    let Ok(conn) = inc.await else { return };
                    while let Ok((mut send, mut recv)) = conn.accept_bi().await {
                        let _ = recv.read_to_end(64).await;
                        let _ = send.write_all(&body).await;
                        let _ = send.finish();
                        let _ = send.stopped().await;
                    }
                });
            }
        });
    });
    rx.recv_timeout(Duration::from_secs(10)).expect("the QUIC server started")
}

/// Downloads one stream's worth from the QUIC server at `addr` (certificate `cert`) from
/// namespace `ns`, within 30 s.
pub fn quic_download(ns: &str, addr: SocketAddr, cert: Vec<u8>) -> Result<Vec<u8>, String> {
    in_netns(ns, move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async move {
            let mut roots = quinn::rustls::RootCertStore::empty();
            roots.add(cert.into()).map_err(|e| e.to_string())?;
            let cfg =
                quinn::ClientConfig::with_root_certificates(Arc::new(roots)).map_err(|e| e.to_string())?;
            let bind: SocketAddr = if addr.is_ipv4() { "0.0.0.0:0" } else { "[::]:0" }.parse().unwrap();
            let mut ep = quinn::Endpoint::client(bind).map_err(|e| e.to_string())?;
            ep.set_default_client_config(cfg);
            let fetch = async {
                let conn =
                    ep.connect(addr, NAME).map_err(|e| e.to_string())?.await.map_err(|e| e.to_string())?;
                let (mut send, mut recv) = conn.open_bi().await.map_err(|e| e.to_string())?;
                send.write_all(b"GET").await.map_err(|e| e.to_string())?;
                send.finish().map_err(|e| e.to_string())?;
                let got = recv.read_to_end(1 << 30).await.map_err(|e| e.to_string())?;
                conn.close(0u32.into(), b"done");
                Ok::<_, String>(got)
            };
            let got = tokio::time::timeout(Duration::from_secs(30), fetch)
                .await
                .map_err(|_| "QUIC download timed out".to_string())?;
            ep.wait_idle().await;
            got
        })
    })
    .join()
    .unwrap()
}
