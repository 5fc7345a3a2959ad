//! Packet AEAD throughput of each cipher on this CPU: `cargo bench -p braid-core --bench aead`.
//! Prints GB/s sealing and opening 1400-byte packets, and which cipher `auto` picks here.

use braid_core::crypto::aead::{Cipher, PacketKey};
use std::hint::black_box;
use std::time::Instant;

const PACKET: usize = 1400;
const HEADER: usize = 10;
const PACKETS: u64 = 200_000;

fn seal_rate(cipher: Cipher) -> f64 {
    let key = PacketKey::new(cipher, &[7; 32]);
    let mut buf = Vec::with_capacity(PACKET + 16);
    let start = Instant::now();
    for pn in 0..PACKETS {
        buf.clear();
        buf.resize(PACKET, 0x5a);
        key.seal(0, pn, &mut buf, HEADER);
        black_box(&buf);
    }
    (PACKETS as usize * PACKET) as f64 / start.elapsed().as_secs_f64() / 1e9
}

fn open_rate(cipher: Cipher) -> f64 {
    let key = PacketKey::new(cipher, &[7; 32]);
    let mut sealed = vec![0x5a; PACKET];
    key.seal(0, 1, &mut sealed, HEADER);
    let mut buf = sealed.clone();
    let start = Instant::now();
    for _ in 0..PACKETS {
        buf.copy_from_slice(&sealed);
        let n = key.open(0, 1, &mut buf, HEADER).expect("opens");
        black_box(n);
    }
    (PACKETS as usize * PACKET) as f64 / start.elapsed().as_secs_f64() / 1e9
}

fn main() {
    // `cargo test --benches` runs this too; keep that quick.
    if std::env::args().any(|a| a == "--test") {
        return;
    }
    println!("{:<20} {:>10} {:>10}", "cipher", "seal GB/s", "open GB/s");
    for c in [Cipher::ChaCha20Poly1305, Cipher::Aes256Gcm] {
        println!("{:<20} {:>10.2} {:>10.2}", c.name(), seal_rate(c), open_rate(c));
    }
    println!("auto picks {} on this CPU", Cipher::fastest_here().name());
}
