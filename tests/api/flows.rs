//! Tests of the flows module (added with the module).
