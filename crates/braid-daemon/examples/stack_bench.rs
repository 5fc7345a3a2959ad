//! Two user-space TCP/IP stacks side by side, as a TUN front end uses them: the kernel's TCP
//! (a local sender or receiver) talks through a TUN device to (a) netstack-smoltcp, configured
//! as braid's TUN mode configures it, or (b) ipstack; each terminated connection is copied to
//! a sink (upload: app → stack) or filled from a source (download: stack → app).
//!
//! Root, in a network namespace of its own (`bench/stack-compare.sh` makes one and removes it):
//!
//! ```text
//! stack_bench --stack smoltcp|ipstack --flows N --direction up|down --mbytes M [--mtu U]
//! ```
//!
//! Prints one JSON line: goodput (Gbit/s) and the process's CPU seconds (user + system, which
//! includes the kernel TCP side of the same process) per GB moved.

use std::net::{Ipv4Addr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::Instant;

use futures::{SinkExt, StreamExt};
use tokio::io::unix::AsyncFd;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};

/// The TUN's own address; the stacks answer for every other address routed into it.
const TUN_ADDR: Ipv4Addr = Ipv4Addr::new(10, 211, 0, 1);
/// Where the kernel's side connects (routed into the TUN).
const PEER: Ipv4Addr = Ipv4Addr::new(10, 211, 0, 2);
/// Application read and write size.
const CHUNK: usize = 256 * 1024;
/// netstack-smoltcp's per-connection buffers, as braid's TUN mode sets them.
const SMOLTCP_BUFFER: u32 = 1 << 20;

#[derive(Clone, Copy, PartialEq, Debug)]
enum Direction {
    /// The kernel's side sends, the stack's side sinks.
    Up,
    /// The stack's side sends, the kernel's side sinks.
    Down,
}

/// The command line.
struct Args {
    stack: String,
    flows: usize,
    direction: Direction,
    bytes_per_flow: u64,
    mtu: u16,
}

/// Reads the command line; `--mbytes` is the total over all flows.
fn parse_args() -> Args {
    let mut a =
        Args { stack: String::new(), flows: 1, direction: Direction::Up, bytes_per_flow: 0, mtu: 65535 };
    let mut total_mb = 1024u64;
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let v = it.next().unwrap_or_else(|| panic!("{k} needs a value"));
        match k.as_str() {
            "--stack" => a.stack = v,
            "--flows" => a.flows = v.parse().expect("--flows N"),
            "--direction" => {
                a.direction = match v.as_str() {
                    "up" => Direction::Up,
                    "down" => Direction::Down,
                    _ => panic!("--direction up|down"),
                }
            }
            "--mbytes" => total_mb = v.parse().expect("--mbytes M"),
            "--mtu" => a.mtu = v.parse().expect("--mtu U"),
            _ => panic!("unknown argument {k}"),
        }
    }
    assert!(a.stack == "smoltcp" || a.stack == "ipstack", "--stack smoltcp|ipstack");
    a.bytes_per_flow = total_mb * 1_000_000 / a.flows as u64;
    a
}

/// The TUN device as a tokio reader/writer of whole packets (one read, one packet); clones
/// share the device.
#[derive(Clone)]
struct TunIo(Arc<AsyncFd<tun_rs::SyncDevice>>);

impl AsyncRead for TunIo {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        loop {
            let mut guard = ready!(self.0.poll_read_ready(cx))?;
            match guard.try_io(|fd| fd.get_ref().recv(buf.initialize_unfilled())) {
                Ok(Ok(n)) => {
                    buf.advance(n);
                    return Poll::Ready(Ok(()));
                }
                Ok(Err(e)) => return Poll::Ready(Err(e)),
                Err(_would_block) => continue,
            }
        }
    }
}

