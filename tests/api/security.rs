//! Tests of the security module (added with the module).
