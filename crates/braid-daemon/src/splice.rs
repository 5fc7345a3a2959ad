//! Moving bytes between a TCP connection and a braid stream, both ways, with half-close:
//! a TCP FIN finishes the stream, a stream FIN shuts the TCP write side, a reset on either
//! side aborts the other — with a TCP RST, never a FIN, so that a stream cut short (the peer
//! reset it, the session died) never looks like a complete transfer to the application.

use crate::appproto::{decode_reply, Status};
use crate::bridge::{Inbound, StreamReader, StreamWriter};
use bytes::{Buf, Bytes, BytesMut};
use smallvec::SmallVec;
use std::collections::VecDeque;
use std::io::IoSlice;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

const TCP_READ: usize = 64 * 1024;
/// The buffer TCP reads fill end to end, chunk after chunk, before a new one is allocated.
pub const READ_BUFFER: usize = 4 * TCP_READ;
/// A read goes into what is left of the current buffer while at least this much is left.
/// Every chunk handed to the stream keeps its whole allocation alive until the peer has
/// acknowledged it: with a fresh 64 kB buffer for each short read, 20 sessions at 1.9 Mbit/s
/// (`many_sessions`) held 138 MB of them, ~6.9 MB a session for at most 3 MB of data (write
/// budget and send buffer; issue 13).
const MIN_READ: usize = 8 * 1024;
/// Stream bytes gathered into one TCP write at most.
const TCP_WRITE: usize = 256 * 1024;
/// Chunks (about a packet each) in one vectored write at most: within every kernel's
/// IOV_MAX (1024), and about 180 KB of 1400-byte chunks.
const WRITE_SLICES: usize = 128;

/// Reads the header at the start of a stream with `decode` (which answers `Ok(None)` while it
/// needs more bytes); returns the header and the bytes after it. At most `limit` bytes are read.
pub async fn read_header<T>(
    reader: &mut StreamReader,
    limit: usize,
    decode: impl Fn(&[u8]) -> Result<Option<(T, usize)>, String>,
) -> Result<(T, Bytes), String> {
    let mut acc = BytesMut::new();
    loop {
        match reader.recv().await {
            Some(Inbound::Data(b)) => {
                reader.consumed(b.len());
                acc.extend_from_slice(&b);
                if let Some((header, n)) = decode(&acc)? {
                    return Ok((header, acc.split_off(n).freeze()));
                }
                if acc.len() > limit {
                    return Err("the stream header is too long".into());
                }
            }
            Some(Inbound::Fin) | Some(Inbound::Reset(_)) | None => {
                return Err("the stream ended before its header".into())
            }
        }
    }
}

/// Reads the server's reply at the start of a stream; returns it and any bytes after it.
pub async fn read_reply(reader: &mut StreamReader) -> Result<(Status, Bytes), String> {
    read_header(reader, 2, |b| Ok(decode_reply(b)?.map(|s| (s, 2)))).await
}

/// Copies both ways until both directions are done. `first` is written to TCP before the rest.
pub async fn splice(tcp: TcpStream, first: Bytes, reader: StreamReader, writer: StreamWriter) {
    let _ = tcp.set_nodelay(true);
    let (mut rh, mut wh) = tcp.into_split();
    let failed = copy_both(&mut rh, &mut wh, first, reader, &writer).await;
    if failed {
        abort(rh.as_ref());
        // Dropping the write half would send a FIN first (tokio shuts it down on drop): let
        // the socket close with the read half, as one RST.
        wh.forget();
        drop(rh);
        let _ = writer.reset(1).await;
    }
}

/// Copies both ways between a byte connection (read half `r`, write half `w`; a kernel TCP
/// socket, or a TUN connection of the user-space stack) and a braid stream until both
/// directions are done; `first` is written to the connection before the rest. Returns true
/// when either side failed (the other is then abandoned: the caller aborts both ends).
pub async fn copy_both<R, W>(
    r: &mut R,
    w: &mut W,
    first: Bytes,
    mut reader: StreamReader,
    writer: &StreamWriter,
) -> bool
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let up = async {
        // One allocation reused while the chunks handed out from it are gone (BytesMut
        // reclaims its buffer on reserve), instead of a fresh 64 kB per read; short reads
        // fill it end to end, so their chunks share it (see `MIN_READ`).
        let mut buf = BytesMut::with_capacity(READ_BUFFER);
        loop {
            if buf.capacity() - buf.len() < MIN_READ {
                buf.reserve(TCP_READ);
            }
            match r.read_buf(&mut buf).await {
                Ok(0) => {
                    let _ = writer.finish().await;
                    return true;
                }
                Ok(_) => {
                    if writer.write(buf.split().freeze()).await.is_err() {
                        return false;
                    }
                }
                Err(_) => {
                    let _ = writer.reset(1).await;
                    return false;
                }
            }
        }
    };
    let down = async {
        if !first.is_empty() && w.write_all(&first).await.is_err() {
            return false;
        }
        // Chunks arrive packet by packet: what is queued goes out in one write — as the
        // chunks themselves (a vectored write) where the connection takes one, else gathered
        // into one buffer.
        let vectored = w.is_write_vectored();
        let mut chunks: VecDeque<Bytes> = VecDeque::new();
        let mut out: Vec<u8> = Vec::new();
        let mut end = None;
        while let Some(m) = reader.recv().await {
            let mut next = Some(m);
            let mut queued = 0;
            while let Some(m) = next.take() {
                match m {
                    Inbound::Data(b) => {
                        queued += b.len();
                        if vectored {
                            chunks.push_back(b);
                        } else {
                            out.extend_from_slice(&b);
                        }
                        if queued < TCP_WRITE {
                            next = reader.try_recv();
                        }
                    }
                    other => end = Some(other),
                }
            }
            if queued > 0 {
                let written =
                    if vectored { write_chunks(w, &mut chunks).await } else { w.write_all(&out).await };
                if written.is_err() {
                    return false;
                }
                reader.consumed(queued);
                out.clear();
            }
            match end.take() {
                Some(Inbound::Fin) => {
                    let _ = w.shutdown().await;
                    return true;
                }
                Some(_) => return false,
                None => {}
            }
        }
        false
    };
    tokio::pin!(up, down);
    // If either side fails, the other is abandoned.
    let (mut up_done, mut down_done) = (false, false);
    let mut failed = false;
    while !(failed || up_done && down_done) {
        tokio::select! {
            ok = &mut up, if !up_done => { up_done = true; failed = !ok; }
            ok = &mut down, if !down_done => { down_done = true; failed = !ok; }
        }
    }
    failed
}

