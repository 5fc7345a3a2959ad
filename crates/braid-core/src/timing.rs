//! Every timing rule of the protocol core, in one place: how often periodic work runs, how long
//! holds and estimates last, when the core gives up. Each says where its value comes from (an
//! RFC, a seed paper, or a measurement). A module that exported one re-exports it under its
//! old name. (BBR's constants stay in `cc/bbr.rs`: they belong to that one algorithm.)

use std::time::Duration;

// ---- session ---------------------------------------------------------------------------------

/// How often the session's periodic work (monitor, standby probes, packet pairs) runs. Chosen:
/// ten times a second, well inside the monitor's [`RATE_WINDOW`].
pub const HOUSEKEEPING: Duration = Duration::from_millis(100);
/// How often path admission (seed 000's bound, seed 002's rules) runs. Chosen: a quarter of
/// [`ADMISSION_HOLD`], so a verdict follows its hold closely.
pub const ADMISSION: Duration = Duration::from_millis(500);
/// A path in standby is probed at most this often while the session carries data. Chosen: the
/// ~200 ms after which design.md suspects a silent path.
pub const STANDBY_PROBE: Duration = Duration::from_millis(200);
/// …and at least this often, however much a probe costs the path.
pub const STANDBY_PROBE_MAX: Duration = Duration::from_secs(5);
/// Packet pairs are repeated for this long after the last application data left (seed 001
/// §4.1 measures capacity while data flows; an idle session costs only its keepalives).
pub const PAIRS_AFTER_DATA: Duration = Duration::from_secs(5);
/// Secondary paths are engaged when the active ones would take longer than this to send what
/// waits (the backup scheduler's saturation rule, [`BACKUP_SATURATION`])…
pub const SECONDARY_SATURATION: Duration = Duration::from_millis(50);
/// …and stay engaged this long after the last time they were needed (chosen: longer than a
/// few RTTs, so a burst does not switch them on and off per packet).
pub const SECONDARY_HOLD: Duration = Duration::from_secs(1);
/// A path that sends only ACKs makes one of them ack-eliciting this often, so that it learns
/// its RTT and notices when it goes silent (the lab's cut scenario: without it the path was
/// suspected in sympathy with its ACK carrier).
pub const LIVENESS_MIN: Duration = Duration::from_millis(50);
/// A path that could not be validated within this time is given up. Chosen: a fixed time
/// instead of RFC 9000 §8.2.4's three PTOs, which a new path without RTT samples cannot know.
pub const VALIDATION_TIMEOUT: Duration = Duration::from_secs(10);
/// A client path whose validation failed tries again this long after (chosen: a link that
/// comes up is used within a second or two)…
pub const VALIDATION_RETRY_FIRST: Duration = Duration::from_secs(1);
/// …doubling up to this (chosen: one 1200-byte challenge a round, a round every 70 s at most,
/// about 1.5 MB a day on a link that never answers).
pub const VALIDATION_RETRY_MAX: Duration = Duration::from_secs(60);
/// PATH_CHALLENGE is resent after at least this long (RFC 9000 §8.2.4: a PTO-based timer; this
/// floor keeps a path without RTT samples from resending at once, as `SILENCE_MIN` does).
pub const CHALLENGE_RESEND_MIN: Duration = Duration::from_millis(200);
/// How long a latency-sensitive class's last packet keeps the paths' queues bounded. Chosen:
/// a pause in a call or a game shorter than this does not let bulk data refill the queues.
pub const LATENCY_HOLD: Duration = Duration::from_secs(1);
/// The first resend of handshake message 1 waits this long; later ones twice and four times.
/// Chosen: sooner than WireGuard's REKEY_TIMEOUT (5 s), as a session start waits on it.
pub const HANDSHAKE_RESEND: Duration = Duration::from_millis(500);
/// A client with several links gives each link's first handshake attempt this long before it
/// tries the next link; later rounds double it, up to the session's handshake timeout
/// ([`crate::connect`]). Chosen: three sends of message 1 (at 0, 0.5 s and 1.5 s, the last
/// with 0.5 s for its answer), so a dead first link costs 2 s instead of the whole timeout.
pub const HANDSHAKE_FIRST_TRY: Duration = Duration::from_secs(2);
/// The previous key phase's receive key is kept for three PTOs (RFC 9001 §6.5), at least this
/// long…
pub const KEY_GRACE_MIN: Duration = Duration::from_secs(1);
/// …and at most this long.
pub const KEY_GRACE_MAX: Duration = Duration::from_secs(10);
/// A closing session drains for three PTOs (RFC 9000 §10.2); this PTO stands in when no path
/// has one.
pub const CLOSING_PTO: Duration = Duration::from_secs(1);
/// The served rate of a traffic class is averaged over this long (class rate limits).
pub const CLASS_RATE_AVERAGE: Duration = Duration::from_secs(1);
/// A class's token bucket holds this much time of its rate. Chosen: one video frame at 50 fps.
pub const CLASS_BURST_TIME: Duration = Duration::from_millis(20);
/// How often a path's PATH_REPORT is repeated while packets arrive on it (seed 000 §III-B's
/// two-sided monitor; four reports make one [`REPORT_FRESH`]).
pub const REPORT_INTERVAL: Duration = Duration::from_millis(250);

