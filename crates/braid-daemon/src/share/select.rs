//! Seed 000's channel selection (its appendix, "Selecting a Channel Group to Maximize TCP
//! Throughput"): a TCP connection over link i is bounded by
//!
//! ```text
//! T_i ≤ C·B / (R_i·√p_i)                                   (Eq. 1, C ≈ 1.3)
//! T(group) ≤ Σ_i C·B / (R_i'·√p_i)                          (Eq. 4)
//! ```
//! where R_i' is link i's round trip "rewritten" with the remultiplexing delay of the group:
//! in-order delivery makes a packet that crossed a fast link wait for the slowest one, so here
//! R_i' = the largest RTT in the group. Each link also cannot carry more than its rate S_i
//! (a sharer's announced capacity; a rate not known is not a limit). A neighbour path joins the active group only if the bound with it is higher than
//! without it; otherwise it waits in standby (seed 000 §II: a channel whose presence lowers the
//! aggregate is better left out).

/// The constant of Eq. 1.
pub const C: f64 = 1.3;
/// The loss probability assumed when none was measured (Eq. 1 is unbounded at p = 0).
pub const P_FLOOR: f64 = 1e-4;

/// One channel as the monitor sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Channel {
    /// Measured (or announced) rate, bytes/s.
    pub rate: f64,
    /// Smoothed round-trip time, seconds.
    pub rtt: f64,
    /// Loss probability.
    pub loss: f64,
}

/// Eq. 4 with the group's remultiplexing delay: Σ min(S_i, C·B / (R_max·√p_i)), bytes/s.
pub fn group_bound(group: &[Channel], packet: f64) -> f64 {
    let r_max = group.iter().map(|c| c.rtt).fold(0.0f64, f64::max).max(1e-4);
    group.iter().map(|c| c.rate.min(C * packet / (r_max * c.loss.max(P_FLOOR).sqrt()))).sum()
}

/// Whether adding `candidate` to `group` raises the bound (Eq. 4 compared with and without).
pub fn worth_adding(group: &[Channel], candidate: Channel, packet: f64) -> bool {
    if group.is_empty() {
        return true;
    }
    let mut with = group.to_vec();
    with.push(candidate);
    group_bound(&with, packet) > group_bound(group, packet)
}

/// Hysteresis: a path in standby comes back only if it raises the bound by this share.
pub const RETURN_GAIN: f64 = 0.05;

/// Which neighbour paths wait in standby, decided afresh from each look at the paths. A path in
/// use is parked only when two looks in a row find it lowers the bound: one look can catch a
/// path's RTT in a passing queue (its first seconds above all).
#[derive(Debug, Default)]
pub struct Selector {
    standby: std::collections::BTreeSet<String>,
    doubted: std::collections::BTreeSet<String>,
}

impl Selector {
    /// Whether `label` waits in standby now.
    pub fn is_standby(&self, label: &str) -> bool {
        self.standby.contains(label)
    }

