//! `toolrag completions <shell>` and `toolrag man`: shell completions
//! (clap_complete) and a man page (clap_mangen), generated from the same
//! command-line definition as the parser, so they cannot drift from it.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use clap_complete::Shell;

/// What `toolrag completions --help` ends with.
const COMPLETIONS_HELP: &str = "\
Examples:
  toolrag completions bash > ~/.local/share/bash-completion/completions/toolrag
  toolrag completions zsh > ~/.zfunc/_toolrag
  toolrag completions fish > ~/.config/fish/completions/toolrag.fish
  toolrag completions powershell >> $PROFILE";

/// Print a shell completion script for toolrag on standard output.
#[derive(Debug, Args)]
#[command(after_long_help = COMPLETIONS_HELP)]
pub struct CompletionsArgs {
    /// The shell: bash, elvish, fish, powershell or zsh.
    #[arg(value_enum)]
    shell: Shell,
}

/// What `toolrag man --help` ends with.
const MAN_HELP: &str = "\
Examples:
  toolrag man | man -l -
  toolrag man --dir /usr/local/share/man/man1";

/// Print toolrag's man page (roff), or write one page per command to a folder.
#[derive(Debug, Args)]
#[command(after_long_help = MAN_HELP)]
pub struct ManArgs {
    /// Write toolrag.1 and a page per subcommand (toolrag-lint.1, ...) into
    /// this folder instead of printing toolrag.1.
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
}

pub fn run_completions(args: CompletionsArgs) -> anyhow::Result<ExitCode> {
    let mut cmd = super::command();
    let mut out = std::io::stdout().lock();
    clap_complete::generate(args.shell, &mut cmd, "toolrag", &mut out);
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

pub fn run_man(args: ManArgs) -> anyhow::Result<ExitCode> {
    let cmd = super::command();
    match args.dir {
        Some(dir) => {
            std::fs::create_dir_all(&dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
            clap_mangen::generate_to(cmd, &dir)
                .with_context(|| format!("cannot write man pages into {}", dir.display()))?;
        }
        None => {
            let mut out = std::io::stdout().lock();
            clap_mangen::Man::new(cmd).render(&mut out)?;
            out.flush()?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
