//! Stand-alone driver for the lab while the `braid` binary does not wire it yet:
//! `cargo run -p braid-lab --example lab -- run lab/two.toml --out /tmp/two`.
//! Takes exactly the arguments of `braid lab`.

use clap::Parser;

/// braid lab (example driver).
#[derive(Parser)]
#[command(name = "lab")]
struct Cli {
    #[command(flatten)]
    lab: braid_lab::LabArgs,
}

fn main() {
    let cli = Cli::parse();
    match braid_lab::run(cli.lab) {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::exit(1);
        }
    }
}
