//! The floor under braid's loopback figures: a TCP port forward that carries each direction of
//! a connection as AES-256-GCM-sealed UDP datagrams of braid's size, sent in GSO batches and
//! received with GRO (quinn-udp), and nothing else — no session, no acknowledgements on the
//! wire, no loss recovery, no congestion control, no scheduler. The sender waits only on an
//! in-process count of what the receiving thread has written (a flow-control window that costs
//! no packets).
//!
//! Any design that terminates TCP at the client, seals it into UDP and writes it out again at
//! the server pays at least this much CPU per byte on the same machine: two TCP sockets' user
//! ends, a UDP send and receive, a seal and an open per datagram. `bench/loopback.sh --floor`
//! runs it beside plain TCP and braid, so braid's own cost is what it spends above this floor.
//!
//! ```text
//! cargo run --release -p braid-emu --example floor_relay -- LISTEN TARGET [DATAGRAM]
//! e.g. floor_relay 127.0.0.1:5301 127.0.0.1:5297
//! ```
//!
//! DATAGRAM is the size of each UDP datagram (default 1452, braid's starting size; up to
//! 65,000, what braid's paths reach on loopback by their MTU search), so that braid can be
//! set beside the floor at the size it sends.
//!
//! It aborts a tunnel (closing both TCP ends) if a datagram is lost, reordered or fails to
//! open: a floor that silently dropped data would measure less work than was asked.

use quinn_udp::{RecvMeta, Transmit, UdpSockRef, UdpSocketState};
use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_256_GCM};
use std::io::{self, IoSlice, IoSliceMut, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::{self, Thread};
use std::time::Duration;

/// One datagram on the wire unless the command line says otherwise, as braid's paths start:
/// 1452 bytes (a 1500-byte IPv6 MTU less 48).
const DATAGRAM: usize = 1452;
/// Most bytes one GSO send carries.
const MAX_BATCH: usize = 64_000;
/// The header: the datagram's sequence number, sent in clear and authenticated.
const HEADER: usize = 8;
/// AES-GCM's tag.
const TAG: usize = 16;
/// A sequence number with this bit set ends the direction (the TCP reader saw EOF).
const FIN: u64 = 1 << 63;
/// Bytes the sender may have sent beyond what the receiving thread has written.
const WINDOW: u64 = 1 << 20;
/// Receive slots of one `recvmmsg`, each large enough for a GRO batch.
const SLOTS: usize = 8;

fn main() -> io::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let (listen, target, datagram) = match args.as_slice() {
        [_, l, t] => (l, t, DATAGRAM),
        [_, l, t, d] => match d.parse::<usize>() {
            Ok(d) if (64..=65_000).contains(&d) => (l, t, d),
            _ => usage(),
        },
        _ => usage(),
    };
    let listener = TcpListener::bind(listen)?;
    for conn in listener.incoming() {
        let a = conn?;
        let b = match TcpStream::connect(target) {
            Ok(b) => b,
            Err(e) => {
                eprintln!("floor_relay: cannot reach {target}: {e}");
                continue;
            }
        };
        a.set_nodelay(true)?;
        b.set_nodelay(true)?;
        tunnel(a.try_clone()?, b.try_clone()?, datagram)?;
        tunnel(b, a, datagram)?;
    }
    Ok(())
}

fn usage() -> ! {
    eprintln!("usage: floor_relay LISTEN TARGET [DATAGRAM]   (e.g. 127.0.0.1:5301 127.0.0.1:5297 1452; DATAGRAM 64..65000)");
    std::process::exit(2);
}

