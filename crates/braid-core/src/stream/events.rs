//! What the stream layer tells the application: events, and errors of its calls and of the
//! peer's frames.

use super::id::StreamId;
use super::recv::RecvError;

/// Errors of stream operations called by the application.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum StreamError {
    /// No such stream (never opened, or closed and forgotten).
    #[error("unknown stream")]
    Unknown,
    /// Nothing can be done right now; an event will say when.
    #[error("blocked")]
    Blocked,
    /// The stream was finished or reset by us.
    #[error("stream closed for sending")]
    Closed,
    /// The peer asked us to stop sending, with this code.
    #[error("peer stopped the stream (code {0})")]
    Stopped(u64),
    /// The peer reset the stream, with this code.
    #[error("peer reset the stream (code {0})")]
    Reset(u64),
    /// The peer does not allow more streams yet.
    #[error("stream limit reached")]
    Limit,
}

/// A violation of the stream rules by the peer: the session must close.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum StreamViolation {
    /// Data beyond the credit we gave.
    #[error("flow control violated")]
    FlowControl,
    /// Final size contradicted.
    #[error("final size violated")]
    FinalSize,
    /// A stream beyond the limit we announced, or one the peer cannot open.
    #[error("stream limit or direction violated")]
    StreamState,
}

impl From<RecvError> for StreamViolation {
    fn from(e: RecvError) -> Self {
        match e {
            RecvError::FlowControl => StreamViolation::FlowControl,
            RecvError::FinalSize => StreamViolation::FinalSize,
        }
    }
}

/// Something the application should know about a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamEvent {
    /// The peer opened a stream.
    Opened(StreamId),
    /// Data (or the end) can be read.
    Readable(StreamId),
    /// Writing can resume.
    Writable(StreamId),
    /// Everything we sent, FIN included, was acknowledged.
    Finished(StreamId),
    /// The peer reset its send half.
    Reset(StreamId, u64),
    /// The peer asked us to stop sending.
    Stopped(StreamId, u64),
    /// Both halves are done (or reset) and the stream is forgotten: its id is unknown from
    /// now on, and whoever bridges it may let go.
    Closed(StreamId),
}
