//! Key files: one base64 line. Files others can read get a warning.

use crate::error::Failure;
use braid_core::StaticSecret;
use std::path::Path;

/// A new private key from the operating system's random source.
pub fn generate() -> StaticSecret {
    let mut bytes = [0u8; 32];
    ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut bytes)
        .expect("the operating system provides randomness");
    StaticSecret::from_bytes(bytes)
}

/// 32 bytes from the operating system's random source: the seed of every key, id and nonce
/// source of a session or endpoint.
pub fn random_seed() -> braid_core::Seed {
    let mut b = [0u8; 32];
    ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut b)
        .expect("the operating system provides randomness");
    braid_core::Seed::from_bytes(b)
}

/// A random 64-bit number from the operating system (association ids).
pub fn random_u64() -> u64 {
    let mut b = [0u8; 8];
    ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut b)
        .expect("the operating system provides randomness");
    u64::from_be_bytes(b)
}

/// Reads a private key file, warning (through `warn`) when its permissions are loose.
pub fn read_secret(path: &Path, warn: impl FnOnce(String)) -> Result<StaticSecret, Failure> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Failure::Config(format!("key file {}: cannot read it: {e}", path.display())))?;
    if let Some(mode) = loose_mode(path) {
        warn(format!(
            "key file {} is readable by group or others (mode {mode:o}); run: chmod 600 {}",
            path.display(),
            path.display()
        ));
    }
    text.trim().parse().map_err(|e| Failure::Config(format!("key file {}: {e}", path.display())))
}

#[cfg(unix)]
fn loose_mode(path: &Path) -> Option<u32> {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(path).ok()?.permissions().mode() & 0o777;
    (mode & 0o077 != 0).then_some(mode)
}

#[cfg(not(unix))]
fn loose_mode(_: &Path) -> Option<u32> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loose_permissions_warn_and_bad_keys_fail() {
        let dir = std::env::temp_dir().join(format!("braid-key-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("k");
        let sk = generate();
        std::fs::write(&f, sk.to_base64() + "\n").unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
        }
        let mut warned = None;
        assert_eq!(read_secret(&f, |w| warned = Some(w)).unwrap(), sk);
        assert!(warned.unwrap().contains("chmod 600"));
        std::fs::write(&f, "not a key").unwrap();
        let e = read_secret(&f, |_| {}).unwrap_err();
        assert!(e.to_string().contains("base64"), "{e}");
        assert_eq!(e.exit_code(), 2);
        let e = read_secret(&dir.join("missing"), |_| {}).unwrap_err();
        assert!(e.to_string().contains("cannot read"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
