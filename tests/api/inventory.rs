//! Tests of the inventory module (added with the module).
