//! TOML → [`Scenario`], with every error naming the file line it comes from.

use std::fmt;
use std::ops::Range;
use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

use super::units::{check_percent, parse_duration, parse_percent, parse_rate};
use super::{
    Checks, Contenders, Direction, LabLink, LinkSpec, Scenario, ShareSpec, Workload, WorkloadKind,
    LAB_OPTIONS, MAX_LINKS, NEVER,
};
use braid_sim::link::{parse_capacity, QueueLimit};

const DEFAULT_DURATION: Duration = Duration::from_secs(10);
const DEFAULT_QUEUE: Duration = Duration::from_millis(100);
const MIN_DURATION: Duration = Duration::from_secs(1);
const MAX_DURATION: Duration = Duration::from_secs(600);
const MAX_REPEATS: i64 = 10;

/// A scenario file that could not be used: where and why.
#[derive(Debug, Clone, PartialEq)]
pub struct ScenarioError {
    /// The file name as given.
    pub file: String,
    /// 1-based line of the offending item, when known.
    pub line: Option<usize>,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{}: {}", self.file, line, self.message),
            None => write!(f, "{}: {}", self.file, self.message),
        }
    }
}

impl std::error::Error for ScenarioError {}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScenario {
    name: Option<Spanned<String>>,
    description: Option<String>,
    duration: Option<Spanned<String>>,
    repeats: Option<Spanned<i64>>,
    #[serde(rename = "link")]
    links: Option<Spanned<Vec<Spanned<RawLink>>>>,
    #[serde(rename = "workload", default)]
    workloads: Vec<Spanned<RawWorkload>>,
    contenders: Option<Spanned<RawContenders>>,
    checks: Option<RawChecks>,
    share: Option<Spanned<RawShare>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawShare {
    neighbours: Spanned<i64>,
    lan_rate: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLink {
    /// The whole link as one simulator spec string (`50mbit/5ms/loss=1%`), instead of the keys.
    spec: Option<Spanned<String>>,
    rate: Option<Spanned<String>>,
    delay: Option<Spanned<String>>,
    jitter: Option<Spanned<String>>,
    loss: Option<Spanned<NumOrText>>,
    queue: Option<Spanned<String>>,
    cut_at: Option<Spanned<String>>,
    restore_at: Option<Spanned<String>>,
    /// Rate changes, `RATE@TIME,...` (the simulator's `capacity=`).
    capacity: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum NumOrText {
    Num(f64),
    Text(String),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWorkload {
    kind: Spanned<String>,
    direction: Option<Spanned<String>>,
    duration: Option<Spanned<String>>,
    rate: Option<Spanned<String>>,
    packet_size: Option<Spanned<i64>>,
    parallel: Option<Spanned<i64>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawContenders {
    singles: Option<bool>,
    mptcp: Option<bool>,
    aggligator: Option<bool>,
    braid: Option<Spanned<Vec<Spanned<String>>>>,
    braid_tun: Option<Spanned<Vec<Spanned<String>>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawChecks {
    min_braid_ratio: Option<Spanned<f64>>,
}

/// Turns byte spans into line numbers and builds errors.
struct Source<'a> {
    file: &'a str,
    text: &'a str,
}

impl Source<'_> {
    fn line_of(&self, span: &Range<usize>) -> usize {
        let end = span.start.min(self.text.len());
        self.text.as_bytes()[..end].iter().filter(|&&b| b == b'\n').count() + 1
    }

    fn err(&self, span: &Range<usize>, message: impl Into<String>) -> ScenarioError {
        ScenarioError { file: self.file.to_string(), line: Some(self.line_of(span)), message: message.into() }
    }

    fn err_no_line(&self, message: impl Into<String>) -> ScenarioError {
        ScenarioError { file: self.file.to_string(), line: None, message: message.into() }
    }

    fn duration(&self, value: &Spanned<String>, what: &str) -> Result<Duration, ScenarioError> {
        parse_duration(value.get_ref()).map_err(|e| self.err(&value.span(), format!("{what}: {e}")))
    }
}

/// Parses and validates a scenario. `file` names the source in error messages; `default_name`
/// is used when the file has no `name`.
pub fn parse_scenario(file: &str, text: &str, default_name: &str) -> Result<Scenario, ScenarioError> {
    let src = Source { file, text };
    let raw: RawScenario = toml::from_str(text).map_err(|e| match e.span() {
        Some(span) => {
            let line = text.lines().nth(src.line_of(&span) - 1).unwrap_or_default();
            let mut msg = e.message().trim().to_string();
            if !line.trim().is_empty() {
                msg = format!("{msg} in `{}`", line.trim());
            }
            if unquoted_text_value(line) {
                msg.push_str(" (text values such as rates and durations need quotes)");
            }
            src.err(&span, msg)
        }
        None => src.err_no_line(e.message().trim().to_string()),
    })?;

    let name = match &raw.name {
        Some(n) => {
            let v = n.get_ref();
            if !is_token(v) {
                return Err(src.err(&n.span(), format!("name {v:?}: use letters, digits, '-' and '_' only")));
            }
            v.clone()
        }
        None if is_token(default_name) => default_name.to_string(),
        None => "scenario".to_string(),
    };

    let duration = match &raw.duration {
        Some(d) => checked_duration(&src, d, "duration")?,
        None => DEFAULT_DURATION,
    };

    let repeats = match &raw.repeats {
        Some(r) if (1..=MAX_REPEATS).contains(r.get_ref()) => *r.get_ref() as u32,
        Some(r) => {
            return Err(src.err(&r.span(), format!("repeats = {}: must be 1..={MAX_REPEATS}", r.get_ref())))
        }
        None => 1,
    };

    let Some(raw_links) = &raw.links else {
        return Err(src.err_no_line("no links: add at least one [[link]] table with a rate"));
    };
    if raw_links.get_ref().len() > MAX_LINKS {
        return Err(src.err(
            &raw_links.span(),
            format!("{} links: at most {MAX_LINKS} are supported", raw_links.get_ref().len()),
        ));
    }
    let links = raw_links
        .get_ref()
        .iter()
        .enumerate()
        .map(|(i, l)| parse_link(&src, i + 1, l))
        .collect::<Result<Vec<_>, _>>()?;

    let mut workloads = Vec::new();
    for w in &raw.workloads {
        workloads.extend(parse_workload(&src, w, duration)?);
    }
    if workloads.is_empty() {
        workloads.push(Workload {
            kind: WorkloadKind::Bulk,
            direction: Direction::Up,
            duration,
            parallel: 1,
        });
    }
    check_workload_names(&src, &raw.workloads, &workloads)?;
    check_cuts(&src, raw_links, &links, &workloads)?;

    let contenders = parse_contenders(&src, raw.contenders.as_ref())?;
    let checks = match &raw.checks {
        Some(c) => Checks {
            min_braid_ratio: match &c.min_braid_ratio {
                Some(r) if (0.0..=2.0).contains(r.get_ref()) => Some(*r.get_ref()),
                Some(r) => {
                    return Err(
                        src.err(&r.span(), format!("min_braid_ratio = {}: must be within 0..2", r.get_ref()))
                    )
                }
                None => None,
            },
        },
        None => Checks::default(),
    };

    let share = raw.share.as_ref().map(|s| parse_share(&src, s, links.len(), &contenders)).transpose()?;

    Ok(Scenario {
        name,
        description: raw.description.unwrap_or_default(),
        links,
        workloads,
        contenders,
        repeats,
        checks,
        share,
    })
}

/// Whether `line` looks like `key = 20mbit`: a value that is neither quoted, a number, a
/// boolean, an array nor a table.
fn unquoted_text_value(line: &str) -> bool {
    let Some((_, value)) = line.split_once('=') else {
        return false;
    };
    let v = value.split('#').next().unwrap_or_default().trim();
    !v.is_empty()
        && !v.starts_with(['"', '\'', '[', '{'])
        && v != "true"
        && v != "false"
        && v.parse::<f64>().is_err()
}

fn is_token(s: &str) -> bool {
    !s.is_empty() && s.len() <= 64 && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

fn checked_duration(src: &Source, value: &Spanned<String>, what: &str) -> Result<Duration, ScenarioError> {
    let d = src.duration(value, what)?;
    if !(MIN_DURATION..=MAX_DURATION).contains(&d) {
        return Err(
            src.err(&value.span(), format!("{what} {:?}: must be between 1s and 600s", value.get_ref()))
        );
    }
    Ok(d)
}

fn parse_link(src: &Source, index: usize, raw: &Spanned<RawLink>) -> Result<LinkSpec, ScenarioError> {
    let l = raw.get_ref();
    let what = |field: &str| format!("link {index}: {field}");
    if let Some(spec) = &l.spec {
        let others = [&l.rate, &l.delay, &l.jitter, &l.queue, &l.cut_at, &l.restore_at, &l.capacity];
        if others.iter().any(|o| o.is_some()) || l.loss.is_some() {
            return Err(src.err(&raw.span(), what("give either spec or the separate keys, not both")));
        }
        let link = LinkSpec::parse(spec.get_ref()).map_err(|e| src.err(&spec.span(), what(&e)))?;
        return check_lab_link(&link).map(|()| link).map_err(|(_, e)| src.err(&spec.span(), what(&e)));
    }
    let Some(rate) = &l.rate else {
        return Err(src.err(&raw.span(), what("needs a rate (or a spec)")));
    };
    let rate_bps = parse_rate(rate.get_ref()).map_err(|e| src.err(&rate.span(), what(&e)))?;
    let opt_dur = |v: &Option<Spanned<String>>, field: &str| -> Result<Option<Duration>, _> {
        v.as_ref().map(|v| src.duration(v, &what(field))).transpose()
    };
    let mut link = LinkSpec::new(rate_bps, opt_dur(&l.delay, "delay")?.unwrap_or(Duration::ZERO));
    link.jitter = opt_dur(&l.jitter, "jitter")?.unwrap_or(Duration::ZERO);
    link.queue = QueueLimit::Time(opt_dur(&l.queue, "queue")?.unwrap_or(DEFAULT_QUEUE));
    let cut_at = opt_dur(&l.cut_at, "cut_at")?;
    let restore_at = opt_dur(&l.restore_at, "restore_at")?;
    if let Some(v) = &l.capacity {
        link.capacity = parse_capacity(v.get_ref()).map_err(|e| src.err(&v.span(), what(&e)))?;
    }
    if let Some(v) = &l.loss {
        let parsed = match v.get_ref() {
            NumOrText::Num(n) => check_percent(*n),
            NumOrText::Text(t) => parse_percent(t),
        };
        link.loss = parsed.map_err(|e| src.err(&v.span(), what(&format!("loss: {e}"))))? / 100.0;
    }
    match (cut_at, restore_at) {
        (None, Some(_)) => {
            let span = l.restore_at.as_ref().map(|d| d.span()).unwrap_or(raw.span());
            return Err(src.err(&span, what("restore_at without cut_at")));
        }
        (Some(c), Some(r)) if r <= c => {
            let span = l.restore_at.as_ref().map(|d| d.span()).unwrap_or(raw.span());
            return Err(src.err(&span, what("restore_at must come after cut_at")));
        }
        (Some(c), r) => link.down = vec![(c, r.unwrap_or(NEVER))],
        (None, None) => {}
    }
    check_lab_link(&link).map_err(|(field, e)| {
        let span = match field {
            "delay" => l.delay.as_ref().map(|v| v.span()),
            "queue" => l.queue.as_ref().map(|v| v.span()),
            "loss" => l.loss.as_ref().map(|v| v.span()),
            "capacity" => l.capacity.as_ref().map(|v| v.span()),
            _ => None,
        };
        src.err(&span.unwrap_or(raw.span()), what(&e))
    })?;
    Ok(link)
}

/// What the lab can emulate of a link: the rate its forwarder shapes (and rate changes), a
/// delay and queue within bounds, loss up to 50 %, one outage, and none of the simulator-only
/// options.
fn check_lab_link(link: &LinkSpec) -> Result<(), (&'static str, String)> {
    if !(1000..=10_000_000_000).contains(&link.rate_bps) {
        return Err(("rate", format!("rate {} bit/s is outside 1kbit..10gbit", link.rate_bps)));
    }
    if let Some((_, r)) = link.capacity.iter().find(|(_, r)| !(1000..=10_000_000_000).contains(r)) {
        return Err((
            "capacity",
            format!("capacity {r} bit/s is outside 1kbit..10gbit (cut_at stops a link)"),
        ));
    }
    if link.capacity.windows(2).any(|w| w[0].0 == w[1].0) {
        return Err(("capacity", "capacity gives two rates for the same time".into()));
    }
    if link.delay > Duration::from_secs(5) {
        return Err(("delay", "delay above 5s is not supported".into()));
    }
    if let QueueLimit::Time(q) = link.queue {
        if q < Duration::from_millis(1) || q > Duration::from_secs(2) {
            return Err(("queue", "queue must be between 1ms and 2s".into()));
        }
    }
    if link.loss > 0.5 {
        return Err(("loss", "loss above 50% is not supported".into()));
    }
    if link.down.len() > 1 {
        return Err(("down", "the lab cuts a link once: give one down=FROM-TO window".into()));
    }
    let beyond = link.beyond(LAB_OPTIONS);
    if !beyond.is_empty() {
        let msg = format!(
            "the lab cannot emulate {} (it emulates rate, delay, {}); use `braid sim` for those",
            beyond.join(", "),
            LAB_OPTIONS.join(", ")
        );
        return Err(("spec", msg));
    }
    Ok(())
}

/// Most parallel flows of a bulk workload (iperf3 allows 128).
const MAX_PARALLEL: i64 = 128;

fn parse_workload(
    src: &Source,
    raw: &Spanned<RawWorkload>,
    default_duration: Duration,
) -> Result<Vec<Workload>, ScenarioError> {
    let w = raw.get_ref();
    let duration = match &w.duration {
        Some(d) => checked_duration(src, d, "workload duration")?,
        None => default_duration,
    };
    let directions = match w.direction.as_ref().map(|d| (d.get_ref().as_str(), d.span())) {
        None | Some(("up", _)) => vec![Direction::Up],
        Some(("down", _)) => vec![Direction::Down],
        Some(("both", _)) => vec![Direction::Up, Direction::Down],
        Some((other, span)) => {
            return Err(
                src.err(&span, format!("workload direction {other:?}: use \"up\", \"down\" or \"both\""))
            )
        }
    };
    let kind_name = w.kind.get_ref().as_str();
    let not_for = |field: &str, span: Range<usize>| {
        src.err(&span, format!("workload kind {kind_name:?} takes no {field} (only \"cbr\" does)"))
    };
    let kind = match kind_name {
        "bulk" | "cut" => {
            if let Some(r) = &w.rate {
                return Err(not_for("rate", r.span()));
            }
            if let Some(p) = &w.packet_size {
                return Err(not_for("packet_size", p.span()));
            }
            if kind_name == "bulk" {
                WorkloadKind::Bulk
            } else {
                WorkloadKind::Cut
            }
        }
        "cbr" => {
            let Some(rate) = &w.rate else {
                return Err(
                    src.err(&raw.span(), "workload kind \"cbr\" needs a rate (e.g. rate = \"4mbit\")")
                );
            };
            let rate_bps =
                parse_rate(rate.get_ref()).map_err(|e| src.err(&rate.span(), format!("workload: {e}")))?;
            let packet_size = match &w.packet_size {
                None => 1200,
                Some(p) if (64..=1472).contains(p.get_ref()) => *p.get_ref() as u32,
                Some(p) => {
                    return Err(
                        src.err(&p.span(), format!("packet_size = {}: must be 64..=1472", p.get_ref()))
                    )
                }
            };
            WorkloadKind::Cbr { rate_bps, packet_size }
        }
        other => {
            return Err(src.err(
                &w.kind.span(),
                format!("unknown workload kind {other:?}: use \"bulk\", \"cbr\" or \"cut\""),
            ))
        }
    };
    let parallel = match &w.parallel {
        None => 1,
        Some(p) if kind != WorkloadKind::Bulk => {
            return Err(src.err(
                &p.span(),
                format!("workload kind {kind_name:?} takes no parallel (only \"bulk\" does)"),
            ))
        }
        Some(p) if (1..=MAX_PARALLEL).contains(p.get_ref()) => *p.get_ref() as u32,
        Some(p) => {
            return Err(src.err(&p.span(), format!("parallel = {}: must be 1..={MAX_PARALLEL}", p.get_ref())))
        }
    };
    Ok(directions.into_iter().map(|direction| Workload { kind, direction, duration, parallel }).collect())
}

fn check_workload_names(
    src: &Source,
    raw: &[Spanned<RawWorkload>],
    workloads: &[Workload],
) -> Result<(), ScenarioError> {
    let mut seen = std::collections::HashSet::new();
    for w in workloads {
        if !seen.insert(w.name()) {
            let span = raw.last().map(|r| r.span()).unwrap_or(0..0);
            return Err(src.err(&span, format!("workload {} appears twice", w.name())));
        }
    }
    Ok(())
}

fn check_cuts(
    src: &Source,
    raw_links: &Spanned<Vec<Spanned<RawLink>>>,
    links: &[LinkSpec],
    workloads: &[Workload],
) -> Result<(), ScenarioError> {
    let cut_workloads: Vec<&Workload> = workloads.iter().filter(|w| w.kind == WorkloadKind::Cut).collect();
    let any_event = links.iter().any(|l| l.schedule_end().is_some());
    if any_event && cut_workloads.is_empty() {
        let i = links.iter().position(|l| l.schedule_end().is_some()).unwrap_or(0);
        return Err(src.err(
            &raw_links.get_ref()[i].span(),
            format!(
                "link {} has cut_at or a capacity change but no workload has kind = \"cut\" (the schedule would never run)",
                i + 1
            ),
        ));
    }
    if !any_event && !cut_workloads.is_empty() {
        return Err(
            src.err_no_line("a workload has kind = \"cut\" but no link has cut_at or a capacity change")
        );
    }
    if !links.iter().any(|l| l.cut_at().is_none() || l.restore_at().is_some()) {
        return Err(src.err(&raw_links.span(), "every link is cut and none restored: nothing would survive"));
    }
    for w in cut_workloads {
        for (i, l) in links.iter().enumerate() {
            let last = l.schedule_end().unwrap_or(Duration::ZERO);
            if last + Duration::from_secs(1) > w.duration {
                return Err(src.err(
                    &raw_links.get_ref()[i].span(),
                    format!(
                        "link {}: the schedule must end at least 1s before the cut workload's duration ({}s)",
                        i + 1,
                        w.duration.as_secs_f64()
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// A list of braid scheduler names (`braid`, `braid_tun`): tokens, each once.
fn schedulers(
    src: &Source,
    list: Option<&Spanned<Vec<Spanned<String>>>>,
) -> Result<Vec<String>, ScenarioError> {
    let mut out = Vec::new();
    for s in list.map(|l| l.get_ref().as_slice()).unwrap_or_default() {
        if !is_token(s.get_ref()) {
            return Err(src.err(
                &s.span(),
                format!("braid scheduler {:?}: use letters, digits, '-' and '_'", s.get_ref()),
            ));
        }
        if out.contains(s.get_ref()) {
            return Err(src.err(&s.span(), format!("braid scheduler {:?} listed twice", s.get_ref())));
        }
        out.push(s.get_ref().clone());
    }
    Ok(out)
}

fn parse_contenders(src: &Source, raw: Option<&Spanned<RawContenders>>) -> Result<Contenders, ScenarioError> {
    let Some(raw) = raw else {
        return Ok(Contenders {
            singles: true,
            mptcp: true,
            aggligator: true,
            braid: vec!["minrtt".into()],
            braid_tun: Vec::new(),
        });
    };
    let c = raw.get_ref();
    let out = Contenders {
        singles: c.singles.unwrap_or(true),
        mptcp: c.mptcp.unwrap_or(false),
        aggligator: c.aggligator.unwrap_or(false),
        braid: schedulers(src, c.braid.as_ref())?,
        braid_tun: schedulers(src, c.braid_tun.as_ref())?,
    };
    if out.is_empty() {
        return Err(src.err(&raw.span(), "no contenders enabled"));
    }
    Ok(out)
}

/// The LAN rate when `[share]` does not give one.
const DEFAULT_LAN_RATE: u64 = 100_000_000;

/// `[share]`: at least one neighbour, and at least one link left for the client. Only single
/// links and braid run over a piconet: MPTCP, aggligator and the TUN cannot use a neighbour.
fn parse_share(
    src: &Source,
    raw: &Spanned<RawShare>,
    links: usize,
    contenders: &Contenders,
) -> Result<ShareSpec, ScenarioError> {
    let s = raw.get_ref();
    let n = *s.neighbours.get_ref();
    if n < 1 || n as usize >= links {
        return Err(src.err(
            &s.neighbours.span(),
            format!("share: neighbours = {n}: must be 1..={} (the client keeps at least one of the {links} links)", links.saturating_sub(1)),
        ));
    }
    let lan_rate_bps = match &s.lan_rate {
        Some(r) => {
            parse_rate(r.get_ref()).map_err(|e| src.err(&r.span(), format!("share: lan_rate: {e}")))?
        }
        None => DEFAULT_LAN_RATE,
    };
    let others = [
        (contenders.mptcp, "mptcp"),
        (contenders.aggligator, "aggligator"),
        (!contenders.braid_tun.is_empty(), "braid_tun"),
    ];
    if let Some((_, name)) = others.iter().find(|(on, _)| *on) {
        return Err(src.err(
            &raw.span(),
            format!(
                "share: contender {name} cannot use a neighbour's link; a piconet runs singles and braid"
            ),
        ));
    }
    Ok(ShareSpec { neighbours: n as usize, lan_rate_bps })
}
