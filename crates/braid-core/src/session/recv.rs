//! Datagrams in: header check, anti-replay, decryption, path lookup (and join), then frames.
//!
//! Every rejection is counted by reason and never answered here: a session answers no
//! unauthenticated packet (the endpoint's answers — handshake, cookie reply, stateless reset —
//! are each smaller than their cause).

use super::{Event, Session, State};
use crate::crypto::handshake::Response;
use crate::crypto::keyupdate::OpenFailure;
use crate::path::{Challenge, PathState};
use crate::time::Timestamp;
use crate::wire::{self, header::decode_packet_number, DataHeader, Frame, Frames, Header, DATA_HEADER_LEN};
use bytes::BytesMut;
use std::net::SocketAddr;

/// Why a received datagram was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DropReason {
    /// Too short, unknown type or unknown version.
    Malformed,
    /// For a session id we do not have.
    UnknownSession,
    /// Data before the handshake finished.
    NotEstablished,
    /// A packet number already received, or older than the replay window.
    Replayed,
    /// The AEAD rejected it: wrong key, corrupted or forged.
    Decrypt,
    /// For a path we do not have and may not create.
    UnknownPath,
    /// A handshake message where none was expected.
    UnexpectedHandshake,
    /// A handshake message that did not open (wrong key or corrupted).
    HandshakeDecrypt,
    /// A handshake message older than the client's last (a replay).
    StaleHandshake,
    /// A handshake from a client key that is not admitted.
    Refused,
    /// The session is closed.
    Closed,
    /// A handshake message without a valid `mac1` (junk, or meant for another server).
    BadMac,
    /// Over the per-source handshake or reply rate.
    RateLimited,
    /// Too many handshakes in progress.
    Overloaded,
    /// A copy of a handshake message still being processed.
    DuplicateHandshake,
    /// Under load, a handshake message without a cookie for its source (answered with one).
    CookieNeeded,
    /// Sealed with keys of a phase this side no longer (or not yet) holds.
    KeyPhase,
    /// A stateless reset whose token is not this session's.
    BadReset,
    /// A cookie reply that does not open, or a second one for the same handshake message.
    BadCookie,
    /// A handshake message of a protocol version we do not speak (answered with ours when
    /// its `mac1` is valid).
    WrongVersion,
    /// A VERSION answer that does not echo our handshake message, or lists our own version.
    BadVersion,
}

impl DropReason {
    /// Every reason with its metric label.
    pub const ALL: [(DropReason, &'static str); 21] = [
        (DropReason::Malformed, "malformed"),
        (DropReason::UnknownSession, "unknown_session"),
        (DropReason::NotEstablished, "not_established"),
        (DropReason::Replayed, "replayed"),
        (DropReason::Decrypt, "decrypt"),
        (DropReason::UnknownPath, "unknown_path"),
        (DropReason::UnexpectedHandshake, "unexpected_handshake"),
        (DropReason::HandshakeDecrypt, "handshake_decrypt"),
        (DropReason::StaleHandshake, "stale_handshake"),
        (DropReason::Refused, "refused"),
        (DropReason::Closed, "closed"),
        (DropReason::BadMac, "bad_mac"),
        (DropReason::RateLimited, "rate_limited"),
        (DropReason::Overloaded, "overloaded"),
        (DropReason::DuplicateHandshake, "duplicate_handshake"),
        (DropReason::CookieNeeded, "cookie_needed"),
        (DropReason::KeyPhase, "key_phase"),
        (DropReason::BadReset, "bad_reset"),
        (DropReason::BadCookie, "bad_cookie"),
        (DropReason::WrongVersion, "wrong_version"),
        (DropReason::BadVersion, "bad_version"),
    ];

    /// Metric label.
    pub fn label(self) -> &'static str {
        Self::ALL.iter().find(|(r, _)| *r == self).map_or("other", |(_, l)| l)
    }
}

impl Session {
    fn drop_packet(&mut self, reason: DropReason) {
        *self.stats.dropped.entry(reason).or_insert(0) += 1;
    }

