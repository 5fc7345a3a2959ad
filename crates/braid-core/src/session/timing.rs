//! The session's handshake resend schedule. (Its timing constants live in [`crate::timing`],
//! with the rest of the core's.)

use crate::timing::HANDSHAKE_RESEND;
use std::time::Duration;

/// Delay before the `tries`-th resend of handshake message 1.
pub(super) fn handshake_backoff(tries: u32) -> Duration {
    HANDSHAKE_RESEND * (1 << tries.saturating_sub(1).min(2))
}
