//! The Noise IK handshake (Noise spec §7.5), with snow.
//!
//! ```text
//! IK:
//!   <- s
//!   ...
//!   -> e, es, s, ss      HANDSHAKE_INIT: payload = client session id (u64) || timestamp (u64)
//!                                        || preferred cipher (u8); then mac1, mac2 (see cookie)
//!   <- e, ee, se         HANDSHAKE_RESP: payload = status (u8) || server session id (u64)
//!                                        || agreed cipher (u8) || stateless reset token (16)
//! ```
//! The client knows the server's static key beforehand; the server learns the client's static key
//! from message 1 and admits it only if configured to. The timestamp (chosen by the client's
//! driver, strictly increasing per client key) lets the server refuse a replayed message 1, as
//! WireGuard does with TAI64N. After message 2 both sides split into one secret per direction
//! ([`SessionKeys`]), the first phase of the session's [`super::keyupdate::KeySchedule`], for
//! the cipher the server chose by [`Cipher::agree`].
//!
//! Randomness (the ephemeral keys) comes from a 32-byte [`Seed`] the caller injects, never from
//! the OS.

use super::aead::Cipher;
use super::keys::{PublicKey, StaticSecret};
use super::seed::Seed;
use crate::wire::SessionId;
use crate::wire::{
    HANDSHAKE_INIT_LEN, HANDSHAKE_INIT_PAYLOAD_LEN, HANDSHAKE_RESP_LEN, HANDSHAKE_RESP_PAYLOAD_LEN,
    MAC1_OFFSET, RESET_TOKEN_LEN, TYPE_HANDSHAKE_INIT, TYPE_HANDSHAKE_RESP, VERSION,
};
use rand_chacha::ChaCha20Rng;
use rand_core::RngCore;
use snow::params::{CipherChoice, DHChoice, HashChoice, NoiseParams};
use snow::resolvers::{CryptoResolver, DefaultResolver, FallbackResolver};
use snow::types::{Cipher as NoiseCipher, Dh, Hash, Random};
use snow::{Builder, HandshakeState};
use std::sync::Mutex;

const PATTERN: &str = "Noise_IK_25519_ChaChaPoly_BLAKE2s";
const PROLOGUE: &[u8] = b"braid/1";

/// Status byte of HANDSHAKE_RESP.
pub const STATUS_ACCEPTED: u8 = 0;
/// Status byte of HANDSHAKE_RESP when the server does not admit the client's key.
pub const STATUS_REFUSED: u8 = 1;

/// Why a handshake message was not accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum HandshakeError {
    /// Noise could not open the message: sent to another key, corrupted or forged.
    #[error("handshake message did not decrypt (wrong key or corrupted)")]
    Decrypt,
    /// The message opened but its payload is not what we expect.
    #[error("handshake payload malformed")]
    Payload,
}

/// The secrets a finished handshake yields.
pub struct SessionKeys {
    /// Secret of what we send.
    pub send: [u8; 32],
    /// Secret of what we receive.
    pub recv: [u8; 32],
    /// The AEAD both directions use.
    pub cipher: Cipher,
    /// Client: the token that authenticates the server's stateless reset of this session.
    pub reset_token: Option<[u8; RESET_TOKEN_LEN]>,
}

impl std::fmt::Debug for SessionKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionKeys").field("cipher", &self.cipher).finish_non_exhaustive()
    }
}

/// A resolver that supplies only randomness, from an injected seed; snow's default resolver
/// supplies the primitives.
struct SeededRng(Mutex<ChaCha20Rng>);

struct RngBox(ChaCha20Rng);

impl Random for RngBox {
    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), snow::Error> {
        self.0.fill_bytes(dest);
        Ok(())
    }
}

impl CryptoResolver for SeededRng {
    fn resolve_rng(&self) -> Option<Box<dyn Random>> {
        let mut parent = self.0.lock().ok()?;
        Some(Box::new(RngBox(Seed::draw(&mut *parent).rng())))
    }
    fn resolve_dh(&self, _: &DHChoice) -> Option<Box<dyn Dh>> {
        None
    }
    fn resolve_hash(&self, _: &HashChoice) -> Option<Box<dyn Hash>> {
        None
    }
    fn resolve_cipher(&self, _: &CipherChoice) -> Option<Box<dyn NoiseCipher>> {
        None
    }
}

fn builder(seed: &Seed) -> Builder<'static> {
    let params: NoiseParams = PATTERN.parse().expect("valid Noise pattern");
    let resolver =
        FallbackResolver::new(Box::new(SeededRng(Mutex::new(seed.rng()))), Box::new(DefaultResolver));
    Builder::with_resolver(params, Box::new(resolver))
}

fn split(
    hs: &mut HandshakeState,
    initiator: bool,
    cipher: Cipher,
    reset_token: Option<[u8; RESET_TOKEN_LEN]>,
) -> SessionKeys {
    let (i2r, r2i) = hs.dangerously_get_raw_split();
    let (send, recv) = if initiator { (i2r, r2i) } else { (r2i, i2r) };
    SessionKeys { send, recv, cipher, reset_token }
}

