//! `netops`: serve, token, seed, writes (DECISIONS "The local process").

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
