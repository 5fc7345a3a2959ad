//! The `braid` binary as an operator meets it: exit codes and one-line errors.

use std::io::Write;
use std::process::{Command, Output, Stdio};

fn braid(args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_braid"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    if let Some(s) = stdin {
        child.stdin.take().unwrap().write_all(s.as_bytes()).unwrap();
    }
    drop(child.stdin.take());
    child.wait_with_output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn temp(name: &str, content: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("braid-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, content).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    p
}

#[test]
fn genkey_then_pubkey() {
    let k = braid(&["genkey"], None);
    assert!(k.status.success());
    let key = text(&k.stdout);
    assert_eq!(key.trim().len(), 44);
    let p = braid(&["pubkey"], Some(&key));
    assert!(p.status.success());
    assert_eq!(text(&p.stdout).trim().len(), 44);
    assert_ne!(text(&p.stdout).trim(), key.trim());
    let bad = braid(&["pubkey"], Some("garbage"));
    assert_eq!(bad.status.code(), Some(2));
    assert!(text(&bad.stderr).contains("invalid"));
}

#[test]
fn bad_config_names_file_line_and_key() {
    let f = temp("bad.toml", "listen = \"0.0.0.0:7000\"\n[session]\ncongestion = \"warp\"\n");
    let o = braid(&["server", "--config", f.to_str().unwrap()], None);
    assert_eq!(o.status.code(), Some(2));
    let e = text(&o.stderr);
    assert!(e.contains("bad.toml:3: congestion:"), "{e}");
    assert_eq!(e.trim().lines().count(), 1, "{e}");
}

#[test]
fn unknown_interface_exits_3() {
    let key = temp("c.key", &text(&braid(&["genkey"], None).stdout));
    let spub = text(&braid(&["pubkey"], Some(&text(&braid(&["genkey"], None).stdout))).stdout);
    let o = braid(
        &[
            "client",
            "--server",
            "127.0.0.1:9",
            "--server-key",
            spub.trim(),
            "--key",
            key.to_str().unwrap(),
            "--link",
            "nosuchif0",
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(3), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("unknown interface 'nosuchif0'"), "{}", text(&o.stderr));
}

#[test]
fn sim_rejects_bad_arguments_in_one_line() {
    let o = braid(&["sim", "--link", "20mbit/10ms", "--cut", "3@1s"], None);
    assert_eq!(o.status.code(), Some(2));
    let e = text(&o.stderr);
    assert!(e.contains("--cut '3@1s'") && e.contains("does not exist"), "{e}");
    let o = braid(&["sim", "--link", "fast/10ms"], None);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("--link"), "{}", text(&o.stderr));
}

#[test]
fn sim_runs_a_lab_scenarios_links() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../lab/three.toml");
    let o = braid(&["sim", "--lab-links", root, "--duration", "2s", "--json"], None);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["paths"].as_array().map(Vec::len), Some(3), "three.toml has three links");
    assert_eq!(v["capacity_bps"].as_f64(), Some(62e6), "50 + 10 + 2 Mbit/s");
}

#[test]
fn sim_prints_the_documented_json() {
    let o =
        braid(&["sim", "--link", "5mbit/10ms", "--link", "2mbit/30ms", "--duration", "3s", "--json"], None);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    for k in [
        "goodput_bps",
        "capacity_bps",
        "efficiency",
        "intact",
        "reorder_max_packets",
        "retransmitted_bytes",
        "paths",
        "timeline",
    ] {
        assert!(v.get(k).is_some(), "missing {k}");
    }
    assert!(v["paths"][0].get("srtt_ms").is_some() && v["paths"][0].get("lost_packets").is_some());
    assert!(v["timeline"][0].get("t_ms").is_some());
    assert_eq!(v["intact"], true);
}

#[test]
fn status_without_a_daemon_says_so() {
    let o = braid(&["status", "--addr", "127.0.0.1:9"], None);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o.stderr).contains("cannot reach a braid daemon"), "{}", text(&o.stderr));
}

/// A free loopback TCP port (the daemon's status port; a small race is accepted).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// `braid status --scheduler` against a running server: it finds the token the server wrote
/// (0600) in the runtime directory derived from the address, says what to do when it cannot,
/// and the file goes when the server stops cleanly.
#[test]
fn status_scheduler_uses_the_daemons_token() {
    let dir = std::env::temp_dir().join(format!("braid-cli-token-{}", std::process::id()));
    let (runtime, elsewhere) = (dir.join("run"), dir.join("other"));
    std::fs::create_dir_all(&runtime).unwrap();
    std::fs::create_dir_all(&elsewhere).unwrap();
    let key = temp("s.key", &text(&braid(&["genkey"], None).stdout));
    let client = text(&braid(&["pubkey"], Some(&text(&braid(&["genkey"], None).stdout))).stdout);
    let status = format!("127.0.0.1:{}", free_port());
    let with_env = |c: &mut Command, xdg: &std::path::Path| {
        c.env("XDG_RUNTIME_DIR", xdg).env_remove("RUNTIME_DIRECTORY");
    };
    let mut server = Command::new(env!("CARGO_BIN_EXE_braid"));
    server
        .args(["--log", "warn", "server", "--listen", "127.0.0.1:0", "--key", key.to_str().unwrap()])
        .args(["--client", client.trim(), "--status", &status])
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    with_env(&mut server, &runtime);
    let mut server = server.spawn().unwrap();
    let token = runtime.join("braid").join(format!("status-{}.token", status.replace(':', "-")));
    let mut up = false;
    for _ in 0..200 {
        if token.exists() && std::net::TcpStream::connect(&status).is_ok() {
            up = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
    let status_cli = |xdg: &std::path::Path, extra: &[&str]| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_braid"));
        c.args(["status", "--addr", &status, "--scheduler", "edpf"]).args(extra);
        with_env(&mut c, xdg);
        c.output().unwrap()
    };
    let result = std::panic::catch_unwind(|| {
        assert!(up, "the server did not come up with its token at {}", token.display());
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&token).unwrap().permissions().mode() & 0o777, 0o600);
        let o = status_cli(&runtime, &[]);
        assert!(o.status.success(), "{}", text(&o.stderr));
        assert!(text(&o.stderr).contains("scheduler edpf requested"), "{}", text(&o.stderr));
        // Another runtime directory: no token there; the message says what to do.
        let o = status_cli(&elsewhere, &[]);
        assert_eq!(o.status.code(), Some(1));
        let e = text(&o.stderr);
        assert!(e.contains("no control token") && e.contains("--token-file"), "{e}");
        let o = status_cli(&elsewhere, &["--token-file", token.to_str().unwrap()]);
        assert!(o.status.success(), "{}", text(&o.stderr));
        let wrong = elsewhere.join("wrong.token");
        std::fs::write(&wrong, "0123\n").unwrap();
        let o = status_cli(&elsewhere, &["--token-file", wrong.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2));
        assert!(text(&o.stderr).contains("wrong token"), "{}", text(&o.stderr));
    });
    // A clean stop (SIGINT, as Ctrl-C) removes the token file.
    // SAFETY: kill only sends a signal to the child this test started.
    unsafe {
        libc::kill(server.id() as libc::pid_t, libc::SIGINT);
    }
    let stopped = server.wait().unwrap();
    let left = token.exists();
    let _ = std::fs::remove_dir_all(&dir);
    if let Err(e) = result {
        std::panic::resume_unwind(e);
    }
    assert!(stopped.success(), "{stopped:?}");
    assert!(!left, "the token file outlived the server");
}
