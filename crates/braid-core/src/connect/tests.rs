use super::{AttemptEnd, Failover, FailoverError, Step};
use crate::time::Timestamp;
use std::time::Duration;

const T: Duration = Duration::from_secs(10);

fn at(ms: u64) -> Timestamp {
    Timestamp::from_duration(Duration::from_millis(ms))
}

fn attempt(link: usize, ms: u64) -> Step {
    Step::Attempt { link, timeout: Duration::from_millis(ms) }
}

/// Drives a phase in which no attempt is ever answered: (start ms, link, timeout ms) of each
/// attempt, and when and why it gave up.
fn run_dead(mut f: Failover) -> (Vec<(u64, usize, u64)>, u64, FailoverError) {
    let mut now = at(0);
    let mut seen = Vec::new();
    loop {
        match f.poll(now) {
            Step::Attempt { link, timeout } => {
                seen.push((now.as_duration().as_millis() as u64, link, timeout.as_millis() as u64));
                now = f.poll_timeout().expect("an attempt is under way");
                f.attempt_failed(now, AttemptEnd::NoAnswer);
            }
            Step::Wait => now = f.poll_timeout().expect("something to wait for"),
            Step::GiveUp(e) => return (seen, now.as_duration().as_millis() as u64, e),
        }
        assert!(seen.len() < 100, "no end");
    }
}

/// Drives a two-link phase in which link 0's attempts end at once with `end` and link 1's are
/// never answered: why and when it gave up.
fn run_link0_answers(end: AttemptEnd) -> (FailoverError, Timestamp) {
    let mut f = Failover::new(at(0), 2, 0, T);
    let mut now = at(0);
    loop {
        match f.poll(now) {
            Step::Attempt { link: 0, .. } => f.attempt_failed(now, end),
            Step::Attempt { .. } => {
                now = f.poll_timeout().unwrap();
                f.attempt_failed(now, AttemptEnd::NoAnswer);
            }
            Step::Wait => unreachable!("every attempt ends at once or at its timeout"),
            Step::GiveUp(e) => return (e, now),
        }
    }
}

#[test]
fn first_link_first_then_the_next_after_the_first_try() {
    let mut f = Failover::new(at(0), 3, 0, T);
    assert_eq!(f.poll(at(0)), attempt(0, 2000));
    assert_eq!(f.poll(at(1999)), Step::Wait);
    // Unreported, the attempt's end counts as no answer.
    assert_eq!(f.poll(at(2000)), attempt(1, 2000));
    f.established(at(2100));
    assert_eq!(f.established_on(), Some((1, at(2100))));
    assert_eq!(f.poll(at(9000)), Step::Wait);
    assert_eq!(f.poll_timeout(), None);
}

#[test]
fn starts_on_the_named_link_and_wraps() {
    let (seen, _, _) = run_dead(Failover::new(at(0), 3, 4, T));
    let links: Vec<usize> = seen.iter().map(|a| a.1).take(4).collect();
    assert_eq!(links, vec![1, 2, 0, 1]);
}

#[test]
fn every_link_dead_gives_up_after_the_budget_with_doubling_tries() {
    let (seen, end, e) = run_dead(Failover::new(at(0), 2, 0, T));
    assert_eq!(e, FailoverError::NoAnswer);
    // The same bound as trying each link for the whole timeout in turn.
    assert_eq!(end, 20_000);
    assert_eq!(
        seen,
        vec![(0, 0, 2000), (2000, 1, 2000), (4000, 0, 4000), (8000, 1, 4000), (12_000, 0, 8000)]
    );
}

#[test]
fn tries_never_exceed_the_handshake_timeout() {
    let (seen, end, _) = run_dead(Failover::new(at(0), 3, 0, Duration::from_secs(5)));
    assert!(seen.iter().all(|a| a.2 <= 5000), "{seen:?}");
    assert_eq!(end, 15_000);
}

#[test]
fn one_link_waits_the_whole_timeout_once() {
    let (seen, end, e) = run_dead(Failover::new(at(0), 1, 0, T));
    assert_eq!(seen, vec![(0, 0, 10_000)]);
    assert_eq!((end, e), (10_000, FailoverError::NoAnswer));
}

#[test]
fn first_try_as_long_as_the_timeout_is_one_link_at_a_time() {
    let (seen, end, _) = run_dead(Failover::new(at(0), 3, 0, T).with_first_try(T));
    assert_eq!(seen, vec![(0, 0, 10_000), (10_000, 1, 10_000), (20_000, 2, 10_000)]);
    assert_eq!(end, 30_000);
}

