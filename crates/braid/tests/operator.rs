//! A first run as an operator meets it (issue 15), with real processes on loopback: `auto`
//! finds the loopback link, the note of a working session is gone, both ends name the session
//! alike, logs to a file carry no colour codes and say where the status page is, a closed
//! server port and a port in use are reported at once and as what they are, two clients with
//! one key are told so, and a refused destination is explained on both sides.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const BRAID: &str = env!("CARGO_BIN_EXE_braid");

fn free_tcp() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn free_udp() -> u16 {
    UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn run(args: &[&str], stdin: &str) -> Output {
    let mut c = Command::new(BRAID)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    c.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    c.wait_with_output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A running daemon whose log goes to a file; killed on drop.
struct Daemon {
    child: Child,
    log: PathBuf,
}

impl Daemon {
    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Keys in a directory of the test's own.
struct Keys {
    dir: PathBuf,
    server_key: PathBuf,
    server_pub: String,
    client_key: PathBuf,
    client_pub: String,
}

impl Drop for Keys {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Keys {
    fn new(name: &str) -> Keys {
        let dir = std::env::temp_dir().join(format!("braid-op-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let key = |file: &str| {
            let k = text(&run(&["genkey"], "").stdout);
            let p = dir.join(file);
            std::fs::write(&p, &k).unwrap();
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
            (p, text(&run(&["pubkey"], &k).stdout).trim().to_string())
        };
        let (server_key, server_pub) = key("server.key");
        let (client_key, client_pub) = key("client.key");
        Keys { dir, server_key, server_pub, client_key, client_pub }
    }

    /// Starts `braid ARGS` with its log (stderr, not a terminal) in `NAME.log`.
    fn spawn(&self, name: &str, args: &[&str]) -> Daemon {
        let log = self.dir.join(format!("{name}.log"));
        let child = Command::new(BRAID)
            .env("XDG_RUNTIME_DIR", &self.dir)
            .env_remove("RUNTIME_DIRECTORY")
            .env_remove("NO_COLOR")
            .args(args)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        Daemon { child, log }
    }

    fn server(&self, listen: SocketAddr, status: SocketAddr, extra: &[&str]) -> Daemon {
        let (l, s) = (listen.to_string(), status.to_string());
        let mut args = vec!["server", "--listen", &l, "--key", self.server_key.to_str().unwrap()];
        args.extend(["--client", &self.client_pub, "--status", &s]);
        args.extend(extra);
        self.spawn("server", &args)
    }

    fn client(&self, name: &str, server: SocketAddr, status: SocketAddr, extra: &[&str]) -> Daemon {
        let (srv, s) = (server.to_string(), status.to_string());
        let mut args = vec!["client", "--server", &srv, "--server-key", &self.server_pub];
        args.extend(["--key", self.client_key.to_str().unwrap(), "--status", &s]);
        args.extend(extra);
        self.spawn(name, &args)
    }
}

fn addr(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

/// The daemon's status document, if it answers.
fn status(addr: SocketAddr) -> Option<serde_json::Value> {
    serde_json::from_str(&braid_http::get_ok(addr, "/status", Duration::from_secs(2)).ok()?).ok()
}

/// Waits until the status at `addr` shows an established session; returns the document.
fn established(addr: SocketAddr, d: &Daemon) -> serde_json::Value {
    let end = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(v) = status(addr).filter(|v| v["sessions"][0]["established"] == true) {
            return v;
        }
        assert!(Instant::now() < end, "no session within 10 s; log:\n{}", d.log());
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn no_colour(d: &Daemon) {
    let log = d.log();
    assert!(!log.is_empty());
    assert!(!log.contains('\x1b'), "colour codes in a log written to a file:\n{log}");
}

/// Item 1, 3, 7, 9: no `--link` with a server on loopback.
#[test]
fn auto_finds_loopback_and_both_ends_name_the_session_alike() {
    let k = Keys::new("auto");
    let (listen, sst, cst) = (addr(free_udp()), addr(free_tcp()), addr(free_tcp()));
    let server = k.server(listen, sst, &[]);
    let client = k.client("client", listen, cst, &[]);
    let c = established(cst, &client);
    let s = established(sst, &server);
    let (cs, ss) = (&c["sessions"][0], &s["sessions"][0]);
    assert_eq!(cs["paths"][0]["link"], "lo", "{c}");
    assert!(c["note"].is_null(), "a note stays on a working session: {}", c["note"]);
    let id = cs["id"].as_str().unwrap();
    assert_eq!(id.len(), 16, "{id}");
    assert!(id.chars().all(|ch| ch.is_ascii_hexdigit()), "{id}");
    assert_eq!(ss["id"], cs["id"], "client and server show different ids");
    assert_eq!(ss["peer"].as_str().unwrap(), format!("{}…", &k.client_pub[..8]));
    // The logs say which links `auto` chose, where the pages are, and name the session alike.
    let (cl, sl) = (client.log(), server.log());
    assert!(cl.contains("links") && cl.contains("lo (127.0.0.1:"), "{cl}");
    assert!(cl.contains(&format!("status page http://{cst}/")), "{cl}");
    assert!(sl.contains(&format!("status page http://{sst}/")), "{sl}");
    assert!(cl.contains(&format!("session={id}")) && sl.contains(&format!("session={id}")), "{cl}\n{sl}");
    no_colour(&client);
    no_colour(&server);
}

/// Item 4: `--link lo` is up with an address.
#[test]
fn link_lo_is_up() {
    let k = Keys::new("lo");
    let (listen, sst, cst) = (addr(free_udp()), addr(free_tcp()), addr(free_tcp()));
    let _server = k.server(listen, sst, &[]);
    let client = k.client("client", listen, cst, &["--link", "lo"]);
    established(cst, &client);
    let log = client.log();
    assert!(!log.contains("down or has no address"), "{log}");
}

/// Item 10: a closed port answers with ICMP; the client says so at once, not after the 10 s
/// handshake timeout, and blames neither the key nor a down server.
#[test]
fn a_closed_server_port_is_reported_at_once() {
    let k = Keys::new("closed");
    let closed = addr(free_udp());
    for link in [&["--link", "127.0.0.1"][..], &[]] {
        let t = Instant::now();
        let srv = closed.to_string();
        let mut args = vec!["client", "--server", &srv, "--server-key", &k.server_pub];
        args.extend(["--key", k.client_key.to_str().unwrap()]);
        args.extend(link);
        let o = run(&args, "");
        let took = t.elapsed();
        let e = text(&o.stderr);
        assert_eq!(o.status.code(), Some(4), "{e}");
        assert!(e.contains("unreachable") && e.contains("nothing listens"), "{e}");
        assert!(took < Duration::from_secs(5), "took {took:?}: {e}");
        eprintln!("closed port reported after {took:?} ({link:?})");
    }
}

/// Item 10: a port another process holds is not a configuration error.
#[test]
fn a_port_in_use_exits_1_and_says_so() {
    let k = Keys::new("inuse");
    let held = UdpSocket::bind("127.0.0.1:0").unwrap();
    let listen = held.local_addr().unwrap().to_string();
    let o = run(
        &["server", "--listen", &listen, "--key", k.server_key.to_str().unwrap(), "--client", &k.client_pub],
        "",
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("already in use"), "{}", text(&o.stderr));
    let held = TcpListener::bind("127.0.0.1:0").unwrap();
    let st = held.local_addr().unwrap().to_string();
    let listen = addr(free_udp()).to_string();
    let o = run(
        &[
            "server",
            "--listen",
            &listen,
            "--key",
            k.server_key.to_str().unwrap(),
            "--client",
            &k.client_pub,
            "--status",
            &st,
        ],
        "",
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("serve status") && text(&o.stderr).contains("already in use"));
}

/// Item 2: a second client with the same key takes the session; the server says so, the
/// first client says so and waits instead of taking it straight back.
#[test]
fn two_clients_with_one_key_are_told_and_do_not_fight() {
    let k = Keys::new("twice");
    let (listen, sst) = (addr(free_udp()), addr(free_tcp()));
    let (ast, bst) = (addr(free_tcp()), addr(free_tcp()));
    let server = k.server(listen, sst, &[]);
    let a = k.client("a", listen, ast, &["--link", "127.0.0.1"]);
    established(ast, &a);
    let b = k.client("b", listen, bst, &["--link", "127.0.0.1"]);
    let first = established(bst, &b)["sessions"][0]["id"].clone();
    // B keeps the session: A does not take it back every few seconds.
    std::thread::sleep(Duration::from_secs(6));
    let now = status(bst).unwrap();
    assert_eq!(now["sessions"][0]["id"], first, "B lost its session; B's log:\n{}", b.log());
    let sl = server.log();
    assert_eq!(sl.matches("replaces the running one").count(), 1, "{sl}");
    let al = a.log();
    assert!(al.contains("is this key in use on another machine"), "{al}");
    let note = status(ast).unwrap()["note"].as_str().unwrap_or("").to_string();
    assert!(note.contains("taken over"), "{note}");
}

/// SOCKS5 CONNECT to `target` through `socks`; the reply code.
fn socks_connect(socks: SocketAddr, target: SocketAddr) -> u8 {
    let mut c = TcpStream::connect(socks).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    c.write_all(&[5, 1, 0]).unwrap();
    let mut b = [0u8; 2];
    c.read_exact(&mut b).unwrap();
    assert_eq!(b, [5, 0]);
    let SocketAddr::V4(t) = target else { unreachable!() };
    let mut req = vec![5, 1, 0, 1];
    req.extend(t.ip().octets());
    req.extend(t.port().to_be_bytes());
    c.write_all(&req).unwrap();
    let mut reply = [0u8; 10];
    c.read_exact(&mut reply).unwrap();
    reply[1]
}

fn wait_log(d: &Daemon, what: &str) -> String {
    let end = Instant::now() + Duration::from_secs(5);
    loop {
        let log = d.log();
        if log.contains(what) || Instant::now() > end {
            return log;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Item 6: the server's refusal names the fix, and the client logs the refused request.
#[test]
fn a_refused_destination_is_explained_on_both_sides() {
    let k = Keys::new("egress");
    let (listen, sst, cst) = (addr(free_udp()), addr(free_tcp()), addr(free_tcp()));
    let server = k.server(listen, sst, &[]);
    let socks = addr(free_tcp());
    let client = k.client("client", listen, cst, &["--link", "127.0.0.1", "--socks", &socks.to_string()]);
    established(cst, &client);
    let target = TcpListener::bind("127.0.0.1:0").unwrap();
    // X'02': connection not allowed by ruleset (RFC 1928 §6).
    assert_eq!(socks_connect(socks, target.local_addr().unwrap()), 2);
    let sl = wait_log(&server, "--allow-private");
    assert!(sl.contains("stream refused") && sl.contains("[egress] allow_private"), "{sl}");
    let cl = wait_log(&client, "connection refused by the server");
    assert!(cl.contains("egress policy denies") && cl.contains("--allow-private"), "{cl}");
}

/// Item 10: `--scheduler` lists the names it takes.
#[test]
fn scheduler_help_lists_the_names() {
    for cmd in ["client", "server"] {
        let o = run(&[cmd, "--help"], "");
        let help = text(&o.stdout);
        for name in ["minrtt", "edpf", "rr", "wrr", "redundant:N", "backup", "lps", "deadline"] {
            assert!(help.contains(name), "braid {cmd} --help lacks {name}:\n{help}");
        }
    }
}

/// A server of another protocol version (here a socket that answers every HANDSHAKE_INIT as
/// one would): the client exits 7 at once, naming both versions, instead of reporting no
/// answer after its handshake timeout.
#[test]
fn a_server_of_another_version_is_named_at_once() {
    use braid_core::wire::{self, header::version_answer, VERSION};
    let k = Keys::new("version");
    let server = UdpSocket::bind("127.0.0.1:0").unwrap();
    server.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
    let listen = server.local_addr().unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let answering = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 2048];
            let mut answered = 0;
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                let Ok((n, from)) = server.recv_from(&mut buf) else { continue };
                if buf[0] == wire::TYPE_HANDSHAKE_INIT {
                    let echo = braid_core::crypto::cookie::mac1_of(&buf[..n]);
                    server.send_to(&version_answer(&echo, &[VERSION + 1]), from).unwrap();
                    answered += 1;
                }
            }
            answered
        })
    };
    let t = Instant::now();
    let srv = listen.to_string();
    let mut args = vec!["client", "--server", &srv, "--server-key", &k.server_pub];
    args.extend(["--key", k.client_key.to_str().unwrap(), "--link", "127.0.0.1"]);
    let o = run(&args, "");
    let took = t.elapsed();
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    assert!(answering.join().unwrap() >= 1);
    let e = text(&o.stderr);
    assert_eq!(o.status.code(), Some(7), "{e}");
    let both = format!("protocol version {} and this client version {VERSION}", VERSION + 1);
    assert!(e.contains(&both), "{e}");
    assert!(took < Duration::from_secs(5), "took {took:?}: {e}");
}

/// The server's side of the same: a client of another version that knows the server's key is
/// answered with the server's version (smaller than its message), and the server's log says
/// what happened; without the key, nothing is answered.
#[test]
fn a_client_of_another_version_is_answered_and_logged() {
    use braid_core::crypto::cookie::{mac1_of, CookieJar};
    use braid_core::wire::{self, Header, HANDSHAKE_INIT_LEN, VERSION};
    let k = Keys::new("oldclient");
    let (listen, sst) = (addr(free_udp()), addr(free_tcp()));
    let server = k.server(listen, sst, &[]);
    let probe = UdpSocket::bind("127.0.0.1:0").unwrap();
    probe.set_read_timeout(Some(Duration::from_millis(300))).unwrap();
    let mut init = vec![0x33; HANDSHAKE_INIT_LEN];
    init[0] = wire::TYPE_HANDSHAKE_INIT;
    init[1] = VERSION - 1;
    let unstamped = init.clone();
    let server_key: braid_core::PublicKey = k.server_pub.parse().unwrap();
    CookieJar::new(&server_key).stamp(braid_core::Timestamp::from_nanos(1), &mut init);
    let mut buf = [0u8; 2048];
    let deadline = Instant::now() + Duration::from_secs(10);
    let answer = loop {
        assert!(Instant::now() < deadline, "no answer; server log:\n{}", server.log());
        probe.send_to(&init, listen).unwrap();
        if let Ok(n) = probe.recv(&mut buf) {
            break buf[..n].to_vec();
        }
    };
    assert!(answer.len() < init.len());
    assert_eq!(
        wire::header::parse(&answer),
        Ok(Header::Version { echo: &mac1_of(&init), versions: &[VERSION] })
    );
    probe.send_to(&unstamped, listen).unwrap();
    // Late answers to the stamped message may still arrive; none may answer the other.
    while let Ok(n) = probe.recv(&mut buf) {
        let echo = mac1_of(&unstamped);
        assert!(
            !matches!(wire::header::parse(&buf[..n]), Ok(Header::Version { echo: e, .. }) if *e == echo),
            "a message without the server's key was answered"
        );
    }
    let log = wait_log(&server, "another braid protocol version");
    assert!(log.contains(&format!("client_version={}", VERSION - 1)), "{log}");
}
