//! The status port as a control port: who may change things, who may not, and the token file.

use braid_daemon::control;
use braid_daemon::status::{serve, StatusBoard};
use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("braid-control-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// One HTTP/1.0 exchange: the status code and the body.
async fn http(addr: SocketAddr, head: &str, body: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).await.unwrap();
    let req = format!("{head}\r\nContent-Length: {}\r\n\r\n{body}", body.len());
    s.write_all(req.as_bytes()).await.unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).await.unwrap();
    let (head, rest) = answer.split_once("\r\n\r\n").unwrap();
    (head.split_whitespace().nth(1).unwrap().parse().unwrap(), rest.to_string())
}

#[tokio::test]
async fn changes_need_the_token_and_browsers_elsewhere_are_refused() {
    let dir = temp_dir("http");
    let file = dir.join("status.token");
    let board = StatusBoard::new("server");
    let (addr, task) =
        serve("127.0.0.1:0".parse().unwrap(), board.clone(), Some(file.clone())).await.unwrap();
    let token = control::read_token(&file).unwrap();
    assert_eq!(token.len(), 2 * control::TOKEN_BYTES);
    let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "the token file is readable by its owner only");
    let port = addr.port();
    let post = |extra: String| format!("POST /scheduler HTTP/1.0\r\nHost: 127.0.0.1:{port}{extra}");

    let (code, body) = http(addr, &post(String::new()), "redundant").await;
    assert_eq!(code, 401, "{body}");
    assert!(body.contains("Authorization: Bearer") && body.contains(file.to_str().unwrap()), "{body}");
    let (code, body) = http(addr, &post("\r\nAuthorization: Bearer 00112233".into()), "redundant").await;
    assert_eq!(code, 401, "{body}");
    assert!(body.contains("wrong token"), "{body}");
    assert!(board.scheduler_requests().borrow().is_none(), "a refused request changed nothing");

    let bearer = format!("\r\nAuthorization: Bearer {token}");
    let (code, body) = http(addr, &post(bearer.clone()), "edpf").await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(board.scheduler_requests().borrow().map(|k| k.name()), Some("edpf"));

    // A page of another site in the operator's browser: its Origin gives it away, token or not.
    let evil = format!("{bearer}\r\nOrigin: http://evil.example\r\nContent-Type: text/plain");
    let (code, body) = http(addr, &post(evil), "redundant").await;
    assert_eq!(code, 403, "{body}");
    assert!(body.contains("evil.example"), "{body}");
    let (code, _) = http(addr, &post(format!("{bearer}\r\nOrigin: null")), "minrtt").await;
    assert_eq!(code, 403);
    // A page served from another address on the same port is another origin.
    let other = format!("{bearer}\r\nOrigin: http://198.51.100.7:{port}");
    assert_eq!(http(addr, &post(other), "minrtt").await.0, 403);
    let same = format!("{bearer}\r\nOrigin: http://localhost:{port}");
    assert_eq!(http(addr, &post(same), "minrtt").await.0, 200, "the daemon's own page may");
    assert_eq!(board.scheduler_requests().borrow().map(|k| k.name()), Some("minrtt"));

    // DNS rebinding: the browser sends the attacker's name as Host.
    let (code, body) = http(addr, &format!("GET /status HTTP/1.0\r\nHost: evil.example:{port}"), "").await;
    assert_eq!(code, 403, "{body}");
    assert!(body.contains("DNS rebinding"), "{body}");
    let rebound = format!("POST /scheduler HTTP/1.0\r\nHost: evil.example:{port}{bearer}");
    assert_eq!(http(addr, &rebound, "redundant").await.0, 403);
    assert_eq!(http(addr, &format!("GET /status HTTP/1.0\r\nHost: 127.0.0.1:{}", port ^ 1), "").await.0, 403);
    let origin_get =
        format!("GET /status HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\nOrigin: https://evil.example");
    assert_eq!(http(addr, &origin_get, "").await.0, 403, "reads from other sites too");

    // Reads need no token, with the address or localhost as Host, or none (HTTP/1.0).
    for host in [format!("\r\nHost: 127.0.0.1:{port}"), format!("\r\nHost: LocalHost:{port}"), String::new()]
    {
        let (code, body) = http(addr, &format!("GET /status HTTP/1.0{host}"), "").await;
        assert_eq!(code, 200, "{host}: {body}");
        assert!(body.contains("\"role\":\"server\""), "{body}");
    }

    // The token file goes with the server.
    task.abort();
    let mut gone = false;
    for _ in 0..100 {
        if !file.exists() {
            gone = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(gone, "the token file outlived the status server");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn the_default_token_file_is_found_from_the_address() {
    let addr: SocketAddr = "127.0.0.1:7001".parse().unwrap();
    let p = control::default_token_path(addr);
    assert!(p.ends_with("status-127.0.0.1-7001.token"), "{}", p.display());
    assert_eq!(p.parent().unwrap(), control::runtime_dir());
    let c = control::token_candidates(addr);
    assert_eq!(c[0], p, "the daemon's own place comes first");
    assert!(c.iter().any(|x| x.ends_with("status-0.0.0.0-7001.token")), "{c:?}");
    assert!(c.iter().any(|x| x.ends_with("status-::-7001.token")), "{c:?}");
}

#[tokio::test]
async fn a_token_that_cannot_be_written_disables_changes_not_reads() {
    let dir = temp_dir("nowrite");
    let file = dir.join("missing-dir").join("status.token");
    let (addr, _task) =
        serve("127.0.0.1:0".parse().unwrap(), StatusBoard::new("client"), Some(file)).await.unwrap();
    let host = format!("Host: 127.0.0.1:{}", addr.port());
    let (code, body) =
        http(addr, &format!("POST /scheduler HTTP/1.0\r\n{host}\r\nAuthorization: Bearer x"), "edpf").await;
    assert_eq!(code, 503, "{body}");
    assert!(body.contains("could not be written"), "{body}");
    assert_eq!(http(addr, &format!("GET /status HTTP/1.0\r\n{host}"), "").await.0, 200);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn writing_replaces_a_stale_file_and_keeps_mode_0600() {
    let dir = temp_dir("write");
    let file = dir.join("t.token");
    std::fs::write(&file, "old\n").unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let token = control::new_token();
    control::write_token(&file, &token).unwrap();
    assert_eq!(control::read_token(&file).unwrap(), token);
    assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
    assert_ne!(control::new_token(), token, "tokens are fresh");
    let leftovers = std::fs::read_dir(&dir).unwrap().count();
    assert_eq!(leftovers, 1, "no temporary file is left behind");
    let _ = std::fs::remove_dir_all(&dir);
}
