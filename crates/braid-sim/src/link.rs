//! The link model shared by the simulator and the link emulator: a bottleneck with a rate
//! (which may change over time), a bounded drop-tail queue, propagation delay and jitter,
//! random or bursty (Gilbert–Elliott) loss, duplication, and outages.
//!
//! A link spec reads `RATE/DELAY[/key=value...]`, for example
//! `20mbit/10ms`, `5mbit/40ms/loss=1%/jitter=2ms`,
//! `10mbit/20ms/capacity=10mbit@0s,4mbit@20s`, `8mbit/30ms/ge=1%:20%:50%`.
//! DELAY is the one-way propagation delay (each direction), so the base RTT is twice it.
//!
//! | key | meaning |
//! | --- | --- |
//! | `loss=P%` | independent random loss per packet, applied on the wire after the queue; `loss=P%@T,P%@T…` changes it over time |
//! | `jitter=D` | extra delay uniform in [0, D]; packets stay in order unless `reorder` |
//! | `queue=N` | drop-tail queue limit: bytes (`64000`), packets (`100p`) or time at rate (`50ms`); default 100 ms at the base rate, at least 16 packets |
//! | `ge=P:R:L%` | Gilbert–Elliott: P(good→bad), P(bad→good), loss in the bad state |
//! | `dup=P%` | duplicate a packet with this probability |
//! | `reorder=P%` | let a packet skip the in-order rule (it may overtake) |
//! | `capacity=R@T,R@T…` | rate changes over time (cross traffic) |
//! | `delay=D@T,D@T…` | one-way delay changes over time (a route change, a handover) |
//! | `down=T-T,…` | outages, e.g. `down=10s-20s` |
//! | `back=D` | one-way delay of the server → client direction instead of DELAY (seed 002's reverse-path disparity; simulator only) |
//! | `drop=T,…` | a single loss: the first client → server packet offered at or after each T is lost on the wire (seed 004's loss at 18 s) |
//! | `shared` | half-duplex shared medium (Wi-Fi): both directions draw from one rate and one queue, so ACKs one way take airtime from data the other way (seed 003 §3.1's self-contention) |
//! | `mac=D` | medium access time added to every packet's serialization (802.11's DIFS, backoff, preamble and link-layer ACK): a small packet costs nearly as much airtime as a large one (seed 003 §3.1) |

use crate::units::{parse_duration, parse_percent, parse_rate};
use rand_chacha::ChaCha8Rng;
use rand_core::RngCore;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::fmt;
use std::time::Duration;

/// Bytes an IPv4 and UDP header add to every datagram on the wire.
pub const IP_UDP_OVERHEAD: usize = 28;

/// Gilbert–Elliott bursty loss.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct GilbertElliott {
    /// Probability of moving from the good to the bad state per packet.
    pub to_bad: f64,
    /// Probability of moving from the bad to the good state per packet.
    pub to_good: f64,
    /// Loss probability in the bad state (the good state loses nothing).
    pub bad_loss: f64,
}

/// How the queue limit was given.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum QueueLimit {
    /// Bytes.
    Bytes(u64),
    /// Packets (of 1500 bytes).
    Packets(u64),
    /// Time at the base rate.
    Time(Duration),
}

