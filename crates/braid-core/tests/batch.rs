//! Batched transmit (`Session::poll_transmit_batch`): a client with two paths sends a stream in
//! GSO-shaped batches; the server, given the batches cut into datagrams, reads every byte.

use braid_core::session::batch::{TransmitBatch, MAX_BATCH_BYTES};
use braid_core::*;
use bytes::{Bytes, BytesMut};
use std::time::Duration;

mod common;

use common::*;

const MAX_DATAGRAMS: usize = 10;
const STREAM_BYTES: usize = 400_000;

#[test]
fn batches_are_one_path_one_segment_size_and_parse_packet_by_packet() {
    let (batches, multi) = send_stream(scheduler::Kind::Edpf);
    assert!(multi * 2 > batches, "most batches carry several datagrams: {multi} of {batches}");
}

/// Round-robin alternates paths packet by packet: batches still fill, one per path.
#[test]
fn batches_fill_when_the_scheduler_interleaves_paths() {
    let (batches, multi) = send_stream(scheduler::Kind::RoundRobin);
    assert!(multi * 2 > batches, "most batches carry several datagrams: {multi} of {batches}");
}

/// A client with two paths sends a stream in batches under `kind`, each batch checked and cut
/// into datagrams for the server, which must read every byte; returns how many batches there
/// were and how many carried more than one datagram.
fn send_stream(kind: scheduler::Kind) -> (usize, usize) {
    let mut p = Pair::good_with(SessionConfig { scheduler: kind, ..SessionConfig::default() });
    p.run(Duration::from_millis(50));
    assert!(p.client.is_established() && p.server.is_some(), "handshake");
    p.client.add_path(p.now, Some(addr(CLIENT_2)), addr(SERVER)).unwrap();
    p.run(Duration::from_millis(50));

    let id = p.client.open_stream(0).unwrap();
    let data: Vec<u8> = (0..STREAM_BYTES).map(|i| (i * 7 % 251) as u8).collect();
    p.client.write_bytes(id, Bytes::from(data.clone())).unwrap();
    p.client.finish(id).unwrap();

    let mut out = TransmitBatch::new();
    let mut received = Vec::new();
    let (mut batches, mut multi, mut paths_seen) = (0, 0, [false; 2]);
    for _ in 0..5_000 {
        if received.len() == STREAM_BYTES {
            break;
        }
        p.now += Duration::from_millis(1);
        if p.client.poll_timeout().is_some_and(|t| t <= p.now) {
            p.client.handle_timeout(p.now);
        }
        let mut answers = Vec::new();
        while let Some(b) = p.client.poll_transmit_batch(p.now, MAX_DATAGRAMS, &mut out) {
            let contents = out.contents();
            batches += 1;
            assert!(b.count >= 1 && b.count <= MAX_DATAGRAMS);
            assert!(contents.len() <= MAX_BATCH_BYTES);
            let last = contents.len() - (b.count - 1) * b.segment_size;
            assert!(last >= 1 && last <= b.segment_size, "only the last datagram may be shorter");
            if b.count > 1 {
                multi += 1;
            }
            let from = b.source.unwrap_or(addr(CLIENT));
            for d in contents.chunks(b.segment_size) {
                if d[0] & 0xfc == 0x10 {
                    assert_eq!(d[9], b.path, "every DATA packet of a batch is on its path");
                    paths_seen[usize::from(b.path)] = true;
                }
                answers.extend(p.deliver_to_server(from, d));
            }
        }
        assert!(!out.is_holding(), "a held datagram is sent before the batches end");
        for a in answers {
            p.client.handle_datagram(p.now, Some(a.to), a.from, BytesMut::from(&a.bytes[..]));
        }
        let server = p.server.as_mut().unwrap();
        while let Some(e) = server.poll_event() {
            if let Event::Stream(StreamEvent::Opened(s)) = e {
                assert_eq!(s, id);
            }
        }
        while let Ok(Some(chunk)) = server.read_chunk(id, usize::MAX) {
            received.extend_from_slice(&chunk);
        }
        // The server's ACKs go back one by one.
        let mut buf = Vec::new();
        let mut acks = Vec::new();
        while let Some(t) = server.poll_transmit(p.now, &mut buf) {
            acks.push((t.destination, buf[..t.size].to_vec()));
        }
        for (to, bytes) in acks {
            p.client.handle_datagram(p.now, Some(to), addr(SERVER), BytesMut::from(&bytes[..]));
        }
    }
    assert_eq!(received.len(), STREAM_BYTES, "the server read the whole stream");
    assert!(received == data, "in order and intact");
    for reason in [DropReason::Malformed, DropReason::Decrypt, DropReason::Replayed] {
        assert_eq!(p.server_drops(reason), 0, "{reason:?}");
    }
    assert!(paths_seen == [true, true], "both paths carried data: {paths_seen:?}");
    (batches, multi)
}
