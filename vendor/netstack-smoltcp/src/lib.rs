mod device;

mod runner;
pub use runner::Runner;

mod packet;
pub use packet::AnyIpPktFrame;

mod filter;
pub use filter::{IpFilter, IpFilters};

pub mod udp;
pub use udp::UdpSocket;

pub mod tcp;
pub use tcp::{TcpAborter, TcpListener, TcpStream};

pub mod stack;
pub use stack::{Stack, StackBuilder};

/// Re-export
pub use smoltcp;
