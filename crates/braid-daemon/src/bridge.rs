//! Bridges between a braid stream inside the driver and the task that serves it (a TCP
//! connection, a SOCKS client, the server's egress connection).
//!
//! Both directions are bounded by byte budgets (semaphores): the application's writes wait
//! while the session's send buffer is full, and the driver stops reading a stream while the
//! application has not consumed what it was given — which lets braid's flow control push back
//! on the sender. The driver never blocks on an application.

use braid_core::StreamId;
use bytes::Bytes;
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot, Notify, Semaphore};

/// Bytes an application may have handed to the driver and not yet accepted by the session.
///
/// A hand-off queue in front of the session's send buffer (at least
/// `braid_core::stream::MIN_SEND_BUFFER`, 1 MB, sized to the paths), not a window: what is in
/// flight waits there. 256 KB rather than 2 MB, two builds alternated: 100 sessions through
/// one 200 Mbit/s link for 60 s left the server at 286/351 MB resident against 522/503 MB, and
/// one loopback stream (`bench/loopback.sh`, 5 runs each) did not slow down: median 3.69
/// against 2.41 Gbit/s up, 4.01 against 3.33 down (docs/benchmarks-notes.md).
pub const WRITE_BUDGET: usize = 256 << 10;
/// Bytes the driver may hand to an application before it consumes them.
pub const READ_BUDGET: usize = 4 << 20;

/// Why a stream could not be opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpenError {
    /// The server's limit on this client's open streams is reached.
    Limit,
    /// There is no session to open it on: it ended, or none could be made (why).
    NoSession(String),
}

impl std::fmt::Display for OpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OpenError::Limit => f.write_str("the server's stream limit is reached"),
            OpenError::NoSession(why) => f.write_str(why),
        }
    }
}

/// A request to the driver.
pub enum AppMsg {
    /// Open a stream of `class` whose first bytes are `request`.
    Open {
        /// Traffic class.
        class: u8,
        /// First bytes (the CONNECT request).
        request: Bytes,
        /// Where the stream's ends go (or why it could not be opened).
        reply: oneshot::Sender<Result<StreamEnds, OpenError>>,
    },
    /// Bytes for a stream; their size was taken from its write budget.
    Data(StreamId, Bytes),
    /// End of what the application sends on a stream.
    Finish(StreamId),
    /// The application abandons a stream.
    Reset(StreamId, u64),
    /// A datagram to send.
    Datagram(u8, Bytes),
    /// Close the session.
    Close(u64, String),
}

/// What the driver delivers to an application.
#[derive(Debug, PartialEq, Eq)]
pub enum Inbound {
    /// Bytes, in order. Give their size back with [`StreamEnds::consumed`].
    Data(Bytes),
    /// The peer finished the stream.
    Fin,
    /// The peer reset the stream (or the session ended).
    Reset(u64),
}

/// The application's ends of one stream.
pub struct StreamEnds {
    /// The stream.
    pub id: StreamId,
    /// Data from the peer.
    pub rx: mpsc::UnboundedReceiver<Inbound>,
    /// Sends to the peer.
    pub writer: StreamWriter,
    read_budget: Arc<Semaphore>,
    kick: Arc<Notify>,
}

impl StreamEnds {
    /// Gives `n` bytes of read budget back after writing them on.
    pub fn consumed(&self, n: usize) {
        self.read_budget.add_permits(n);
        self.kick.notify_one();
    }

    /// Joins the halves again.
    pub fn from_parts(reader: StreamReader, writer: StreamWriter) -> Self {
        StreamEnds {
            id: writer.id,
            rx: reader.rx,
            writer,
            read_budget: reader.read_budget,
            kick: reader.kick,
        }
    }

    /// Splits into the receiving half and the writer.
    pub fn split(self) -> (StreamReader, StreamWriter) {
        (StreamReader { rx: self.rx, read_budget: self.read_budget, kick: self.kick }, self.writer)
    }
}

/// The receiving half of a stream.
pub struct StreamReader {
    rx: mpsc::UnboundedReceiver<Inbound>,
    read_budget: Arc<Semaphore>,
    kick: Arc<Notify>,
}

impl StreamReader {
    /// The next thing from the peer (None: the session is gone).
    pub async fn recv(&mut self) -> Option<Inbound> {
        self.rx.recv().await
    }

    /// The next thing from the peer if one is queued already.
    pub fn try_recv(&mut self) -> Option<Inbound> {
        self.rx.try_recv().ok()
    }

    /// Gives `n` bytes of read budget back after writing them on.
    pub fn consumed(&self, n: usize) {
        self.read_budget.add_permits(n);
        self.kick.notify_one();
    }
}

/// Sends to a stream.
#[derive(Clone)]
pub struct StreamWriter {
    id: StreamId,
    tx: mpsc::Sender<AppMsg>,
    budget: Arc<Semaphore>,
}

/// The session behind a stream is gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionGone;

impl StreamWriter {
    /// Sends bytes, waiting for budget.
    pub async fn write(&self, data: Bytes) -> Result<(), SessionGone> {
        let n = data.len().min(WRITE_BUDGET);
        let permit = self.budget.acquire_many(n as u32).await.map_err(|_| SessionGone)?;
        permit.forget();
        self.tx.send(AppMsg::Data(self.id, data)).await.map_err(|_| SessionGone)
    }

    /// Ends what we send.
    pub async fn finish(&self) -> Result<(), SessionGone> {
        self.tx.send(AppMsg::Finish(self.id)).await.map_err(|_| SessionGone)
    }

    /// Abandons the stream.
    pub async fn reset(&self, code: u64) -> Result<(), SessionGone> {
        self.tx.send(AppMsg::Reset(self.id, code)).await.map_err(|_| SessionGone)
    }
}

/// The driver's side of one stream.
pub struct DriverEnd {
    /// Delivers to the application.
    pub to_app: mpsc::UnboundedSender<Inbound>,
    /// Read budget the application gives back.
    pub read_budget: Arc<Semaphore>,
    /// Write budget the driver gives back once the session took the bytes.
    pub write_budget: Arc<Semaphore>,
    /// Bytes the session's send buffer could not take yet.
    pub pending: std::collections::VecDeque<Bytes>,
    /// FIN to send after `pending`.
    pub finish_pending: bool,
    /// The application was told the stream ended.
    pub delivered_end: bool,
    /// The session forgot the stream (`StreamEvent::Closed`).
    pub core_closed: bool,
}

/// Creates both ends of a bridge for stream `id`.
pub fn pair(id: StreamId, tx: mpsc::Sender<AppMsg>, kick: Arc<Notify>) -> (DriverEnd, StreamEnds) {
    let (to_app, rx) = mpsc::unbounded_channel();
    let read_budget = Arc::new(Semaphore::new(READ_BUDGET));
    let write_budget = Arc::new(Semaphore::new(WRITE_BUDGET));
    let driver = DriverEnd {
        to_app,
        read_budget: read_budget.clone(),
        write_budget: write_budget.clone(),
        pending: Default::default(),
        finish_pending: false,
        delivered_end: false,
        core_closed: false,
    };
    let ends =
        StreamEnds { id, rx, writer: StreamWriter { id, tx, budget: write_budget }, read_budget, kick };
    (driver, ends)
}
