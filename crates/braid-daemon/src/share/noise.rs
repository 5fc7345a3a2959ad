//! The allocation handshake: Noise IKpsk1 (Noise spec §7.5, §9) with snow, the same X25519 /
//! ChaCha20-Poly1305 / BLAKE2s suite as braid's own IK handshake.
//!
//! ```text
//! IKpsk1:
//!   <- s                      the member knows the sharer's key (configured, or announced)
//!   ...
//!   -> e, es, s, ss, psk      ALLOC_INIT: payload = server address || timestamp
//!   <- e, ee, se              ALLOC_RESP: payload = status, rate, cap left, lease
//! ```
//! The sharer learns the member's static key from message 1 and admits it if it is listed. In
//! community mode the psk is the community key, so a message 1 from someone without it does not
//! open; in listed mode the psk is 32 zero bytes and the static key decides. Message 2 proves
//! the sharer holds its key. Before any Diffie-Hellman the sharer checks mac1, a BLAKE2s MAC
//! keyed by a hash of its public key (WireGuard whitepaper §5.4.4): a datagram from someone who
//! does not know the key costs one hash.

use super::wire::{
    Grant, InitView, Mode, Request, RespView, INIT_LEN, INIT_PAYLOAD_LEN, MAC_LEN, MAC_OFFSET, NOISE1_LEN,
    NOISE2_LEN, RESP_LEN, RESP_PAYLOAD_LEN, SHARE_VERSION, TYPE_ALLOC_INIT, TYPE_ALLOC_RESP,
};
use base64::Engine;
use blake2::digest::consts::U16;
use blake2::digest::{KeyInit, Mac};
use blake2::{Blake2s256, Blake2sMac, Digest};
use braid_core::{PublicKey, StaticSecret};
use snow::params::NoiseParams;
use snow::resolvers::{BoxedCryptoResolver, CryptoResolver, DefaultResolver, FallbackResolver};
use snow::types::{Cipher, Dh, Hash, Random};
use snow::{Builder, HandshakeState};
use subtle::ConstantTimeEq;

const PATTERN: &str = "Noise_IKpsk1_25519_ChaChaPoly_BLAKE2s";
const PROLOGUE: &[u8] = b"braid-share/1";
const LABEL_MAC1: &[u8] = b"braid share mac1";
/// The psk of listed mode.
const NO_PSK: [u8; 32] = [0; 32];

/// Why a handshake message was not accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HandshakeError {
    /// Malformed on the wire.
    #[error("{0}")]
    Wire(#[from] super::wire::WireError),
    /// mac1 does not match: made without knowing this sharer's key.
    #[error("mac1 does not match this sharer's key")]
    Mac,
    /// Noise could not open it: another key, another community key, or forged.
    #[error("the handshake message does not open (wrong key or community key, or forged)")]
    Decrypt,
    /// The payload opened but makes no sense.
    #[error("the handshake payload is malformed")]
    Payload,
    /// The static key could not be read (never, for a key braid made).
    #[error("the static key is not 32 bytes")]
    Key,
    /// Not community mode here, or no community key configured.
    #[error("community admission is not configured on this sharer")]
    NoCommunity,
}

/// Randomness for the ephemeral keys, from the operating system.
struct OsRandom;

impl Random for OsRandom {
    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), snow::Error> {
        ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), dest).map_err(|_| snow::Error::Rng)
    }
}

struct RngOnly;

impl CryptoResolver for RngOnly {
    fn resolve_rng(&self) -> Option<Box<dyn Random>> {
        Some(Box::new(OsRandom))
    }
    fn resolve_dh(&self, _: &snow::params::DHChoice) -> Option<Box<dyn Dh>> {
        None
    }
    fn resolve_hash(&self, _: &snow::params::HashChoice) -> Option<Box<dyn Hash>> {
        None
    }
    fn resolve_cipher(&self, _: &snow::params::CipherChoice) -> Option<Box<dyn Cipher>> {
        None
    }
}

fn builder<'a>() -> Builder<'a> {
    let params: NoiseParams = PATTERN.parse().expect("a valid Noise pattern");
    let resolver: BoxedCryptoResolver =
        Box::new(FallbackResolver::new(Box::new(RngOnly), Box::new(DefaultResolver)));
    Builder::with_resolver(params, resolver)
}

/// The raw private key (braid-core keeps its bytes to itself; its base64 is public).
fn secret_bytes(s: &StaticSecret) -> Result<[u8; 32], HandshakeError> {
    let v =
        base64::engine::general_purpose::STANDARD.decode(s.to_base64()).map_err(|_| HandshakeError::Key)?;
    v.try_into().map_err(|_| HandshakeError::Key)
}

