//! Packets sent on a path and not yet acknowledged or declared lost, with what they carried.
//!
//! Frames are recorded so that an acknowledgement or a loss can be applied to what the packet
//! carried (seed 001's RMTP: a lost *frame* is re-queued, and may leave on any path).

use crate::cc::delivery::PacketRateState;
use crate::time::Timestamp;
use smallvec::SmallVec;
use std::collections::VecDeque;

/// Frames recorded for one packet (two inline: most packets carry one or two).
pub type FrameRecords = SmallVec<[SentFrame; 2]>;

/// A frame a packet carried, as far as acknowledgement and loss need to know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SentFrame {
    /// Stream bytes `[offset, offset + len)`, with FIN if `fin`.
    Stream { id: u64, offset: u64, len: u32, fin: bool },
    /// RESET_STREAM.
    ResetStream { id: u64 },
    /// STOP_SENDING.
    StopSending { id: u64 },
    /// MAX_DATA.
    MaxData,
    /// MAX_STREAM_DATA.
    MaxStreamData { id: u64 },
    /// MAX_STREAMS.
    MaxStreams,
    /// STREAM_OPEN.
    StreamOpen { id: u64 },
    /// A datagram of a class (never resent; counted when lost).
    Datagram { class: u8 },
    /// An ACK for `path` up to `largest` (once acknowledged, older ranges need not be repeated).
    Ack { path: u8, largest: u64 },
    /// PATH_STATUS for `path`.
    PathStatus { path: u8 },
    /// PATH_ABANDON for `path`.
    PathAbandon { path: u8 },
    /// POLICY number `seq`.
    Policy { seq: u64 },
    /// SHARING number `seq`.
    Sharing { seq: u64 },
}

/// One packet in flight.
#[derive(Debug, Clone)]
pub struct SentPacket {
    /// Packet number on its path.
    pub pn: u64,
    /// When it left.
    pub sent_time: Timestamp,
    /// Bytes on the wire (UDP payload).
    pub size: u32,
    /// It asked for an acknowledgement.
    pub ack_eliciting: bool,
    /// It counts towards bytes in flight (everything but ACK-only packets).
    pub in_flight: bool,
    /// Its frames were already handed to other paths because this path went silent.
    pub requeued: bool,
    /// A path MTU probe (padding only; its loss is not congestion, see `path::mtu`).
    pub mtu_probe: bool,
    /// Delivery-rate snapshot.
    pub rate: PacketRateState,
    /// What it carried.
    pub frames: FrameRecords,
}

/// Outstanding packets of one path, indexed by packet number.
#[derive(Debug, Default)]
pub struct SentPackets {
    base: u64,
    slots: VecDeque<Option<SentPacket>>,
    len: usize,
    /// Every packet below this number was stranded (`requeued`) when its path went silent;
    /// none above it was: the oldest live packet is looked for from here, not from the front.
    stranded_below: u64,
}

impl SentPackets {
    /// Records a packet; packet numbers must increase.
    pub fn insert(&mut self, p: SentPacket) {
        if self.slots.is_empty() {
            self.base = p.pn;
        }
        debug_assert!(p.pn >= self.base + self.slots.len() as u64);
        while self.base + (self.slots.len() as u64) < p.pn {
            self.slots.push_back(None);
        }
        self.slots.push_back(Some(p));
        self.len += 1;
    }

    /// Removes and returns packet `pn`, if outstanding.
    pub fn remove(&mut self, pn: u64) -> Option<SentPacket> {
        let idx = usize::try_from(pn.checked_sub(self.base)?).ok()?;
        let p = self.slots.get_mut(idx)?.take()?;
        self.len -= 1;
        while matches!(self.slots.front(), Some(None)) {
            self.slots.pop_front();
            self.base += 1;
        }
        Some(p)
    }

    /// Number of outstanding packets.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when nothing is outstanding.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Outstanding packets in packet-number order.
    pub fn iter(&self) -> impl Iterator<Item = &SentPacket> {
        self.slots.iter().flatten()
    }

