//! `netops`: serve, token, tenant, seed, writes, collect, agent, geo (docs/cli.md).

mod agent;
mod cli;
mod export;
mod send;

/// mimalloc instead of the system allocator: seeding and the big reads allocate and free
/// millions of small JSON values from several threads, where glibc's arenas spent a quarter
/// of the time (locks and consolidation, measured with perf).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    cli::main()
}
