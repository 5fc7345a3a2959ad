//! `braid lab run`: scenario → lab → contenders × workloads → report, with teardown on every
//! path out (success, error, panic via the guards' `Drop`, and signals via the interrupt flag).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context, Result};

use crate::cli::RunArgs;
use crate::contender::{self, Contender, Running, Tools};
use crate::iperf::{ClientSpec, Traffic};
use crate::report::markdown::one_line;
use crate::results::{LabReport, RunRecord, Status, WorkloadResult};
use crate::scenario::units::format_rate;
use crate::scenario::LabLink;
use crate::scenario::{Direction, Scenario, Workload, WorkloadKind};
use crate::sys::cmd;
use crate::sys::netns::{http_get, in_netns};
use crate::sys::signal::{self, Interrupted, SignalGuard};
use crate::topo::{stale, Lab, Names};
use crate::transfer::{run_transfer, schedule};
use crate::{checks, overrides, report, summary};
use crate::{EXIT_CHECK_FAILED, EXIT_INTERRUPTED, EXIT_LEFTOVERS, EXIT_OK};

/// Pause between transfers so queues drain and sockets close.
const SETTLE: Duration = Duration::from_secs(1);

/// Reads and validates a scenario file.
pub fn load_scenario(path: &Path) -> Result<Scenario> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read scenario {}", path.display()))?;
    let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    Ok(crate::scenario::parse_scenario(&path.display().to_string(), &text, &stem)?)
}

/// Fails unless running as root.
pub fn require_root(what: &str) -> Result<()> {
    if !nix::unistd::geteuid().is_root() {
        bail!("{what} needs root (it creates network namespaces); run it with sudo");
    }
    Ok(())
}

/// Fails when a program the scenario needs is missing, naming the Debian package.
fn require_tools(scenario: &Scenario) -> Result<()> {
    let mut need = vec![("ip", "iproute2"), ("tc", "iproute2"), ("iperf3", "iperf3")];
    if scenario.links.iter().any(|l| l.loss_percent() > 0.0 || l.cut_at().is_some()) {
        need.push(("nft", "nftables"));
    }
    if scenario.links.iter().any(|l| l.needs_delay_emulation()) {
        need.push(("vde_switch", "vde2"));
        need.push(("wirefilter", "vde2"));
    }
    let missing: Vec<String> = need
        .iter()
        .filter(|(p, _)| cmd::which(p).is_none())
        .map(|(p, pkg)| format!("{p} (apt install {pkg})"))
        .collect();
    if !missing.is_empty() {
        bail!("missing programs: {}", missing.join(", "));
    }
    Ok(())
}

struct Ctx<'a> {
    scenario: &'a Scenario,
    tools: &'a Tools,
    out: &'a Path,
    quiet: bool,
}

impl Ctx<'_> {
    fn say(&self, line: &str) {
        if !self.quiet {
            eprintln!("braid lab: {line}");
        }
    }
}

/// Runs a scenario; returns the process exit code.
pub fn run(args: RunArgs) -> Result<i32> {
    let mut scenario = load_scenario(&args.file)?;
    overrides::apply(
        &mut scenario,
        args.duration.as_deref(),
        args.repeats,
        args.workloads.as_deref(),
        args.contenders.as_deref(),
    )?;
    require_root("braid lab run")?;
    require_tools(&scenario)?;
    let tools = Tools::discover(args.braid.as_deref(), args.agg_tunnel.as_deref());
    let out = args.out.clone().unwrap_or_else(|| PathBuf::from("lab-out").join(&scenario.name));
    std::fs::create_dir_all(out.join("raw"))
        .with_context(|| format!("creating report directory {}", out.display()))?;
    let _signals = SignalGuard::install().context("installing signal handlers")?;
    let ctx = Ctx { scenario: &scenario, tools: &tools, out: &out, quiet: args.quiet };
    for line in stale::sweep()? {
        ctx.say(&format!("removed stale {line}"));
    }
    let contenders = overrides::contender_list(&scenario);
    let mut report = LabReport {
        scenario: scenario.clone(),
        machine: machine_info(&tools),
        workloads: Vec::new(),
        runs: Vec::new(),
        notes: Vec::new(),
        interrupted: false,
    };
    ctx.say(&format!(
        "scenario {}: {} link(s), {} workload(s), {} contender(s), ~{} s",
        scenario.name,
        scenario.links.len(),
        scenario.workloads.len(),
        contenders.len(),
        estimate_secs(&scenario, &contenders, &tools)
    ));

    let names = Names::for_pid(std::process::id());
    let mut code = EXIT_OK;
    let result = match Lab::build(names, &scenario.links, scenario.share) {
        Ok(mut lab) => {
            note_default_cc(&lab, &contenders, &mut report);
            let r = run_workloads(&ctx, &mut lab, &contenders, &mut report);
            if let Err(e) = preserve_logs(lab.dir(), &out.join("logs")) {
                report.notes.push(format!("could not copy process logs: {e:#}"));
            }
            let left = lab.teardown();
            drop(lab);
            if !left.is_clean() {
                for l in &left.0 {
                    ctx.say(&format!("teardown left behind: {l}"));
                    report.notes.push(format!("teardown left behind: {l}"));
                }
                code = EXIT_LEFTOVERS;
            }
            r
        }
        Err(e) => Err(e.context("building the lab")),
    };
    match result {
        Ok(()) => {}
        Err(e) if e.downcast_ref::<Interrupted>().is_some() => {
            report.interrupted = true;
            report.notes.push(format!("{e:#}"));
            if code == EXIT_OK {
                code = EXIT_INTERRUPTED;
            }
        }
        Err(e) => {
            if report.runs.is_empty() {
                return Err(e);
            }
            report.notes.push(format!("run aborted: {e:#}"));
            write_outputs(&ctx, &args, &report, &[])?;
            return Err(e);
        }
    }
    let failed_checks = checks::evaluate(&report);
    write_outputs(&ctx, &args, &report, &failed_checks)?;
    for c in &failed_checks {
        ctx.say(&format!("check failed: {c}"));
    }
    if code == EXIT_OK && !failed_checks.is_empty() {
        code = EXIT_CHECK_FAILED;
    }
    Ok(code)
}

