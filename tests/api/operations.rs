//! Tests of the operations module (added with the module).
