//! braid link emulator: the simulator's link model applied to real packets (loopback UDP relays)