/// One link, as configured: the one description of a link that the simulator, the link
/// emulator (`braid demo`, braid-emu) and the namespace lab (`braid lab`, which emulates a
/// subset of it with tc and VDE: see [`LinkSpec::beyond`]) all read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinkSpec {
    /// Base rate, bit/s.
    pub rate_bps: u64,
    /// One-way propagation delay.
    pub delay: Duration,
    /// Delay changes (a route change, a handover): (from time, one-way delay), sorted; before
    /// the first, `delay`.
    pub delay_schedule: Vec<(Duration, Duration)>,
    /// Jitter bound.
    pub jitter: Duration,
    /// Random loss probability.
    pub loss: f64,
    /// Loss changes: (from time, probability), sorted; before the first, `loss`.
    pub loss_schedule: Vec<(Duration, f64)>,
    /// Bursty loss.
    pub gilbert: Option<GilbertElliott>,
    /// Queue limit.
    pub queue: QueueLimit,
    /// Duplication probability.
    pub dup: f64,
    /// Probability that a packet may overtake others.
    pub reorder: f64,
    /// Rate changes: (from time, rate bit/s), sorted.
    pub capacity: Vec<(Duration, u64)>,
    /// Outages: [from, to).
    pub down: Vec<(Duration, Duration)>,
    /// One-way delay of the server → client direction, when it differs from `delay`.
    pub back_delay: Option<Duration>,
    /// Single losses: the first packet offered at or after each of these times is lost (in
    /// the simulator, client → server only), sorted.
    pub drop_at: Vec<Duration>,
    /// Largest IP packet the link carries (a tunnel or PPPoE hop whose "fragmentation
    /// needed" messages are lost: larger packets vanish); None for no limit.
    pub mtu: Option<usize>,
    /// Both directions share one rate and one queue (a half-duplex medium such as Wi-Fi).
    pub shared: bool,
    /// Airtime every packet costs on top of its bytes at the rate (medium access).
    pub mac: Duration,
}

impl LinkSpec {
    /// A plain link: rate and one-way delay.
    pub fn new(rate_bps: u64, delay: Duration) -> Self {
        LinkSpec {
            rate_bps,
            delay,
            delay_schedule: Vec::new(),
            jitter: Duration::ZERO,
            loss: 0.0,
            loss_schedule: Vec::new(),
            gilbert: None,
            queue: QueueLimit::Time(Duration::from_millis(100)),
            dup: 0.0,
            reorder: 0.0,
            capacity: Vec::new(),
            down: Vec::new(),
            drop_at: Vec::new(),
            back_delay: None,
            mtu: None,
            shared: false,
            mac: Duration::ZERO,
        }
    }

    /// Parses `RATE/DELAY[/key=value...]`.
    pub fn parse(s: &str) -> Result<Self, String> {
        let mut parts = s.split('/');
        let rate = parse_rate(parts.next().unwrap_or(""))?;
        let delay = parse_duration(
            parts.next().ok_or_else(|| format!("link '{s}' needs RATE/DELAY, e.g. 20mbit/10ms"))?,
        )?;
        let mut spec = LinkSpec::new(rate, delay);
        for opt in parts {
            if opt == "shared" {
                spec.shared = true;
                continue;
            }
            let (k, v) =
                opt.split_once('=').ok_or_else(|| format!("link option '{opt}' must be key=value"))?;
            match k {
                "loss" if v.contains('@') => {
                    spec.loss_schedule = parse_loss_schedule(v)?;
                    spec.loss = spec.loss_schedule.first().map_or(0.0, |(_, p)| *p);
                }
                "loss" => spec.loss = parse_percent(v)?,
                "delay" => spec.delay_schedule = parse_delay_schedule(v)?,
                "jitter" => spec.jitter = parse_duration(v)?,
                "dup" => spec.dup = parse_percent(v)?,
                "reorder" => spec.reorder = parse_percent(v)?,
                "queue" => spec.queue = parse_queue(v)?,
                "ge" => spec.gilbert = Some(parse_ge(v)?),
                "capacity" => spec.capacity = parse_capacity(v)?,
                "down" => spec.down = parse_down(v)?,
                "back" => spec.back_delay = Some(parse_duration(v)?),
                "mac" => spec.mac = parse_duration(v)?,
                "drop" => {
                    spec.drop_at = v.split(',').map(parse_duration).collect::<Result<Vec<_>, _>>()?;
                    spec.drop_at.sort();
                }
                "mtu" => {
                    let m: usize = v.parse().map_err(|_| format!("mtu '{v}' must be bytes, e.g. 1400"))?;
                    if !(576..=65535).contains(&m) {
                        return Err(format!("mtu '{v}' must be 576..65535 bytes"));
                    }
                    spec.mtu = Some(m);
                }
                other => {
                    return Err(format!(
                        "unknown link option '{other}' (loss, delay, jitter, queue, ge, dup, reorder, capacity, down, drop, back, mtu, mac; or shared)"
                    ))
                }
            }
        }
        Ok(spec)
    }

