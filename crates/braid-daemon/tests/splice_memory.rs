//! What the bytes read from a TCP connection (`splice::copy_both`, the server's egress) cost in
//! memory while the stream holds them: every chunk stays in the send buffer until the peer
//! acknowledges it, with the allocation it was read into (issue 13). Its own test binary: it
//! counts the process's live heap bytes with a global allocator.

use braid_core::StreamId;
use braid_daemon::bridge::{pair, AppMsg, Inbound, WRITE_BUDGET};
use braid_daemon::splice::{copy_both, READ_BUFFER};
use bytes::Bytes;
use std::alloc::{GlobalAlloc, Layout, System};
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, ReadBuf};
use tokio::sync::{mpsc, Notify};

/// The system allocator, counting the bytes allocated and not yet freed.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is passed on to the system allocator unchanged; only a counter is kept.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        System.alloc(layout)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        System.dealloc(ptr, layout)
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(new_size, Ordering::Relaxed);
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// A connection whose every read returns `size` bytes (a slow sender), `reads` times, then its
/// end.
struct ShortReads {
    reads: usize,
    size: usize,
}

impl AsyncRead for ShortReads {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        if self.reads > 0 {
            self.reads -= 1;
            let n = self.size.min(buf.remaining());
            buf.put_slice(&vec![0x5a; n]);
        }
        Poll::Ready(Ok(()))
    }
}

#[tokio::test]
async fn short_reads_share_their_buffers() {
    const SIZE: usize = 1400;
    // Within the write budget, since no driver gives it back here.
    const READS: usize = WRITE_BUDGET / SIZE / 2;
    let (tx, mut rx) = mpsc::channel(2 * READS);
    let (driver, ends) = pair(StreamId(0), tx, Arc::new(Notify::new()));
    // Nothing comes back from the peer: the other direction ends at once.
    driver.to_app.send(Inbound::Fin).expect("the reader is alive");
    let (reader, writer) = ends.split();
    let before = LIVE.load(Ordering::Relaxed);
    let (mut source, mut sink) = (ShortReads { reads: READS, size: SIZE }, tokio::io::sink());
    let copy = copy_both(&mut source, &mut sink, Bytes::new(), reader, &writer);
    let failed = tokio::time::timeout(Duration::from_secs(10), copy).await.expect("the copy ends");
    assert!(!failed);
    // Hold every chunk, as the send buffer does until the peer acknowledges it.
    let mut held: Vec<Bytes> = Vec::with_capacity(READS);
    while let Ok(m) = rx.try_recv() {
        if let AppMsg::Data(_, b) = m {
            held.push(b);
        }
    }
    let data: usize = held.iter().map(Bytes::len).sum();
    assert_eq!(data, READS * SIZE);
    let heap = LIVE.load(Ordering::Relaxed).saturating_sub(before);
    // At most twice the data, plus the one read buffer still being filled; a fresh 64 kB
    // buffer per read would hold 64 kB per read.
    assert!(
        heap < 2 * data + READ_BUFFER,
        "{} kB of heap hold {} kB read in {READS} reads of {SIZE} bytes",
        heap / 1024,
        data / 1024
    );
}