/// Carries what `from` reads to `to` through a pair of UDP sockets on loopback, in datagrams
/// of `datagram` bytes.
fn tunnel(from: TcpStream, to: TcpStream, datagram: usize) -> io::Result<()> {
    let tx = UdpSocket::bind("127.0.0.1:0")?;
    let rx = UdpSocket::bind("127.0.0.1:0")?;
    socket2::SockRef::from(&rx).set_recv_buffer_size(4 << 20)?;
    socket2::SockRef::from(&tx).set_send_buffer_size(4 << 20)?;
    tx.connect(rx.local_addr()?)?;
    let mut key_bytes = [0u8; 32];
    getrandom(&mut key_bytes)?;
    let key = Arc::new(LessSafeKey::new(UnboundKey::new(&AES_256_GCM, &key_bytes).expect("32-byte key")));
    let written = Arc::new(AtomicU64::new(0));
    let failed = Arc::new(AtomicBool::new(false));
    let (k, w, f) = (key.clone(), written.clone(), failed.clone());
    let sender = thread::spawn(move || {
        // A TCP error ends the tunnel quietly: iperf3 closes its connections mid-stream.
        let _ = send_loop(from, tx, datagram, &k, &w, &f);
    });
    let sender_thread = sender.thread().clone();
    thread::spawn(move || {
        if let Err(e) = receive_loop(rx, &to, &key, &written, &sender_thread) {
            if e.kind() == io::ErrorKind::InvalidData {
                eprintln!("floor_relay: {e}");
            }
            failed.store(true, Ordering::Relaxed);
            sender_thread.unpark();
            let _ = to.shutdown(Shutdown::Both);
        }
    });
    Ok(())
}

/// A datagram lost, reordered, cut short or forged: the only errors the relay reports (the
/// benchmark fails on them).
fn corrupt(what: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what)
}

fn getrandom(buf: &mut [u8]) -> io::Result<()> {
    std::fs::File::open("/dev/urandom")?.read_exact(buf)
}

fn nonce(seq: u64) -> Nonce {
    let mut n = [0u8; 12];
    n[4..].copy_from_slice(&seq.to_be_bytes());
    Nonce::assume_unique_for_key(n)
}

/// Reads TCP, seals it into datagrams of `datagram` bytes and sends them in GSO batches.
fn send_loop(
    mut from: TcpStream,
    tx: UdpSocket,
    datagram: usize,
    key: &LessSafeKey,
    written: &AtomicU64,
    failed: &AtomicBool,
) -> io::Result<()> {
    let state = UdpSocketState::new(UdpSockRef::from(&tx))?;
    tx.set_nonblocking(false)?; // quinn-udp leaves it non-blocking; these threads block
    let segments = state.max_gso_segments().clamp(1, 44).min(MAX_BATCH / datagram).max(1);
    let payload = datagram - HEADER - TAG;
    let dest = tx.peer_addr()?;
    let mut plain = vec![0u8; segments * payload];
    let mut batch = vec![0u8; segments * datagram];
    let (mut seq, mut sent) = (0u64, 0u64);
    loop {
        while sent.saturating_sub(written.load(Ordering::Acquire)) > WINDOW {
            if failed.load(Ordering::Relaxed) {
                return Err(io::Error::other("the receiver failed"));
            }
            thread::park_timeout(Duration::from_millis(5));
        }
        let n = from.read(&mut plain)?;
        let mut len = 0;
        for chunk in plain[..n].chunks(payload) {
            let s = seq;
            seq += 1;
            let d = &mut batch[len..len + HEADER + chunk.len() + TAG];
            d[..HEADER].copy_from_slice(&s.to_be_bytes());
            d[HEADER..HEADER + chunk.len()].copy_from_slice(chunk);
            let (header, rest) = d.split_at_mut(HEADER);
            let (body, tag_out) = rest.split_at_mut(chunk.len());
            let tag = key
                .seal_in_place_separate_tag(nonce(s), Aad::from(&*header), body)
                .map_err(|_| io::Error::other("seal"))?;
            tag_out.copy_from_slice(tag.as_ref());
            len += HEADER + chunk.len() + TAG;
        }
        if n == 0 {
            // End of this direction: one datagram of a header and a tag.
            let d = &mut batch[..HEADER + TAG];
            d[..HEADER].copy_from_slice(&(seq | FIN).to_be_bytes());
            let (header, tag_out) = d.split_at_mut(HEADER);
            let tag = key
                .seal_in_place_separate_tag(nonce(seq | FIN), Aad::from(&*header), &mut [])
                .map_err(|_| io::Error::other("seal"))?;
            tag_out.copy_from_slice(tag.as_ref());
            len = HEADER + TAG;
        }
        let segment = (len > datagram).then_some(datagram);
        let t = Transmit {
            destination: dest,
            ecn: None,
            contents: &batch[..len],
            segment_size: segment,
            src_ip: None,
        };
        state.try_send(UdpSockRef::from(&tx), &t)?;
        sent += n as u64;
        if n == 0 {
            return Ok(());
        }
    }
}