/// `braid lab report DIR`: recomputes the rows from the runs in `DIR/results.json` and
/// rewrites the report files; returns the exit code the checks give.
pub fn rebuild_report(dir: &Path, json: bool) -> Result<i32> {
    let path = dir.join("results.json");
    let text = std::fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))?;
    let old: LabReport = serde_json::from_str(&text)
        .with_context(|| format!("{} is not a lab results file", path.display()))?;
    let contenders = overrides::contender_list(&old.scenario);
    let mut report = LabReport { workloads: Vec::new(), runs: Vec::new(), ..old.clone() };
    for w in &old.workloads {
        let runs: Vec<RunRecord> = old.runs.iter().filter(|r| r.workload == w.name).cloned().collect();
        summarize_into(&old.scenario, &w.workload, &contenders, runs, &mut report);
    }
    let failed = checks::evaluate(&report);
    report::write(dir, &report, &failed)?;
    if json {
        println!("{}", serde_json::to_string(&report::json::summary(&report, &failed))?);
    }
    Ok(if failed.is_empty() { EXIT_OK } else { EXIT_CHECK_FAILED })
}

fn write_outputs(ctx: &Ctx, args: &RunArgs, report: &LabReport, checks: &[String]) -> Result<()> {
    report::write(ctx.out, report, checks)?;
    ctx.say(&format!("report written to {}", ctx.out.join("report.md").display()));
    if args.json {
        let s = serde_json::to_string(&report::json::summary(report, checks))?;
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "{s}")?;
    }
    Ok(())
}

fn estimate_secs(s: &Scenario, contenders: &[Contender], tools: &Tools) -> u64 {
    let runs: f64 = s
        .workloads
        .iter()
        .map(|w| {
            let n = contenders.iter().filter(|c| c.skip_reason(tools, w).is_none()).count();
            (w.duration.as_secs_f64() + 3.0) * n as f64
        })
        .sum();
    (runs * s.repeats as f64 + 5.0) as u64
}

fn run_workloads(ctx: &Ctx, lab: &mut Lab, contenders: &[Contender], report: &mut LabReport) -> Result<()> {
    let mut skipped_once = Vec::new();
    for w in &ctx.scenario.workloads {
        let name = w.name();
        let mut runs: Vec<RunRecord> = Vec::new();
        for c in contenders {
            if let Some(why) = c.skip_reason(ctx.tools, w) {
                if !skipped_once.contains(&c.name()) {
                    ctx.say(&format!("skipping {}: {why}", c.name()));
                    report.notes.push(format!("{} skipped: {why}", c.name()));
                    skipped_once.push(c.name());
                }
                runs.push(RunRecord::without_figures(&c.name(), &name, 1, Status::Skipped, why));
                continue;
            }
            for rep in 1..=ctx.scenario.repeats {
                let rec = match run_one(ctx, lab, c, w, rep) {
                    Ok(r) => r,
                    Err(e) if e.downcast_ref::<Interrupted>().is_some() => {
                        finish_workload(ctx, w, contenders, runs, report);
                        return Err(e);
                    }
                    Err(e) => {
                        RunRecord::without_figures(&c.name(), &name, rep, Status::Failed, format!("{e:#}"))
                    }
                };
                ctx.say(&progress_line(&rec));
                runs.push(rec);
                if let Err(e) = signal::sleep(SETTLE) {
                    finish_workload(ctx, w, contenders, runs, report);
                    return Err(e.into());
                }
            }
        }
        finish_workload(ctx, w, contenders, runs, report);
    }
    Ok(())
}

