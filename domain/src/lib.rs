//! netops-domain: what several modules store and answer alike, apart from any of them: the
//! closed sets of values (severities, alert, agent and SIEM incident states) and the network
//! devices and tunnels, which the network module serves and the firewall module reads.

pub mod network;
pub mod states;