    /// From the own links' channels and the neighbour paths' (by label), the neighbour paths
    /// whose standby state changes: `(label, standby)`. Neighbour paths are added to the
    /// group one by one, best bound first, each only if it raises the group's bound (Eq. 4).
    pub fn decide(
        &mut self,
        own: &[Channel],
        neighbours: &[(String, Channel)],
        packet: f64,
    ) -> Vec<(String, bool)> {
        let mut order: Vec<&(String, Channel)> = neighbours.iter().collect();
        order.sort_by(|a, b| group_bound(&[b.1], packet).total_cmp(&group_bound(&[a.1], packet)));
        let mut group = own.to_vec();
        let mut changes = Vec::new();
        for (label, ch) in order {
            let before = group_bound(&group, packet);
            let mut with = group.clone();
            with.push(*ch);
            let after = group_bound(&with, packet);
            let was = self.standby.contains(label);
            let need = if was { before * (1.0 + RETURN_GAIN) } else { before };
            let worth = group.is_empty() || after > need;
            // A first failing look only puts the path in doubt; it stays in use.
            let use_it = worth || (!was && self.doubted.insert(label.clone()));
            if worth {
                self.doubted.remove(label);
            }
            if use_it {
                group = with;
            }
            if use_it == was {
                changes.push((label.clone(), !use_it));
                if use_it {
                    self.standby.remove(label);
                } else {
                    self.standby.insert(label.clone());
                    self.doubted.remove(label);
                }
            }
        }
        self.standby.retain(|l| neighbours.iter().any(|(n, _)| n == l));
        self.doubted.retain(|l| neighbours.iter().any(|(n, _)| n == l));
        changes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_selector_parks_a_path_that_lowers_the_bound_and_brings_it_back_with_hysteresis() {
        let own = [ch(f64::INFINITY, 20.0, 0.001)];
        let mut s = Selector::default();
        let good = ("via:a".to_string(), ch(f64::INFINITY, 25.0, 0.001));
        let bad = ("via:b".to_string(), ch(f64::INFINITY, 400.0, 0.05));
        assert!(s.decide(&own, &[good.clone(), bad.clone()], B).is_empty(), "a first look parks nothing");
        let changes = s.decide(&own, &[good.clone(), bad.clone()], B);
        assert_eq!(changes, vec![("via:b".to_string(), true)]);
        assert!(s.is_standby("via:b") && !s.is_standby("via:a"));
        // No change while nothing changes.
        assert!(s.decide(&own, &[good.clone(), bad.clone()], B).is_empty());
        // The far path gets as good as the others: it comes back.
        let better = ("via:b".to_string(), ch(f64::INFINITY, 22.0, 0.001));
        assert_eq!(s.decide(&own, &[good, better], B), vec![("via:b".to_string(), false)]);
    }

    const B: f64 = 1400.0;

    #[test]
    fn a_neighbour_slightly_slower_than_the_own_link_joins_once_the_rates_are_known() {
        // 10 Mbit/s links, own at 40 ms without loss, the neighbour at 50 ms with 1 % impairment
        // (Eq. 1: 2.9 Mbit/s).
        let nb = ("via:a".to_string(), ch(10.0, 50.0, 0.01));
        // An own link of unknown rate: Eq. 1 alone (36 Mbit/s at p = 1e-4) shrinks by a fifth
        // when the neighbour raises the group's RTT, more than the neighbour adds.
        let mut s = Selector::default();
        let own = [ch(f64::INFINITY, 40.0, 0.0)];
        assert!(s.decide(&own, std::slice::from_ref(&nb), B).is_empty(), "one look only puts it in doubt");
        assert_eq!(s.decide(&own, std::slice::from_ref(&nb), B), vec![("via:a".to_string(), true)]);
        // With the own link's capacity known (10 Mbit/s, below its Eq. 1 bound) the neighbour adds.
        let mut s = Selector::default();
        let own = [ch(10.0, 40.0, 0.0)];
        for _ in 0..3 {
            assert!(s.decide(&own, std::slice::from_ref(&nb), B).is_empty());
        }
        assert!(!s.is_standby("via:a"));
    }

    fn ch(mbit: f64, rtt_ms: f64, loss: f64) -> Channel {
        Channel { rate: mbit * 1e6 / 8.0, rtt: rtt_ms / 1e3, loss }
    }

    #[test]
    fn a_like_neighbour_adds_and_a_lossy_far_one_waits() {
        let own = [ch(10.0, 20.0, 0.0)];
        assert!(worth_adding(&own, ch(10.0, 25.0, 0.001), B));
        // 1 s away with 20 % loss: it would slow every other channel's share of the flow.
        assert!(!worth_adding(&own, ch(2.0, 1000.0, 0.2), B));
        assert!(worth_adding(&[], ch(1.0, 1000.0, 0.2), B));
    }

    #[test]
    fn eq1_matches_the_paper() {
        // One link, R = 100 ms, p = 1 %: C·B/(R·√p) = 1.3·1400/(0.1·0.1) = 182 kB/s.
        let b = group_bound(&[Channel { rate: f64::INFINITY, rtt: 0.1, loss: 0.01 }], B);
        assert!((b - 182_000.0).abs() < 1.0, "{b}");
    }
}
