//! Tests of the network module (added with the module).
