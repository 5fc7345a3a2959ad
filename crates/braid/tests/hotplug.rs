//! Interfaces that appear or disappear add or remove paths while a stream goes on — on real
//! network namespaces (root only; skipped otherwise). Everything created is removed by guards,
//! also when the test fails.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod nslab;
use nslab::{in_netns, must, paths_of, sh, source};

const BRAID: &str = env!("CARGO_BIN_EXE_braid");
const TOTAL: usize = 40 << 20;

/// Namespaces and processes, removed on drop.
struct Lab {
    client: String,
    server: String,
    procs: Vec<Child>,
}

impl Drop for Lab {
    fn drop(&mut self) {
        for p in &mut self.procs {
            let _ = p.kill();
            let _ = p.wait();
        }
        sh(&["ip", "netns", "del", &self.client]);
        sh(&["ip", "netns", "del", &self.server]);
    }
}

fn status(ns: &str) -> serde_json::Value {
    in_netns(ns, || {
        braid_http::get_ok("127.0.0.1:7590".parse().unwrap(), "/status", Duration::from_secs(1))
            .ok()
            .and_then(|b| serde_json::from_str(&b).ok())
            .unwrap_or(serde_json::Value::Null)
    })
    .join()
    .unwrap()
}

/// Active paths and their link labels.
fn paths(ns: &str) -> Vec<(String, String)> {
    paths_of(&status(ns))
}

fn wait_for(what: &str, timeout: Duration, mut f: impl FnMut() -> bool) {
    let end = Instant::now() + timeout;
    while Instant::now() < end {
        if f() {
            return;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    panic!("timed out waiting for {what}");
}

fn add_link(c: &str, s: &str, i: u8) {
    let (cd, sd) = (format!("hpc{i}"), format!("hps{i}"));
    must(&["ip", "link", "add", &cd, "netns", c, "type", "veth", "peer", "name", &sd, "netns", s]);
    must(&["ip", "-n", c, "addr", "add", &format!("10.77.{i}.1/24"), "dev", &cd]);
    must(&["ip", "-n", s, "addr", "add", &format!("10.77.{i}.2/24"), "dev", &sd]);
    must(&["ip", "-n", c, "link", "set", &cd, "up"]);
    must(&["ip", "-n", s, "link", "set", &sd, "up"]);
    // 40 Mbit/s towards the client, so that the transfer outlives the interface changes.
    must(&[
        "tc", "-n", s, "qdisc", "add", "dev", &sd, "root", "tbf", "rate", "40mbit", "burst", "64kb",
        "latency", "100ms",
    ]);
    // The server's service address is reachable over every link.
    must(&[
        "ip",
        "-n",
        c,
        "route",
        "add",
        "10.77.99.1/32",
        "via",
        &format!("10.77.{i}.2"),
        "dev",
        &cd,
        "metric",
        &i.to_string(),
    ]);
}

#[test]
fn paths_follow_interfaces_while_a_stream_goes_on() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 || !sh(&["ip", "-V"]) {
        eprintln!("skipped: needs root and iproute2");
        return;
    }
    let id = std::process::id();
    let mut lab =
        Lab { client: format!("braidhp-{id}-c"), server: format!("braidhp-{id}-s"), procs: Vec::new() };
    let (c, s) = (lab.client.clone(), lab.server.clone());
    must(&["ip", "netns", "add", &c]);
    must(&["ip", "netns", "add", &s]);
    must(&["ip", "-n", &c, "link", "set", "lo", "up"]);
    must(&["ip", "-n", &s, "link", "set", "lo", "up"]);
    must(&["ip", "-n", &s, "addr", "add", "10.77.99.1/32", "dev", "lo"]);
    add_link(&c, &s, 1);
    let dir = std::env::temp_dir().join(format!("braidhp-{id}"));
    std::fs::create_dir_all(&dir).unwrap();
    let key = |name: &str| {
        let out = Command::new(BRAID).arg("genkey").output().unwrap();
        let p = dir.join(name);
        std::fs::write(&p, &out.stdout).unwrap();
        let mut child =
            Command::new(BRAID).arg("pubkey").stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
        child.stdin.take().unwrap().write_all(&out.stdout).unwrap();
        (p, String::from_utf8(child.wait_with_output().unwrap().stdout).unwrap().trim().to_string())
    };
    let (skey, spub) = key("s.key");
    let (ckey, cpub) = key("c.key");
    // A source in the server namespace: 40 MB, several seconds at the links' 40 Mbit/s.
    let source = source(&s, "10.77.99.1:5591", TOTAL);
    std::thread::sleep(Duration::from_millis(200));
    lab.procs.push(
        Command::new("ip")
            .args([
                "netns",
                "exec",
                &s,
                BRAID,
                "--log",
                "warn",
                "server",
                "--listen",
                "0.0.0.0:7591",
                "--key",
            ])
            .arg(&skey)
            .args(["--client", &cpub, "--allow-private"])
            .spawn()
            .unwrap(),
    );
    lab.procs.push(
        Command::new("ip")
            .args([
                "netns",
                "exec",
                &c,
                BRAID,
                "--log",
                "warn",
                "client",
                "--server",
                "10.77.99.1:7591",
                "--server-key",
                &spub,
                "--key",
            ])
            .arg(&ckey)
            .args([
                "--link",
                "auto",
                "--forward",
                "127.0.0.1:5590=10.77.99.1:5591",
                "--status",
                "127.0.0.1:7590",
            ])
            .spawn()
            .unwrap(),
    );
    wait_for("the first path", Duration::from_secs(10), || {
        paths(&c).iter().any(|(l, st)| l == "hpc1" && st == "active")
    });
    let progress = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = progress.clone();
    let reader = in_netns(&c, move || {
        let mut conn = TcpStream::connect("127.0.0.1:5590").unwrap();
        let mut buf = vec![0u8; 256 * 1024];
        let mut got = 0usize;
        let mut bad = false;
        loop {
            match conn.read(&mut buf) {
                Ok(0) | Err(_) => return (got, bad),
                Ok(n) => {
                    bad |= buf[..n].iter().any(|b| *b != 0x5a);
                    got += n;
                    seen.store(got, std::sync::atomic::Ordering::Relaxed);
                }
            }
        }
    });
    std::thread::sleep(Duration::from_millis(500));
    add_link(&c, &s, 2);
    wait_for("a path over the new interface", Duration::from_secs(10), || {
        paths(&c).iter().any(|(l, st)| l == "hpc2" && st == "active")
    });
    let before = progress.load(std::sync::atomic::Ordering::Relaxed);
    assert!(before < TOTAL, "the transfer finished before the interface went; nothing was tested");
    must(&["ip", "-n", &c, "link", "del", "hpc1"]);
    wait_for("the path over the removed interface to go", Duration::from_secs(10), || {
        !paths(&c).iter().any(|(l, _)| l == "hpc1")
    });
    let sent = source.join().unwrap();
    let (got, bad) = reader.join().unwrap();
    assert_eq!(sent, TOTAL);
    assert_eq!(got, sent, "the stream lost bytes while its paths changed");
    assert!(!bad, "the stream was corrupted");
    drop(lab);
    let _ = std::fs::remove_dir_all(&dir);
}
