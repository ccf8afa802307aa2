//! Tests of the events module (added with the module).