    /// The options set on this link beyond `allowed` (option names as in the spec string):
    /// what an emulator that models only those must refuse rather than ignore.
    pub fn beyond(&self, allowed: &[&str]) -> Vec<&'static str> {
        let base = LinkSpec::new(self.rate_bps, self.delay);
        let set = [
            ("jitter", self.jitter != base.jitter),
            ("loss", self.loss != base.loss && self.loss_schedule.is_empty()),
            ("loss schedule", !self.loss_schedule.is_empty()),
            ("delay", !self.delay_schedule.is_empty()),
            ("queue", self.queue != base.queue),
            ("ge", self.gilbert.is_some()),
            ("dup", self.dup != 0.0),
            ("reorder", self.reorder != 0.0),
            ("capacity", !self.capacity.is_empty()),
            ("down", !self.down.is_empty()),
            ("back", self.back_delay.is_some()),
            ("drop", !self.drop_at.is_empty()),
            ("mtu", self.mtu.is_some()),
            ("shared", self.shared),
            ("mac", !self.mac.is_zero()),
        ];
        set.into_iter().filter(|(name, on)| *on && !allowed.contains(name)).map(|(name, _)| name).collect()
    }

    /// The rate in force at `t`.
    pub fn rate_at(&self, t: Duration) -> u64 {
        self.capacity.iter().rev().find(|(from, _)| *from <= t).map_or(self.rate_bps, |(_, r)| *r)
    }

    /// The one-way delay in force at `t` (client → server, and server → client unless `back=`
    /// sets that direction's own).
    pub fn delay_at(&self, t: Duration) -> Duration {
        self.delay_schedule.iter().rev().find(|(from, _)| *from <= t).map_or(self.delay, |(_, d)| *d)
    }

    /// The random loss probability in force at `t`.
    pub fn loss_at(&self, t: Duration) -> f64 {
        self.loss_schedule.iter().rev().find(|(from, _)| *from <= t).map_or(self.loss, |(_, p)| *p)
    }

    /// True when the link is down at `t`.
    pub fn is_down(&self, t: Duration) -> bool {
        self.down.iter().any(|(a, b)| *a <= t && t < *b)
    }

    /// True when an outage overlaps `[a, b]`.
    pub fn down_between(&self, a: Duration, b: Duration) -> bool {
        self.down.iter().any(|(x, y)| *x <= b && a < *y)
    }

    /// The queue limit in bytes.
    pub fn queue_bytes(&self) -> u64 {
        let min = 16 * 1500;
        match self.queue {
            QueueLimit::Bytes(b) => b,
            QueueLimit::Packets(p) => p * 1500,
            QueueLimit::Time(d) => ((self.rate_bps as f64 / 8.0 * d.as_secs_f64()) as u64).max(min),
        }
    }
}

impl fmt::Display for LinkSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}/{}ms",
            crate::units::format_rate(self.rate_bps as f64).replace(' ', ""),
            self.delay.as_millis()
        )?;
        if !self.loss_schedule.is_empty() {
            let items: Vec<String> = self
                .loss_schedule
                .iter()
                .map(|(t, p)| format!("{}%@{}s", p * 100.0, t.as_secs_f64()))
                .collect();
            write!(f, "/loss={}", items.join(","))?;
        } else if self.loss > 0.0 {
            write!(f, "/loss={}%", self.loss * 100.0)?;
        }
        if !self.jitter.is_zero() {
            write!(f, "/jitter={}ms", self.jitter.as_secs_f64() * 1e3)?;
        }
        if !self.mac.is_zero() {
            write!(f, "/mac={}us", self.mac.as_micros())?;
        }
        if self.shared {
            write!(f, "/shared")?;
        }
        Ok(())
    }
}

