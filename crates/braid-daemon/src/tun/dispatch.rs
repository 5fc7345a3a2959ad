//! Packets from the device to where they belong: TCP into the user-space TCP/IP stack
//! (netstack-smoltcp), UDP and ICMP echo to their flows ([`super::flows`]); and the tasks that
//! run the stack, accept its connections and write into the device.

use super::packet::{self, Packet, Refusal};
use super::{flows, tcp, TunCounters, TunSettings};
use crate::error::Failure;
use crate::frontend::UdpRegistry;
use crate::reorder::SharedHold;
use futures::{SinkExt, StreamExt};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// Packets queued for the TUN before the writers wait.
const TO_TUN_QUEUE: usize = 1024;
/// Per-connection TCP buffers of the stack, each way.
const STACK_BUFFER: u32 = 1 << 20;
/// The user-space stack's MTU: the largest IP packet. TCP needs no path MTU inside the host,
/// so the stack sends segments as large as the application's kernel admits — see
/// [`super::host::ADVMSS_V4`] — and a download crosses the stack and the device in 64 KiB packets
/// instead of MTU-sized ones (one stack poll, one copy and one write each).
pub const STACK_MTU: usize = 65535;
/// Starts the stack and the tasks that move packets between it, the flows and the device.
pub fn run(
    settings: &TunSettings,
    (dev, offload): (tun_rs::AsyncDevice, bool),
    front: crate::frontend::Frontend,
    udp: UdpRegistry,
    hold: SharedHold,
    counters: Arc<TunCounters>,
) -> Result<Vec<JoinHandle<()>>, Failure> {
    let (stack, runner, _, listener) = netstack_smoltcp::StackBuilder::default()
        .enable_tcp(true)
        .mtu(STACK_MTU)
        .tcp_recv_buffer_size(STACK_BUFFER)
        .tcp_send_buffer_size(STACK_BUFFER)
        .build()
        .map_err(|e| Failure::Other(format!("TUN mode: cannot start the TCP/IP stack: {e}")))?;
    let (runner, listener) = match (runner, listener) {
        (Some(r), Some(l)) => (r, l),
        _ => return Err(Failure::Other("TUN mode: the TCP/IP stack has no TCP".into())),
    };
    let dev = Arc::new(dev);
    let (to_tun, from_flows) = mpsc::channel(TO_TUN_QUEUE);
    let (sink, stream) = stack.split();
    let ends = flows::FlowEnds { front: front.clone(), udp, hold, to_tun, counters: counters.clone() };
    let mtu = usize::from(settings.mtu);
    Ok(vec![
        tokio::spawn(async move {
            if let Err(e) = runner.await {
                tracing::warn!(error = %e, "TUN: the TCP/IP stack stopped");
            }
        }),
        tokio::spawn(tcp::serve(listener, front, counters.clone())),
        tokio::spawn(read_device(dev.clone(), offload, mtu, sink, flows::Flows::new(ends), counters.clone())),
        tokio::spawn(super::device::write(dev, offload, stream, from_flows, counters)),
    ])
}

/// Reads packets from the device and hands each where it belongs.
async fn read_device(
    dev: Arc<tun_rs::AsyncDevice>,
    offload: bool,
    mtu: usize,
    mut stack: futures::stream::SplitSink<netstack_smoltcp::Stack, Vec<u8>>,
    mut flows: flows::Flows,
    counters: Arc<TunCounters>,
) {
    let mut original = vec![0u8; tun_rs::VIRTIO_NET_HDR_LEN + 65535];
    let batch = if offload { tun_rs::IDEAL_BATCH_SIZE } else { 1 };
    let mut bufs = vec![vec![0u8; mtu.max(1500) + 128]; batch];
    let mut sizes = vec![0usize; batch];
    loop {
        let n = match dev.recv_multiple(&mut original, &mut bufs, &mut sizes, 0).await {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                // A malformed offload header is one bad read, not the device's end.
                counters.dropped_malformed.fetch_add(1, Ordering::Relaxed);
                tracing::debug!(error = %e, "TUN read failed");
                if dev.readable().await.is_err() {
                    return;
                }
                continue;
            }
        };
        counters.packets_in.fetch_add(n as u64, Ordering::Relaxed);
        let mut fed = false;
        for (buf, &size) in bufs.iter().zip(&sizes).take(n) {
            let p = &buf[..size.min(buf.len())];
            match packet::parse(p) {
                Ok(Packet::Tcp) => {
                    if stack.feed(p.to_vec()).await.is_err() {
                        return;
                    }
                    fed = true;
                }
                Ok(Packet::Udp { src, dst, payload }) => flows.udp(src, dst, payload),
                Ok(Packet::Echo { src, dst, ident, message }) => flows.echo(src, dst, ident, message),
                Err(r) => {
                    let c = match r {
                        Refusal::Malformed(_) => &counters.dropped_malformed,
                        Refusal::Fragment => &counters.dropped_fragments,
                        Refusal::Protocol(_) => &counters.dropped_protocol,
                        Refusal::OtherIcmp(_) => &counters.dropped_icmp,
                    };
                    c.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        if fed && stack.flush().await.is_err() {
            return;
        }
    }
}
