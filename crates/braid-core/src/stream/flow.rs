//! Session-level flow control (RFC 9000 §4.1, MAX_DATA): the new bytes we may send across all
//! streams, and the bytes we let the peer send, granted again as the application reads.

use super::events::StreamViolation;

/// Both directions of session-level flow control.
#[derive(Debug)]
pub(super) struct SessionFlow {
    /// New bytes sent across all streams (highest offsets), and the peer's limit on it.
    sent: u64,
    peer_max: u64,
    /// Highest offsets received across streams, bytes read, and our limit.
    received: u64,
    read: u64,
    local_max: u64,
    /// The receive windows granted from now on (per stream, session): the configured ones
    /// until `Streams::set_receive_windows` sizes them from the paths' skew. The initial
    /// credit of a new stream stays the configured one, which the peer assumes.
    windows: (u64, u64),
}

impl SessionFlow {
    /// Flow control with the configured windows; the peer is assumed to grant the same.
    pub(super) fn new(stream_window: u64, session_window: u64) -> Self {
        SessionFlow {
            sent: 0,
            peer_max: session_window,
            received: 0,
            read: 0,
            local_max: session_window,
            windows: (stream_window, session_window),
        }
    }

    /// New bytes the peer lets us send now.
    pub(super) fn credit(&self) -> u64 {
        self.peer_max.saturating_sub(self.sent)
    }

    /// `grew` new bytes left (a chunk's `grew`).
    pub(super) fn on_sent(&mut self, grew: u64) {
        self.sent += grew;
    }

    /// MAX_DATA from the peer; true when it raised the limit.
    pub(super) fn on_max_data(&mut self, max: u64) -> bool {
        let raised = max > self.peer_max;
        self.peer_max = self.peer_max.max(max);
        raised
    }

    /// A stream's highest received offset moved by `grew`; a violation when that passes our
    /// limit (`check`: RESET_STREAM's final size is checked per stream only).
    pub(super) fn on_received(&mut self, grew: u64, check: bool) -> Result<(), StreamViolation> {
        self.received += grew;
        if check && self.received > self.local_max {
            return Err(StreamViolation::FlowControl);
        }
        Ok(())
    }

    /// The application read `n` bytes; true when MAX_DATA is owed.
    pub(super) fn on_read(&mut self, n: u64) -> bool {
        self.read += n;
        self.grant()
    }

    /// Grants a new window once the application has consumed half of it; true when MAX_DATA
    /// is owed.
    fn grant(&mut self) -> bool {
        let window = self.windows.1;
        if self.local_max - self.read < window / 2 {
            self.local_max = self.read + window;
            return true;
        }
        false
    }

    /// Sets the windows granted from now on; None when unchanged, else whether MAX_DATA is
    /// owed at once.
    pub(super) fn set_windows(&mut self, stream: u64, session: u64) -> Option<bool> {
        if self.windows == (stream, session) {
            return None;
        }
        self.windows = (stream, session);
        Some(self.grant())
    }

    /// The receive windows granted now (per stream, session).
    pub(super) fn windows(&self) -> (u64, u64) {
        self.windows
    }

    /// Our current MAX_DATA value.
    pub(super) fn local_max(&self) -> u64 {
        self.local_max
    }

    /// (new bytes sent, peer's limit, bytes received, our limit).
    pub(super) fn snapshot(&self) -> (u64, u64, u64, u64) {
        (self.sent, self.peer_max, self.received, self.local_max)
    }
}