    /// Feeds one received UDP payload, with the local address it arrived on (if the driver
    /// knows it) and the peer address it came from.
    pub fn handle_datagram(
        &mut self,
        now: Timestamp,
        local: Option<SocketAddr>,
        remote: SocketAddr,
        data: BytesMut,
    ) {
        if matches!(self.state, State::Closed) {
            return self.drop_packet(DropReason::Closed);
        }
        match wire::header::parse(&data) {
            Err(wire::ParseError::UnsupportedVersion(_)) => self.drop_packet(DropReason::WrongVersion),
            Err(_) => self.drop_packet(DropReason::Malformed),
            Ok(Header::HandshakeResp { session_id, noise }) => {
                let noise = noise.to_vec();
                self.on_handshake_resp(now, session_id, &noise)
            }
            Ok(Header::CookieReply { nonce, sealed }) => {
                let (nonce, sealed) = (*nonce, *sealed);
                self.on_cookie_reply(now, &nonce, &sealed)
            }
            Ok(Header::StatelessReset { token }) => {
                let token = *token;
                self.on_stateless_reset(&token)
            }
            Ok(Header::Version { echo, versions }) => {
                let server = versions.iter().copied().max();
                let ours = versions.contains(&wire::VERSION);
                let echo = *echo;
                self.on_version(&echo, server.filter(|_| !ours))
            }
            Ok(Header::HandshakeInit { .. }) => {
                // A retransmission of the message that created this session (its `mac2` may
                // differ, stamped with a newer cookie): answer again.
                let same = |init: &[u8]| init[..wire::MAC1_OFFSET] == data[..wire::MAC1_OFFSET];
                if self.handshake_init.as_deref().is_some_and(same) {
                    self.handshake_resp_due = true;
                } else {
                    self.drop_packet(DropReason::UnexpectedHandshake);
                }
            }
            Ok(Header::Data(h)) => self.on_data(now, local, remote, h, data),
        }
    }

    /// The server is under load and wants proof of our address: the next HANDSHAKE_INIT carries
    /// `mac2` with its cookie, and leaves at once.
    fn on_cookie_reply(
        &mut self,
        now: Timestamp,
        nonce: &[u8; wire::COOKIE_NONCE_LEN],
        sealed: &[u8; wire::COOKIE_LEN + wire::TAG_LEN],
    ) {
        let State::Handshaking { initiator, cookies, next_send, tries, .. } = &mut self.state else {
            return self.drop_packet(DropReason::UnexpectedHandshake);
        };
        if cookies.on_reply(now, nonce, sealed).is_err() {
            return self.drop_packet(DropReason::BadCookie);
        }
        cookies.stamp(now, &mut initiator.init_packet);
        // The resend is an answer to the server, not a retry: it does not count as one.
        *tries = tries.saturating_sub(1);
        *next_send = now;
        tracing::debug!(session = %self.local_id, "cookie received; handshake resent with it");
    }

    /// The server does not speak our version (`server`: the newest it does; None when the
    /// answer listed ours, which no server of ours sends): the handshake cannot succeed, and
    /// the session ends saying so. The answer is not authenticated, so it counts only when it
    /// echoes the `mac1` of our HANDSHAKE_INIT, which an off-path sender cannot know; a forged
    /// one on the path costs what dropping our message would (the client's failover goes on
    /// over its other links, see `connect`).
    fn on_version(&mut self, echo: &[u8; wire::MAC_LEN], server: Option<u8>) {
        let State::Handshaking { initiator, .. } = &self.state else {
            return self.drop_packet(DropReason::UnexpectedHandshake);
        };
        let mine = crate::crypto::cookie::mac1_of(&initiator.init_packet);
        let Some(server) = server.filter(|_| bool::from(subtle::ConstantTimeEq::ct_eq(&mine[..], &echo[..])))
        else {
            return self.drop_packet(DropReason::BadVersion);
        };
        tracing::debug!(session = %self.local_id, server, ours = wire::VERSION, "the server speaks another protocol version");
        self.end(super::CloseReason::VersionMismatch { server });
    }

    /// RFC 9000 §10.3.1: a stateless reset whose token matches ends the session at once (the
    /// driver starts a new one); any other is dropped.
    fn on_stateless_reset(&mut self, token: &[u8; wire::RESET_TOKEN_LEN]) {
        match &self.reset_token {
            Some(expected) if crate::crypto::reset::token_matches(expected, token) => {
                tracing::debug!(session = %self.local_id, "stateless reset from the server");
                self.end(super::CloseReason::StatelessReset);
            }
            _ => self.drop_packet(DropReason::BadReset),
        }
    }

