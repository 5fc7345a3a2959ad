//! The simulated network: N links between the client's addresses and the server's, an event
//! queue of packets in flight, and a digest of every byte that crossed it (same seed, same
//! digest).

use crate::link::{Direction, Fate, LinkSpec, Medium};
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

/// The server's address in the simulation.
pub const SERVER: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 255, 0, 1)), 443);

/// The client's address on link `i`.
pub fn client_addr(i: usize) -> SocketAddr {
    SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, i as u8, 1)), 4000)
}

/// The link a client address belongs to.
pub fn link_of(addr: SocketAddr) -> Option<usize> {
    match addr.ip() {
        IpAddr::V4(ip) if ip.octets()[0] == 10 && ip.octets()[1] == 0 => Some(ip.octets()[2] as usize),
        _ => None,
    }
}

/// A packet in flight.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Arrival {
    /// Arrival time.
    pub at: Duration,
    seq: u64,
    /// True when it travels client → server.
    pub to_server: bool,
    /// Link index.
    pub link: usize,
    /// The UDP payload.
    pub data: Vec<u8>,
}

/// Per-link counters.
#[derive(Debug, Clone, Default)]
pub struct LinkCounters {
    /// Wire bytes offered upstream (client → server).
    pub up_bytes: u64,
    /// Wire bytes offered downstream (server → client).
    pub down_bytes: u64,
    /// Drops upstream: queue, wire, down.
    pub up_drops: [u64; 3],
    /// Drops downstream: queue, wire, down.
    pub down_drops: [u64; 3],
}

/// The network.
pub struct Net {
    /// Link specs.
    pub specs: Vec<LinkSpec>,
    up: Vec<Direction>,
    down: Vec<Direction>,
    /// Each link's transmitter for both directions, used when it is a shared medium.
    media: Vec<Medium>,
    queue: BinaryHeap<Reverse<Arrival>>,
    seq: u64,
    digest: WireDigest,
}

/// A 64-bit digest of a sequence of datagrams, 32 bytes at a time in four independent lanes
/// (every simulated byte passes through it: SipHash cost 4 % of a run). Not cryptographic: it
/// tells runs apart.
#[derive(Debug, Clone, Copy, Default)]
struct WireDigest([u64; 4]);

impl WireDigest {
    const K: u64 = 0x517c_c1b7_2722_0a95;

    fn mix(lane: &mut u64, word: u64) {
        *lane = (lane.rotate_left(5) ^ word).wrapping_mul(Self::K);
    }

    /// Adds one datagram (its length too, so that boundaries count).
    fn write(&mut self, data: &[u8]) {
        Self::mix(&mut self.0[0], data.len() as u64);
        let mut blocks = data.chunks_exact(32);
        for block in &mut blocks {
            for (lane, w) in self.0.iter_mut().zip(block.chunks_exact(8)) {
                Self::mix(lane, u64::from_le_bytes(w.try_into().unwrap_or_default()));
            }
        }
        let mut tail = [0u8; 32];
        let rest = blocks.remainder();
        tail[..rest.len()].copy_from_slice(rest);
        for (lane, w) in self.0.iter_mut().zip(tail.chunks_exact(8)) {
            Self::mix(lane, u64::from_le_bytes(w.try_into().unwrap_or_default()));
        }
    }

    fn finish(&self) -> u64 {
        // The lanes folded, then a final avalanche (splitmix64's): close inputs give far-apart
        // digests.
        let mut z = self.0.iter().fold(0u64, |acc, l| (acc.rotate_left(17) ^ l).wrapping_mul(Self::K));
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

impl Net {
    /// A network of `specs`, its randomness derived from `seed`.
    pub fn new(specs: Vec<LinkSpec>, seed: u64) -> Self {
        let dir = |i: usize, d: u64| {
            Direction::new(ChaCha8Rng::seed_from_u64(
                seed ^ (0x9e37_79b9_7f4a_7c15u64.wrapping_mul(2 * i as u64 + d + 1)),
            ))
        };
        Net {
            up: (0..specs.len()).map(|i| dir(i, 0)).collect(),
            down: (0..specs.len()).map(|i| dir(i, 1).server_to_client()).collect(),
            media: (0..specs.len()).map(|_| Medium::default()).collect(),
            specs,
            queue: BinaryHeap::new(),
            seq: 0,
            digest: Default::default(),
        }
    }

    /// Sends a datagram on `link` at `now`.
    pub fn send(&mut self, now: Duration, link: usize, to_server: bool, data: &[u8]) {
        self.digest.write(data);
        let Some(spec) = self.specs.get(link) else {
            return;
        };
        let dir = if to_server { &mut self.up[link] } else { &mut self.down[link] };
        if let Fate::Arrives(at, dup) = dir.offer_with(&mut self.media[link], spec, now, data.len()) {
            for at in std::iter::once(at).chain(dup) {
                self.seq += 1;
                self.queue.push(Reverse(Arrival { at, seq: self.seq, to_server, link, data: data.to_vec() }));
            }
        }
    }

    /// When the next packet arrives.
    pub fn next_arrival(&self) -> Option<Duration> {
        self.queue.peek().map(|Reverse(a)| a.at)
    }

    /// Takes the next packet arriving at or before `now`.
    pub fn pop_due(&mut self, now: Duration) -> Option<Arrival> {
        if self.queue.peek().is_some_and(|Reverse(a)| a.at <= now) {
            self.queue.pop().map(|Reverse(a)| a)
        } else {
            None
        }
    }

    /// A digest of every byte sent so far.
    pub fn digest(&self) -> u64 {
        self.digest.finish()
    }

    /// Counters of link `i`.
    pub fn counters(&self, i: usize) -> LinkCounters {
        LinkCounters {
            up_bytes: self.up[i].bytes_offered,
            down_bytes: self.down[i].bytes_offered,
            up_drops: self.up[i].drops,
            down_drops: self.down[i].drops,
        }
    }
}
