//! The session's timing rules, in one place: how often its periodic work runs, how long its
//! holds last, when it gives up. (Constants of one algorithm stay with it: BBR's in
//! `cc/bbr.rs`, RFC 9002's loss thresholds and the suspect-path probe cap in `path/loss.rs`.)

use std::time::Duration;

/// How often the periodic work (monitor, standby probes, packet pairs) runs.
pub(super) const HOUSEKEEPING: Duration = Duration::from_millis(100);
/// How often path admission (seed 000's bound, seed 002's rules) runs.
pub(super) const ADMISSION: Duration = Duration::from_millis(500);
/// A path in standby is probed at most this often while the session carries data.
pub(super) const STANDBY_PROBE: Duration = Duration::from_millis(200);
/// Packet pairs are repeated for this long after the last application data left.
pub(super) const PAIRS_AFTER_DATA: Duration = Duration::from_secs(5);
/// Secondary paths are engaged when the active ones would take longer than this to send what
/// waits (the backup scheduler's saturation rule)…
pub const SECONDARY_SATURATION: Duration = Duration::from_millis(50);
/// …and stay engaged this long after the last time they were needed.
pub const SECONDARY_HOLD: Duration = Duration::from_secs(1);
/// A path that sends only ACKs makes one of them ack-eliciting this often, so that it learns
/// its RTT and notices when it goes silent.
pub(super) const LIVENESS_MIN: Duration = Duration::from_millis(50);
/// A path that could not be validated within this time is given up.
pub const VALIDATION_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a latency-sensitive class's last packet keeps the paths' queues bounded.
pub(super) const LATENCY_HOLD: Duration = Duration::from_secs(1);
/// The first resend of handshake message 1 waits this long; later ones twice and four times.
const HANDSHAKE_RESEND: Duration = Duration::from_millis(500);

/// Delay before the `tries`-th resend of handshake message 1.
pub(super) fn handshake_backoff(tries: u32) -> Duration {
    HANDSHAKE_RESEND * (1 << tries.saturating_sub(1).min(2))
}
