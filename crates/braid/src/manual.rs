//! `braid completions SHELL` and `braid manpage`: generated from the command-line definition,
//! so they cannot drift from it (dist/deb.sh packs them into the .deb).

use clap::{Args, CommandFactory};
use clap_complete::Shell;
use std::io::Write;
use std::process::ExitCode;

/// Arguments of `braid completions`.
#[derive(Args, Debug)]
pub struct CompletionArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    shell: Shell,
}

/// Prints the completion script of `shell` for `C`.
pub fn completions<C: CommandFactory>(args: CompletionArgs) -> ExitCode {
    let mut cmd = C::command();
    clap_complete::generate(args.shell, &mut cmd, "braid", &mut std::io::stdout());
    ExitCode::SUCCESS
}

/// Prints the man page (roff) of `C`, one section per subcommand.
pub fn manpage<C: CommandFactory>() -> ExitCode {
    let mut out = Vec::new();
    match render(&C::command(), &mut out) {
        Ok(()) if std::io::stdout().write_all(&out).is_ok() => ExitCode::SUCCESS,
        _ => {
            eprintln!("braid manpage: cannot write the page");
            ExitCode::from(1)
        }
    }
}

/// braid(1): the top-level page, then a section per subcommand with its synopsis, help and
/// options (one page, not a page per subcommand).
fn render(cmd: &clap::Command, out: &mut Vec<u8>) -> std::io::Result<()> {
    let cmd = cmd.clone().version(env!("CARGO_PKG_VERSION"));
    let man =
        clap_mangen::Man::new(cmd.clone()).date("").source(concat!("braid ", env!("CARGO_PKG_VERSION")));
    man.render_title(out)?;
    man.render_name_section(out)?;
    man.render_synopsis_section(out)?;
    man.render_description_section(out)?;
    man.render_options_section(out)?;
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = format!("braid {}", sub.get_name());
        writeln!(out, ".SH \"{}\"", name.to_uppercase())?;
        let sub = sub.clone().bin_name(name);
        let m = clap_mangen::Man::new(sub);
        let mut part = Vec::new();
        m.render_synopsis_section(&mut part)?;
        m.render_description_section(&mut part)?;
        m.render_options_section(&mut part)?;
        // Each part's own headings become subsections of this subcommand's section.
        out.extend(String::from_utf8_lossy(&part).replace(".SH ", ".SS ").as_bytes());
    }
    man.render_version_section(out)?;
    man.render_authors_section(out)
}
