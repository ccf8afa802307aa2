//! Tests of the dns module (added with the module).
