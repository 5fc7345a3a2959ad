//! A client path whose link is down when it is added (a modem still attaching, no coverage
//! yet) fails validation, and the client keeps trying in slow rounds (`fail_validation`): when
//! the link comes up, the path joins and carries its share.

use braid_core::SessionConfig;
use braid_sim::{run, LinkSpec, SimConfig};
use std::time::Duration;

#[test]
fn a_path_that_failed_validation_joins_when_its_link_comes_up() {
    let links =
        ["20mbit/10ms", "20mbit/10ms/down=0s-15s"].iter().map(|s| LinkSpec::parse(s).unwrap()).collect();
    let r = run(&SimConfig::bulk(links, Duration::from_secs(40), 1, SessionConfig::default())).expect("runs");
    assert!(r.intact);
    // Validation fails at 10 s; retry rounds at 11 s (still down) and 23 s (up): the path
    // carries data from then on. Before, it stayed closed and the run got one link's rate.
    assert_eq!(r.paths[1].state, "active");
    assert!(r.paths[1].goodput_bps > 5e6, "{}", r.paths[1].goodput_bps);
    let late: Vec<f64> = r.timeline.iter().filter(|(t, _)| *t >= 30_000).map(|(_, g)| *g).collect();
    let mean = late.iter().sum::<f64>() / late.len() as f64;
    assert!(mean > 30e6, "both links after the second retry round: {mean}");
}
