//! braid simulator: deterministic discrete-event links driving two protocol cores in virtual time
