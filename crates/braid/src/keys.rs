//! `braid genkey` and `braid pubkey` (the habit of `wg genkey | wg pubkey`).

use braid_core::StaticSecret;
use std::io::Read;
use std::process::ExitCode;

/// Prints a new private key.
pub fn genkey() -> ExitCode {
    println!("{}", braid_daemon::keyfile::generate().to_base64());
    ExitCode::SUCCESS
}

/// Reads a private key on stdin and prints its public key.
pub fn pubkey() -> ExitCode {
    let mut text = String::new();
    if let Err(e) = std::io::stdin().read_to_string(&mut text) {
        eprintln!("braid pubkey: cannot read stdin: {e}");
        return ExitCode::from(2);
    }
    match text.trim().parse::<StaticSecret>() {
        Ok(sk) => {
            println!("{}", sk.public_key());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("braid pubkey: the private key on stdin is invalid: {e}");
            ExitCode::from(2)
        }
    }
}
