//! Tests of the databases module (added with the module).
