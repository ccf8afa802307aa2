//! netops-demo: the demo data. It draws fake observations from a deterministic roster (two
//! tenants, their sites, machines and accounts; times relative to now) and writes them through
//! the modules' own models and writers: the first seed ([`seed`]), the live producers that go
//! on as time passes ([`live`]). The NetDiag actions are run by the simulated agents of the
//! local process, real HTTP clients of the agent API (docs/agent.md). Only the local process
//! links it (and the tests); no Lambda function does.

mod roster;

pub mod devices;
pub mod live;
pub mod seed;

pub mod alerts;
pub mod databases;
pub mod dns;
pub mod files;
pub mod firewall;
pub mod fleet;
pub mod flows;
pub mod inventory;
pub mod netdiag;
pub mod network;
pub mod operations;
pub mod security;

pub use roster::*;
pub use seed::{SEEDERS, SeedSize, seed_demo, seed_demo_modules, seed_tenant, seed_tenant_at};
