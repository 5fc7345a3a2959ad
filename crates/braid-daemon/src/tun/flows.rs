//! UDP flows and pings through the TUN. A flow is one (application address, destination)
//! pair; it opens an ordered association at the server ([`crate::appproto`]: UDP_OPEN_ORDERED)
//! and its datagrams travel as braid datagrams, numbered so that each side puts them back in
//! the sender's order ([`crate::reorder`]). A ping flow (application, destination, echo
//! identifier) opens an ICMP echo association (PING_OPEN). A flow ends after a time without
//! traffic either way, or when the server ends its association.

use super::packet::{echo_reply_packet, udp_packet};
use super::TunCounters;
use crate::appproto::{encode_udp, Request, Target};
use crate::bridge::{AppMsg, Inbound};
use crate::frontend::{open_association_as, Frontend, UdpRegistry};
use crate::reorder::{Reorder, SharedHold};
use crate::server_udp::split_seq;
use bytes::{BufMut, Bytes, BytesMut};
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::Instant;

/// How long a UDP flow lives without a datagram either way.
pub const UDP_IDLE: Duration = Duration::from_secs(60);
/// The same for DNS (port 53): one query, one answer, and many source ports.
pub const DNS_IDLE: Duration = Duration::from_secs(5);
/// The same for a ping flow.
pub const PING_IDLE: Duration = Duration::from_secs(10);
/// How long datagrams of a flow the server refused are dropped before it is tried again.
const REFUSED_HOLD: Duration = Duration::from_secs(5);
/// Datagrams queued per flow while its association opens or its queue drains.
const FLOW_QUEUE: usize = 256;
/// Flows at once; datagrams of further flows are dropped (counted).
const MAX_FLOWS: usize = 4096;

/// What every flow task shares.
#[derive(Clone)]
pub struct FlowEnds {
    /// The session's request channel and traffic classes.
    pub front: Frontend,
    /// Where the server's answers are routed.
    pub udp: UdpRegistry,
    /// The reorder window's hold time.
    pub hold: SharedHold,
    /// Packets for the TUN.
    pub to_tun: mpsc::Sender<Vec<u8>>,
    /// Counters.
    pub counters: Arc<TunCounters>,
}

/// The flow table of the TUN's reader.
pub struct Flows {
    ends: FlowEnds,
    udp: HashMap<(SocketAddr, SocketAddr), mpsc::Sender<Bytes>>,
    pings: HashMap<(IpAddr, IpAddr, u16), mpsc::Sender<Bytes>>,
}

impl Flows {
    /// An empty table.
    pub fn new(ends: FlowEnds) -> Self {
        Flows { ends, udp: HashMap::new(), pings: HashMap::new() }
    }

    /// A UDP datagram from the TUN.
    pub fn udp(&mut self, src: SocketAddr, dst: SocketAddr, payload: &[u8]) {
        let payload = Bytes::copy_from_slice(payload);
        if let Some(tx) = self.udp.get(&(src, dst)).filter(|tx| !tx.is_closed()) {
            if tx.try_send(payload).is_err() {
                self.ends.counters.dropped_queue.fetch_add(1, Ordering::Relaxed);
            }
            return;
        }
        if self.full() {
            return;
        }
        let (tx, rx) = mpsc::channel(FLOW_QUEUE);
        let _ = tx.try_send(payload);
        self.udp.insert((src, dst), tx);
        self.ends.counters.udp_flows.fetch_add(1, Ordering::Relaxed);
        tokio::spawn(flow(self.ends.clone(), Kind::Udp { src, dst }, rx));
    }

    /// An ICMP echo request from the TUN.
    pub fn echo(&mut self, src: IpAddr, dst: IpAddr, ident: u16, message: &[u8]) {
        let message = Bytes::copy_from_slice(message);
        if let Some(tx) = self.pings.get(&(src, dst, ident)).filter(|tx| !tx.is_closed()) {
            if tx.try_send(message).is_err() {
                self.ends.counters.dropped_queue.fetch_add(1, Ordering::Relaxed);
            }
            return;
        }
        if self.full() {
            return;
        }
        let (tx, rx) = mpsc::channel(FLOW_QUEUE);
        let _ = tx.try_send(message);
        self.pings.insert((src, dst, ident), tx);
        self.ends.counters.ping_flows.fetch_add(1, Ordering::Relaxed);
        tokio::spawn(flow(self.ends.clone(), Kind::Ping { src, dst, ident }, rx));
    }

    /// Forgets ended flows; true (and a counted drop) when the table is still full.
    fn full(&mut self) -> bool {
        if self.udp.len() + self.pings.len() < MAX_FLOWS {
            return false;
        }
        self.udp.retain(|_, tx| !tx.is_closed());
        self.pings.retain(|_, tx| !tx.is_closed());
        let full = self.udp.len() + self.pings.len() >= MAX_FLOWS;
        if full {
            self.ends.counters.dropped_flows.fetch_add(1, Ordering::Relaxed);
        }
        full
    }
}

