//! Tests of the serve module (added with the module).
