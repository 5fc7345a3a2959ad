//! Receiving: batched (recvmmsg, GRO) into buffers the large datagrams keep.

use super::UdpLink;
use bytes::BytesMut;
use quinn_udp::{RecvMeta, UdpSockRef};
use smallvec::SmallVec;
use std::collections::VecDeque;
use std::io::{self, IoSliceMut};
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use tokio::io::Interest;

/// Datagrams handed to the driver in one batch.
const RECV_SLOTS: usize = 32;

/// A datagram as received.
#[derive(Debug)]
pub struct Incoming {
    /// Its bytes.
    pub data: BytesMut,
    /// Who sent it.
    pub from: SocketAddr,
    /// The local address it arrived on (when the kernel says).
    pub local: Option<SocketAddr>,
}

/// Batched receiving from one socket (recvmmsg, GRO); large datagrams keep the buffers they
/// arrived in.
///
/// Each `recvmmsg` slot is a buffer of its own. When what the kernel wrote into a slot fills
/// at least half of it (a large datagram, or a GRO train of a bulk flow), it is split off as
/// the datagrams and handed out as it is, and the rest of the buffer is lent until the
/// session lets go of them. A slot is refilled with a lent buffer whose datagrams are gone
/// (its allocation reclaimed, `BytesMut::try_reclaim`), else with a new one. Copying each
/// batch into one allocation cost 5.9 % of a downloading client's CPU (`perf record` during
/// `bench/loopback.sh --download`). Smaller datagrams are still copied, one allocation per
/// batch: lent a 64 KB slot each, a server's 1,000 idle sessions held 61–63 MB instead of 50
/// (`many_sessions --sessions 1000 --active 0`), their keepalives waiting in the sessions'
/// queues.
pub struct Receiver {
    /// The buffers the next `recvmmsg` fills: once [`Receiver::refill`] has run, `slot` bytes
    /// each, every byte initialised (a slot the last batch lent is empty until then).
    slots: Vec<BytesMut>,
    /// What is left of buffers whose front went out as datagrams, oldest first; at most
    /// [`LENT_KEPT`].
    lent: VecDeque<Lent>,
    /// Bytes of one slot.
    slot: usize,
    /// Buffers needed at once (lent ones still held plus a batch's slots), the most in the
    /// current and the previous [`DEMAND_WINDOW`]: lent buffers beyond it are let go.
    demand: Demand,
    metas: Vec<RecvMeta>,
}

/// Lent buffers a [`Receiver`] keeps track of for reuse; older ones are left to their
/// datagrams and freed with them.
const LENT_KEPT: usize = 2 * RECV_SLOTS;

/// The rest of a slot's buffer whose front went out as datagrams, and where that buffer's
/// allocation starts (an address, not a pointer to read through): only that allocation is
/// taken back as a slot.
struct Lent {
    rest: BytesMut,
    base: usize,
}

impl Receiver {
    /// Buffers for `link`.
    pub fn new(link: &UdpLink) -> Self {
        let gro = link.state.gro_segments().max(1);
        let slot = 65536.min(1500 * gro).max(2048);
        Receiver {
            slots: (0..RECV_SLOTS).map(|_| BytesMut::zeroed(slot)).collect(),
            lent: VecDeque::new(),
            slot,
            demand: Demand::default(),
            metas: vec![RecvMeta::default(); RECV_SLOTS],
        }
    }

    /// The next batch of datagrams (None when the socket failed for good).
    pub async fn next(&mut self, link: &UdpLink) -> Option<Vec<Incoming>> {
        let mut batch = Vec::new();
        loop {
            link.socket.readable().await.ok()?;
            if self.try_batch(link, &mut batch) {
                return Some(batch);
            }
        }
    }

