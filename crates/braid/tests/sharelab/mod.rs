//! Namespaces for `braid share` tests and experiments (root): a server namespace, a client
//! namespace holding the LAN bridge, and neighbour namespaces, each with its own WAN link to
//! the server. Links are veth pairs, or — with delay — `vde_switch` taps joined by
//! `wirefilter -d` (this kernel has no netem), shaped with htb and a 100 ms bfifo on both ends.
//! Everything created is removed on drop, also when a test fails.

#![allow(dead_code)]

use std::fs::File;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub use crate::nslab::{in_netns, must, paths_of, sh, source};

pub const BRAID: &str = env!("CARGO_BIN_EXE_braid");
/// The server's service address (on its loopback), reached over every WAN link.
pub const SERVICE: &str = "10.78.99.1";

/// Root and the tools, or why not. Under `CI=true` or `BRAID_ROOT_TESTS=1` a test that cannot
/// run fails; elsewhere it prints "skipped".
pub fn can_run(tools: &[&str]) -> Result<(), String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err("needs root".into());
    }
    for t in tools {
        if !sh(&["sh", "-c", &format!("command -v {t}")]) {
            return Err(format!("needs {t}"));
        }
    }
    Ok(())
}

/// Whether the test must run (and so fail when it cannot).
pub fn must_run() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
        || std::env::var("BRAID_ROOT_TESTS").is_ok_and(|v| v == "1")
}

/// Namespaces, processes and files, removed on drop.
pub struct Lab {
    pub id: String,
    namespaces: Vec<String>,
    pub procs: Vec<(String, Child)>,
    pub dir: PathBuf,
}

