//! Prints the client's per-path state every 50 ms of a short run: a debugging aid.
use braid_core::*;
use braid_sim::net::{client_addr, link_of, Net, SERVER};
use braid_sim::LinkSpec;
use bytes::BytesMut;
use std::time::Duration;

fn main() {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .without_time()
        .init();
    let links: Vec<LinkSpec> = std::env::args()
        .skip(1)
        .map(|s| LinkSpec::parse(&s).unwrap())
        .collect();
    let ck = StaticSecret::from_bytes([1; 32]);
    let sk = StaticSecret::from_bytes([2; 32]);
    let session = SessionConfig::default();
    let ccfg = ClientConfig {
        secret: ck.clone(),
        server_key: sk.public_key(),
        session: session.clone(),
    };
    let scfg = ServerConfig {
        secret: sk,
        clients: vec![ck.public_key()],
        session,
    };
    let ts = Timestamp::from_duration;
    let mut now = Duration::ZERO;
    let mut c = Session::connect(&ccfg, ts(now), Some(client_addr(0)), SERVER, 1, 1);
    for i in 1..links.len() {
        c.add_path(ts(now), Some(client_addr(i)), SERVER).unwrap();
    }
    let mut ep = Endpoint::new(scfg, 2);
    let mut s: Option<Box<Session>> = None;
    let mut net = Net::new(links, 1);
    let mut bulk = braid_sim::workload::Bulk::new(1, None);
    let mut buf = Vec::new();
    let mut next_print = Duration::ZERO;
    let from = Duration::from_millis(
        std::env::var("FROM")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0),
    );
    let to = Duration::from_millis(
        std::env::var("TO")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(3000),
    );
    while now < to {
        while let Some(a) = net.pop_due(now) {
            let d = BytesMut::from(&a.data[..]);
            if a.to_server {
                match ep.handle(ts(now), Some(SERVER), client_addr(a.link), &d) {
                    DatagramEvent::Accepted { session, .. } => s = Some(session),
                    DatagramEvent::Route(_) => s.as_mut().unwrap().handle_datagram(
                        ts(now),
                        Some(SERVER),
                        client_addr(a.link),
                        d,
                    ),
                    _ => {}
                }
            } else {
                c.handle_datagram(ts(now), Some(client_addr(a.link)), SERVER, d);
            }
        }
        if c.poll_timeout().is_some_and(|t| t <= ts(now)) {
            c.handle_timeout(ts(now));
        }
        if let Some(s) = s.as_mut() {
            if s.poll_timeout().is_some_and(|t| t <= ts(now)) {
                s.handle_timeout(ts(now));
            }
        }
        loop {
            let mut p = false;
            while let Some(e) = c.poll_event() {
                if now >= from {
                    println!("{now:?} client event {e:?}");
                }
                bulk.client_step(&mut c, Some(&e));
            }
            bulk.client_step(&mut c, None);
            if let Some(s) = s.as_mut() {
                while let Some(e) = s.poll_event() {
                    if !matches!(e, Event::Stream(StreamEvent::Readable(_))) {
                        if now >= from {
                            println!("{now:?} server event {e:?}");
                        }
                    }
                    bulk.server_step(s, Some(&e));
                }
                bulk.server_step(s, None);
            }
            while let Some(t) = c.poll_transmit(ts(now), &mut buf) {
                net.send(
                    now,
                    t.source.and_then(link_of).unwrap_or(0),
                    true,
                    &buf[..t.size],
                );
                p = true;
            }
            if let Some(s) = s.as_mut() {
                while let Some(t) = s.poll_transmit(ts(now), &mut buf) {
                    net.send(
                        now,
                        link_of(t.destination).unwrap_or(0),
                        false,
                        &buf[..t.size],
                    );
                    p = true;
                }
            }
            if !p {
                break;
            }
        }
        if now >= next_print && now >= from {
            next_print = now
                + Duration::from_millis(
                    std::env::var("STEP")
                        .ok()
                        .and_then(|v| v.parse().ok())
                        .unwrap_or(50),
                );
            let mut line = format!(
                "{:>6}ms delivered={:>9} cflow={:?} sflow={:?}",
                now.as_millis(),
                bulk.delivered,
                c.flow_control(),
                s.as_ref().map(|s| s.flow_control())
            );
            for id in c.path_ids() {
                let i = c.path_info(id).unwrap();
                line += &format!(
                    " | p{id} {:?} cwnd={} inf={} pace={:.0}k srtt={:.0}ms sent={} lost={}",
                    i.state,
                    i.cwnd,
                    i.in_flight,
                    i.pacing_rate * 8.0 / 1e3,
                    i.srtt.as_secs_f64() * 1e3,
                    i.stats.packets_sent,
                    i.stats.packets_lost
                );
            }
            if let Some(s) = s.as_ref() {
                line += &format!(" | reorder={}", s.reorder_now());
                for id in s.path_ids() {
                    let i = s.path_info(id).unwrap();
                    line += &format!(
                        " | S{id} {:?} rcv={} sent={}",
                        i.state, i.stats.packets_received, i.stats.packets_sent
                    );
                }
            }
            println!("{line}");
        }
        let next = [
            net.next_arrival(),
            c.poll_timeout().map(|t| t.as_duration()),
            s.as_ref()
                .and_then(|s| s.poll_timeout())
                .map(|t| t.as_duration()),
        ]
        .into_iter()
        .flatten()
        .min()
        .unwrap();
        now = next.max(now);
    }
}