    fn on_handshake_resp(&mut self, now: Timestamp, session_id: wire::SessionId, noise: &[u8]) {
        let State::Handshaking { initiator, next_send, tries, .. } = &mut self.state else {
            return self.drop_packet(DropReason::UnexpectedHandshake);
        };
        if session_id != self.local_id {
            return self.drop_packet(DropReason::UnknownSession);
        }
        // The RTT of the handshake is a first sample, when unambiguous (one message sent).
        let rtt_sample = (*tries == 1).then(|| now - (*next_send - super::timing::handshake_backoff(1)));
        match initiator.read_response(noise) {
            Err(_) => self.drop_packet(DropReason::HandshakeDecrypt),
            Ok(Response::Refused) => self.end(super::CloseReason::Refused),
            Ok(Response::Accepted { keys, server_session_id }) => {
                self.install_keys(*keys, now);
                self.remote_id = server_session_id;
                self.state = State::Established;
                self.last_activity = now;
                self.apply_path_config();
                if let Some(p) = self.paths.iter_mut().find(|p| p.id == 0) {
                    p.state = PathState::Active;
                    p.last_received = Some(now);
                    p.monitor.request_pair();
                    if let Some(rtt) = rtt_sample {
                        p.rtt.update(rtt, std::time::Duration::ZERO);
                    }
                    p.update_pacing(now);
                }
                tracing::debug!(session = %self.local_id, "connected");
                self.events.push_back(Event::Connected);
                self.events.extend(
                    self.paths
                        .iter()
                        .filter(|p| p.id == 0)
                        .map(|p| Event::Path(p.id, super::PathEvent::Validated)),
                );
            }
        }
    }