impl AsyncWrite for TunIo {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        loop {
            let mut guard = ready!(self.0.poll_write_ready(cx))?;
            match guard.try_io(|fd| fd.get_ref().send(buf)) {
                Ok(r) => return Poll::Ready(r),
                Err(_would_block) => continue,
            }
        }
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

fn open_tun(mtu: u16) -> TunIo {
    let dev = tun_rs::DeviceBuilder::new()
        .name("sbench0")
        .mtu(mtu)
        .ipv4(TUN_ADDR, 24u8, None)
        .build_sync()
        .expect("creating the TUN (root, /dev/net/tun)");
    dev.set_nonblocking(true).expect("non-blocking TUN");
    // SAFETY: the device owns its descriptor, which stays open and the same until the AsyncFd
    // (its only owner) drops it.
    let fd = unsafe { AsyncFd::register(dev) }.map_err(|e| e.to_string()).expect("registering the TUN");
    TunIo(Arc::new(fd))
}

/// Where each connection's stack side reports its byte count.
type Done = tokio::sync::mpsc::UnboundedSender<u64>;

/// What the stack's side does with one terminated connection: reads and writes at once, as
/// a proxy does (ipstack handles a connection's incoming ACKs only while it is being read).
/// Reports the bytes taken (upload) or given (download) on `done` before closing.
async fn stack_side<S: AsyncRead + AsyncWrite>(s: S, dir: Direction, bytes: u64, done: Done) {
    let (mut r, mut w) = tokio::io::split(s);
    let read = async move {
        let mut buf = vec![0u8; CHUNK];
        let mut got = 0u64;
        loop {
            // ipstack 1.0.1 does not wake a pending read when the connection closes; the read
            // is started again every 10 ms (reads are cancel-safe), for both stacks alike.
            match tokio::time::timeout(std::time::Duration::from_millis(10), r.read(&mut buf)).await {
                Err(_elapsed) => continue,
                Ok(Ok(0) | Err(_)) => return got,
                Ok(Ok(n)) => got += n as u64,
            }
        }
    };
    match dir {
        // The application closes first; then this side closes too.
        Direction::Up => {
            let _ = done.send(read.await);
            finish(&mut w).await;
        }
        Direction::Down => {
            let write = async {
                let buf = vec![0u8; CHUNK];
                let mut sent = 0u64;
                while sent < bytes {
                    let n = CHUNK.min((bytes - sent) as usize);
                    if w.write_all(&buf[..n]).await.is_err() {
                        break;
                    }
                    sent += n as u64;
                }
                let _ = done.send(sent);
                finish(&mut w).await;
            };
            tokio::join!(read, write);
        }
    }
}

/// Closes the stack's side for writing. ipstack 1.0.1 sends no FIN when `shutdown` first finds
/// data unacknowledged: it parks the task and wakes it only once the connection has closed. So
/// the call is repeated every millisecond until it completes (harmless for netstack-smoltcp).
async fn finish<W: AsyncWrite + Unpin>(w: &mut W) {
    loop {
        if let Ok(_done) = tokio::time::timeout(std::time::Duration::from_millis(1), w.shutdown()).await {
            return;
        }
    }
}

/// Waits until the kernel has every byte written to `s` acknowledged (`SIOCOUTQ` = 0). ipstack
/// 1.0.1 never acknowledges a segment that carries data and a FIN, which the kernel sends
/// when an application writes and closes at once; closing only once all is acknowledged sends
/// the FIN alone.
async fn drained(s: &tokio::net::TcpStream) {
    use std::os::fd::AsRawFd;
    loop {
        let mut queued: libc::c_int = 0;
        // SAFETY: SIOCOUTQ writes one int to the pointer it is given.
        let r = unsafe { libc::ioctl(s.as_raw_fd(), libc::TIOCOUTQ, &mut queued) };
        if r != 0 || queued == 0 {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
    }
}

/// What the kernel's side (the application) does on one connection; returns bytes received
/// (download) or sent (upload).
async fn app_side(i: usize, dir: Direction, bytes: u64) -> u64 {
    let mut s = tokio::net::TcpStream::connect(SocketAddr::from((PEER, 5000 + i as u16)))
        .await
        .expect("connecting through the TUN");
    let mut buf = vec![0u8; CHUNK];
    match dir {
        Direction::Up => {
            let mut sent = 0u64;
            while sent < bytes {
                let n = CHUNK.min((bytes - sent) as usize);
                s.write_all(&buf[..n]).await.expect("upload write");
                sent += n as u64;
            }
            drained(&s).await;
            s.shutdown().await.expect("upload shutdown");
            // Wait for the stack's side to close: everything was taken.
            let _ = s.read(&mut buf).await;
            sent
        }
        Direction::Down => {
            let mut got = 0u64;
            loop {
                match s.read(&mut buf).await {
                    Ok(0) => return got,
                    Ok(n) => got += n as u64,
                    Err(e) => panic!("download read after {got} bytes: {e}"),
                }
            }
        }
    }
}

/// Runs netstack-smoltcp over the TUN, as braid's TUN mode builds it.
fn start_smoltcp(tun: TunIo, dir: Direction, bytes: u64, done: Done) {
    let (stack, runner, _, listener) = netstack_smoltcp::StackBuilder::default()
        .enable_tcp(true)
        .mtu(usize::from(u16::MAX))
        .tcp_recv_buffer_size(SMOLTCP_BUFFER)
        .tcp_send_buffer_size(SMOLTCP_BUFFER)
        .build()
        .expect("netstack-smoltcp");
    let (runner, mut listener) = (runner.expect("runner"), listener.expect("TCP listener"));
    tokio::spawn(async move {
        let _ = runner.await;
    });
    let (mut sink, mut stream) = stack.split();
    let mut reader = tun.clone();
    tokio::spawn(async move {
        let mut buf = vec![0u8; 65536];
        loop {
            let n = match reader.read(&mut buf).await {
                Ok(n) => n,
                Err(_) => return,
            };
            if sink.send(buf[..n].to_vec()).await.is_err() {
                return;
            }
        }
    });
    let mut writer = tun;
    tokio::spawn(async move {
        while let Some(Ok(p)) = stream.next().await {
            if writer.write(&p).await.is_err() {
                return;
            }
        }
    });
    tokio::spawn(async move {
        while let Some((conn, _, _)) = listener.next().await {
            tokio::spawn(stack_side(conn, dir, bytes, done.clone()));
        }
    });
}

/// Runs ipstack over the TUN with the same MTU and buffer sizes.
fn start_ipstack(tun: TunIo, mtu: u16, dir: Direction, bytes: u64, done: Done) {
    let mut config = ipstack::IpStackConfig::default();
    config.mtu(mtu).expect("ipstack MTU");
    // The same buffers as netstack-smoltcp's (ipstack's default is 16 KiB each).
    let mut tcp = ipstack::TcpConfig::default();
    tcp.max_unacked_bytes = SMOLTCP_BUFFER;
    tcp.read_buffer_size = SMOLTCP_BUFFER as usize;
    // Without it ipstack's SYN-ACK has no MSS option and the kernel falls back to 536 bytes.
    tcp.options = Some(vec![ipstack::TcpOptions::MaximumSegmentSize(mtu - 40)]);
    config.with_tcp_config(tcp);
    let mut stack = ipstack::IpStack::new(config, tun);
    tokio::spawn(async move {
        while let Ok(s) = stack.accept().await {
            if let ipstack::IpStackStream::Tcp(conn) = s {
                tokio::spawn(stack_side(conn, dir, bytes, done.clone()));
            }
        }
    });
}

/// User + system CPU seconds of this process so far.
fn cpu_seconds() -> f64 {
    // SAFETY: getrusage fills the struct it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let t = |v: libc::timeval| v.tv_sec as f64 + v.tv_usec as f64 * 1e-6;
    t(u.ru_utime) + t(u.ru_stime)
}

/// `STACK_BENCH_LOG=trace` (or debug, …) prints the stacks' own log lines to stderr.
struct StderrLog;

impl log::Log for StderrLog {
    fn enabled(&self, _: &log::Metadata) -> bool {
        true
    }
    fn log(&self, r: &log::Record) {
        eprintln!("{} {}: {}", r.level(), r.target(), r.args());
    }
    fn flush(&self) {}
}

fn main() {
    if let Some(level) = std::env::var("STACK_BENCH_LOG").ok().and_then(|l| l.parse().ok()) {
        log::set_logger(&StderrLog).expect("one logger");
        log::set_max_level(level);
    }
    let args = parse_args();
    let rt =
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    rt.block_on(async move {
        let tun = open_tun(args.mtu);
        let (done, mut finished) = tokio::sync::mpsc::unbounded_channel();
        match args.stack.as_str() {
            "smoltcp" => start_smoltcp(tun, args.direction, args.bytes_per_flow, done),
            _ => start_ipstack(tun, args.mtu, args.direction, args.bytes_per_flow, done),
        }
        let (t0, c0) = (Instant::now(), cpu_seconds());
        let apps: Vec<_> =
            (0..args.flows).map(|i| tokio::spawn(app_side(i, args.direction, args.bytes_per_flow))).collect();
        let mut app_bytes = 0u64;
        for a in apps {
            app_bytes += a.await.expect("application task");
        }
        // The transfer is over when every application has its end; the stacks' own closing
        // (ipstack lingers in TIME_WAIT) is not timed.
        let (secs, cpu) = (t0.elapsed().as_secs_f64(), cpu_seconds() - c0);
        let mut stack_bytes = 0u64;
        for _ in 0..args.flows {
            stack_bytes += finished.recv().await.expect("stack side");
        }
        let expected = args.bytes_per_flow * args.flows as u64;
        let ok = app_bytes == expected && stack_bytes == expected;
        let gb = expected as f64 / 1e9;
        println!(
            "{{\"stack\":\"{}\",\"flows\":{},\"direction\":\"{:?}\",\"mtu\":{},\"bytes\":{},\"complete\":{},\"seconds\":{:.3},\"gbps\":{:.3},\"cpu_s\":{:.3},\"cpu_s_per_gb\":{:.3}}}",
            args.stack,
            args.flows,
            args.direction,
            args.mtu,
            expected,
            ok,
            secs,
            expected as f64 * 8.0 / secs / 1e9,
            cpu,
            cpu / gb
        );
        if !ok {
            eprintln!("incomplete: application {app_bytes}, stack {stack_bytes}, expected {expected}");
        }
        // Measured; the stacks' lingering connections (ipstack's TIME_WAIT, whose drop blocks)
        // need not be torn down one by one.
        use std::io::Write;
        let _ = std::io::stdout().flush();
        std::process::exit(if ok { 0 } else { 1 });
    });
}
