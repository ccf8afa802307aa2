//! Tests of the netdiag module (added with the module).