/// The client's side: builds message 1, then reads message 2.
pub struct Initiator {
    hs: HandshakeState,
    /// The complete HANDSHAKE_INIT datagram, kept for retransmission (its `mac1` and `mac2`
    /// are zero until stamped by a `CookieJar`).
    pub init_packet: Vec<u8>,
}

impl std::fmt::Debug for Initiator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Initiator(..)")
    }
}

/// What the server said in message 2.
#[derive(Debug)]
pub enum Response {
    /// Admitted: the session keys and the server's session id.
    Accepted { keys: Box<SessionKeys>, server_session_id: SessionId },
    /// The server does not admit our key.
    Refused,
}

impl Initiator {
    /// Starts a handshake towards `server`, asking for `cipher`, and builds message 1.
    pub fn new(
        local: &StaticSecret,
        server: &PublicKey,
        client_session_id: SessionId,
        timestamp: u64,
        cipher: Cipher,
        seed: &Seed,
    ) -> Self {
        let mut hs = builder(seed)
            .local_private_key(local.as_bytes())
            .and_then(|b| b.remote_public_key(server.as_bytes()))
            .and_then(|b| b.prologue(PROLOGUE))
            .and_then(|b| b.build_initiator())
            .expect("valid 32-byte keys");
        let mut payload = [0u8; HANDSHAKE_INIT_PAYLOAD_LEN];
        payload[..8].copy_from_slice(&client_session_id.0.to_be_bytes());
        payload[8..16].copy_from_slice(&timestamp.to_be_bytes());
        payload[16] = cipher.code();
        let mut init_packet = vec![0u8; HANDSHAKE_INIT_LEN];
        init_packet[0] = TYPE_HANDSHAKE_INIT;
        init_packet[1] = VERSION;
        let n = hs.write_message(&payload, &mut init_packet[2..MAC1_OFFSET]).expect("message 1 fits");
        debug_assert_eq!(n + 2, MAC1_OFFSET);
        Initiator { hs, init_packet }
    }

    /// Reads message 2 (the Noise part of HANDSHAKE_RESP).
    pub fn read_response(&mut self, noise: &[u8]) -> Result<Response, HandshakeError> {
        let mut payload = [0u8; 64];
        let n = self.hs.read_message(noise, &mut payload).map_err(|_| HandshakeError::Decrypt)?;
        if n != HANDSHAKE_RESP_PAYLOAD_LEN {
            return Err(HandshakeError::Payload);
        }
        match payload[0] {
            STATUS_ACCEPTED => Ok(Response::Accepted {
                keys: Box::new(split(
                    &mut self.hs,
                    true,
                    Cipher::from_code(payload[9]).ok_or(HandshakeError::Payload)?,
                    Some(payload[10..10 + RESET_TOKEN_LEN].try_into().expect("16 bytes")),
                )),
                server_session_id: SessionId(u64::from_be_bytes(payload[1..9].try_into().expect("8"))),
            }),
            STATUS_REFUSED => Ok(Response::Refused),
            _ => Err(HandshakeError::Payload),
        }
    }
}

/// Message 1 as the server opened it, waiting for the admission decision.
pub struct Responder {
    hs: HandshakeState,
    /// The client's static key.
    pub client_key: PublicKey,
    /// The client's session id (the id we put in packets to it).
    pub client_session_id: SessionId,
    /// The client's handshake timestamp.
    pub timestamp: u64,
    /// The cipher the client asked for.
    pub client_cipher: Cipher,
}

impl std::fmt::Debug for Responder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Responder").field("client_key", &self.client_key).finish()
    }
}

impl Responder {
    /// Opens message 1 (the Noise part of HANDSHAKE_INIT) with the server's static key.
    pub fn read_init(local: &StaticSecret, noise: &[u8], seed: &Seed) -> Result<Self, HandshakeError> {
        let mut hs = builder(seed)
            .local_private_key(local.as_bytes())
            .and_then(|b| b.prologue(PROLOGUE))
            .and_then(|b| b.build_responder())
            .expect("valid 32-byte key");
        let mut payload = [0u8; 64];
        let n = hs.read_message(noise, &mut payload).map_err(|_| HandshakeError::Decrypt)?;
        if n != HANDSHAKE_INIT_PAYLOAD_LEN {
            return Err(HandshakeError::Payload);
        }
        let client_key = hs
            .get_remote_static()
            .and_then(|k| <[u8; 32]>::try_from(k).ok())
            .map(PublicKey::from_bytes)
            .ok_or(HandshakeError::Payload)?;
        Ok(Responder {
            hs,
            client_key,
            client_session_id: SessionId(u64::from_be_bytes(payload[..8].try_into().expect("8"))),
            timestamp: u64::from_be_bytes(payload[8..16].try_into().expect("8")),
            client_cipher: Cipher::from_code(payload[16]).ok_or(HandshakeError::Payload)?,
        })
    }

