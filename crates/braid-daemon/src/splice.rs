//! Moving bytes between a TCP connection and a braid stream, both ways, with half-close:
//! a TCP FIN finishes the stream, a stream FIN shuts the TCP write side, a reset on either
//! side aborts the other — with a TCP RST, never a FIN, so that a stream cut short (the peer
//! reset it, the session died) never looks like a complete transfer to the application.

use crate::appproto::{decode_reply, Status};
use crate::bridge::{Inbound, StreamReader, StreamWriter};
use bytes::{Bytes, BytesMut};
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
        // Chunks arrive packet by packet: gather what is queued into one write.
        let mut out: Vec<u8> = Vec::with_capacity(TCP_WRITE);
        let mut end = None;
        while let Some(m) = reader.recv().await {
            let mut next = Some(m);
            while let Some(m) = next.take() {
                match m {
                    Inbound::Data(b) => {
                        out.extend_from_slice(&b);
                        if out.len() < TCP_WRITE {
                            next = reader.try_recv();
                        }
                    }
                    other => end = Some(other),
                }
            }
            if !out.is_empty() {
                if w.write_all(&out).await.is_err() {
                    return false;
                }
                reader.consumed(out.len());
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

/// Makes the connection end with a TCP RST when it is dropped (`SO_LINGER` 0): the
/// application sees a reset, not a clean end of file.
pub fn abort(tcp: &TcpStream) {
    if let Err(e) = tcp.set_zero_linger() {
        tracing::debug!(error = %e, "cannot set SO_LINGER 0; the connection will end with FIN");
    }
}
