//! Root-only: the lab's `http_get` reaches a server that listens inside a network namespace
//! (on its loopback, invisible from the host), through the one HTTP client. Skipped (with a
//! message) when not root; fails instead under CI or `BRAID_ROOT_TESTS=1`.

mod common;

use braid_lab::sys::netns::{http_get, in_netns};
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::process::Command;
use std::time::Duration;

struct Ns(String);

impl Drop for Ns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
    }
}

fn ip(args: &[&str]) {
    assert!(Command::new("ip").args(args).status().unwrap().success(), "ip {args:?}");
}

#[test]
fn http_get_talks_to_a_server_inside_the_namespace() {
    if let Some(why) = common::skip_reason(&["ip"]) {
        eprintln!("skipping: {why}");
        return;
    }
    let ns = Ns(format!("bhttp-{}", std::process::id()));
    ip(&["netns", "add", &ns.0]);
    ip(&["-n", &ns.0, "link", "set", "lo", "up"]);
    let listener = in_netns(&ns.0, || TcpListener::bind("127.0.0.1:0")).unwrap().unwrap();
    let addr = listener.local_addr().unwrap();
    let server = std::thread::spawn(move || {
        let (s, _) = listener.accept().unwrap();
        let mut r = BufReader::new(s);
        let mut line = String::new();
        r.read_line(&mut line).unwrap();
        let first = line.clone();
        while line != "\r\n" {
            line.clear();
            r.read_line(&mut line).unwrap();
        }
        r.get_mut().write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 13\r\n\r\n{\"ok\": true}\n").unwrap();
        first
    });
    // The host namespace has no such server: only the namespace's socket can reach it.
    assert!(std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err());
    let body = http_get(&ns.0, addr, "/status", Duration::from_secs(2)).unwrap();
    assert_eq!(body, "{\"ok\": true}\n");
    assert_eq!(server.join().unwrap(), "GET /status HTTP/1.1\r\n");
}
