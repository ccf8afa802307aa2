//! netops-domain: what several modules store and answer alike, apart from any of them: the
//! closed sets of values (severities, alert, agent and SIEM incident states), the network
//! devices and tunnels, which the network module serves and the firewall module reads, and the
//! rule of failing runs that opens and resolves alerts.

pub mod network;
pub mod runs;
pub mod states;
