//! Tests of the mcp module (added with the module).