/// Receives GRO batches, opens each datagram in order and writes its payload to TCP.
fn receive_loop(
    rx: UdpSocket,
    mut to: &TcpStream,
    key: &LessSafeKey,
    written: &AtomicU64,
    sender: &Thread,
) -> io::Result<()> {
    // Non-blocking, as quinn-udp leaves it: a blocking recvmmsg would wait for all its slots.
    let state = UdpSocketState::new(UdpSockRef::from(&rx))?;
    let mut bufs = vec![vec![0u8; 65536]; SLOTS];
    let mut metas = vec![RecvMeta::default(); SLOTS];
    let mut plain: Vec<(usize, usize, usize)> = Vec::with_capacity(SLOTS * 64);
    let mut expected = 0u64;
    loop {
        let n = {
            let mut iovs: Vec<IoSliceMut<'_>> = bufs.iter_mut().map(|b| IoSliceMut::new(b)).collect();
            match state.recv(UdpSockRef::from(&rx), &mut iovs, &mut metas) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    let mut fd = libc::pollfd { fd: rx.as_raw_fd(), events: libc::POLLIN, revents: 0 };
                    // SAFETY: one valid pollfd for the duration of the call.
                    if unsafe { libc::poll(&mut fd, 1, -1) } < 0 {
                        return Err(io::Error::last_os_error());
                    }
                    continue;
                }
                Err(e) => return Err(e),
            }
        };
        plain.clear();
        let mut fin = false;
        for (slot, (meta, buf)) in metas[..n].iter().zip(bufs.iter_mut()).enumerate() {
            let stride = meta.stride.max(1);
            for (k, d) in buf[..meta.len].chunks_mut(stride).enumerate() {
                if d.len() < HEADER + TAG {
                    return Err(corrupt("short datagram".into()));
                }
                let s = u64::from_be_bytes(d[..HEADER].try_into().expect("8 bytes"));
                if s & !FIN != expected {
                    return Err(corrupt(format!("datagram {} where {expected} was due", s & !FIN)));
                }
                expected += 1;
                let (header, body) = d.split_at_mut(HEADER);
                let len = key
                    .open_in_place(nonce(s), Aad::from(&*header), body)
                    .map_err(|_| corrupt("a datagram failed to open".into()))?
                    .len();
                plain.push((slot, k * stride + HEADER, len));
                fin |= s & FIN != 0;
            }
        }
        // The plaintexts go out where they were opened: one vectored write, no copy.
        let mut slices: Vec<IoSlice<'_>> =
            plain.iter().map(|&(slot, start, len)| IoSlice::new(&bufs[slot][start..start + len])).collect();
        let total: usize = plain.iter().map(|p| p.2).sum();
        let mut left = &mut slices[..];
        while !left.is_empty() {
            let w = to.write_vectored(left)?;
            if w == 0 {
                return Err(io::Error::new(io::ErrorKind::WriteZero, "TCP closed"));
            }
            IoSlice::advance_slices(&mut left, w);
        }
        written.fetch_add(total as u64, Ordering::Release);
        sender.unpark();
        if fin {
            return to.shutdown(Shutdown::Write);
        }
    }
}