fn parse_queue(v: &str) -> Result<QueueLimit, String> {
    if let Some(p) = v.strip_suffix('p') {
        return p
            .parse()
            .map(QueueLimit::Packets)
            .map_err(|_| format!("queue '{v}': packets must be a whole number (e.g. 100p)"));
    }
    if let Ok(b) = v.parse::<u64>() {
        return Ok(QueueLimit::Bytes(b));
    }
    parse_duration(v)
        .map(QueueLimit::Time)
        .map_err(|_| format!("queue '{v}' must be bytes (64000), packets (100p) or time (50ms)"))
}

fn parse_ge(v: &str) -> Result<GilbertElliott, String> {
    let p: Vec<&str> = v.split(':').collect();
    if p.len() != 3 {
        return Err(format!("ge '{v}' must be P_good_to_bad:P_bad_to_good:LOSS_bad, e.g. 1%:20%:50%"));
    }
    Ok(GilbertElliott {
        to_bad: parse_percent(p[0])?,
        to_good: parse_percent(p[1])?,
        bad_loss: parse_percent(p[2])?,
    })
}

/// A `capacity=` schedule, `RATE@TIME,RATE@TIME,...` (`20mbit@0s,50kbit@10s`), sorted by time
/// (the lab reads the same text from its own `capacity` key).
pub fn parse_capacity(v: &str) -> Result<Vec<(Duration, u64)>, String> {
    parse_schedule(v, "capacity '{}' must be RATE@TIME, e.g. 4mbit@20s", parse_rate)
}

fn parse_delay_schedule(v: &str) -> Result<Vec<(Duration, Duration)>, String> {
    parse_schedule(v, "delay '{}' must be DELAY@TIME, e.g. 10ms@0s,40ms@20s", parse_duration)
}

fn parse_loss_schedule(v: &str) -> Result<Vec<(Duration, f64)>, String> {
    parse_schedule(v, "loss '{}' must be P%@TIME, e.g. 10%@0s,1%@30s", parse_percent)
}

/// `VALUE@TIME,VALUE@TIME,...` sorted by time; `shape` is the error for an item without `@`
/// (`{}` stands for the item).
fn parse_schedule<T>(
    v: &str,
    shape: &str,
    value: impl Fn(&str) -> Result<T, String>,
) -> Result<Vec<(Duration, T)>, String> {
    let mut out = Vec::new();
    for item in v.split(',') {
        let (x, t) = item.split_once('@').ok_or_else(|| shape.replace("{}", item))?;
        out.push((parse_duration(t)?, value(x)?));
    }
    out.sort_by_key(|(t, _)| *t);
    Ok(out)
}

fn parse_down(v: &str) -> Result<Vec<(Duration, Duration)>, String> {
    let mut out = Vec::new();
    for item in v.split(',') {
        let (a, b) =
            item.split_once('-').ok_or_else(|| format!("down '{item}' must be FROM-TO, e.g. 10s-20s"))?;
        let (a, b) = (parse_duration(a)?, parse_duration(b)?);
        if b <= a {
            return Err(format!("down '{item}': the end must be after the start"));
        }
        out.push((a, b));
    }
    Ok(out)
}

/// What became of a packet offered to a link direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    /// Arrives at this time (and, if duplicated, a second copy at the second time).
    Arrives(Duration, Option<Duration>),
    /// Dropped: the queue was full.
    QueueDrop,
    /// Dropped on the wire (random or bursty loss).
    Lost,
    /// Dropped: the link was down.
    Down,
}

