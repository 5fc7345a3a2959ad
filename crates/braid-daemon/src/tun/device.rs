//! The TUN device: opening it (with Linux offloads when the kernel has them) and writing the
//! stack's and the flows' packets into it in batches.

use super::{TunCounters, TunSettings, ADDRESS_V4, ADDRESS_V6};
use crate::error::Failure;
use futures::StreamExt;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio::sync::mpsc;

/// The device as the configuration asks for, with offloads when the kernel has them.
pub fn open(settings: &TunSettings, ipv6: bool) -> Result<(tun_rs::AsyncDevice, bool), Failure> {
    let build = |offload: bool| {
        let mut b =
            tun_rs::DeviceBuilder::new().name(&settings.name).mtu(settings.mtu).ipv4(ADDRESS_V4, 32u8, None);
        if ipv6 {
            b = b.ipv6(ADDRESS_V6, 128u8);
        }
        b.offload(offload).build_async()
    };
    match build(settings.offload) {
        Ok(d) => Ok((d, settings.offload)),
        Err(e) if settings.offload => {
            tracing::warn!(error = %e, "TUN offloads unavailable; reading packet by packet");
            build(false).map(|d| (d, false)).map_err(|e| tun_error(settings, e))
        }
        Err(e) => Err(tun_error(settings, e)),
    }
}

fn tun_error(settings: &TunSettings, e: std::io::Error) -> Failure {
    Failure::Config(format!(
        "TUN mode: cannot create device {} ({e}); it needs root or CAP_NET_ADMIN and /dev/net/tun",
        settings.name
    ))
}

/// Writes the stack's and the flows' packets into the device. What is ready at once is
/// written as one batch: with offloads on, tun-rs coalesces a batch's TCP segments of one
/// connection into GRO writes (one syscall and one pass up the kernel's stack for many
/// segments), which is most of the cost of a download through the TUN.
pub async fn write(
    dev: Arc<tun_rs::AsyncDevice>,
    offload: bool,
    mut stack: futures::stream::SplitStream<netstack_smoltcp::Stack>,
    mut flows: mpsc::Receiver<Vec<u8>>,
    counters: Arc<TunCounters>,
) {
    use futures::FutureExt;
    // Headroom before each packet: the virtio-net header that tun-rs fills in.
    let head = if offload { tun_rs::VIRTIO_NET_HDR_LEN } else { 0 };
    let batch = if offload { tun_rs::IDEAL_BATCH_SIZE } else { 1 };
    let mut gro = tun_rs::GROTable::default();
    let mut bufs: Vec<Vec<u8>> = Vec::with_capacity(batch);
    let framed = |p: &[u8]| {
        let mut b = Vec::with_capacity(head + p.len());
        b.resize(head, 0);
        b.extend_from_slice(p);
        b
    };
    let mut open = true;
    while open {
        let first = tokio::select! {
            p = stack.next() => match p {
                Some(Ok(p)) => p,
                Some(Err(_)) => continue,
                None => return,
            },
            p = flows.recv() => match p {
                Some(p) => p,
                None => return,
            },
        };
        bufs.push(framed(&first));
        // The stack's runner makes one segment per connection each round (smoltcp's egress
        // is bounded per poll); yielding lets it make the next while this batch gathers.
        // Two yields in a row that bring nothing end the batch.
        let mut idle = 0;
        while bufs.len() < batch {
            match stack.next().now_or_never() {
                Some(Some(Ok(p))) => {
                    bufs.push(framed(&p));
                    idle = 0;
                }
                Some(Some(Err(_))) => {}
                Some(None) => {
                    open = false;
                    break;
                }
                None if offload && idle < 2 => {
                    idle += 1;
                    tokio::task::yield_now().await;
                }
                None => break,
            }
        }
        while bufs.len() < batch {
            match flows.try_recv() {
                Ok(p) => bufs.push(framed(&p)),
                Err(_) => break,
            }
        }
        let n = bufs.len() as u64;
        let sent = if offload {
            dev.send_multiple(&mut gro, &mut bufs, head).await.map(|_| ())
        } else {
            dev.send(&bufs[0]).await.map(|_| ())
        };
        match sent {
            Ok(()) => {
                counters.packets_out.fetch_add(n, Ordering::Relaxed);
            }
            Err(e) => tracing::debug!(error = %e, "TUN write failed"),
        }
        bufs.clear();
    }
}