/// Turns a workload's runs into rows (also for a workload cut short by a signal: contenders
/// that did not get to run show as skipped).
fn finish_workload(
    ctx: &Ctx,
    w: &Workload,
    contenders: &[Contender],
    mut runs: Vec<RunRecord>,
    report: &mut LabReport,
) {
    let name = w.name();
    for c in contenders {
        if !runs.iter().any(|r| r.contender == c.name()) {
            runs.push(RunRecord::without_figures(
                &c.name(),
                &name,
                1,
                Status::Skipped,
                "not run: interrupted".into(),
            ));
        }
    }
    summarize_into(ctx.scenario, w, contenders, runs, report);
}

/// Rows for one workload's runs, appended to `report` with the runs.
fn summarize_into(
    scenario: &Scenario,
    w: &Workload,
    contenders: &[Contender],
    mut runs: Vec<RunRecord>,
    report: &mut LabReport,
) {
    let mut rows = summary::summarize(scenario, w, contenders, &runs, None);
    let mut capacity_source = None;
    if w.kind == WorkloadKind::Cut {
        let cap = summary::reference_capacity(scenario, w, &report.workloads, &rows);
        rows = summary::summarize(scenario, w, contenders, &runs, Some(&cap));
        capacity_source = Some(cap.source);
    }
    report.workloads.push(WorkloadResult { name: w.name(), workload: w.clone(), rows, capacity_source });
    report.runs.append(&mut runs);
}

fn progress_line(r: &RunRecord) -> String {
    let head = format!("[{}] {} #{}", r.workload, r.contender, r.repeat);
    match (r.status, r.goodput_bps) {
        (Status::Ok, Some(g)) => {
            let mut s = format!("{head}: {}", format_rate(g));
            if let Some(u) = r.udp {
                s.push_str(&format!(", loss {:.2}%, jitter {:.2} ms", u.lost_percent, u.jitter_ms));
            }
            s
        }
        _ => format!("{head}: {:?} — {}", r.status, one_line(r.reason.as_deref().unwrap_or_default(), 300)),
    }
}

fn run_one(ctx: &Ctx, lab: &mut Lab, c: &Contender, w: &Workload, rep: u32) -> Result<RunRecord> {
    signal::check()?;
    let wname = w.name();
    let tag = format!("{wname}-{}-{rep}", c.name());
    let traffic = match w.kind {
        WorkloadKind::Cbr { rate_bps, packet_size } => Traffic::Udp { rate_bps, packet_size },
        _ => Traffic::Tcp,
    };
    let running = contender::start(c, lab, ctx.tools, traffic, &tag)?;
    let spec = ClientSpec {
        host: running.target.host.clone(),
        port: running.target.port,
        bind: running.target.bind.clone(),
        mptcp: running.target.mptcp,
        duration: w.duration,
        direction: w.direction,
        traffic,
        parallel: w.parallel,
    };
    let events = if w.kind == WorkloadKind::Cut { schedule(&ctx.scenario.links) } else { Vec::new() };
    let raw_rel = PathBuf::from("raw").join(&wname).join(format!("{}-{rep}.json", c.name()));
    let raw = ctx.out.join(&raw_rel);
    if let Some(parent) = raw.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let log = lab.dir().join(format!("iperf3-client-{tag}.log"));
    let transfer = run_transfer(lab, running.target.ns.as_deref(), &spec, &events, &raw, &log);
    let mut notes = running.notes.clone();
    // The sending side's status: its lost (and resent) packets stand in for TCP's retransmits.
    let sender = match w.direction {
        Direction::Up => &running.status,
        Direction::Down => &running.server_status,
    };
    let mut lost = None;
    if let Some((ns, addr)) = sender {
        match http_get(ns, *addr, "/status", Duration::from_secs(2)) {
            Ok(body) => {
                lost = contender::braid::lost_packets(&body);
                let p = raw.with_file_name(format!("{}-{rep}-status.json", c.name()));
                std::fs::write(&p, body)?;
            }
            Err(e) => notes.push(format!("status snapshot failed: {e:#}")),
        }
    }
    // A piconet's sharers: their members, rates and usage after the transfer.
    for (k, (ns, addr)) in (1..).zip(&running.sharer_status) {
        match http_get(ns, *addr, "/status", Duration::from_secs(2)) {
            Ok(body) => {
                let file = raw.with_file_name(format!("{}-{rep}-share{k}.json", c.name()));
                if let Err(e) = std::fs::write(&file, body) {
                    notes.push(format!("sharer {k} status not saved to {}: {e}", file.display()));
                }
            }
            Err(e) => notes.push(format!("sharer {k} status snapshot failed: {e:#}")),
        }
    }
    let mut running = running;
    let transfer = match transfer {
        Ok(t) => t,
        Err(e) => {
            let diag = diagnose(&mut running);
            return Err(if diag.is_empty() { e } else { e.context(diag) });
        }
    };
    drop(running);
    notes.extend(transfer.notes.iter().cloned());
    if transfer.measurement.series_from_sender {
        notes.push("server intervals missing; sender-side intervals plotted".into());
    }
    Ok(RunRecord {
        contender: c.name(),
        workload: wname,
        repeat: rep,
        status: Status::Ok,
        reason: None,
        goodput_bps: Some(transfer.measurement.goodput_bps),
        // For braid the namespace's TCP counter only sees the local legs: its own figure or none.
        retransmits: if c.is_braid() { lost } else { transfer.retransmits },
        udp: transfer.measurement.udp,
        mptcp_joins: (*c == Contender::Mptcp).then_some(transfer.mptcp_joins).flatten(),
        events: transfer.events,
        series: transfer.measurement.series,
        notes,
        raw_file: Some(raw_rel.display().to_string()),
    })
}

