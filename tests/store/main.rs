//! The port conformance suite: the behaviour each storage port promises (the traits of
//! `netops_shared::store`), written once per port and run against every adapter that serves
//! it, so that what the black-box API suite checks over one store holds over the others.
//!
//! Each test is a function of what it tests (the [`Stores`] of an adapter, or one port of it),
//! and [`conformance!`] instantiates it once per adapter: `documents::sqlite::...`,
//! `documents::dynamodb::...`, `counters::process::...`. The adapters are opened in
//! [`adapters`]: the embedded store on a file of its own, DynamoDB on tables of their own on
//! the DynamoDB-protocol server of `NETOPS_TEST_DYNAMODB_ENDPOINT` (moto, started by
//! `tests/run.sh`; without one the DynamoDB tests are skipped, saying so, unless
//! `NETOPS_REQUIRE_AWS_TESTS=1` makes that fatal), and the local process's in-memory
//! counters for the counters port.
//!
//! Run one adapter with `cargo test -p netops --test store -- sqlite::` (or `dynamodb::`),
//! one port with `-- documents::`.
//!
//! [`Stores`]: netops_shared::store::Stores

/// Instantiates test functions once per adapter. Each group names adapters and tests:
///
/// ```ignore
/// conformance! {
///     [sqlite, dynamodb] [a_test, another_test]
///     [sqlite] [a_test_of_the_embedded_store_alone]
/// }
/// ```
///
/// writes, in the calling module, a module per adapter (`sqlite`, `dynamodb`, `process`)
/// holding one `#[tokio::test]` per test of the groups naming it, which opens a fresh store of
/// that adapter (`adapters::sqlite()` and so on; `None` skips the test) and hands the test
/// function what it takes of it ([`adapters::Port`]).
macro_rules! conformance {
    ($([$($adapter:ident),+ $(,)?] [$($test:ident),+ $(,)?])+) => {
        conformance!(@module sqlite $([$($adapter)+] [$($test)+])+);
        conformance!(@module dynamodb $([$($adapter)+] [$($test)+])+);
        conformance!(@module process $([$($adapter)+] [$($test)+])+);
    };
    (@module $adapter:ident $($adapters:tt $tests:tt)+) => {
        mod $adapter {
            $( conformance!(@pick $adapter $adapters $tests); )+
        }
    };
    // The tests of a group naming the adapter.
    (@pick sqlite [sqlite $($others:ident)*] $tests:tt) => { conformance!(@tests sqlite $tests); };
    (@pick dynamodb [dynamodb $($others:ident)*] $tests:tt) => { conformance!(@tests dynamodb $tests); };
    (@pick process [process $($others:ident)*] $tests:tt) => { conformance!(@tests process $tests); };
    (@pick $adapter:ident [$other:ident $($others:ident)*] $tests:tt) => {
        conformance!(@pick $adapter [$($others)*] $tests);
    };
    (@pick $adapter:ident [] $tests:tt) => {};
    (@tests $adapter:ident [$($test:ident)+]) => {
        $(
            #[tokio::test]
            async fn $test() {
                let Some(subject) = crate::adapters::$adapter().await else {
                    return;
                };
                super::$test(crate::adapters::Port::of(&subject)).await;
            }
        )+
    };
}

mod adapters;
mod data;

mod agent_loop;
mod counters;
mod deployment;
mod documents;
mod ingest;
mod rollups;
mod series;
mod tokens;
mod writelog;
