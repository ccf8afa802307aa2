//! Tests of the alerts module (added with the module).
