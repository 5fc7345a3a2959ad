//! The client's policy, which governs both directions of its session (design.md: "The
//! client's policy (scheduler, classes, per-link tiers, weights and caps) is sent to the server
//! in the session"; seed 000's proxy lets the client choose the striping algorithm).
//!
//! The client sends it in a POLICY frame whenever it changes; the server applies it to the
//! session, so that downloads are scheduled as the client asked. Tiers travel in PATH_STATUS
//! (a path's status is the stricter of both sides' wishes); the rest travels here:
//!
//! ```text
//! POLICY body:
//!   scheduler code (u8) param (u8) admission (u8: 0/1)
//!   classes (varint, at most MAX_CLASSES), each:
//!     class (u8) priority (u8) deadline_us (varint, 0: none)
//!     scheduler code (u8, 0xff: the session's) param (u8)
//!     max_rate bytes/s (varint, 0: none) min_rate bytes/s (varint, 0: none)
//!     flags (u8: bit 0 duplicate, the other bits zero)
//!   paths (varint, at most MAX_PATHS), each:
//!     path (u8) weight (varint, 0: automatic) max_rate bytes/s (varint, 0: none)
//! ```

use crate::config::TrafficClass;
use crate::path::PathId;
use crate::scheduler::Kind;
use crate::wire::{varint, ParseError};
use std::collections::BTreeMap;
use std::time::Duration;

/// Most traffic classes one policy names.
pub const MAX_CLASSES: usize = 64;
/// Most paths one policy names.
pub const MAX_PATHS: usize = 255;
const NO_SCHEDULER: u8 = 0xff;

/// Per-path settings beyond the tier: weight and rate cap, both directions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PathLimits {
    /// Weighted-round-robin weight (None: from the measured capacity).
    pub weight: Option<u32>,
    /// Most bytes a second the path may carry in each direction (None: no cap).
    pub max_rate: Option<u64>,
}

/// What the client asks of both directions of its session.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Policy {
    /// The session's scheduler.
    pub scheduler: Kind,
    /// Path admission (seed 000's bound, seed 002's rules).
    pub admission: bool,
    /// Traffic classes by id.
    pub classes: BTreeMap<u8, TrafficClass>,
    /// Per-path limits by path id.
    pub paths: BTreeMap<PathId, PathLimits>,
}

fn put_varint(out: &mut Vec<u8>, v: u64) {
    varint::put(out, v.min(varint::MAX));
}

fn put_kind(out: &mut Vec<u8>, k: Option<Kind>) {
    match k {
        Some(k) => {
            let (code, param) = k.code();
            out.extend_from_slice(&[code, param]);
        }
        None => out.extend_from_slice(&[NO_SCHEDULER, 0]),
    }
}

