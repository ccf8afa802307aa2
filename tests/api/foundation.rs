//! Tests of the foundation module (added with the module).
