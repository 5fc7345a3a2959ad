//! `braid share` as an operator runs it: a bad file gets one clear line and exit code 2; a
//! good one serves its status (which `braid status` prints as the sharer's table), keeps its
//! members' usage in its `usage_file` and stops cleanly on SIGTERM.

use std::net::UdpSocket;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BRAID: &str = env!("CARGO_BIN_EXE_braid");

/// A scratch directory, removed on drop (also when the test fails).
struct Dir(std::path::PathBuf);

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A child process, killed on drop.
struct Kill(std::process::Child);

impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

#[test]
fn bad_files_are_refused_with_a_reason_and_a_good_one_serves_until_sigterm() {
    let scratch = Dir(std::env::temp_dir().join(format!("braid-share-cli-{}", std::process::id())));
    std::fs::create_dir_all(&scratch.0).unwrap();
    let d = scratch.0.clone();
    let key = d.join("share.key");
    let out = Command::new(BRAID).arg("genkey").output().unwrap();
    std::fs::write(&key, &out.stdout).unwrap();
    let member = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";
    let cases = [
        (format!("key = \"{}\"\n[[member]]\nkey = \"{member}\"\n", key.display()), "no servers"),
        (format!("key = \"{}\"\nservers = [\"127.0.0.1:7000\"]\n", key.display()), "no members"),
        (
            format!("key = \"{}\"\nservers = [\"127.0.0.1:7000\"]\n[[member]]\nkey = \"{member}\"\n", key.display()),
            "owner_priority = \"spare\" needs capacity",
        ),
        (
            format!(
                "key = \"{}\"\nservers = [\"127.0.0.1:7000\"]\nowner_priority = \"none\"\n[[member]]\nkey = \"{member}\"\nat_cap = \"throttle\"\n",
                key.display()
            ),
            "throttle_rate",
        ),
        ("servers = 5\n".to_string(), "servers"),
    ];
    for (i, (text, want)) in cases.iter().enumerate() {
        let p = d.join(format!("bad{i}.toml"));
        std::fs::write(&p, text).unwrap();
        let out = Command::new(BRAID).args(["share", "--config"]).arg(&p).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "case {i}: {err}");
        assert!(err.contains(want), "case {i}: wanted '{want}' in: {err}");
    }
    let (port, status) = (free_port(), free_port());
    let good = d.join("good.toml");
    let usage = d.join("state").join("share-usage.redb");
    std::fs::write(
        &good,
        format!(
            "key = \"{}\"\nname = \"cli\"\nlisten = \"127.0.0.1:{port}\"\nservers = [\"127.0.0.1:7000\"]\nowner_priority = \"none\"\n\
             announce = false\nstatus = \"127.0.0.1:{status}\"\nusage_file = \"{}\"\n\
             [[member]]\nname = \"m\"\nkey = \"{member}\"\ndaily_cap = \"1GB\"\n",
            key.display(),
            usage.display()
        ),
    )
    .unwrap();
    let mut child = Kill(
        Command::new(BRAID)
            .args(["--log", "warn", "share", "--config"])
            .arg(&good)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let end = Instant::now() + Duration::from_secs(10);
    let body = loop {
        if let Ok(b) = braid_http::get_ok(([127, 0, 0, 1], status).into(), "/status", Duration::from_secs(2))
        {
            break b;
        }
        assert!(Instant::now() < end, "no status port");
        std::thread::sleep(Duration::from_millis(50));
    };
    let json: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(json["name"], "cli");
    assert_eq!(json["members"][0]["name"], "m");
    assert_eq!(json["members"][0]["daily_cap"], 1_000_000_000u64);
    assert_eq!(json["role"], "sharer");
    assert_eq!(json["usage_file"], usage.display().to_string());
    let out =
        Command::new(BRAID).args(["status", "--addr", &format!("127.0.0.1:{status}")]).output().unwrap();
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(table.starts_with("braid sharer cli "), "{table}");
    let m = table.lines().find(|l| l.trim_start().starts_with("m ")).unwrap_or_else(|| panic!("{table}"));
    assert!(m.contains("idle") && m.contains("0 B / 1.00 GB"), "{m}");
    // SAFETY: kill with a valid pid of our own child.
    unsafe { libc::kill(child.0.id() as i32, libc::SIGTERM) };
    let end = Instant::now() + Duration::from_secs(5);
    let code = loop {
        if let Some(s) = child.0.try_wait().unwrap() {
            break s.code();
        }
        assert!(Instant::now() < end, "braid share did not stop on SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(code, Some(0));
    assert!(usage.exists(), "no usage file at {}", usage.display());
}