    /// Reads one batch (one `recvmmsg`) without waiting, appending its datagrams to `out`;
    /// false when nothing was waiting.
    pub fn try_batch(&mut self, link: &UdpLink, out: &mut Vec<Incoming>) -> bool {
        self.refill(Instant::now());
        let mut iovs: SmallVec<[IoSliceMut<'_>; RECV_SLOTS]> =
            self.slots.iter_mut().map(|b| IoSliceMut::new(b)).collect();
        let n = match link.socket.try_io(Interest::READABLE, || {
            link.state.recv(UdpSockRef::from(&*link.socket), &mut iovs, &mut self.metas)
        }) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return false,
            Err(e) => {
                // ICMP errors surface here as ECONNREFUSED and the like: note and go on.
                tracing::debug!(local = %link.local, error = %e, "receive error");
                link.drain_errors();
                return false;
            }
        };
        drop(iovs);
        // Datagrams that fill less than half their slot are copied, one allocation for the
        // batch, as a slot lent for them would hold many times their size while they wait.
        let lends = |len: usize| 2 * len >= self.slot;
        let small: usize = self.metas[..n].iter().map(|m| m.len).filter(|&l| !lends(l)).sum();
        let mut copies = BytesMut::with_capacity(small);
        for (meta, buf) in self.metas[..n].iter().zip(&mut self.slots) {
            let mut received = if lends(meta.len) {
                let base = buf.as_ptr() as usize;
                let received = buf.split_to(meta.len);
                self.lent.push_back(Lent { rest: std::mem::take(buf), base });
                received
            } else {
                copies.extend_from_slice(&buf[..meta.len]);
                copies.split()
            };
            let stride = meta.stride.max(1);
            let local = meta.dst_ip.map(|ip| SocketAddr::new(ip, link.local.port()));
            while !received.is_empty() {
                let len = stride.min(received.len());
                out.push(Incoming { data: received.split_to(len), from: meta.addr, local });
            }
        }
        while self.lent.len() > LENT_KEPT {
            self.lent.pop_front();
        }
        n > 0
    }

    /// Gives every slot the last batch lent a whole buffer again: a lent one whose datagrams
    /// are gone, else a new one. Then lets go of lent buffers beyond what was recently
    /// needed at once ([`Receiver::demand`]), at every call, so that a receiver that only
    /// gets small datagrams (copied, no slot used) after a burst gives the burst's back too.
    /// A socket that receives nothing at all is not called, and keeps them.
    fn refill(&mut self, now: Instant) {
        let slot = self.slot;
        let empty: SmallVec<[usize; RECV_SLOTS]> =
            (0..self.slots.len()).filter(|&i| self.slots[i].len() < slot).collect();
        if empty.is_empty() && self.lent.is_empty() {
            return;
        }
        let mut to_fill = empty.iter().copied();
        let mut held = 0;
        let slots = &mut self.slots;
        self.lent.retain_mut(|l| {
            if !reclaim(l, slot) {
                held += 1;
                return true;
            }
            match to_fill.next() {
                Some(i) => {
                    slots[i] = std::mem::take(&mut l.rest);
                    false
                }
                None => true,
            }
        });
        for i in to_fill {
            slots[i] = BytesMut::zeroed(slot);
        }
        let demand = self.demand.note(now, held + empty.len());
        let mut excess = self.lent.len().saturating_sub(demand);
        self.lent.retain_mut(|l| {
            if excess > 0 && reclaim(l, slot) {
                excess -= 1;
                return false;
            }
            true
        });
    }
}

/// How long a [`Receiver`] remembers how many buffers it needed at once. Datagrams are let
/// go in bursts (a driver's round, a stream read), so the need peaks now and then; a second
/// covers many peaks under load, and a receiver that is still called (a client's driver
/// round, a datagram of any size) gives a burst's buffers back within two.
const DEMAND_WINDOW: Duration = Duration::from_secs(1);

/// A maximum over the current and the previous [`DEMAND_WINDOW`].
#[derive(Default)]
struct Demand {
    current: usize,
    previous: usize,
    since: Option<Instant>,
}

impl Demand {
    /// `need` buffers were needed at `now`; returns the windowed maximum.
    fn note(&mut self, now: Instant, need: usize) -> usize {
        if self.since.is_none_or(|t| now.duration_since(t) >= DEMAND_WINDOW) {
            self.previous = if self.since.is_some_and(|t| now.duration_since(t) < 2 * DEMAND_WINDOW) {
                self.current
            } else {
                0
            };
            self.current = 0;
            self.since = Some(now);
        }
        self.current = self.current.max(need);
        self.current.max(self.previous)
    }
}