    fn on_data(
        &mut self,
        now: Timestamp,
        local: Option<SocketAddr>,
        remote: SocketAddr,
        h: DataHeader,
        mut data: BytesMut,
    ) {
        if self.keys.is_none() {
            return self.drop_packet(DropReason::NotEstablished);
        }
        if h.session_id != self.local_id {
            return self.drop_packet(DropReason::UnknownSession);
        }
        let idx = self.paths.iter().position(|p| p.id == h.path_id);
        let window = match idx {
            Some(i) => Some(self.paths[i].received.replay()),
            None => self.retired.get(&h.path_id).map(|r| &r.replay),
        };
        let highest = window.and_then(|w| w.highest());
        let pn = decode_packet_number(highest, h.truncated_pn);
        if window.is_some_and(|w| w.check(pn).is_err()) {
            return self.drop_packet(DropReason::Replayed);
        }
        if idx.is_none()
            && (self.side == super::Side::Client
                || self.paths.iter().filter(|p| p.state != PathState::Closed).count()
                    >= self.config.max_paths)
        {
            return self.drop_packet(DropReason::UnknownPath);
        }
        let grace = self.key_grace();
        let keys = self.keys.as_mut().expect("checked above");
        let len = match keys.open(now, grace, h.key_phase, h.path_id, pn, &mut data, DATA_HEADER_LEN) {
            Ok(len) => len,
            Err(OpenFailure::KeyPhase) => return self.drop_packet(DropReason::KeyPhase),
            Err(OpenFailure::Decrypt) => {
                self.drop_packet(DropReason::Decrypt);
                if self.keys.as_ref().is_some_and(|k| k.integrity_exhausted()) {
                    self.violation(
                        now,
                        "too many packets failed to authenticate (AEAD integrity limit)".into(),
                    );
                }
                return;
            }
        };
        // Authenticated from here on.
        let payload = data.freeze().slice(DATA_HEADER_LEN..DATA_HEADER_LEN + len);
        let i = match idx {
            Some(i) => i,
            // A new path is created only by a packet that carries a fresh PATH_CHALLENGE (a
            // recorded packet of an old path is refused by the replay window above).
            None if !carries_challenge(&payload) => return self.drop_packet(DropReason::UnknownPath),
            None => self.join_path(now, h.path_id, local, remote),
        };
        let ceiling = self.config.mtu_ceiling;
        let path = &mut self.paths[i];
        path.last_received = Some(now);
        path.stats.packets_received += 1;
        let data_len = (DATA_HEADER_LEN + len + wire::TAG_LEN) as u64;
        path.stats.bytes_received += data_len;
        if data_len as usize > path.pmtu.ceiling() {
            // The path carried a datagram this large to us (the client's MTU probes): search
            // up to it (`path::mtu`).
            path.raise_mtu_ceiling(data_len as usize, ceiling);
        }
        if path.local.is_none() {
            path.local = local;
        }
        // RFC 9000 §9.3: "An endpoint only changes the address to which it sends packets in
        // response to the highest-numbered non-probing packet." Only a packet newer than all
        // before it on the path starts a migration: a late one from an address the client has
        // left draws nothing there.
        let migrated = remote != path.remote
            && path.challenge.is_none_or(|c| c.remote != remote)
            && highest.is_none_or(|h| pn > h);
        if migrated && self.side == super::Side::Server && path.state != PathState::Closed {
            // The client's address changed (NAT rebinding): validate the new address before
            // sending there; until then data keeps going to the old one.
            let token = self.random_token();
            let path = &mut self.paths[i];
            path.challenge = Some(Challenge::new(token, remote, now, data_len));
        } else if let Some(c) = self.paths[i].challenge.as_mut().filter(|c| c.remote == remote) {
            c.bytes_in += data_len;
        }
        self.last_activity = now;
        self.stats.packets_received += 1;
        let (mut ack_eliciting, mut carries_payload) = (false, false);
        // A packet of PING and PADDING only is a packet-pair probe: acknowledged at once.
        let (mut pings, mut padded, mut other, mut stream) = (false, false, false, false);
        for frame in Frames::new(&payload) {
            match frame {
                Ok(f) => {
                    ack_eliciting |= f.is_ack_eliciting();
                    carries_payload |= f.is_ack_eliciting() && !matches!(f, crate::wire::Frame::Ping);
                    match f {
                        crate::wire::Frame::Ping => pings = true,
                        crate::wire::Frame::Padding(_) => padded = true,
                        crate::wire::Frame::Stream { .. } => (other, stream) = (true, true),
                        _ => other = true,
                    }
                    self.on_frame(now, h.path_id, remote, f, &payload);
                }
                Err(e) => {
                    self.violation(now, format!("undecodable frame: {e}"));
                    break;
                }
            }
            if !self.is_established() {
                break;
            }
        }
        if carries_payload {
            self.last_payload_received = Some(now);
        }
        let mad = self.config.max_ack_delay;
        if let Some(path) = self.path_mut(h.path_id) {
            path.received.on_packet(now, pn, ack_eliciting, mad);
            let size = (DATA_HEADER_LEN + len + wire::TAG_LEN) as u64;
            if stream {
                // Bulk data arriving loads the path for its MTU search (`path::mtu`).
                path.on_stream_packet(size as usize);
            }
            path.report_verdict |= path.arrivals.on_packet(now, pn, size).is_some();
            if pings && padded && !other {
                path.received.on_probe(now, pn);
            }
        }
    }

    /// An authenticated packet arrived for a path id we do not have: the client opened a new
    /// path. It is created validating; our own challenge proves the client's address.
    fn join_path(&mut self, now: Timestamp, id: u8, local: Option<SocketAddr>, remote: SocketAddr) -> usize {
        let token = self.random_token();
        let mut path = self.new_path(id, local, remote, now);
        path.challenge = Some(Challenge::new(token, remote, now, 0));
        self.limits_for_new_path(now, &mut path);
        // A path id that was closed before comes back as a new path.
        self.paths.retain(|p| p.id != id);
        self.paths.push(path);
        tracing::debug!(session = %self.local_id, path = id, %remote, "path joining");
        self.paths.len() - 1
    }
}

/// Whether an authenticated payload carries a PATH_CHALLENGE.
fn carries_challenge(payload: &[u8]) -> bool {
    Frames::new(payload).any(|f| matches!(f, Ok(Frame::PathChallenge(_))))
}
