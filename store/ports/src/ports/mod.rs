//! The port traits and the values they carry, one file per port.

pub mod all;
pub mod counters;
pub mod deployment;
pub mod docs;
pub mod ingest;
pub mod rollups;
pub mod series;
pub mod tokens;
pub mod writes;