/// Names contender processes that died during the transfer, with their last output.
fn diagnose(running: &mut Running) -> String {
    running.exited_processes().join("; ")
}

/// Copies the processes' logs (and the iperf3 servers' JSON) out of the scratch directory
/// before teardown removes it.
fn preserve_logs(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)?.flatten() {
        let path = entry.path();
        let keep = path.extension().is_some_and(|e| e == "log" || e == "json");
        if keep && path.is_file() {
            std::fs::copy(&path, to.join(entry.file_name()))?;
        }
    }
    Ok(())
}

/// Records the namespaces' default TCP congestion control: iperf3 sets CUBIC per socket, but
/// agg-tunnel's link sockets use the default, which a namespace cannot change (only to a
/// controller in the host's `tcp_allowed_congestion_control`).
fn note_default_cc(lab: &Lab, contenders: &[Contender], report: &mut LabReport) {
    let read = || std::fs::read_to_string("/proc/sys/net/ipv4/tcp_congestion_control");
    let Ok(Ok(cc)) = in_netns(lab.cli(), read) else {
        return;
    };
    let cc = cc.trim().to_string();
    report.machine.push(format!("default TCP congestion control in the namespaces: {cc}"));
    if contenders.iter().any(Contender::is_braid) {
        report.notes.push(
            "braid's retransmits are the packets its sending side declared lost (their frames \
             were sent again), summed over its paths, from its status API after the transfer."
                .into(),
        );
    }
    if cc != "cubic" && contenders.contains(&Contender::Aggligator) {
        report.notes.push(format!(
            "aggligator's TCP links use the namespaces' default congestion control ({cc}); \
             iperf3 (single links, MPTCP, and the local legs of aggligator and braid) uses \
             CUBIC per socket. The lab leaves the host's tcp_allowed_congestion_control alone, \
             so it cannot make agg-tunnel use CUBIC; weigh its figures accordingly, above all \
             with loss."
        ));
    }
}

/// Kernel, CPU count and tool versions, for the report.
fn machine_info(tools: &Tools) -> Vec<String> {
    let mut v = Vec::new();
    if let Ok(k) = cmd::run_ok(&["uname", "-srm"]) {
        v.push(k.trim().to_string());
    }
    if let Ok(n) = std::thread::available_parallelism() {
        v.push(format!("{n} CPU(s)"));
    }
    if let Ok(load) = std::fs::read_to_string("/proc/loadavg") {
        let l: Vec<&str> = load.split_whitespace().take(3).collect();
        v.push(format!("load average at start {}", l.join(" ")));
    }
    if let Ok(out) = cmd::run_ok(&["iperf3", "--version"]) {
        if let Some(first) = out.lines().next() {
            v.push(first.trim().to_string());
        }
    }
    if let Some(a) = &tools.agg_tunnel {
        v.push(format!("agg-tunnel at {}", a.display()));
    }
    match &tools.braid {
        contender::BraidBinary::Ready(p) => v.push(format!("braid at {}", p.display())),
        contender::BraidBinary::Unavailable(why) => v.push(format!("braid: {why}")),
    }
    v
}
