//! Repository chores, run as `cargo xtask <task>` (the alias is in `.cargo/config.toml`).
//! The tests call the same functions, so a committed file that a task would change fails them.

pub mod events;
pub mod routes;