fn mac1_key(sharer: &PublicKey) -> [u8; 32] {
    let mut h = Blake2s256::new();
    h.update(LABEL_MAC1);
    h.update(sharer.as_bytes());
    h.finalize().into()
}

fn mac(key: &[u8; 32], data: &[u8]) -> [u8; MAC_LEN] {
    let mut m = <Blake2sMac<U16> as KeyInit>::new_from_slice(key).expect("BLAKE2s takes 32-byte keys");
    Mac::update(&mut m, data);
    m.finalize().into_bytes().into()
}

/// The member's half, between sending ALLOC_INIT and reading ALLOC_RESP.
pub struct MemberHandshake {
    hs: HandshakeState,
}

impl MemberHandshake {
    /// ALLOC_INIT asking `sharer` to relay to `req.server`.
    pub fn start(
        secret: &StaticSecret,
        sharer: &PublicKey,
        community: Option<&[u8; 32]>,
        req: Request,
    ) -> Result<(MemberHandshake, [u8; INIT_LEN]), HandshakeError> {
        let sk = secret_bytes(secret)?;
        let psk = community.unwrap_or(&NO_PSK);
        let mut hs = builder()
            .local_private_key(&sk)
            .and_then(|b| b.remote_public_key(sharer.as_bytes()))
            .and_then(|b| b.prologue(PROLOGUE))
            .and_then(|b| b.psk(1, psk))
            .and_then(|b| b.build_initiator())
            .map_err(|_| HandshakeError::Payload)?;
        let mut out = [0u8; INIT_LEN];
        out[0] = TYPE_ALLOC_INIT;
        out[1] = SHARE_VERSION;
        out[2] = if community.is_some() { 1 } else { 0 };
        let n =
            hs.write_message(&req.encode(), &mut out[3..MAC_OFFSET]).map_err(|_| HandshakeError::Payload)?;
        if n != NOISE1_LEN {
            return Err(HandshakeError::Payload);
        }
        let m = mac(&mac1_key(sharer), &out[..MAC_OFFSET]);
        out[MAC_OFFSET..].copy_from_slice(&m);
        Ok((MemberHandshake { hs }, out))
    }

    /// Reads ALLOC_RESP: the sharer's grant, authenticated.
    pub fn finish(mut self, resp: &[u8]) -> Result<Grant, HandshakeError> {
        let v = RespView::new_checked(resp)?;
        let mut payload = [0u8; RESP_PAYLOAD_LEN + 16];
        let n = self.hs.read_message(v.noise(), &mut payload).map_err(|_| HandshakeError::Decrypt)?;
        let p: &[u8; RESP_PAYLOAD_LEN] = payload[..n].try_into().map_err(|_| HandshakeError::Payload)?;
        Grant::decode(p).ok_or(HandshakeError::Payload)
    }
}

/// The sharer's half: checks and opens ALLOC_INIT, then answers.
pub struct SharerKeys {
    secret: [u8; 32],
    mac1_key: [u8; 32],
    community: Option<[u8; 32]>,
}

/// An opened ALLOC_INIT, waiting for the sharer's decision.
pub struct Opened {
    /// The member's static key.
    pub member: PublicKey,
    /// How it asked to be admitted.
    pub mode: Mode,
    /// What it asked for.
    pub request: Request,
    hs: HandshakeState,
}

impl SharerKeys {
    /// Keys of the sharer holding `secret`, with an optional community key.
    pub fn new(secret: &StaticSecret, community: Option<[u8; 32]>) -> Result<SharerKeys, HandshakeError> {
        Ok(SharerKeys { secret: secret_bytes(secret)?, mac1_key: mac1_key(&secret.public_key()), community })
    }

    /// Whether `msg` is a well-formed ALLOC_INIT with a good mac1 (one hash, no DH).
    pub fn check(&self, msg: &[u8]) -> Result<(), HandshakeError> {
        let v = InitView::new_checked(msg)?;
        let want = mac(&self.mac1_key, v.mac_covered());
        if bool::from(want.ct_eq(v.mac())) {
            Ok(())
        } else {
            Err(HandshakeError::Mac)
        }
    }

