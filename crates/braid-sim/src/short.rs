//! Short request/response flows (seed 003 §5's small, critical packets; web requests, RPCs):
//! every `interval` the client opens a stream, sends a `size`-byte request and finishes; the
//! server reads the whole request and answers with `size` bytes on the same stream. A flow's
//! completion time runs from the open to the client reading the end of the response — one
//! round trip when nothing is lost, a timeout more when a first packet is.

use crate::workload::Pattern;
use braid_core::{Event, Session, StreamError, StreamEvent, StreamId};
use serde::Serialize;
use std::collections::BTreeMap;
use std::time::Duration;

/// The workload: request and response size, time between flow starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShortSpec {
    /// Bytes of each request and of each response.
    pub size: u64,
    /// Time between two flows' starts.
    pub interval: Duration,
}

/// Completion times of the short flows of a run.
#[derive(Debug, Clone, Serialize, Default)]
pub struct ShortReport {
    /// Flows opened.
    pub opened: u64,
    /// Flows whose response arrived whole.
    pub completed: u64,
    /// Mean completion time, ms.
    pub mean_ms: f64,
    /// Median completion time, ms.
    pub p50_ms: f64,
    /// 99th percentile, ms.
    pub p99_ms: f64,
    /// Longest, ms.
    pub max_ms: f64,
}

/// One flow at the client.
struct ClientFlow {
    started: Duration,
    written: u64,
    finished: bool,
    received: u64,
}

/// One flow at the server.
#[derive(Default)]
struct ServerFlow {
    received: u64,
    request_done: bool,
    written: u64,
}

/// Both ends of the short flows.
pub struct ShortFlows {
    spec: ShortSpec,
    pattern: Pattern,
    next_open: Duration,
    client: BTreeMap<StreamId, ClientFlow>,
    server: BTreeMap<StreamId, ServerFlow>,
    times: Vec<Duration>,
    opened: u64,
    /// Every byte read matched the pattern, on both sides.
    pub intact: bool,
    /// Stream errors seen by either side.
    pub errors: Vec<String>,
}

impl ShortFlows {
    /// Flows of `spec`, the first at time zero (when the session is up).
    pub fn new(spec: ShortSpec, seed: u64) -> Self {
        ShortFlows {
            spec,
            pattern: Pattern::new(seed ^ 0x5407),
            next_open: Duration::ZERO,
            client: BTreeMap::new(),
            server: BTreeMap::new(),
            times: Vec::new(),
            opened: 0,
            intact: true,
            errors: Vec::new(),
        }
    }

    /// When the next flow opens.
    pub fn next_wake(&self) -> Duration {
        self.next_open
    }

    /// Client side: opens the flows due by `now` (none after `stop`), writes requests, reads
    /// responses.
    pub fn client_step(&mut self, now: Duration, client: &mut Session, stop: Duration) {
        if !client.is_established() {
            self.next_open = self.next_open.max(now);
            return;
        }
        while self.next_open <= now && now < stop {
            match client.open_stream(0) {
                Ok(id) => {
                    let f = ClientFlow { started: now, written: 0, finished: false, received: 0 };
                    self.client.insert(id, f);
                    self.opened += 1;
                    self.next_open += self.spec.interval;
                }
                Err(_) => break,
            }
        }
        let mut done = Vec::new();
        for (id, f) in self.client.iter_mut() {
            if !f.finished {
                f.finished =
                    write_all(client, *id, &self.pattern, &mut f.written, self.spec.size, &mut self.errors);
            }
            match read_all(client, *id, &self.pattern, &mut f.received, &mut self.intact, &mut self.errors) {
                Some(true) if f.received == self.spec.size => {
                    self.times.push(now - f.started);
                    done.push(*id);
                }
                Some(true) => {
                    self.intact = false;
                    done.push(*id);
                }
                _ => {}
            }
        }
        for id in done {
            self.client.remove(&id);
        }
    }

    /// Server side: notes new streams from `event`, reads requests, writes responses.
    pub fn server_step(&mut self, server: &mut Session, event: Option<&Event>) {
        if let Some(Event::Stream(StreamEvent::Opened(id))) = event {
            self.server.entry(*id).or_default();
        }
        let mut done = Vec::new();
        for (id, f) in self.server.iter_mut() {
            if !f.request_done {
                let r =
                    read_all(server, *id, &self.pattern, &mut f.received, &mut self.intact, &mut self.errors);
                f.request_done = r == Some(true);
                if f.request_done && f.received != self.spec.size {
                    self.intact = false;
                }
            }
            if f.request_done
                && write_all(server, *id, &self.pattern, &mut f.written, self.spec.size, &mut self.errors)
            {
                done.push(*id);
            }
        }
        for id in done {
            self.server.remove(&id);
        }
    }

    /// Completion times so far.
    pub fn report(&self) -> ShortReport {
        let mut ms: Vec<f64> = self.times.iter().map(|t| t.as_secs_f64() * 1e3).collect();
        ms.sort_by(f64::total_cmp);
        let pick = |q: f64| ms.get(((ms.len() as f64 * q).ceil() as usize).saturating_sub(1)).copied();
        ShortReport {
            opened: self.opened,
            completed: ms.len() as u64,
            mean_ms: if ms.is_empty() { 0.0 } else { ms.iter().sum::<f64>() / ms.len() as f64 },
            p50_ms: pick(0.5).unwrap_or(0.0),
            p99_ms: pick(0.99).unwrap_or(0.0),
            max_ms: ms.last().copied().unwrap_or(0.0),
        }
    }
}

/// Writes what is left of `size` pattern bytes and the FIN; true once the FIN is queued.
fn write_all(
    s: &mut Session,
    id: StreamId,
    pattern: &Pattern,
    written: &mut u64,
    size: u64,
    errors: &mut Vec<String>,
) -> bool {
    while *written < size {
        let room = s.write_room(id).unwrap_or(0);
        if room == 0 {
            return false;
        }
        let chunk = pattern.slice(*written, (size - *written).min(room) as usize);
        let n = chunk.len() as u64;
        match s.write_bytes(id, chunk) {
            Ok(()) => *written += n,
            Err(StreamError::Blocked) => return false,
            Err(e) => {
                errors.push(format!("short flow write: {e}"));
                return true;
            }
        }
    }
    s.finish(id).is_ok()
}

/// Reads what is readable and checks it: Some(true) at the end of the stream, Some(false)
/// when more may come, None on an error.
fn read_all(
    s: &mut Session,
    id: StreamId,
    pattern: &Pattern,
    received: &mut u64,
    intact: &mut bool,
    errors: &mut Vec<String>,
) -> Option<bool> {
    loop {
        match s.read_chunk(id, 1 << 16) {
            Ok(Some(c)) => {
                if !pattern.matches(*received, &c) {
                    *intact = false;
                }
                *received += c.len() as u64;
            }
            Ok(None) => return Some(true),
            Err(StreamError::Blocked) | Err(StreamError::Unknown) => return Some(false),
            Err(e) => {
                errors.push(format!("short flow read: {e}"));
                *intact = false;
                return None;
            }
        }
    }
}