/// A transmitter: packets queued for serialization and when it is next free. Each direction
/// of a link has its own, unless the link is a shared medium (`shared`): then both directions
/// queue on one, and a packet one way waits for those the other way (seed 003 §3.1).
#[derive(Debug, Default)]
pub struct Medium {
    /// Serialization of queued packets ends at these times (with their sizes).
    queue: VecDeque<(Duration, u64)>,
    queued_bytes: u64,
    busy_until: Duration,
}

impl Medium {
    /// Queues `wire` bytes offered at `now`: when their serialization ends, or None when the
    /// queue is full (drop-tail).
    fn enqueue(&mut self, spec: &LinkSpec, now: Duration, wire: u64) -> Option<Duration> {
        while self.queue.front().is_some_and(|(end, _)| *end <= now) {
            let (_, b) = self.queue.pop_front().expect("checked");
            self.queued_bytes -= b;
        }
        if self.queued_bytes + wire > spec.queue_bytes() {
            return None;
        }
        let start = self.busy_until.max(now);
        let rate = spec.rate_at(start).max(1) as f64;
        let end = start + Duration::from_secs_f64(wire as f64 * 8.0 / rate) + spec.mac;
        self.busy_until = end;
        self.queue.push_back((end, wire));
        self.queued_bytes += wire;
        Some(end)
    }
}

/// One direction of a link in operation: its transmitter and its random state.
#[derive(Debug)]
pub struct Direction {
    /// This direction's own transmitter (unused on a shared medium).
    medium: Medium,
    last_arrival: Duration,
    bad: bool,
    rng: ChaCha8Rng,
    /// This direction runs server → client (it takes the link's `back=` delay).
    back: bool,
    /// Index of the next single loss (`drop=`) still to happen in this direction.
    next_drop: usize,
    /// Bytes that entered the queue.
    pub bytes_offered: u64,
    /// Packets dropped by reason: queue, wire, down.
    pub drops: [u64; 3],
}

impl Direction {
    /// A direction whose randomness comes from `rng`.
    pub fn new(rng: ChaCha8Rng) -> Self {
        Direction {
            medium: Medium::default(),
            last_arrival: Duration::ZERO,
            bad: false,
            rng,
            next_drop: 0,
            back: false,
            bytes_offered: 0,
            drops: [0; 3],
        }
    }

    /// This direction ignores the link's single losses (`drop=`): the simulator applies them
    /// to client → server packets only.
    pub fn without_single_losses(mut self) -> Self {
        self.next_drop = usize::MAX;
        self
    }

    /// This direction carries server → client packets: it takes the link's `back=` delay and
    /// ignores its single losses.
    pub fn server_to_client(mut self) -> Self {
        self.back = true;
        self.without_single_losses()
    }

