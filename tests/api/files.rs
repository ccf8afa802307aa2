//! Tests of the files module (added with the module).
