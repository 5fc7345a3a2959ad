//! What the simulated applications do. `bulk`: the client sends one endless (or sized) stream
//! of position-dependent bytes; the server reads it in order and checks every byte.

use braid_core::{Event, Session, StreamError, StreamEvent, StreamId};
use bytes::Bytes;
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};
use std::time::Duration;

/// Length of the repeating payload pattern: a prime, so no packet or buffer size aligns with it.
const PATTERN_LEN: usize = 1_048_573;
/// Bytes handed to the stream per write.
const WRITE_CHUNK: usize = 64 * 1024;

/// A deterministic byte pattern: byte `i` of the stream is `pattern[i % len] ^ (i / len)`.
#[derive(Clone)]
pub struct Pattern {
    data: Bytes,
}

impl Pattern {
    /// The pattern of `seed`.
    pub fn new(seed: u64) -> Self {
        let mut v = vec![0u8; PATTERN_LEN];
        ChaCha8Rng::seed_from_u64(seed).fill_bytes(&mut v);
        Pattern { data: Bytes::from(v) }
    }

    /// Stream bytes starting at `offset`, at most `max` (never crossing a pattern boundary).
    pub fn slice(&self, offset: u64, max: usize) -> Bytes {
        let start = (offset % PATTERN_LEN as u64) as usize;
        let round = (offset / PATTERN_LEN as u64) as u8;
        let end = (start + max).min(PATTERN_LEN);
        if round == 0 {
            self.data.slice(start..end)
        } else {
            Bytes::from(self.data[start..end].iter().map(|b| b ^ round).collect::<Vec<u8>>())
        }
    }

    /// True when `data` is what the stream holds at `offset`.
    pub fn matches(&self, offset: u64, data: &[u8]) -> bool {
        let mut pos = 0;
        while pos < data.len() {
            let at = offset + pos as u64;
            let start = (at % PATTERN_LEN as u64) as usize;
            let round = (at / PATTERN_LEN as u64) as u8;
            let n = (PATTERN_LEN - start).min(data.len() - pos);
            // A branch-free fold: the comparison vectorises (it runs over every byte delivered).
            let diff = data[pos..pos + n]
                .iter()
                .zip(&self.data[start..start + n])
                .fold(0u8, |acc, (a, b)| acc | (a ^ b ^ round));
            if diff != 0 {
                return false;
            }
            pos += n;
        }
        true
    }
}

/// The bulk transfer, both ends.
pub struct Bulk {
    pattern: Pattern,
    limit: Option<u64>,
    stream: Option<StreamId>,
    written: u64,
    finished_writing: bool,
    /// Bytes read in order by the server.
    pub delivered: u64,
    /// Every byte read matched the pattern.
    pub intact: bool,
    /// The server read the end of the stream.
    pub complete: bool,
    /// Stream errors seen by either side.
    pub errors: Vec<String>,
}

impl Bulk {
    /// A bulk transfer of `limit` bytes (None: as much as fits in the run).
    pub fn new(seed: u64, limit: Option<u64>) -> Self {
        Bulk {
            pattern: Pattern::new(seed),
            limit,
            stream: None,
            written: 0,
            finished_writing: false,
            delivered: 0,
            intact: true,
            complete: false,
            errors: Vec::new(),
        }
    }

    /// The bulk stream, once opened.
    pub fn stream(&self) -> Option<StreamId> {
        self.stream
    }

    /// Client side: opens the stream once connected and keeps its send buffer full.
    pub fn client_step(&mut self, client: &mut Session, _event: Option<&Event>) {
        if !client.is_established() || self.finished_writing {
            return;
        }
        let id = match self.stream {
            Some(id) => id,
            None => match client.open_stream(0) {
                Ok(id) => *self.stream.insert(id),
                Err(_) => return,
            },
        };
        loop {
            let want =
                self.limit.map_or(WRITE_CHUNK, |l| (l - self.written).min(WRITE_CHUNK as u64) as usize);
            if want == 0 {
                if client.finish(id).is_ok() {
                    self.finished_writing = true;
                }
                return;
            }
            let room = client.write_room(id).unwrap_or(0) as usize;
            if room == 0 {
                return;
            }
            let chunk = self.pattern.slice(self.written, want.min(room));
            let n = chunk.len();
            match client.write_bytes(id, chunk) {
                Ok(()) => self.written += n as u64,
                Err(StreamError::Blocked) => return,
                Err(e) => {
                    self.errors.push(format!("client write: {e}"));
                    self.finished_writing = true;
                    return;
                }
            }
        }
    }

    /// Server side: reads whatever is readable and checks it. Returns bytes read now.
    pub fn server_step(&mut self, server: &mut Session, event: Option<&Event>) -> u64 {
        if let Some(Event::Stream(StreamEvent::Opened(id))) = event {
            self.stream.get_or_insert(*id);
        }
        let Some(id) = self.stream.filter(|_| !self.complete) else {
            return 0;
        };
        let mut got = 0;
        loop {
            match server.read_chunk(id, 1 << 20) {
                Ok(Some(c)) => {
                    if !self.pattern.matches(self.delivered, &c) {
                        self.intact = false;
                    }
                    self.delivered += c.len() as u64;
                    got += c.len() as u64;
                }
                Ok(None) => {
                    self.complete = true;
                    break;
                }
                Err(StreamError::Blocked) | Err(StreamError::Unknown) => break,
                Err(e) => {
                    self.errors.push(format!("server read: {e}"));
                    self.intact = false;
                    break;
                }
            }
        }
        got
    }
}

/// Goodput samples: bytes delivered per bucket.
#[derive(Debug, Clone)]
pub struct Timeline {
    /// Bucket width.
    pub bucket: Duration,
    /// Bytes delivered in each bucket.
    pub bytes: Vec<u64>,
}

impl Timeline {
    /// An empty timeline covering `duration`.
    pub fn new(bucket: Duration, duration: Duration) -> Self {
        let n = (duration.as_nanos() / bucket.as_nanos()) as usize + 1;
        Timeline { bucket, bytes: vec![0; n] }
    }

    /// Records `bytes` delivered at `t`.
    pub fn add(&mut self, t: Duration, bytes: u64) {
        let i = (t.as_nanos() / self.bucket.as_nanos()) as usize;
        if let Some(b) = self.bytes.get_mut(i) {
            *b += bytes;
        }
    }

    /// Average goodput (bit/s) over `[from, from + span)`.
    pub fn average(&self, from: Duration, span: Duration) -> f64 {
        let a = (from.as_nanos() / self.bucket.as_nanos()) as usize;
        let n = (span.as_nanos() / self.bucket.as_nanos()) as usize;
        let bytes: u64 = self.bytes.iter().skip(a).take(n).sum();
        bytes as f64 * 8.0 / span.as_secs_f64()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pattern_detects_misplacement() {
        let p = Pattern::new(1);
        let a = p.slice(1000, 100);
        assert!(p.matches(1000, &a));
        assert!(!p.matches(1001, &a));
        let far = PATTERN_LEN as u64 * 3 + 5;
        let b = p.slice(far, 64);
        assert!(p.matches(far, &b));
        assert!(!p.matches(far - PATTERN_LEN as u64, &b));
    }
}
