//! The reliability suite: the real `netops serve` under floods, faults and bad input, as an
//! abusive or unlucky client would meet it, on loopback only. Every test is bounded in count
//! and time; together they run in the test command.

// Shared with the API suite; each suite uses part of it.
#[allow(dead_code)]
#[path = "../common/served.rs"]
mod served;

mod connections;
mod writes;
