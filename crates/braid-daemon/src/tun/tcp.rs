//! TCP through the TUN: every connection the user-space stack accepts becomes a braid stream
//! to its destination — the CONNECT request of SOCKS5 and forwards ([`crate::appproto`]), so
//! the server opens the real connection under the same egress policy and limits. One TCP flow
//! so rides every path through the scheduler, with no TCP inside TCP.

use super::TunCounters;
use crate::appproto::Target;
use crate::bridge::{Inbound, StreamReader, StreamWriter};
use crate::frontend::Frontend;
use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use netstack_smoltcp::{TcpListener, TcpStream};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const READ: usize = 64 * 1024;
/// Stream bytes gathered into one write to the stack at most.
const WRITE: usize = 256 * 1024;

/// Accepts the stack's connections until it ends.
/// Each connection's class comes from the client's traffic classes, as for SOCKS5.
pub async fn serve(mut listener: TcpListener, front: Frontend, counters: Arc<TunCounters>) {
    while let Some((conn, src, dst)) = listener.next().await {
        counters.tcp_flows.fetch_add(1, Ordering::Relaxed);
        let (front, counters) = (front.clone(), counters.clone());
        tokio::spawn(async move {
            let target = Target::Addr(dst);
            let class = front.stream_class(&target, None);
            match crate::frontend::connect(&front.app, &target, class).await {
                Ok((ends, rest)) => {
                    let (reader, writer) = ends.split();
                    splice(conn, rest, reader, writer).await;
                }
                Err(status) => {
                    counters.tcp_refused.fetch_add(1, Ordering::Relaxed);
                    tracing::debug!(%src, %dst, ?status, "TUN: the server could not connect");
                }
            }
        });
    }
}

/// Copies both ways between the stack's connection and the stream until both directions are
/// done; a failure on either side resets the stream and drops the connection.
async fn splice(conn: TcpStream, first: Bytes, mut reader: StreamReader, writer: StreamWriter) {
    let (mut r, mut w) = tokio::io::split(conn);
    let up = async {
        let mut buf = BytesMut::with_capacity(4 * READ);
        loop {
            buf.reserve(READ);
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
        let mut out: Vec<u8> = Vec::with_capacity(WRITE);
        let mut end = None;
        while let Some(m) = reader.recv().await {
            let mut next = Some(m);
            while let Some(m) = next.take() {
                match m {
                    Inbound::Data(b) => {
                        out.extend_from_slice(&b);
                        if out.len() < WRITE {
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
    let (mut up_done, mut down_done, mut failed) = (false, false, false);
    while !(failed || up_done && down_done) {
        tokio::select! {
            ok = &mut up, if !up_done => { up_done = true; failed = !ok; }
            ok = &mut down, if !down_done => { down_done = true; failed = !ok; }
        }
    }
    if failed {
        let _ = writer.reset(1).await;
    }
}