#[test]
fn a_refused_key_gives_up_at_once() {
    let mut f = Failover::new(at(0), 3, 0, T);
    assert_eq!(f.poll(at(0)), attempt(0, 2000));
    f.attempt_failed(at(50), AttemptEnd::Refused);
    assert_eq!(f.poll(at(50)), Step::GiveUp(FailoverError::Refused));
    assert_eq!(f.poll_timeout(), None);
}

#[test]
fn every_link_refused_by_icmp_gives_up_at_once() {
    let mut f = Failover::new(at(0), 2, 0, T);
    assert_eq!(f.poll(at(0)), attempt(0, 2000));
    f.attempt_failed(at(1), AttemptEnd::Unreachable);
    assert_eq!(f.poll(at(1)), attempt(1, 2000));
    f.attempt_failed(at(2), AttemptEnd::Unreachable);
    assert_eq!(f.poll(at(2)), Step::GiveUp(FailoverError::Unreachable));
}

#[test]
fn every_link_told_another_version_gives_up_at_once_saying_so() {
    let mut f = Failover::new(at(0), 2, 0, T);
    assert_eq!(f.poll(at(0)), attempt(0, 2000));
    f.attempt_failed(at(1), AttemptEnd::WrongVersion(9));
    // Unauthenticated beyond an echo: one link's answer does not end the phase.
    assert_eq!(f.poll(at(1)), attempt(1, 2000));
    f.attempt_failed(at(2), AttemptEnd::Unreachable);
    assert_eq!(f.poll(at(2)), Step::GiveUp(FailoverError::Version { server: 9 }));
    let said = FailoverError::Version { server: 9 }.to_string();
    assert!(
        said.contains("version 9") && said.contains(&format!("version {}", crate::wire::VERSION)),
        "{said}"
    );
}

#[test]
fn a_version_answer_on_one_link_is_named_when_the_budget_runs_out() {
    assert_eq!(
        run_link0_answers(AttemptEnd::WrongVersion(9)),
        (FailoverError::Version { server: 9 }, at(20_000))
    );
}

#[test]
fn a_link_that_answers_for_the_right_server_wins_over_a_version_answer() {
    // A forged VERSION on link 0 (someone on that path saw the message): link 1 still connects.
    let mut f = Failover::new(at(0), 2, 0, T);
    assert_eq!(f.poll(at(0)), attempt(0, 2000));
    f.attempt_failed(at(1), AttemptEnd::WrongVersion(9));
    assert_eq!(f.poll(at(1)), attempt(1, 2000));
    f.established(at(40));
    assert_eq!(f.established_on(), Some((1, at(40))));
    assert_eq!(f.poll(at(5000)), Step::Wait);
}

#[test]
fn one_link_refused_by_icmp_fails_over_and_is_named_at_the_end() {
    assert_eq!(run_link0_answers(AttemptEnd::Unreachable), (FailoverError::Unreachable, at(20_000)));
}

#[test]
fn a_link_that_comes_back_is_tried_again() {
    // Both links dead until 5 s, then link 0 answers: its second attempt (4 s–8 s) succeeds.
    let mut f = Failover::new(at(0), 2, 0, T);
    let mut now = at(0);
    loop {
        match f.poll(now) {
            Step::Attempt { link: 0, .. } if now >= at(4000) => {
                f.established(now + Duration::from_millis(40));
                break;
            }
            Step::Attempt { .. } => {
                now = f.poll_timeout().unwrap();
                f.attempt_failed(now, AttemptEnd::NoAnswer);
            }
            s => panic!("{s:?}"),
        }
    }
    assert_eq!(f.established_on(), Some((0, at(4040))));
    assert_eq!(f.attempts(), 3);
}

#[test]
fn no_link_is_an_error_not_a_hang() {
    let mut f = Failover::new(at(0), 0, 0, T);
    assert_eq!(f.poll(at(0)), Step::GiveUp(FailoverError::NoLink));
}

#[test]
fn a_report_with_no_attempt_under_way_is_ignored() {
    let mut f = Failover::new(at(0), 2, 0, T);
    assert_eq!(f.poll(at(0)), attempt(0, 2000));
    assert_eq!(f.poll(at(2000)), attempt(1, 2000));
    assert_eq!(f.current_link(), Some(1));
    // Reports come only for the attempt under way; a second one for nothing is ignored.
    f.attempt_failed(at(2001), AttemptEnd::NoAnswer);
    f.attempt_failed(at(2002), AttemptEnd::NoAnswer);
    assert_eq!(f.poll(at(2002)), attempt(0, 4000));
}