    /// Opens ALLOC_INIT (after [`SharerKeys::check`]).
    pub fn open(&self, msg: &[u8]) -> Result<Opened, HandshakeError> {
        self.check(msg)?;
        let v = InitView::new_checked(msg)?;
        let psk = match v.mode() {
            Mode::Listed => NO_PSK,
            Mode::Community => self.community.ok_or(HandshakeError::NoCommunity)?,
        };
        let mut hs = builder()
            .local_private_key(&self.secret)
            .and_then(|b| b.prologue(PROLOGUE))
            .and_then(|b| b.psk(1, &psk))
            .and_then(|b| b.build_responder())
            .map_err(|_| HandshakeError::Payload)?;
        let mut payload = [0u8; NOISE1_LEN];
        let n = hs.read_message(v.noise(), &mut payload).map_err(|_| HandshakeError::Decrypt)?;
        let p: &[u8; INIT_PAYLOAD_LEN] = payload[..n].try_into().map_err(|_| HandshakeError::Payload)?;
        let rs: [u8; 32] =
            hs.get_remote_static().and_then(|k| k.try_into().ok()).ok_or(HandshakeError::Payload)?;
        Ok(Opened { member: PublicKey::from_bytes(rs), mode: v.mode(), request: Request::decode(p), hs })
    }
}

impl Opened {
    /// ALLOC_RESP carrying `grant`.
    pub fn answer(mut self, grant: Grant) -> Result<[u8; RESP_LEN], HandshakeError> {
        let mut out = [0u8; RESP_LEN];
        out[0] = TYPE_ALLOC_RESP;
        out[1] = SHARE_VERSION;
        let n = self.hs.write_message(&grant.encode(), &mut out[2..]).map_err(|_| HandshakeError::Payload)?;
        if n != NOISE2_LEN {
            return Err(HandshakeError::Payload);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::super::wire::Status;
    use super::*;
    use proptest::prelude::*;

    fn req() -> Request {
        Request { server: "192.0.2.1:7000".parse().unwrap(), timestamp: 42 }
    }

    #[test]
    fn listed_member_round_trip() {
        let (m, s) = (crate::keyfile::generate(), crate::keyfile::generate());
        let (hs, init) = MemberHandshake::start(&m, &s.public_key(), None, req()).unwrap();
        let keys = SharerKeys::new(&s, None).unwrap();
        let o = keys.open(&init).unwrap();
        assert_eq!(o.member, m.public_key());
        assert_eq!(o.request, req());
        assert_eq!(o.mode, Mode::Listed);
        let g = Grant { status: Status::Granted, rate: 1000, cap_left: 5, lease_secs: 30 };
        let resp = o.answer(g).unwrap();
        assert_eq!(hs.finish(&resp).unwrap(), g);
    }

    #[test]
    fn community_key_must_match_and_other_sharers_cannot_open() {
        let (m, s, other) =
            (crate::keyfile::generate(), crate::keyfile::generate(), crate::keyfile::generate());
        let (_, init) = MemberHandshake::start(&m, &s.public_key(), Some(&[7; 32]), req()).unwrap();
        assert_eq!(
            SharerKeys::new(&s, Some([8; 32])).unwrap().open(&init).err(),
            Some(HandshakeError::Decrypt)
        );
        assert_eq!(SharerKeys::new(&s, None).unwrap().open(&init).err(), Some(HandshakeError::NoCommunity));
        assert!(SharerKeys::new(&s, Some([7; 32])).unwrap().open(&init).is_ok());
        // Sent to another sharer's key: mac1 fails before any DH.
        assert_eq!(
            SharerKeys::new(&other, Some([7; 32])).unwrap().open(&init).err(),
            Some(HandshakeError::Mac)
        );
    }

    #[test]
    fn a_forged_answer_is_refused() {
        let (m, s, mallory) =
            (crate::keyfile::generate(), crate::keyfile::generate(), crate::keyfile::generate());
        let (hs, init) = MemberHandshake::start(&m, &s.public_key(), None, req()).unwrap();
        // Mallory cannot open the request at all (mac1 and the DH are for s).
        assert!(SharerKeys::new(&mallory, None).unwrap().open(&init).is_err());
        let mut resp = SharerKeys::new(&s, None)
            .unwrap()
            .open(&init)
            .unwrap()
            .answer(Grant::refused(Status::KeyNotAdmitted))
            .unwrap();
        resp[40] ^= 1;
        assert_eq!(hs.finish(&resp).err(), Some(HandshakeError::Decrypt));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn flipped_bytes_never_open_and_never_panic(pos in 0usize..INIT_LEN, bit in 0u8..8, junk in proptest::collection::vec(any::<u8>(), 0..200)) {
            let (m, s) = (crate::keyfile::generate(), crate::keyfile::generate());
            let (_, mut init) = MemberHandshake::start(&m, &s.public_key(), None, req()).unwrap();
            init[pos] ^= 1 << bit;
            let keys = SharerKeys::new(&s, None).unwrap();
            prop_assert!(keys.open(&init).is_err());
            prop_assert!(keys.open(&junk).is_err());
        }
    }
}
