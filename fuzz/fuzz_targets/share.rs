//! The sharer's allocation exchange (`braid share`), from both ends, on arbitrary bytes: the
//! sharer's check and open of ALLOC_INIT, the member's read of ALLOC_RESP (a real handshake
//! state, so the Noise read runs), and the decoders of what sits behind the AEAD (the request
//! and the grant). None may panic; a well-formed grant must survive its own round trip.
#![no_main]

use braid_core::StaticSecret;
use braid_daemon::share::noise::{MemberHandshake, SharerKeys};
use braid_daemon::share::wire::{Grant, Request, INIT_PAYLOAD_LEN, RESP_PAYLOAD_LEN};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let sharer = StaticSecret::from_bytes([7; 32]);
    let member = StaticSecret::from_bytes([9; 32]);
    let keys = SharerKeys::new(&sharer, Some([5; 32])).expect("valid keys");
    let _ = keys.open(data);
    if let Some(b) = data.get(..INIT_PAYLOAD_LEN) {
        let _ = Request::decode(b.try_into().expect("length checked"));
    }
    if let Some(b) = data.get(..RESP_PAYLOAD_LEN) {
        if let Some(g) = Grant::decode(b.try_into().expect("length checked")) {
            assert_eq!(Grant::decode(&g.encode()).map(|h| h.encode()), Some(g.encode()));
        }
    }
    let req = Request { server: "192.0.2.1:7000".parse().expect("literal"), timestamp: 1 };
    let (hs, _) = MemberHandshake::start(&member, &sharer.public_key(), None, req).expect("valid keys");
    let _ = hs.finish(data);
});