    fn uniform(&mut self) -> f64 {
        (self.rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Offers a datagram of `udp_len` bytes (UDP payload) at time `now`, on this direction's
    /// own transmitter.
    pub fn offer(&mut self, spec: &LinkSpec, now: Duration, udp_len: usize) -> Fate {
        let mut own = std::mem::take(&mut self.medium);
        let fate = self.offer_on(&mut own, spec, now, udp_len);
        self.medium = own;
        fate
    }

    /// Offers a datagram on the link's `shared` transmitter when the link is a shared medium
    /// (the same `Medium` for both directions), on this direction's own otherwise.
    pub fn offer_with(
        &mut self,
        shared: &mut Medium,
        spec: &LinkSpec,
        now: Duration,
        udp_len: usize,
    ) -> Fate {
        if spec.shared {
            self.offer_on(shared, spec, now, udp_len)
        } else {
            self.offer(spec, now, udp_len)
        }
    }

    fn offer_on(&mut self, medium: &mut Medium, spec: &LinkSpec, now: Duration, udp_len: usize) -> Fate {
        let wire = (udp_len + IP_UDP_OVERHEAD) as u64;
        if spec.is_down(now) {
            self.drops[2] += 1;
            return Fate::Down;
        }
        let Some(end) = medium.enqueue(spec, now, wire) else {
            self.drops[0] += 1;
            return Fate::QueueDrop;
        };
        self.bytes_offered += wire;
        // Loss on the wire, after the queue.
        let lost = match spec.gilbert {
            Some(ge) => {
                let flip = self.uniform();
                self.bad = if self.bad { flip >= ge.to_good } else { flip < ge.to_bad };
                self.bad && self.uniform() < ge.bad_loss
            }
            None => false,
        } || {
            let p = spec.loss_at(now);
            p > 0.0 && self.uniform() < p
        };
        let jitter = if spec.jitter.is_zero() { Duration::ZERO } else { spec.jitter.mul_f64(self.uniform()) };
        let delay = match spec.back_delay {
            Some(back) if self.back => back,
            _ => spec.delay_at(now),
        };
        let mut arrival = end + delay + jitter;
        if !(spec.reorder > 0.0 && self.uniform() < spec.reorder) {
            arrival = arrival.max(self.last_arrival);
            self.last_arrival = arrival;
        }
        if spec.down_between(now, arrival) {
            self.drops[2] += 1;
            return Fate::Down;
        }
        let single = spec.drop_at.get(self.next_drop).is_some_and(|t| *t <= now);
        if single {
            self.next_drop += 1;
        }
        if lost || single || spec.mtu.is_some_and(|m| wire as usize > m) {
            self.drops[1] += 1;
            return Fate::Lost;
        }
        let dup = (spec.dup > 0.0 && self.uniform() < spec.dup).then(|| arrival + Duration::from_micros(1));
        Fate::Arrives(arrival, dup)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_core::SeedableRng;

    #[test]
    fn a_delay_schedule_changes_the_one_way_delay_from_its_time_on() {
        let l = LinkSpec::parse("20mbit/10ms/delay=40ms@10s,10ms@0s").unwrap();
        assert_eq!(l.delay_at(Duration::from_secs(5)), Duration::from_millis(10));
        assert_eq!(l.delay_at(Duration::from_secs(12)), Duration::from_millis(40));
        assert_eq!(l.beyond(&["loss"]), vec!["delay"], "the lab refuses what it cannot emulate");
        assert!(LinkSpec::parse("20mbit/10ms/delay=40ms").is_err(), "DELAY@TIME items only");
        // Packets offered after the change arrive with the new delay (serialisation aside).
        let mut d = Direction::new(ChaCha8Rng::seed_from_u64(1));
        for (at, want) in [(1u64, 10u64), (11, 40)] {
            let now = Duration::from_secs(at);
            match d.offer(&l, now, 1000) {
                Fate::Arrives(t, _) => {
                    let took = t - now;
                    assert!(
                        took >= Duration::from_millis(want) && took < Duration::from_millis(want + 2),
                        "{took:?}"
                    );
                }
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn beyond_names_the_options_an_emulator_would_have_to_ignore() {
        let l = LinkSpec::parse("5mbit/40ms/loss=1%/jitter=2ms/ge=1%:20%:50%/mtu=1400").unwrap();
        assert_eq!(l.beyond(&["loss", "jitter", "queue", "down"]), vec!["ge", "mtu"]);
        assert!(LinkSpec::parse("5mbit/40ms/down=1s-2s").unwrap().beyond(&["down"]).is_empty());
        let s = LinkSpec::parse("5mbit/40ms/loss=1%@0s,0%@5s").unwrap();
        assert_eq!(s.beyond(&["loss"]), vec!["loss schedule"]);
    }

    #[test]
    fn parses_specs_and_rejects_bad_ones() {
        let l = LinkSpec::parse("5mbit/40ms/loss=1%/jitter=2ms/queue=50p").unwrap();
        assert_eq!(l.rate_bps, 5_000_000);
        assert_eq!(l.delay, Duration::from_millis(40));
        assert_eq!(l.loss, 0.01);
        assert_eq!(l.queue_bytes(), 75_000);
        let l = LinkSpec::parse("5mbit/40ms/loss=10%@0s,1%@30s").unwrap();
        assert_eq!((l.loss_at(Duration::from_secs(29)), l.loss_at(Duration::from_secs(31))), (0.1, 0.01));
        assert!(LinkSpec::parse("5mbit/40ms/loss=10%@0s,1%").is_err());
        let c = LinkSpec::parse("10mbit/20ms/capacity=10mbit@0s,4mbit@20s/down=5s-6s").unwrap();
        assert_eq!(c.rate_at(Duration::from_secs(25)), 4_000_000);
        assert_eq!(LinkSpec::parse("10mbit/20ms/mtu=1400").unwrap().mtu, Some(1400));
        assert!(LinkSpec::parse("10mbit/20ms/mtu=100").is_err());
        assert!(c.is_down(Duration::from_millis(5500)));
        let d = LinkSpec::parse("200kbit/15ms/drop=18s").unwrap();
        assert_eq!(d.drop_at, vec![Duration::from_secs(18)]);
        let b = LinkSpec::parse("10mbit/10ms/back=90ms").unwrap();
        let mut up = Direction::new(ChaCha8Rng::seed_from_u64(1));
        let mut down = Direction::new(ChaCha8Rng::seed_from_u64(1)).server_to_client();
        let t = Duration::ZERO;
        assert!(matches!(up.offer(&b, t, 100), Fate::Arrives(a, _) if a < Duration::from_millis(11)));
        assert!(matches!(down.offer(&b, t, 100), Fate::Arrives(a, _) if a > Duration::from_millis(90)));
        assert!(LinkSpec::parse("20mbit").is_err());
        assert!(LinkSpec::parse("20mbit/10ms/bogus=1").unwrap_err().contains("unknown link option"));
        assert!(LinkSpec::parse("fast/10ms").is_err());
    }

    #[test]
    fn serializes_at_the_rate_and_drops_when_full() {
        let spec = LinkSpec::parse("8mbit/10ms/queue=3000").unwrap(); // 1 byte per µs
        let mut d = Direction::new(ChaCha8Rng::seed_from_u64(1));
        let t0 = Duration::ZERO;
        let a = d.offer(&spec, t0, 972); // 1000 bytes on the wire: 1 ms
        assert_eq!(a, Fate::Arrives(Duration::from_millis(11), None));
        let b = d.offer(&spec, t0, 972);
        assert_eq!(b, Fate::Arrives(Duration::from_millis(12), None));
        let c = d.offer(&spec, t0, 972);
        assert!(matches!(c, Fate::Arrives(..)));
        assert_eq!(d.offer(&spec, t0, 972), Fate::QueueDrop);
        // After the queue drained, room again.
        assert!(matches!(d.offer(&spec, Duration::from_millis(3), 972), Fate::Arrives(..)));
    }

    /// Offers 1000 wire bytes each way every 1.5 ms, 400 times; when the last one arrives.
    fn last_of_800(
        up: &mut Direction,
        down: &mut Direction,
        medium: &mut Medium,
        spec: &LinkSpec,
    ) -> Duration {
        let mut last = Duration::ZERO;
        for i in 0..400u64 {
            let t = Duration::from_micros(1500 * i);
            for d in [&mut *up, &mut *down] {
                if let Fate::Arrives(a, _) = d.offer_with(medium, spec, t, 972) {
                    last = last.max(a);
                }
            }
        }
        last
    }

    #[test]
    fn a_shared_medium_carries_both_directions_at_one_rate() {
        let spec = LinkSpec::parse("8mbit/10ms/shared/queue=1000000").unwrap(); // 1 byte per µs
        assert!(spec.shared && LinkSpec::parse("8mbit/10ms").is_ok_and(|s| !s.shared));
        let mut medium = Medium::default();
        let mut up = Direction::new(ChaCha8Rng::seed_from_u64(1));
        let mut down = Direction::new(ChaCha8Rng::seed_from_u64(2)).server_to_client();
        // 1000 wire bytes each way every 1.5 ms: 2000 bytes offered per 1.5 ms, at most 1500
        // can be carried.
        let last = last_of_800(&mut up, &mut down, &mut medium, &spec);
        // 800 packets of 1000 bytes take 800 ms of airtime: the last arrives no earlier than
        // 800 ms + 10 ms, well after the 600 ms the offers took.
        assert!(last >= Duration::from_millis(810), "{last:?}");
        // Each direction alone, on its own transmitter, keeps up with its offers.
        let spec = LinkSpec::parse("8mbit/10ms/queue=1000000").unwrap();
        let (mut up, mut down) =
            (Direction::new(ChaCha8Rng::seed_from_u64(1)), Direction::new(ChaCha8Rng::seed_from_u64(2)));
        let last = last_of_800(&mut up, &mut down, &mut medium, &spec);
        assert_eq!(last, Duration::from_micros(1500 * 399 + 1000 + 10_000));
    }

    #[test]
    fn shared_medium_delivered_rate_never_exceeds_the_link_rate() {
        // Random offers both ways: bytes delivered by any time t never exceed rate × t.
        let spec = LinkSpec::parse("8mbit/0ms/shared/mac=100us").unwrap();
        let mut medium = Medium::default();
        let mut dirs =
            [Direction::new(ChaCha8Rng::seed_from_u64(1)), Direction::new(ChaCha8Rng::seed_from_u64(2))];
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let mut arrivals = Vec::new();
        let mut t = Duration::ZERO;
        for _ in 0..5000 {
            t += Duration::from_micros(rng.next_u64() % 400);
            let len = 40 + (rng.next_u64() % 1400) as usize;
            let d = &mut dirs[(rng.next_u64() % 2) as usize];
            if let Fate::Arrives(a, _) = d.offer_with(&mut medium, &spec, t, len) {
                arrivals.push((a, (len + IP_UDP_OVERHEAD) as u64));
            }
        }
        arrivals.sort();
        let mut bytes = 0u64;
        for (i, (a, b)) in arrivals.iter().enumerate() {
            bytes += b;
            // Each packet also costs 100 µs of medium access.
            let airtime = bytes as f64 * 8.0 / 8e6 + (i + 1) as f64 * 100e-6;
            assert!(a.as_secs_f64() + 1e-9 >= airtime, "{i}: {bytes} bytes by {a:?}");
        }
        assert!(dirs.iter().all(|d| d.drops[0] > 0), "the offers overload the medium both ways");
    }

    #[test]
    fn single_loss_drops_exactly_one_packet() {
        let spec = LinkSpec::parse("1gbit/1ms/drop=5ms").unwrap();
        let mut d = Direction::new(ChaCha8Rng::seed_from_u64(7));
        let fates: Vec<Fate> = (0..10u64).map(|i| d.offer(&spec, Duration::from_millis(i), 100)).collect();
        let lost: Vec<usize> =
            fates.iter().enumerate().filter(|(_, f)| **f == Fate::Lost).map(|(i, _)| i).collect();
        assert_eq!(lost, vec![5]);
        let mut back = Direction::new(ChaCha8Rng::seed_from_u64(7)).server_to_client();
        assert!((0..10u64).all(|i| back.offer(&spec, Duration::from_millis(i), 100) != Fate::Lost));
    }

    #[test]
    fn loss_rate_is_about_right() {
        let spec = LinkSpec::parse("1gbit/1ms/loss=10%").unwrap();
        let mut d = Direction::new(ChaCha8Rng::seed_from_u64(7));
        let mut lost = 0;
        for i in 0..10_000u64 {
            if d.offer(&spec, Duration::from_micros(i * 100), 100) == Fate::Lost {
                lost += 1;
            }
        }
        assert!((900..1100).contains(&lost), "{lost}");
    }
}
