//! The protocol core's CPU per GB, without sockets: `cargo bench -p braid-core --bench session`.
//!
//! A client session with one path, then two, writes one stream to the server through a
//! lossless in-memory network with a 1 ms round trip, in GSO-shaped batches as the daemon
//! sends them; the server reads every byte and its ACKs go back. Each side's thread CPU time
//! (CLOCK_THREAD_CPUTIME_ID, so other load on the machine does not count) is reported as
//! CPU-seconds per GB, next to the cost of the AEAD alone, so that what the session adds on
//! top of sealing and opening shows. The wire copies each datagram once (as a socket would);
//! that copy counts to the sender, and the receiver copies each batch into one buffer split
//! per datagram, as the daemon's recvmmsg does. `bench/loopback.sh` measures the same through the daemons
//! and UDP sockets.

#[path = "../tests/common/mod.rs"]
mod common;

use braid_core::crypto::aead::{Cipher, PacketKey};
use braid_core::session::batch::TransmitBatch;
use braid_core::*;
use bytes::{Bytes, BytesMut};
use common::*;
use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::VecDeque;
use std::hint::black_box;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Counts heap allocations, so that the per-datagram figure shows (issue 13 asks for
/// allocation-free per-packet work).
struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

// SAFETY: every call is forwarded unchanged to the system allocator.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const GSO_SEGMENTS: usize = 16;
const WRITE: usize = 64 * 1024;
/// Simulated time per round of both sides; each round reads the CPU clock twice.
const STEP_US: u64 = 100;
/// One-way delay of the in-memory network (a loopback-like round trip of 1 ms).
const ONE_WAY_US: u64 = 500;

/// CPU time this thread has run, in nanoseconds.
fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec through a valid pointer.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// One direction of the in-memory network: datagrams leave after a fixed one-way delay.
#[derive(Default)]
struct Wire {
    queue: VecDeque<(Timestamp, SocketAddr, SocketAddr, BytesMut)>,
}

impl Wire {
    fn push(&mut self, at: Timestamp, from: SocketAddr, to: SocketAddr, bytes: &[u8]) {
        self.queue.push_back((at + Duration::from_micros(ONE_WAY_US), from, to, BytesMut::from(bytes)));
    }

    fn pop_due(&mut self, now: Timestamp) -> Option<(SocketAddr, SocketAddr, BytesMut)> {
        if self.queue.front().is_some_and(|d| d.0 <= now) {
            self.queue.pop_front().map(|(_, f, t, b)| (f, t, b))
        } else {
            None
        }
    }
}

/// Sender-side and receiver-side CPU nanoseconds, the bytes the server read and the datagrams
/// it was given, for a transfer of `bytes` over `paths` paths.
fn transfer(bytes: usize, paths: usize) -> Transfer {
    let mut p = Pair::good_with(SessionConfig { cipher: Cipher::fastest_here(), ..SessionConfig::default() });
    let (mut up, mut down) = (Wire::default(), Wire::default());
    // The handshake and the second path's validation cross the same delayed wire, so that
    // the paths start with the wire's round-trip time.
    let mut buf = Vec::new();
    for step in 0..2_000 {
        p.now += Duration::from_micros(STEP_US);
        if step == 500 && paths > 1 {
            p.client.add_path(p.now, Some(addr(CLIENT_2)), addr(SERVER)).expect("second path");
        }
        if p.client.poll_timeout().is_some_and(|t| t <= p.now) {
            p.client.handle_timeout(p.now);
        }
        while let Some(t) = p.client.poll_transmit(p.now, &mut buf) {
            up.push(p.now, t.source.unwrap_or(addr(CLIENT)), t.destination, &buf[..t.size]);
        }
        if let Some(s) = p.server.as_mut().filter(|s| s.poll_timeout().is_some_and(|t| t <= p.now)) {
            s.handle_timeout(p.now);
        }
        while let Some((from, _, d)) = up.pop_due(p.now) {
            for a in p.deliver_to_server(from, &d) {
                down.push(p.now, a.from, a.to, &a.bytes);
            }
        }
        while let Some((from, to, a)) = down.pop_due(p.now) {
            p.client.handle_datagram(p.now, Some(to), from, a);
        }
    }
    assert!(p.client.is_established() && p.server.is_some(), "handshake");
    assert_eq!(p.client.path_ids().len(), paths, "every path is open");
    let (client, server_addr) = (addr(CLIENT), addr(SERVER));
    let id = p.client.open_stream(0).expect("stream");
    let chunk = Bytes::from((0..WRITE).map(|i| (i * 7 % 251) as u8).collect::<Vec<u8>>());
    let (mut written, mut received, mut datagrams) = (0usize, 0usize, 0u64);
    let (mut client_cost, mut server_cost) = (Cost::default(), Cost::default());
    let mut out = TransmitBatch::new();
    let mut ack_buf = Vec::new();
    let mut due = Vec::new();
    let mut steps = 0u64;
    let mut lap = Lap::start();
    while received < bytes {
        steps += 1;
        assert!(steps < 10_000_000, "the transfer stalled at {received} of {bytes} bytes");
        p.now += Duration::from_micros(STEP_US);
        // Client: the ACKs that arrived, what the stream takes, then batches.
        while let Some((from, to, a)) = down.pop_due(p.now) {
            p.client.handle_datagram(p.now, Some(to), from, a);
        }
        while written < bytes && p.client.write_room(id).expect("room") >= WRITE as u64 {
            p.client.write_bytes(id, chunk.clone()).expect("write");
            written += WRITE;
        }
        if p.client.poll_timeout().is_some_and(|t| t <= p.now) {
            p.client.handle_timeout(p.now);
        }
        while let Some(b) = p.client.poll_transmit_batch(p.now, GSO_SEGMENTS, &mut out) {
            for d in out.contents().chunks(b.segment_size) {
                up.push(p.now, b.source.unwrap_or(client), b.destination, d);
            }
        }
        lap.charge(&mut client_cost);
        // Server: every datagram due, the reads, the ACKs.
        let server = p.server.as_mut().expect("server session");
        // As the daemon receives datagrams smaller than half a receive slot: one buffer per
        // batch (recvmmsg), split per datagram.
        due.clear();
        while let Some(d) = up.pop_due(p.now) {
            due.push(d);
        }
        let mut batch = BytesMut::with_capacity(due.iter().map(|d| d.2.len()).sum());
        for (_, _, d) in &due {
            batch.extend_from_slice(d);
        }
        for (from, to, d) in &due {
            datagrams += 1;
            server.handle_datagram(p.now, Some(*to), *from, batch.split_to(d.len()));
        }
        while let Some(e) = server.poll_event() {
            black_box(e);
        }
        while let Ok(Some(c)) = server.read_chunk(id, usize::MAX) {
            received += c.len();
        }
        if server.poll_timeout().is_some_and(|t| t <= p.now) {
            server.handle_timeout(p.now);
        }
        while let Some(t) = server.poll_transmit(p.now, &mut ack_buf) {
            down.push(p.now, server_addr, t.destination, &ack_buf[..t.size]);
        }
        lap.charge(&mut server_cost);
    }
    let simulated = steps as f64 * STEP_US as f64 / 1e6;
    eprintln!(
        "{paths} path(s): {steps} steps, {simulated:.2} s simulated, {:.2} Gbit/s",
        received as f64 * 8.0 / simulated / 1e9
    );
    Transfer { client: client_cost, server: server_cost, received, datagrams }
}

/// CPU time and allocations charged to one side.
#[derive(Default)]
struct Cost {
    ns: u64,
    allocs: u64,
}

/// The CPU clock and allocation count since the last charge.
struct Lap {
    ns: u64,
    allocs: u64,
}

impl Lap {
    fn start() -> Self {
        Lap { ns: thread_cpu_ns(), allocs: ALLOCATIONS.load(Ordering::Relaxed) }
    }

    /// Charges what was spent since the last charge to `side`.
    fn charge(&mut self, side: &mut Cost) {
        let now = Lap::start();
        side.ns += now.ns - self.ns;
        side.allocs += now.allocs - self.allocs;
        *self = now;
    }
}

/// What one transfer cost each side.
struct Transfer {
    client: Cost,
    server: Cost,
    received: usize,
    datagrams: u64,
}

/// CPU-seconds per GB of sealing plus opening 1452-byte packets with `cipher`.
fn aead_cost(cipher: Cipher) -> f64 {
    const N: u64 = 100_000;
    let key = PacketKey::new(cipher, &[7; 32]);
    let mut buf = vec![0x5a; 1452];
    let t0 = thread_cpu_ns();
    for pn in 0..N {
        buf.truncate(1452 - 16);
        key.seal(0, pn, &mut buf, 16);
        black_box(key.open(0, pn, &mut buf, 16).expect("opens"));
    }
    (thread_cpu_ns() - t0) as f64 / 1e9 / (N as f64 * 1452.0 / 1e9)
}

fn main() {
    // `cargo test --benches` runs this too; keep that quick. `-- --bytes N` sets the transfer
    // (a small one suits `valgrind --tool=callgrind`, whose instruction counts do not vary
    // with the machine's load as CPU time does).
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--test");
    let asked = args.iter().position(|a| a == "--bytes").and_then(|i| args.get(i + 1)?.parse().ok());
    let bytes = asked.unwrap_or(if quick { 2_000_000 } else { 1_000_000_000 });
    let aead = aead_cost(Cipher::fastest_here());
    println!(
        "{:<6} {:>7} {:>12} {:>12} {:>12} {:>15} {:>15}",
        "paths", "GB", "client s/GB", "server s/GB", "ns/datagram", "client allocs/d", "server allocs/d"
    );
    for paths in [1, 2] {
        let t = transfer(bytes, paths);
        let gb = t.received as f64 / 1e9;
        let per = |n: u64| n as f64 / t.datagrams as f64;
        println!(
            "{:<6} {:>7.3} {:>12.3} {:>12.3} {:>12.0} {:>15.2} {:>15.2}",
            paths,
            gb,
            t.client.ns as f64 / 1e9 / gb,
            t.server.ns as f64 / 1e9 / gb,
            per(t.client.ns + t.server.ns),
            per(t.client.allocs),
            per(t.server.allocs)
        );
    }
    println!("(the wire's copy of each datagram, one allocation, counts to the client; one per batch to the server)");
    println!("AEAD alone ({}): seal + open {:.3} CPU-s per GB", Cipher::fastest_here().name(), aead);
}
