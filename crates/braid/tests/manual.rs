//! `braid manpage` and `braid completions SHELL` (packed into the .deb by dist/deb.sh): both
//! say something, and what they say covers every subcommand.

use std::process::Command;

const BRAID: &str = env!("CARGO_BIN_EXE_braid");
const SUBCOMMANDS: [&str; 11] = [
    "demo",
    "server",
    "client",
    "share",
    "status",
    "genkey",
    "pubkey",
    "sim",
    "lab",
    "completions",
    "manpage",
];

fn braid(args: &[&str]) -> String {
    let out = Command::new(BRAID).args(args).output().unwrap();
    assert!(out.status.success(), "braid {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn the_man_page_covers_every_subcommand_and_its_options() {
    let page = braid(&["manpage"]);
    assert!(
        page.starts_with(".ie") || page.starts_with(".TH"),
        "not roff:\n{}",
        &page[..200.min(page.len())]
    );
    assert!(page.contains(".TH braid 1"), "no title");
    for sub in SUBCOMMANDS {
        assert!(page.contains(&format!(".SH \"BRAID {}\"", sub.to_uppercase())), "no section for {sub}");
    }
    // Options of the subcommands, not only their names.
    for option in ["server\\-key", "scheduler", "allow\\-private", "megabytes"] {
        assert!(page.contains(option), "{option} is not in the page");
    }
}

#[test]
fn completions_name_every_subcommand() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let script = braid(&["completions", shell]);
        assert!(script.len() > 1000, "{shell}: {} bytes", script.len());
        for sub in SUBCOMMANDS {
            assert!(script.contains(sub), "{shell} completion lacks {sub}");
        }
    }
    assert!(braid(&["completions", "bash"]).contains("--server-key"));
    let bad = Command::new(BRAID).args(["completions", "tcsh"]).output().unwrap();
    assert_eq!(bad.status.code(), Some(2), "an unknown shell is a usage error");
}