/// Writes every chunk of `chunks`, in order, with vectored writes of up to [`WRITE_SLICES`]
/// chunks each (no copy into a gather buffer); `chunks` is empty when it returns `Ok`.
async fn write_chunks<W: AsyncWrite + Unpin>(w: &mut W, chunks: &mut VecDeque<Bytes>) -> std::io::Result<()> {
    while !chunks.is_empty() {
        let slices: SmallVec<[IoSlice<'_>; WRITE_SLICES]> =
            chunks.iter().take(WRITE_SLICES).map(|b| IoSlice::new(b)).collect();
        let mut n = w.write_vectored(&slices).await?;
        drop(slices);
        if n == 0 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        while n > 0 {
            let Some(front) = chunks.front_mut() else { break };
            if n >= front.len() {
                n -= front.len();
                chunks.pop_front();
            } else {
                front.advance(n);
                n = 0;
            }
        }
    }
    Ok(())
}

/// Makes the connection end with a TCP RST when it is dropped (`SO_LINGER` 0): the
/// application sees a reset, not a clean end of file.
pub fn abort(tcp: &TcpStream) {
    if let Err(e) = tcp.set_zero_linger() {
        tracing::debug!(error = %e, "cannot set SO_LINGER 0; the connection will end with FIN");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::pin::Pin;
    use std::task::{Context, Poll};

    /// A connection that takes at most `per_call` bytes per write, across slices, as a
    /// socket with a nearly full send buffer does.
    struct Short {
        got: Vec<u8>,
        per_call: usize,
        calls: usize,
    }

    impl AsyncWrite for Short {
        fn poll_write(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<std::io::Result<usize>> {
            self.poll_write_vectored_inner(&[IoSlice::new(buf)])
        }
        fn poll_write_vectored(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            bufs: &[IoSlice<'_>],
        ) -> Poll<std::io::Result<usize>> {
            self.poll_write_vectored_inner(bufs)
        }
        fn is_write_vectored(&self) -> bool {
            true
        }
        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
            Poll::Ready(Ok(()))
        }
        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    impl Short {
        fn poll_write_vectored_inner(&mut self, bufs: &[IoSlice<'_>]) -> Poll<std::io::Result<usize>> {
            self.calls += 1;
            let mut n = 0;
            for b in bufs {
                let take = b.len().min(self.per_call - n);
                self.got.extend_from_slice(&b[..take]);
                n += take;
                if n == self.per_call {
                    break;
                }
            }
            Poll::Ready(Ok(n))
        }
    }

    #[tokio::test]
    async fn chunks_leave_whole_and_in_order_through_short_vectored_writes() {
        // 300 chunks of 1..=1400 bytes (more than one call's slices), written 1000 bytes a call:
        // every write ends inside a chunk or on its edge.
        let chunks: Vec<Bytes> =
            (0..300u32).map(|i| Bytes::from(vec![(i % 251) as u8; 1 + (i as usize * 37) % 1400])).collect();
        let expect: Vec<u8> = chunks.iter().flat_map(|c| c.iter().copied()).collect();
        let mut queue: VecDeque<Bytes> = chunks.into_iter().collect();
        let mut w = Short { got: Vec::new(), per_call: 1000, calls: 0 };
        write_chunks(&mut w, &mut queue).await.unwrap();
        assert!(queue.is_empty());
        assert_eq!(w.got, expect);
        assert_eq!(w.calls, expect.len().div_ceil(1000));
    }

    #[tokio::test]
    async fn a_connection_that_takes_nothing_is_an_error_not_a_loop() {
        let mut queue: VecDeque<Bytes> = [Bytes::from_static(b"abc")].into_iter().collect();
        let mut w = Short { got: Vec::new(), per_call: 0, calls: 0 };
        let e = write_chunks(&mut w, &mut queue).await.unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::WriteZero);
        assert_eq!(w.calls, 1);
    }
}
