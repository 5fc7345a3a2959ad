//! For fuzzing only (feature `fuzzing`): a peer that holds the session's keys may seal any
//! frames at all, so a fuzz target plays that peer and reaches the frame handling behind the
//! AEAD, which forged packets from outside never reach.

use super::Session;
use crate::path::PathId;
use crate::time::Timestamp;
use crate::wire::DATA_HEADER_LEN;

impl Session {
    /// Seals `frames` (any bytes) as the payload of a DATA packet on path `path`, with this
    /// session's keys and next packet number: what this side would send if it sent these
    /// bytes as frames. None before the handshake or for an unknown path.
    pub fn seal_frames(&mut self, now: Timestamp, path: PathId, frames: &[u8]) -> Option<Vec<u8>> {
        let idx = self.paths.iter().position(|p| p.id == path)?;
        self.keys.as_ref()?;
        let mut buf = Vec::with_capacity(DATA_HEADER_LEN + frames.len() + crate::wire::TAG_LEN);
        let b = self.start(idx, &mut buf);
        buf.extend_from_slice(frames);
        let grace = self.key_grace();
        self.keys.as_mut()?.seal(now, grace, path, b.pn, &mut buf, DATA_HEADER_LEN);
        Some(buf)
    }
}