impl Drop for Lab {
    fn drop(&mut self) {
        for (_, p) in self.procs.iter_mut().rev() {
            let _ = p.kill();
            let _ = p.wait();
        }
        for ns in &self.namespaces {
            sh(&["ip", "netns", "del", ns]);
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A link's shape.
#[derive(Clone, Copy)]
pub struct Shape {
    pub mbit: u32,
    /// One-way delay, ms.
    pub delay_ms: u32,
}

impl Lab {
    pub fn new(tag: &str) -> Lab {
        let id = format!("{tag}{}", std::process::id() % 100_000);
        let dir = std::env::temp_dir().join(format!("braid-{id}"));
        std::fs::create_dir_all(&dir).unwrap();
        Lab { id, namespaces: Vec::new(), procs: Vec::new(), dir }
    }

    pub fn ns(&mut self, role: &str) -> String {
        let name = format!("{}-{role}", self.id);
        must(&["ip", "netns", "add", &name]);
        self.namespaces.push(name.clone());
        must(&["ip", "-n", &name, "link", "set", "lo", "up"]);
        name
    }

    fn spawn_cmd(&mut self, what: &str, mut c: Command) {
        let log = File::create(self.dir.join(format!("{what}.log"))).unwrap();
        let child = c.stdin(Stdio::piped()).stdout(Stdio::null()).stderr(log).spawn().unwrap();
        self.procs.push((what.to_string(), child));
    }

    /// Runs braid with `args` in `ns`, logging to the lab directory.
    pub fn braid(&mut self, what: &str, ns: &str, args: &[&str]) {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", ns, BRAID, "--log", "info"]).args(args);
        self.spawn_cmd(what, c);
    }

    pub fn pid(&self, what: &str) -> u32 {
        self.procs.iter().find(|(w, _)| w == what).map(|(_, p)| p.id()).unwrap()
    }

    pub fn logs(&self) -> String {
        let mut out = String::new();
        for (what, _) in &self.procs {
            let t = std::fs::read_to_string(self.dir.join(format!("{what}.log"))).unwrap_or_default();
            let tail: Vec<&str> = t.lines().rev().take(12).collect();
            out += &format!("--- {what}\n{}\n", tail.into_iter().rev().collect::<Vec<_>>().join("\n"));
        }
        out
    }

    /// A link between `a`/`da` and `b`/`db`, shaped both ways.
    pub fn link(&mut self, a: &str, da: &str, b: &str, db: &str, shape: Shape) {
        if shape.delay_ms == 0 {
            must(&["ip", "link", "add", da, "netns", a, "type", "veth", "peer", "name", db, "netns", b]);
        } else {
            let (sa, sb) = (self.dir.join(format!("vde-{da}")), self.dir.join(format!("vde-{db}")));
            for (ns, dev, sock) in [(a, da, &sa), (b, db, &sb)] {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", ns, "vde_switch", "-s"]).arg(sock).args(["-t", dev]);
                self.spawn_cmd(&format!("vde-{dev}"), c);
                let end = Instant::now() + Duration::from_secs(5);
                while !(sh(&["ip", "-n", ns, "link", "show", dev]) && sock.join("ctl").exists()) {
                    assert!(Instant::now() < end, "vde_switch for {dev} in {ns} did not start");
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
            let mut wf = Command::new("wirefilter");
            wf.arg("-v")
                .arg(format!("{}:{}", sa.display(), sb.display()))
                .args(["-d", &shape.delay_ms.to_string()]);
            self.spawn_cmd(&format!("wirefilter-{da}"), wf);
            std::thread::sleep(Duration::from_millis(100));
        }
        for (ns, dev) in [(a, da), (b, db)] {
            let _ = sh(&[
                "ip", "netns", "exec", ns, "ethtool", "-K", dev, "tso", "off", "gso", "off", "gro", "off",
            ]);
            let rate = format!("{}mbit", shape.mbit);
            let queue = (shape.mbit as u64 * 1_000_000 / 8 / 10).max(30_000).to_string();
            must(&[
                "tc", "-n", ns, "qdisc", "add", "dev", dev, "root", "handle", "1:", "htb", "default", "10",
            ]);
            must(&[
                "tc", "-n", ns, "class", "add", "dev", dev, "parent", "1:", "classid", "1:10", "htb", "rate",
                &rate, "ceil", &rate, "quantum", "1514",
            ]);
            must(&[
                "tc", "-n", ns, "qdisc", "add", "dev", dev, "parent", "1:10", "handle", "10:", "bfifo",
                "limit", &queue,
            ]);
            must(&["ip", "-n", ns, "link", "set", dev, "up"]);
        }
    }

    /// The WAN link `i` of `ns` (10.78.I.1) to the server namespace (10.78.I.2).
    pub fn wan(&mut self, ns: &str, server: &str, i: u8, dev: &str, shape: Shape) {
        let peer = format!("s{dev}");
        self.link(ns, dev, server, &peer, shape);
        must(&["ip", "-n", ns, "addr", "add", &format!("10.78.{i}.1/24"), "dev", dev]);
        must(&["ip", "-n", server, "addr", "add", &format!("10.78.{i}.2/24"), "dev", &peer]);
        must(&[
            "ip",
            "-n",
            ns,
            "route",
            "add",
            &format!("{SERVICE}/32"),
            "via",
            &format!("10.78.{i}.2"),
            "dev",
            dev,
        ]);
    }

    /// The LAN: bridge br0 (192.168.77.1) in `client`; neighbour `i` at 192.168.77.(10+i).
    pub fn lan_port(&mut self, client: &str, ns: &str, i: u8, shape: Option<Shape>) {
        if !sh(&["ip", "-n", client, "link", "show", "br0"]) {
            must(&["ip", "-n", client, "link", "add", "br0", "type", "bridge"]);
            must(&["ip", "-n", client, "addr", "add", "192.168.77.1/24", "dev", "br0"]);
            must(&["ip", "-n", client, "link", "set", "br0", "up"]);
        }
        let (lan, port) = (format!("nl{i}"), format!("bp{i}"));
        match shape {
            Some(s) => self.link(ns, &lan, client, &port, s),
            None => {
                must(&[
                    "ip", "link", "add", &lan, "netns", ns, "type", "veth", "peer", "name", &port, "netns",
                    client,
                ]);
                must(&["ip", "-n", ns, "link", "set", &lan, "up"]);
                must(&["ip", "-n", client, "link", "set", &port, "up"]);
            }
        }
        must(&["ip", "-n", ns, "addr", "add", &format!("192.168.77.{}/24", 10 + i), "dev", &lan]);
        must(&["ip", "-n", client, "link", "set", &port, "master", "br0"]);
    }

    /// A new key pair: (private key file, public key).
    pub fn key(&self, name: &str) -> (PathBuf, String) {
        let out = Command::new(BRAID).arg("genkey").output().unwrap();
        let p = self.dir.join(name);
        std::fs::write(&p, &out.stdout).unwrap();
        let mut child =
            Command::new(BRAID).arg("pubkey").stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
        child.stdin.take().unwrap().write_all(&out.stdout).unwrap();
        (p, String::from_utf8(child.wait_with_output().unwrap().stdout).unwrap().trim().to_string())
    }

    /// `braid share` in neighbour namespace `ns` (number `i`) admitting `member`.
    pub fn share(&mut self, ns: &str, i: u8, member: &str, extra: &str) {
        let (k, _) = self.key(&format!("n{i}.key"));
        let cfg = self.dir.join(format!("n{i}.toml"));
        std::fs::write(
            &cfg,
            format!(
                "key = \"{}\"\nname = \"neighbour{i}\"\nlisten = \"192.168.77.{}:7400\"\nservers = [\"{SERVICE}:7591\"]\n\
                 wan_interface = \"nw{i}\"\nstatus = \"127.0.0.1:7401\"\nusage_file = \"none\"\n{extra}\n[[member]]\nname = \"client\"\nkey = \"{member}\"\n",
                k.display(),
                10 + i
            ),
        )
        .unwrap();
        self.braid(&format!("share{i}"), ns, &["share", "--config", cfg.to_str().unwrap()]);
    }
}

/// GET `path` from 127.0.0.1:`port` in `ns`, as JSON.
pub fn get_json(ns: &str, port: u16, path: &'static str) -> serde_json::Value {
    in_netns(ns, move || {
        braid_http::get_ok(([127, 0, 0, 1], port).into(), path, Duration::from_secs(1))
            .ok()
            .and_then(|b| serde_json::from_str(&b).ok())
            .unwrap_or(serde_json::Value::Null)
    })
    .join()
    .unwrap()
}

/// The client's paths (link label, state); its status is on 127.0.0.1:7590.
pub fn paths(ns: &str) -> Vec<(String, String)> {
    paths_of(&get_json(ns, 7590, "/status"))
}

pub fn wait_for(lab: &Lab, what: &str, timeout: Duration, mut f: impl FnMut() -> bool) {
    let end = Instant::now() + timeout;
    while Instant::now() < end {
        if f() {
            return;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    panic!("timed out waiting for {what}\n{}", lab.logs());
}

/// What a reader saw: bytes by time.
#[derive(Default)]
pub struct Progress {
    pub log: Mutex<Vec<(Instant, usize)>>,
    pub got: AtomicUsize,
}

impl Progress {
    /// Bytes received by `t`.
    pub fn at(&self, t: Instant) -> usize {
        self.log.lock().unwrap().iter().take_while(|(i, _)| *i <= t).last().map_or(0, |(_, n)| *n)
    }

    /// Bytes per second between `a` and `b`.
    pub fn rate(&self, a: Instant, b: Instant) -> f64 {
        (self.at(b) - self.at(a)) as f64 / (b - a).as_secs_f64()
    }
}

/// Reads from `addr` in `ns` until the end (or `limit`); returns (bytes, any byte not 0x5a).
pub fn reader(
    ns: &str,
    addr: &str,
    p: Arc<Progress>,
    limit: Duration,
) -> std::thread::JoinHandle<(usize, bool)> {
    let addr = addr.to_string();
    in_netns(ns, move || {
        let mut conn = TcpStream::connect(&addr).unwrap();
        let end = Instant::now() + limit;
        let _ = conn.set_read_timeout(Some(Duration::from_millis(500)));
        let mut buf = vec![0u8; 256 * 1024];
        let (mut got, mut bad) = (0usize, false);
        while Instant::now() < end {
            match conn.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    bad |= buf[..n].iter().any(|b| *b != 0x5a);
                    got += n;
                    p.got.store(got, Ordering::Relaxed);
                    p.log.lock().unwrap().push((Instant::now(), got));
                }
                Err(e)
                    if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
                Err(_) => break,
            }
        }
        (got, bad)
    })
}

/// Server, shares and client; returns once the client has a path on every link.
pub fn start_braid(lab: &mut Lab, s: &str, c: &str, ns: &[String], share_extra: &str) {
    let (skey, spub) = lab.key("s.key");
    let (ckey, cpub) = lab.key("c.key");
    lab.braid(
        "server",
        s,
        &[
            "server",
            "--listen",
            "0.0.0.0:7591",
            "--key",
            skey.to_str().unwrap(),
            "--client",
            &cpub,
            "--allow-private",
        ],
    );
    for (i, x) in ns.iter().enumerate() {
        lab.share(x, i as u8 + 1, &cpub, share_extra);
    }
    let ccfg = lab.dir.join("client.toml");
    std::fs::write(
        &ccfg,
        format!(
            "server = \"{SERVICE}:7591\"\nserver_key = \"{spub}\"\nkey = \"{}\"\nlink = [\"cw\"]\n\
             forward = [\"127.0.0.1:5590={SERVICE}:5591\"]\nstatus = \"127.0.0.1:7590\"\nusage_file = \"none\"\n\
             [neighbours]\ndiscover = true\ninterface = \"br0\"\n",
            ckey.display()
        ),
    )
    .unwrap();
    lab.braid("client", c, &["client", "--config", ccfg.to_str().unwrap()]);
    let want: Vec<String> = std::iter::once("cw".to_string())
        .chain((1..=ns.len()).map(|i| format!("via:neighbour{i}")))
        .collect();
    wait_for(lab, "a path on every link", Duration::from_secs(30), || {
        let p = paths(c);
        want.iter().all(|l| p.iter().any(|(x, st)| x == l && st == "active"))
    });
}
