//! braid client and server daemons: tokio drivers around the protocol core, front ends, egress, status
