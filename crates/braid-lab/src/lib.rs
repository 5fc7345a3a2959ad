//! braid lab: network namespaces and emulated links; braid side by side with kernel MPTCP and
//! single links.

pub mod scenario;
pub mod sys;
pub mod topo;
