//! An accept loop out of file descriptors backs off instead of spinning. (Its own test binary:
//! it lowers the process's open-file limit.)

use braid_daemon::frontend::gate::{accept, Counters, BACKOFF};
use std::sync::atomic::Ordering;
use std::time::Duration;
use tokio::net::TcpListener;

fn set_open_file_limit(soft: u64) -> libc::rlimit {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit/setrlimit only read and write the struct passed to them.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim), 0);
        let old = lim;
        lim.rlim_cur = soft.min(lim.rlim_max);
        assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &lim), 0);
        old
    }
}

#[tokio::test(flavor = "current_thread")]
async fn accept_backs_off_while_out_of_file_descriptors() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    // A connection waits in the backlog: the listener stays readable while accept fails.
    let _client = std::net::TcpStream::connect(addr).unwrap();
    let open_now = std::fs::read_dir("/proc/self/fd").unwrap().count() as u64;
    let old = set_open_file_limit(open_now + 16);
    let mut hog = Vec::new();
    let full = loop {
        match std::fs::File::open("/dev/null") {
            Ok(f) => hog.push(f),
            Err(e) => break e,
        }
        assert!(hog.len() < 64, "the open-file limit did not take");
    };
    assert_eq!(full.raw_os_error(), Some(libc::EMFILE), "{full}");

    let counters = Counters::default();
    let window = Duration::from_secs(1);
    let r = tokio::time::timeout(window, accept(&listener, "test", &counters)).await;
    assert!(r.is_err(), "a connection was accepted with no descriptor free");
    let tries = counters.accept_errors.load(Ordering::Relaxed);
    let bound = window.as_millis() / BACKOFF.as_millis() + 2;
    assert!(tries >= 2, "accept was not retried: {tries}");
    assert!(
        tries as u128 <= bound,
        "accept spun: {tries} failed tries in {window:?} (at most {bound} with back-off)"
    );

    hog.truncate(hog.len() - 2);
    let accepted = tokio::time::timeout(Duration::from_secs(5), accept(&listener, "test", &counters)).await;
    let (_conn, peer) = accepted.expect("accepted once a descriptor was free");
    assert_eq!(peer.ip(), addr.ip());
    drop(hog);
    // SAFETY: as above.
    unsafe {
        libc::setrlimit(libc::RLIMIT_NOFILE, &old);
    }
}
