//! The client against a one-shot server on loopback that records the request it got.

use super::*;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::thread::JoinHandle;

const LIMIT: Duration = Duration::from_secs(5);

/// Answers one request with `answer`; joins to the request's head and body.
fn serve_once(answer: &'static str) -> (SocketAddr, JoinHandle<(String, String)>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let h = std::thread::spawn(move || {
        let (s, _) = l.accept().unwrap();
        let mut r = BufReader::new(s);
        let (mut head, mut len) = (String::new(), 0usize);
        loop {
            let mut line = String::new();
            r.read_line(&mut line).unwrap();
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                len = v.trim().parse().unwrap();
            }
            if line == "\r\n" {
                break;
            }
            head += &line;
        }
        let mut body = vec![0; len];
        r.read_exact(&mut body).unwrap();
        r.get_mut().write_all(answer.as_bytes()).unwrap();
        (head, String::from_utf8(body).unwrap())
    });
    (addr, h)
}

#[test]
fn get_returns_the_body_of_a_200() {
    let (addr, h) = serve_once("HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\n{\"a\": true}");
    assert_eq!(get_ok(addr, "/status", LIMIT).unwrap(), "{\"a\": true}");
    let (head, _) = h.join().unwrap();
    assert!(head.starts_with("GET /status HTTP/1.1\r\n"), "{head}");
    assert!(head.to_ascii_lowercase().contains(&format!("host: {addr}")), "{head}");
}

#[test]
fn post_sends_the_token_and_the_body() {
    let (addr, h) = serve_once("HTTP/1.1 403 Forbidden\r\nContent-Length: 9\r\n\r\nbad token");
    let r = exchange(connect(addr, LIMIT).unwrap(), addr, Request::post("/scheduler", "edpf", "t0k"), LIMIT);
    assert_eq!(r.unwrap(), Response { status: 403, body: "bad token".into() });
    let (head, body) = h.join().unwrap();
    assert!(head.starts_with("POST /scheduler HTTP/1.1\r\n"), "{head}");
    assert!(head.to_ascii_lowercase().contains("authorization: bearer t0k"), "{head}");
    assert_eq!(body, "edpf");
}

#[test]
fn an_answer_other_than_200_is_an_error_for_get_ok() {
    let (addr, _h) = serve_once("HTTP/1.1 404 Not Found\r\nContent-Length: 4\r\n\r\nnope");
    let e = get_ok(addr, "/status", LIMIT).unwrap_err().to_string();
    assert_eq!(e, format!("{addr} answered HTTP 404 to /status: nope"));
}

#[test]
fn a_closed_port_says_it_cannot_reach_the_address() {
    let addr = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let e = get(addr, "/status", LIMIT).unwrap_err();
    assert!(matches!(e, Error::Connect { .. }), "{e:?}");
    assert!(e.to_string().starts_with(&format!("cannot reach {addr}: ")), "{e}");
}

#[test]
fn a_server_that_never_answers_times_out() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let e = get(addr, "/status", Duration::from_millis(200)).unwrap_err();
    assert!(matches!(e, Error::Timeout { .. }), "{e:?}");
    drop(l);
}

#[test]
fn works_from_inside_a_runtime() {
    let (addr, _h) = serve_once("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    assert_eq!(rt.block_on(async { get_ok(addr, "/", LIMIT) }).unwrap(), "ok");
}
