//! Tests of the firewall module (added with the module).
