//! Packet headers and frames, parsed from arbitrary bytes: never a panic.
#![no_main]
use braid_core::wire::{header, Frames};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = header::parse(data);
    for frame in Frames::new(data) {
        if frame.is_err() {
            break;
        }
    }
    let _ = braid_core::wire::varint::read(data);
});
