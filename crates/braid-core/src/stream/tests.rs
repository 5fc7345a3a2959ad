//! The send buffer sized from the paths' windows.

use super::{StreamError, StreamEvent, StreamLimits, Streams, MIN_SEND_BUFFER};
use crate::side::Side;

fn streams() -> Streams {
    Streams::new(
        Side::Client,
        StreamLimits {
            stream_window: 16 << 20,
            session_window: 32 << 20,
            send_buffer: 8 << 20,
            max_streams: 16,
        },
    )
}

#[test]
fn the_send_buffer_follows_the_paths_between_a_floor_and_the_configured_size() {
    let mut s = streams();
    let id = s.open(0).unwrap();
    assert_eq!(s.send_cap(), 8 << 20, "the configured size until the paths are known");
    s.size_send_buffer(100_000);
    assert_eq!(s.send_cap(), MIN_SEND_BUFFER, "never below the floor");
    let data = vec![0u8; 3 << 20];
    assert_eq!(s.write(id, &data).unwrap(), MIN_SEND_BUFFER as usize, "a write takes what the buffer holds");
    assert!(matches!(s.write(id, &data), Err(StreamError::Blocked)));
    while s.poll_event().is_some() {}
    s.size_send_buffer(3 << 20);
    assert_eq!(s.send_cap(), 3 << 20);
    let mut writable = false;
    while let Some(e) = s.poll_event() {
        writable |= matches!(e, StreamEvent::Writable(w) if w == id);
    }
    assert!(writable, "a stream blocked on the smaller size is told it has room");
    assert_eq!(s.write(id, &data).unwrap(), (2 << 20) as usize);
    s.size_send_buffer(1 << 40);
    assert_eq!(s.send_cap(), 8 << 20, "never above the configured size");
}