/// Makes `l`, what is left of a slot's buffer, a whole slot again if its datagrams are gone.
fn reclaim(l: &mut Lent, slot: usize) -> bool {
    let b = &mut l.rest;
    b.clear();
    if !b.try_reclaim(slot) || b.as_ptr() as usize != l.base || b.capacity() != slot {
        return false;
    }
    // SAFETY: `b` starts where its slot's allocation starts and spans exactly `slot` bytes,
    // the allocation `BytesMut::zeroed(slot)` made (`try_reclaim` never allocates, and only
    // succeeds when no datagram holds a part of it). Every byte of it was initialised then,
    // and written since only by the kernel and by the datagrams' holders, whose handles span
    // their own bytes only (a datagram split off a slot has no spare capacity).
    unsafe { b.set_len(slot) };
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Receives what `sender` sent to `link` until `n` datagrams are in `out` (2 s at most).
    async fn receive(rx: &mut Receiver, link: &UdpLink, n: usize) -> Vec<Incoming> {
        let mut out = Vec::new();
        let until = tokio::time::Instant::now() + std::time::Duration::from_secs(2);
        while out.len() < n && tokio::time::Instant::now() < until {
            let _ = tokio::time::timeout_at(until, link.socket.readable()).await;
            rx.try_batch(link, &mut out);
        }
        out
    }

    #[tokio::test]
    async fn large_datagrams_are_the_slots_bytes_and_a_slot_is_reused_once_let_go() {
        let link = UdpLink::bind("127.0.0.1:0".parse().unwrap(), None).unwrap();
        let sender = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let mut rx = Receiver::new(&link);
        let (big, bigger) = (rx.slot / 2 + 100, rx.slot / 2 + 3000);
        let slot_starts: Vec<*const u8> = rx.slots.iter().map(|b| b.as_ptr()).collect();
        sender.send_to(&vec![1u8; bigger], link.local).unwrap();
        let first = receive(&mut rx, &link, 1).await;
        assert_eq!(first.len(), 1);
        assert_eq!(&first[0].data[..], &vec![1u8; bigger][..]);
        assert!(
            slot_starts.contains(&first[0].data.as_ptr()),
            "the datagram is the slot's bytes, not a copy"
        );
        let held = first[0].data.as_ptr();
        // Held: the next datagram goes elsewhere and this one stays as it was.
        sender.send_to(&vec![2u8; big], link.local).unwrap();
        let second = receive(&mut rx, &link, 1).await;
        assert_eq!(&second[0].data[..], &vec![2u8; big][..]);
        assert_ne!(second[0].data.as_ptr(), held);
        assert_eq!(&first[0].data[..], &vec![1u8; bigger][..], "a held datagram is not written over");
        // Let go of: the slot takes its allocation back instead of a new one.
        drop(first);
        drop(second);
        sender.send_to(&vec![3u8; big], link.local).unwrap();
        let third = receive(&mut rx, &link, 1).await;
        assert_eq!(&third[0].data[..], &vec![3u8; big][..]);
        let mut starts: Vec<*const u8> = rx.slots.iter().map(|b| b.as_ptr()).collect();
        starts.push(third[0].data.as_ptr());
        assert!(starts.contains(&held), "the first datagram's allocation serves again");
        assert!(rx.lent.len() <= LENT_KEPT);
    }

    #[tokio::test]
    async fn a_bursts_buffers_are_given_back_once_a_quiet_while_needs_none() {
        let link = UdpLink::bind("127.0.0.1:0".parse().unwrap(), None).unwrap();
        let sender = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let mut rx = Receiver::new(&link);
        let big = rx.slot / 2 + 100;
        // A burst held by its session: every slot it used is lent, and more come in.
        let mut held = Vec::new();
        for round in 0..3u8 {
            for _ in 0..4 {
                sender.send_to(&vec![round; big], link.local).unwrap();
            }
            held.extend(receive(&mut rx, &link, 4).await);
        }
        assert_eq!(held.len(), 12);
        assert!(held.iter().enumerate().all(|(i, d)| d.data[..] == vec![(i / 4) as u8; big][..]));
        assert!(rx.lent.len() >= 8, "the slots of the held datagrams are lent: {}", rx.lent.len());
        drop(held);
        // Let go of, and nothing more needs a slot: a window later they are still kept (the
        // next round may need them), two windows later they are given back.
        let now = Instant::now();
        rx.refill(now + DEMAND_WINDOW / 2);
        assert!(!rx.lent.is_empty(), "kept within the window");
        rx.refill(now + 2 * DEMAND_WINDOW);
        rx.refill(now + 4 * DEMAND_WINDOW);
        assert!(rx.lent.is_empty(), "given back: {}", rx.lent.len());
        assert!(rx.slots.iter().all(|b| b.len() == rx.slot), "every slot whole again");
        // And receiving goes on.
        sender.send_to(&vec![9u8; big], link.local).unwrap();
        let next = receive(&mut rx, &link, 1).await;
        assert_eq!(&next[0].data[..], &vec![9u8; big][..]);
    }

    #[test]
    fn demand_remembers_a_burst_for_a_window_and_then_forgets_it() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let mut d = Demand::default();
        assert_eq!(d.note(at(0), 50), 50);
        assert_eq!(d.note(at(500), 2), 50, "a round's peak carries over the batches between");
        assert_eq!(d.note(at(1200), 1), 50, "and into the next window");
        assert_eq!(d.note(at(2300), 1), 1, "a window of small needs lets the burst's buffers go");
        assert_eq!(d.note(at(2400), 7), 7);
        assert_eq!(d.note(at(9000), 1), 1, "a long silence forgets everything");
    }

    #[tokio::test]
    async fn small_datagrams_are_copied_and_hold_no_slot() {
        let link = UdpLink::bind("127.0.0.1:0".parse().unwrap(), None).unwrap();
        let sender = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let mut rx = Receiver::new(&link);
        let slot_starts: Vec<*const u8> = rx.slots.iter().map(|b| b.as_ptr()).collect();
        for k in 0..3u8 {
            sender.send_to(&[k; 100], link.local).unwrap();
        }
        let got = receive(&mut rx, &link, 3).await;
        assert_eq!(
            got.iter().map(|d| d.data.to_vec()).collect::<Vec<_>>(),
            (0..3u8).map(|k| vec![k; 100]).collect::<Vec<_>>()
        );
        // A keepalive waiting in a session's queue must not keep a 64 KB slot alive.
        assert!(got.iter().all(|d| !slot_starts.contains(&d.data.as_ptr())));
        assert!(rx.lent.is_empty());
        assert!(rx.slots.iter().zip(&slot_starts).all(|(b, &p)| b.as_ptr() == p && b.len() == rx.slot));
        // A batch of both: in order, each intact, only the large one lent.
        let big = rx.slot / 2 + 1;
        sender.send_to(&[4u8; 300], link.local).unwrap();
        sender.send_to(&vec![5u8; big], link.local).unwrap();
        sender.send_to(&[6u8; 200], link.local).unwrap();
        let got = receive(&mut rx, &link, 3).await;
        let want = [vec![4u8; 300], vec![5u8; big], vec![6u8; 200]];
        assert_eq!(got.iter().map(|d| d.data.to_vec()).collect::<Vec<_>>(), want);
        assert_eq!(rx.lent.len(), 1);
    }

    #[tokio::test]
    async fn a_gro_train_is_split_into_its_segments_in_one_lent_slot() {
        let link = UdpLink::bind("127.0.0.1:0".parse().unwrap(), None).unwrap();
        let sender = UdpLink::bind("127.0.0.1:0".parse().unwrap(), None).unwrap();
        let mut rx = Receiver::new(&link);
        if sender.max_segments() < 2 || link.state.gro_segments() < 2 {
            // Linux has had both since 5.0; a kernel without them is a skip, except where
            // the tests must run whole (CI sets this).
            let required = std::env::var("BRAID_ROOT_TESTS").is_ok_and(|v| v == "1");
            assert!(!required, "BRAID_ROOT_TESTS=1 but this kernel has no UDP GSO or GRO");
            eprintln!("skipped: no UDP GSO or GRO on this kernel");
            return;
        }
        // One GSO send of 30 segments of 1,400 bytes and a short last one, each its own
        // fill: the kernel hands the receiver the whole train in one slot (UDP_GRO).
        let (seg, n) = (1400, 30);
        let mut train: Vec<u8> = (0..n).flat_map(|k| vec![k as u8; seg]).collect();
        train.extend_from_slice(&[0xee; 500]);
        assert!(2 * train.len() >= rx.slot, "the train fills at least half a slot, so it is lent");
        let slot_starts: Vec<*const u8> = rx.slots.iter().map(|b| b.as_ptr()).collect();
        sender.send(link.local, None, &train, Some(seg)).await.unwrap();
        let got = receive(&mut rx, &link, n + 1).await;
        let want: Vec<Vec<u8>> = train.chunks(seg).map(<[u8]>::to_vec).collect();
        assert_eq!(got.iter().map(|d| d.data.to_vec()).collect::<Vec<_>>(), want);
        // The segments are the slot's bytes, back to back, and the slot is lent once.
        assert!(slot_starts.contains(&got[0].data.as_ptr()), "the train was not copied");
        for (a, b) in got.iter().zip(&got[1..]) {
            assert_eq!(b.data.as_ptr() as usize, a.data.as_ptr() as usize + a.data.len());
        }
        assert_eq!(rx.lent.len(), 1);
        // Let go of, the slot's allocation serves the next batch.
        let first = got[0].data.as_ptr();
        drop(got);
        sender.send(link.local, None, &[7u8; 100], None).await.unwrap();
        let again = receive(&mut rx, &link, 1).await;
        assert_eq!(&again[0].data[..], &[7u8; 100][..]);
        assert!(rx.slots.iter().any(|b| b.as_ptr() == first), "the lent slot was taken back");
    }
}