impl Policy {
    /// The POLICY frame body.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(16 + 16 * self.classes.len() + 8 * self.paths.len());
        put_kind(&mut out, Some(self.scheduler));
        out.push(u8::from(self.admission));
        put_varint(&mut out, self.classes.len().min(MAX_CLASSES) as u64);
        for (class, c) in self.classes.iter().take(MAX_CLASSES) {
            out.extend_from_slice(&[*class, c.priority]);
            put_varint(&mut out, c.deadline.map_or(0, |d| (d.as_micros() as u64).max(1)));
            put_kind(&mut out, c.scheduler);
            put_varint(&mut out, c.max_rate.unwrap_or(0));
            put_varint(&mut out, c.min_rate.unwrap_or(0));
            out.push(u8::from(c.duplicate));
        }
        put_varint(&mut out, self.paths.len().min(MAX_PATHS) as u64);
        for (path, l) in self.paths.iter().take(MAX_PATHS) {
            out.push(*path);
            put_varint(&mut out, u64::from(l.weight.unwrap_or(0)));
            put_varint(&mut out, l.max_rate.unwrap_or(0));
        }
        out
    }

    /// Parses a POLICY frame body; every field is checked, nothing can panic.
    pub fn decode(body: &[u8]) -> Result<Policy, ParseError> {
        let mut r = Reader { buf: body, pos: 0 };
        let scheduler = r.kind()?.ok_or(ParseError::Malformed("POLICY scheduler"))?;
        let admission = match r.byte()? {
            0 => false,
            1 => true,
            _ => return Err(ParseError::Malformed("POLICY admission")),
        };
        let n = r.count(MAX_CLASSES)?;
        let mut classes = BTreeMap::new();
        for _ in 0..n {
            let class = r.byte()?;
            let priority = r.byte()?;
            let deadline = r.nonzero()?.map(Duration::from_micros);
            let scheduler = r.kind()?;
            let (max_rate, min_rate) = (r.nonzero()?, r.nonzero()?);
            let duplicate = match r.byte()? {
                0 => false,
                1 => true,
                _ => return Err(ParseError::Malformed("POLICY class flags")),
            };
            classes
                .insert(class, TrafficClass { priority, deadline, scheduler, max_rate, min_rate, duplicate });
        }
        let n = r.count(MAX_PATHS)?;
        let mut paths = BTreeMap::new();
        for _ in 0..n {
            let path = r.byte()?;
            let weight =
                r.nonzero()?.map(|w| u32::try_from(w).map_err(|_| ParseError::Malformed("POLICY weight")));
            let weight = weight.transpose()?;
            paths.insert(path, PathLimits { weight, max_rate: r.nonzero()? });
        }
        if r.pos != body.len() {
            return Err(ParseError::Malformed("POLICY trailing bytes"));
        }
        Ok(Policy { scheduler, admission, classes, paths })
    }
}

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl Reader<'_> {
    fn byte(&mut self) -> Result<u8, ParseError> {
        let b = *self.buf.get(self.pos).ok_or(ParseError::Truncated)?;
        self.pos += 1;
        Ok(b)
    }

    fn varint(&mut self) -> Result<u64, ParseError> {
        let (v, n) = varint::read(&self.buf[self.pos.min(self.buf.len())..]).ok_or(ParseError::Truncated)?;
        self.pos += n;
        Ok(v)
    }

    fn nonzero(&mut self) -> Result<Option<u64>, ParseError> {
        Ok(Some(self.varint()?).filter(|v| *v != 0))
    }

    fn count(&mut self, max: usize) -> Result<usize, ParseError> {
        let n = self.varint()?;
        if n > max as u64 {
            return Err(ParseError::Malformed("POLICY count"));
        }
        Ok(n as usize)
    }

    fn kind(&mut self) -> Result<Option<Kind>, ParseError> {
        let (code, param) = (self.byte()?, self.byte()?);
        if code == NO_SCHEDULER {
            return Ok(None);
        }
        Kind::from_code(code, param).map(Some).ok_or(ParseError::Malformed("POLICY scheduler"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sample() -> Policy {
        let mut p = Policy { scheduler: Kind::Edpf, admission: true, ..Policy::default() };
        p.classes.insert(
            0,
            TrafficClass {
                priority: 0,
                deadline: Some(Duration::from_millis(150)),
                scheduler: Some(Kind::Redundant(2)),
                max_rate: Some(125_000),
                min_rate: Some(8_000),
                duplicate: true,
            },
        );
        p.classes.insert(1, TrafficClass { priority: 3, ..TrafficClass::default() });
        p.paths.insert(1, PathLimits { weight: Some(4), max_rate: None });
        p.paths.insert(7, PathLimits { weight: None, max_rate: Some(1_250_000) });
        p
    }

    #[test]
    fn round_trip() {
        let p = sample();
        assert_eq!(Policy::decode(&p.encode()), Ok(p));
        let empty = Policy::default();
        assert_eq!(Policy::decode(&empty.encode()), Ok(empty));
    }

    #[test]
    fn bad_bodies_are_refused() {
        let body = sample().encode();
        for n in 0..body.len() {
            assert!(Policy::decode(&body[..n]).is_err(), "truncated at {n}");
        }
        let mut long = body.clone();
        long.push(0);
        assert!(Policy::decode(&long).is_err());
        let mut bad = body.clone();
        bad[0] = 0x77;
        assert!(Policy::decode(&bad).is_err(), "unknown scheduler");
        let mut many = vec![0x03, 0, 0];
        varint::put(&mut many, 1000);
        assert!(Policy::decode(&many).is_err(), "too many classes");
        // A class's flags byte (the last before the path count) knows bit 0 only.
        let mut one = Policy::default();
        one.classes.insert(2, TrafficClass::default());
        let mut flags = one.encode();
        let at = flags.len() - 2;
        assert_eq!(flags[at], 0);
        flags[at] = 2;
        assert!(Policy::decode(&flags).is_err(), "unknown class flag");
    }

    proptest! {
        #[test]
        fn never_panics(body in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = Policy::decode(&body);
        }
    }
}