/// What a flow carries.
#[derive(Debug, Clone, Copy)]
enum Kind {
    Udp { src: SocketAddr, dst: SocketAddr },
    Ping { src: IpAddr, dst: IpAddr, ident: u16 },
}

/// One flow: opens its association, relays until it idles out or the server ends it.
async fn flow(ends: FlowEnds, kind: Kind, mut datagrams: mpsc::Receiver<Bytes>) {
    let (request, target, idle) = match kind {
        Kind::Udp { dst, .. } => {
            let idle = if dst.port() == 53 { DNS_IDLE } else { UDP_IDLE };
            (Request::UdpOpenOrdered(0), Target::Addr(dst), idle)
        }
        Kind::Ping { dst, .. } => (Request::PingOpen(0), Target::Addr(SocketAddr::new(dst, 0)), PING_IDLE),
    };
    let (assoc, mut answers) = ends.udp.register();
    let (mut reader, writer) = match open_association_as(&ends.front.app, &request, assoc.id).await {
        Ok(e) => e,
        Err(status) => {
            ends.counters.flows_refused.fetch_add(1, Ordering::Relaxed);
            tracing::debug!(?kind, ?status, "TUN: the server refused a flow");
            drop(assoc);
            let hold = tokio::time::sleep(REFUSED_HOLD);
            tokio::pin!(hold);
            loop {
                tokio::select! {
                    _ = &mut hold => return,
                    m = datagrams.recv() => if m.is_none() { return },
                }
            }
        }
    };
    let mut window: Reorder<(SocketAddr, Bytes)> = Reorder::from_zero(ends.hold.cap());
    let mut ready = Vec::new();
    let mut seq: u32 = 0;
    let mut last = Instant::now();
    // The largest answer so far. A flow is classified by the larger of its own datagram and
    // this: a QUIC download sends small ACKs, and classified by their size alone it would be
    // "small-packet UDP" (interactive, duplicated on two paths) — and the server sends the
    // answers, the download itself, in the class of the client's latest datagram.
    let mut answer_len = 0usize;
    let clean = loop {
        let due = window.next_deadline().map(Instant::from_std);
        let timer = async {
            match due {
                Some(d) => tokio::time::sleep_until(d).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            m = datagrams.recv() => {
                let Some(payload) = m else { break true };
                let class = ends.front.datagram_class(&target, payload.len().max(answer_len), None);
                last = Instant::now();
                let body = match kind {
                    Kind::Udp { .. } => {
                        let mut b = BytesMut::with_capacity(payload.len() + 4);
                        b.put_u32(seq);
                        b.put_slice(&payload);
                        seq = seq.wrapping_add(1);
                        b.freeze()
                    }
                    Kind::Ping { .. } => payload,
                };
                let d = encode_udp(assoc.id, &target, &body);
                if ends.front.app.try_send(AppMsg::Datagram(class, d)).is_err() {
                    ends.counters.dropped_queue.fetch_add(1, Ordering::Relaxed);
                }
            }
            Some((_, source, payload)) = answers.recv() => {
                last = Instant::now();
                answer_len = answer_len.max(payload.len());
                let Target::Addr(source) = source else { continue };
                match kind {
                    Kind::Udp { .. } => {
                        let Some((n, data)) = split_seq(&payload) else { continue };
                        window.push(std::time::Instant::now(), n, (source, data), ends.hold.get(), &mut ready);
                    }
                    Kind::Ping { .. } => ready.push((source, payload)),
                }
                deliver(&ends, kind, &mut ready).await;
            }
            _ = timer => {
                window.poll(std::time::Instant::now(), &mut ready);
                deliver(&ends, kind, &mut ready).await;
            }
            m = reader.recv() => match m {
                Some(Inbound::Data(b)) => reader.consumed(b.len()),
                Some(Inbound::Fin) => break true,
                _ => break false,
            },
            _ = tokio::time::sleep_until(last + idle) => break true,
        }
    };
    let s = window.stats;
    ends.counters.reorder_held.fetch_add(s.held, Ordering::Relaxed);
    ends.counters.reorder_gaps.fetch_add(s.gaps, Ordering::Relaxed);
    ends.counters.reorder_late.fetch_add(s.late, Ordering::Relaxed);
    if clean {
        let _ = writer.finish().await;
    } else {
        let _ = writer.reset(0).await;
    }
}

/// Writes released answers into the TUN as packets to the application.
async fn deliver(ends: &FlowEnds, kind: Kind, ready: &mut Vec<(SocketAddr, Bytes)>) {
    for (source, data) in ready.drain(..) {
        let packet = match kind {
            Kind::Udp { src, .. } => udp_packet(source, src, &data),
            Kind::Ping { src, ident, .. } => echo_reply_packet(source.ip(), src, ident, &data),
        };
        match packet {
            Some(p) => {
                if ends.to_tun.send(p).await.is_err() {
                    return;
                }
            }
            None => {
                ends.counters.dropped_malformed.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}