// ---- path --------------------------------------------------------------------------------------

/// RFC 9002 §6.2.2: "When no previous RTT is available, the initial RTT SHOULD be set to 333
/// milliseconds."
pub const INITIAL_RTT: Duration = Duration::from_millis(333);
/// RFC 9002 kGranularity.
pub const GRANULARITY: Duration = Duration::from_millis(1);
/// How long a receiver may delay an ACK: RFC 9000's default `max_ack_delay` (§18.2), braid's
/// default (`SessionConfig::max_ack_delay`), and what BBR's ProbeRTT window assumes of the peer.
pub const MAX_ACK_DELAY: Duration = Duration::from_millis(25);
/// A path is suspected when nothing was acknowledged for three smoothed RTTs, but never before
/// this (design.md's blackout freeze, seed 003: "suspected after ~200 ms or a few RTTs").
pub const SILENCE_MIN: Duration = Duration::from_millis(200);
/// A suspect path is probed at least this often, so a restored link is noticed quickly: a
/// restored link waits on average half of this before carrying data again (with 1 s the
/// lab's cut scenario took 1.06–1.17 s to get back to full rate). A probe is one small
/// packet, so a dead link costs 4 packets a second.
pub const MAX_PROBE_INTERVAL: Duration = Duration::from_millis(250);
/// How long a size below the maximum stands before the path MTU search is tried again (RFC
/// 8899 §5.1.1: "The PMTU_RAISE_TIMER is configured to the period a sender will continue to
/// use the current PLPMTU, after which it reenters the Search Phase … 600 seconds").
pub const RAISE_INTERVAL: Duration = Duration::from_secs(600);
/// The packet arrival rate is counted over intervals of this length (the receiver's view of
/// the sender's window for seed 003's offloading-ACK).
pub const RATE_INTERVAL: Duration = Duration::from_millis(200);
/// An arrival rate older than this no longer stands (five [`RATE_INTERVAL`]s).
pub const RATE_STALE: Duration = Duration::from_secs(1);
/// The queueing delay below which `Path::queue_bound` does not apply: what jitter and a
/// controller's probing add to an RTT.
pub const QUEUE_BOUND_MIN: Duration = Duration::from_millis(100);
/// How often at most a path's ACKs carry the receiver's clock (ACK_TS). Measured: with a stamp
/// (8 bytes) on every ACK, seed 003's ACKs offloaded to a 1 Mbit/s 3G left the Wi-Fi 17 → 44 %
/// below its same-path rate (docs/experiments.md, Fig. 5 without the shared medium); at this
/// interval the sender's one-way minima (`path::one_way`) find the same legs (EDPF sweep 72 →
/// 70 of 90 mixes within 10 packets, held out 60 → 62).
pub const ACK_STAMP: Duration = Duration::from_millis(5);
/// A peer's PATH_REPORT older than this no longer stands for the path (four
/// [`REPORT_INTERVAL`]s).
pub const REPORT_FRESH: Duration = Duration::from_secs(1);
/// The reported loss is counted over the reports of about this long (a packet the peer first
/// counted missing and then received late cancels out within it).
pub const REPORT_LOSS_WINDOW: Duration = Duration::from_secs(2);

// ---- monitor -----------------------------------------------------------------------------------

/// Delivery-rate samples are kept this long for the capacity estimate (the monitor of seed 000
/// §III-B). Chosen: 2 s.
pub const RATE_WINDOW: Duration = Duration::from_secs(2);
/// A packet pair (seed 001 §4.1) is repeated on a path that is not saturated at most this
/// often…
pub const PAIR_MIN_INTERVAL: Duration = Duration::from_secs(2);
/// …and at least this often, however much a pair costs the path.
pub const PAIR_MAX_INTERVAL: Duration = Duration::from_secs(600);
/// A pair whose timing has not come back after this long is abandoned.
pub const PAIR_TIMEOUT: Duration = Duration::from_secs(10);
/// The least slack the monitor allows above the minimum RTT before a delay counts as queueing
/// (seed 001 §4.3's loss discrimination). Chosen: 2 ms, above timer noise.
pub const QUEUE_SLACK_MIN: Duration = Duration::from_millis(2);

// ---- schedulers --------------------------------------------------------------------------------

/// How often WRR's automatic weights are recomputed (seed 002 counts bytes "in a specified time
/// interval"; one second, as the digest's A8 reading).
pub const REWEIGHT_INTERVAL: Duration = Duration::from_secs(1);
/// Backlog, in time at the active paths' rates, beyond which they count as saturated (the
/// backup scheduler).
pub const BACKUP_SATURATION: Duration = Duration::from_millis(50);
/// How often the priority-aware scheduler recomputes its allocation of paths to classes.
/// Chosen: the same period as [`ADMISSION`].
pub const REALLOCATE: Duration = Duration::from_millis(500);
/// The most a path may have queued (in time at its rate) to be given a redundant copy.
pub const COPY_BACKLOG: Duration = Duration::from_millis(100);
/// A path's admission changes at most this often (hysteresis for seed 002's rules). Chosen.
pub const ADMISSION_HOLD: Duration = Duration::from_secs(2);