    /// Mutable access in packet-number order.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut SentPacket> {
        self.slots.iter_mut().flatten()
    }

    /// Every packet outstanding now has been stranded (marked `requeued`) by the caller.
    pub fn note_stranded(&mut self) {
        self.stranded_below = self.base + self.slots.len() as u64;
    }

    /// The oldest ack-eliciting packet that was not stranded (what a path's silence is timed
    /// from): found from [`SentPackets::note_stranded`]'s mark, so the stranded packets before
    /// it are not walked on every `poll_timeout`.
    pub fn oldest_live(&self) -> Option<&SentPacket> {
        let from = self.stranded_below.saturating_sub(self.base).min(self.slots.len() as u64);
        self.slots.range(from as usize..).flatten().find(|p| p.ack_eliciting)
    }

    /// The lowest outstanding packet number, if any.
    pub fn first_pn(&self) -> Option<u64> {
        self.iter().next().map(|p| p.pn)
    }

    /// Outstanding packet numbers in `lo..=hi`, ascending.
    pub fn pns_in(&self, lo: u64, hi: u64) -> impl Iterator<Item = u64> + '_ {
        let range = if lo > hi || hi < self.base {
            0..0
        } else {
            let start = lo.saturating_sub(self.base) as usize;
            let end = ((hi - self.base) as usize).saturating_add(1).min(self.slots.len());
            start.min(end)..end
        };
        self.slots.range(range).flatten().map(|p| p.pn)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pkt(pn: u64) -> SentPacket {
        SentPacket {
            pn,
            sent_time: Timestamp::ZERO,
            size: 100,
            ack_eliciting: true,
            in_flight: true,
            requeued: false,
            mtu_probe: false,
            rate: PacketRateState::default(),
            frames: SmallVec::new(),
        }
    }

    #[test]
    fn insert_remove_in_any_order() {
        let mut s = SentPackets::default();
        for pn in [3, 4, 6, 7] {
            s.insert(pkt(pn));
        }
        assert_eq!(s.len(), 4);
        assert_eq!(s.pns_in(0, 6).collect::<Vec<_>>(), vec![3, 4, 6]);
        assert!(s.remove(5).is_none());
        assert_eq!(s.remove(4).map(|p| p.pn), Some(4));
        assert_eq!(s.remove(3).map(|p| p.pn), Some(3));
        assert_eq!(s.first_pn(), Some(6));
        assert!(s.remove(3).is_none());
        assert_eq!(s.pns_in(7, 100).collect::<Vec<_>>(), vec![7]);
        assert_eq!(s.pns_in(9, 2).count(), 0);
    }

    #[test]
    fn the_oldest_live_packet_skips_stranded_ones() {
        let mut s = SentPackets::default();
        for pn in [3, 4, 5] {
            s.insert(pkt(pn));
        }
        assert_eq!(s.oldest_live().map(|p| p.pn), Some(3));
        for p in s.iter_mut() {
            p.requeued = true;
        }
        s.note_stranded();
        assert!(s.oldest_live().is_none(), "all stranded");
        s.insert(pkt(6));
        s.insert(pkt(7));
        assert_eq!(s.oldest_live().map(|p| p.pn), Some(6));
        // Acknowledging the stranded ones moves the front past the mark.
        for pn in [3, 4, 5, 6] {
            s.remove(pn);
        }
        assert_eq!(s.oldest_live().map(|p| p.pn), Some(7));
    }

    /// Regression: a range entirely below the oldest outstanding packet acknowledged that
    /// packet (found by `braid sim --link 20mbit/10ms --link 5mbit/40ms`: losses went
    /// undetected and the stream stalled).
    #[test]
    fn range_below_base_is_empty() {
        let mut s = SentPackets::default();
        for pn in [10, 11, 12] {
            s.insert(pkt(pn));
        }
        assert_eq!(s.pns_in(0, 5).count(), 0);
        assert_eq!(s.pns_in(0, 9).count(), 0);
        assert_eq!(s.pns_in(0, 10).collect::<Vec<_>>(), vec![10]);
    }
}