    fn respond(
        mut self,
        status: u8,
        server_session_id: SessionId,
        cipher: Cipher,
        reset_token: [u8; RESET_TOKEN_LEN],
    ) -> (Vec<u8>, HandshakeState) {
        let mut payload = [0u8; HANDSHAKE_RESP_PAYLOAD_LEN];
        payload[0] = status;
        payload[1..9].copy_from_slice(&server_session_id.0.to_be_bytes());
        payload[9] = cipher.code();
        payload[10..].copy_from_slice(&reset_token);
        let mut packet = vec![0u8; HANDSHAKE_RESP_LEN];
        packet[0] = TYPE_HANDSHAKE_RESP;
        packet[1..9].copy_from_slice(&self.client_session_id.0.to_be_bytes());
        let n = self.hs.write_message(&payload, &mut packet[9..]).expect("message 2 fits");
        debug_assert_eq!(n + 9, HANDSHAKE_RESP_LEN);
        (packet, self.hs)
    }

    /// Admits the client: agrees on the cipher (the server prefers `cipher`), builds
    /// HANDSHAKE_RESP (carrying the session's stateless reset token) and the session keys.
    pub fn accept(
        self,
        server_session_id: SessionId,
        cipher: Cipher,
        reset_token: [u8; RESET_TOKEN_LEN],
    ) -> (Vec<u8>, SessionKeys) {
        let agreed = Cipher::agree(self.client_cipher, cipher);
        let (packet, mut hs) = self.respond(STATUS_ACCEPTED, server_session_id, agreed, reset_token);
        (packet, split(&mut hs, false, agreed, None))
    }

    /// Refuses the client with an authenticated answer no larger than its message 1.
    pub fn refuse(self) -> Vec<u8> {
        self.respond(STATUS_REFUSED, SessionId(0), Cipher::ChaCha20Poly1305, [0; RESET_TOKEN_LEN]).0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys() -> (StaticSecret, StaticSecret) {
        (StaticSecret::from_bytes([1; 32]), StaticSecret::from_bytes([2; 32]))
    }

    #[test]
    fn full_handshake_agrees_on_keys() {
        use Cipher::*;
        for (client_wants, server_wants, agreed) in [
            (ChaCha20Poly1305, ChaCha20Poly1305, ChaCha20Poly1305),
            (Aes256Gcm, ChaCha20Poly1305, ChaCha20Poly1305),
            (ChaCha20Poly1305, Aes256Gcm, ChaCha20Poly1305),
            (Aes256Gcm, Aes256Gcm, Aes256Gcm),
        ] {
            handshake_with(client_wants, server_wants, agreed);
        }
    }

    fn handshake_with(client_wants: Cipher, server_wants: Cipher, agreed: Cipher) {
        let (client, server) = keys();
        let mut init = Initiator::new(
            &client,
            &server.public_key(),
            SessionId(77),
            1000,
            client_wants,
            &Seed::from_u64(1),
        );
        let r = Responder::read_init(&server, &init.init_packet[2..MAC1_OFFSET], &Seed::from_u64(2)).unwrap();
        assert_eq!(r.client_key, client.public_key());
        assert_eq!((r.client_session_id, r.timestamp, r.client_cipher), (SessionId(77), 1000, client_wants));
        let (resp, server_keys) = r.accept(SessionId(99), server_wants, [7; RESET_TOKEN_LEN]);
        assert_eq!(server_keys.cipher, agreed);
        assert!(resp.len() < init.init_packet.len());
        let Response::Accepted { keys, server_session_id } = init.read_response(&resp[9..]).unwrap() else {
            panic!("accepted")
        };
        assert_eq!((server_session_id, keys.cipher), (SessionId(99), agreed));
        assert_eq!(keys.reset_token, Some([7; RESET_TOKEN_LEN]));
        assert_eq!(server_keys.reset_token, None);
        assert_eq!((keys.send, keys.recv), (server_keys.recv, server_keys.send));
    }

    #[test]
    fn wrong_server_key_fails_and_refusal_is_authenticated() {
        let (client, server) = keys();
        let other = StaticSecret::from_bytes([3; 32]);
        let (s1, s2) = (Seed::from_u64(1), Seed::from_u64(2));
        let init =
            Initiator::new(&client, &other.public_key(), SessionId(1), 1, Cipher::ChaCha20Poly1305, &s1);
        assert_eq!(
            Responder::read_init(&server, &init.init_packet[2..MAC1_OFFSET], &s2).unwrap_err(),
            HandshakeError::Decrypt
        );
        let mut init =
            Initiator::new(&client, &server.public_key(), SessionId(1), 1, Cipher::ChaCha20Poly1305, &s1);
        let r = Responder::read_init(&server, &init.init_packet[2..MAC1_OFFSET], &s2).unwrap();
        let resp = r.refuse();
        assert!(matches!(init.read_response(&resp[9..]), Ok(Response::Refused)));
    }

    #[test]
    fn same_seed_same_bytes() {
        let (client, server) = keys();
        let new = |n| {
            Initiator::new(
                &client,
                &server.public_key(),
                SessionId(5),
                6,
                Cipher::ChaCha20Poly1305,
                &Seed::from_u64(n),
            )
        };
        let (a, b, c) = (new(42), new(42), new(43));
        assert_eq!(a.init_packet, b.init_packet);
        assert_ne!(a.init_packet, c.init_packet);
    }
}
