//! Scenario parsing: the shipped files, defaults, and one test per error with its line.

use std::time::Duration;

use super::*;

fn parse(text: &str) -> Result<Scenario, ScenarioError> {
    parse_scenario("t.toml", text, "t")
}

/// The error's line and message; panics if the text parses.
fn error(text: &str) -> (Option<usize>, String) {
    let e = parse(text).expect_err("should not parse");
    assert!(e.to_string().starts_with("t.toml"), "{e}");
    (e.line, e.message)
}

#[test]
fn shipped_scenarios_parse() {
    let files = [
        ("two", include_str!("../../../../lab/two.toml")),
        ("three", include_str!("../../../../lab/three.toml")),
        ("lossy", include_str!("../../../../lab/lossy.toml")),
        ("cut", include_str!("../../../../lab/cut.toml")),
        ("ci", include_str!("../../../../lab/ci.toml")),
        ("share", include_str!("../../../../lab/share.toml")),
        ("collapse", include_str!("../../../../lab/collapse.toml")),
    ];
    for (name, text) in files {
        let s = parse_scenario(name, text, name).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(s.name, name);
    }
    let two = parse_scenario("two", files[0].1, "two").unwrap();
    assert_eq!(two.links.len(), 2);
    assert_eq!(two.links[0].rate_bps, 20_000_000);
    assert_eq!(two.links[1].delay, Duration::from_millis(20));
    let names: Vec<String> = two.workloads.iter().map(Workload::name).collect();
    assert_eq!(names, ["bulk-up", "bulk-down", "cbr-4mbit-up"]);
    let three = parse_scenario("three", files[1].1, "three").unwrap();
    let names: Vec<String> = three.workloads.iter().map(Workload::name).collect();
    assert_eq!(names, ["bulk-up", "bulk-down", "bulk-p8-up", "bulk-p8-down"]);
    assert_eq!(three.workloads[2].parallel, 8);
    let lossy = parse_scenario("lossy", files[2].1, "lossy").unwrap();
    assert_eq!(lossy.links[0].loss_percent(), 1.0);
    let cut = parse_scenario("cut", files[3].1, "cut").unwrap();
    assert_eq!(cut.links[0].cut_at(), Some(Duration::from_secs(10)));
    assert_eq!(cut.links[0].restore_at(), Some(Duration::from_secs(20)));
    let ci = parse_scenario("ci", files[4].1, "ci").unwrap();
    assert_eq!(ci.checks.min_braid_ratio, Some(0.85));
    assert_eq!(ci.contenders.braid_tun, ["minrtt"]);
    for (name, text) in &files[..4] {
        let s = parse_scenario(name, text, name).unwrap();
        assert_eq!(s.contenders.braid_tun, ["edpf"], "{name} runs braid in TUN mode");
    }
}

#[test]
fn braid_tun_contenders_are_named_and_checked() {
    let s =
        parse("[[link]]\nrate = \"1mbit\"\n[contenders]\nsingles = false\nbraid_tun = [\"edpf\"]\n").unwrap();
    let names: Vec<String> = crate::overrides::contender_list(&s).iter().map(|c| c.name()).collect();
    assert_eq!(names, ["braid-tun-edpf"]);
    let (line, msg) = error("[[link]]\nrate = \"1mbit\"\n[contenders]\nbraid_tun = [\"a\", \"a\"]\n");
    assert_eq!((line, msg.contains("twice")), (Some(4), true));
    let list = ["braid-tun:minrtt".to_string(), "braid:edpf".to_string(), "braid-tun".to_string()];
    let c = crate::overrides::contenders_from_list(&s, &list).unwrap();
    assert_eq!(
        (c.braid, c.braid_tun),
        (vec!["edpf".to_string()], vec!["minrtt".to_string(), "edpf".to_string()])
    );
    assert!(crate::overrides::contenders_from_list(&s, &["braid-tun:".to_string()]).is_err());
    assert!(crate::overrides::contenders_from_list(&s, &["tun".to_string()]).is_err());
}

#[test]
fn minimal_file_gets_defaults() {
    let s = parse("[[link]]\nrate = \"10mbit\"\n").unwrap();
    assert_eq!(s.name, "t");
    assert_eq!(s.repeats, 1);
    assert_eq!(s.links[0].delay, Duration::ZERO);
    assert_eq!(s.links[0].queue_time(), Duration::from_millis(100));
    assert!(!s.links[0].needs_delay_emulation());
    assert_eq!(s.workloads.len(), 1);
    assert_eq!(s.workloads[0].name(), "bulk-up");
    assert_eq!(s.workloads[0].duration, Duration::from_secs(10));
    assert!(s.contenders.singles && s.contenders.mptcp && s.contenders.aggligator);
    assert_eq!(s.contenders.braid, ["minrtt"]);
}

#[test]
fn contenders_table_lists_only_what_it_names() {
    let s = parse("[[link]]\nrate = \"1mbit\"\n[contenders]\nmptcp = true\n").unwrap();
    assert!(s.contenders.singles && s.contenders.mptcp);
    assert!(!s.contenders.aggligator && s.contenders.braid.is_empty());
}

#[test]
fn loss_accepts_number_or_percent_string() {
    let s = parse("[[link]]\nrate = \"1mbit\"\nloss = 0.5\n[[link]]\nrate = \"1mbit\"\nloss = \"2%\"\n[[link]]\nrate = \"1mbit\"\nloss = 1\n").unwrap();
    let l: Vec<f64> = s.links.iter().map(|l| l.loss_percent()).collect();
    assert_eq!(l, [0.5, 2.0, 1.0]);
}

#[test]
fn a_spec_string_is_the_same_link_as_the_keys() {
    let keys =
        "[[link]]\nrate = \"20mbit\"\ndelay = \"10ms\"\njitter = \"2ms\"\nloss = \"1%\"\ncut_at = \"3s\"\n\
                restore_at = \"6s\"\n[[workload]]\nkind = \"cut\"\n";
    let spec =
        "[[link]]\nspec = \"20mbit/10ms/jitter=2ms/loss=1%/down=3s-6s\"\n[[workload]]\nkind = \"cut\"\n";
    let (a, b) = (parse(keys).unwrap(), parse(spec).unwrap());
    assert_eq!(a.links, b.links);
    assert_eq!(a.links[0], braid_sim::LinkSpec::parse("20mbit/10ms/jitter=2ms/loss=1%/down=3s-6s").unwrap());
    assert_eq!(
        (b.links[0].cut_at(), b.links[0].restore_at()),
        (Some(Duration::from_secs(3)), Some(Duration::from_secs(6)))
    );
}

#[test]
fn a_capacity_schedule_is_a_key_or_a_spec_option_and_runs_in_cut_workloads() {
    let keys = "[[link]]\nrate = \"20mbit\"\ndelay = \"25ms\"\ncapacity = \"20mbit@0s,50kbit@10s\"\n\
                [[link]]\nrate = \"100mbit\"\n[[workload]]\nkind = \"cut\"\nduration = \"20s\"\n";
    let spec =
        "[[link]]\nspec = \"20mbit/25ms/capacity=20mbit@0s,50kbit@10s\"\n[[link]]\nrate = \"100mbit\"\n\
                [[workload]]\nkind = \"cut\"\nduration = \"20s\"\n";
    let (a, b) = (parse(keys).unwrap(), parse(spec).unwrap());
    assert_eq!(a.links, b.links);
    let l = &a.links[0];
    assert_eq!(l.start_rate(), 20_000_000);
    assert_eq!(l.rate_changes(), [(Duration::from_secs(10), 50_000)]);
    assert_eq!(l.schedule_end(), Some(Duration::from_secs(10)));
    assert_eq!(a.links[1].schedule_end(), None);
    // Only a cut workload applies a schedule; it must end a second before the workload.
    let (line, msg) = error("[[link]]\nrate = \"1mbit\"\ncapacity = \"10kbit@2s\"\n");
    assert_eq!(line, Some(1), "{msg}");
    assert!(msg.contains("no workload has kind = \"cut\""), "{msg}");
    let (_, msg) = error(
        "[[link]]\nrate = \"1mbit\"\ncapacity = \"10kbit@9.5s\"\n[[workload]]\nkind = \"cut\"\nduration = \"10s\"\n",
    );
    assert!(msg.contains("at least 1s before"), "{msg}");
    for (text, want) in [
        ("[[link]]\nrate = \"1mbit\"\ncapacity = \"500bit@2s\"\n", "outside 1kbit..10gbit"),
        ("[[link]]\nrate = \"1mbit\"\ncapacity = \"1mbit@2s,2mbit@2s\"\n", "same time"),
        ("[[link]]\nrate = \"1mbit\"\ncapacity = \"1mbit\"\n", "RATE@TIME"),
    ] {
        let (line, msg) = error(text);
        assert_eq!(line, Some(3), "{text:?}: {msg}");
        assert!(msg.contains(want), "{text:?}: {msg}");
    }
}

#[test]
fn syntax_error_names_the_line() {
    let (line, msg) = error("name = \"x\"\n\n[[link]]\nrate = 20mbit\n");
    assert_eq!(line, Some(4), "{msg}");
}

#[test]
fn unknown_field_names_the_line() {
    let (line, msg) = error("[[link]]\nrate = \"1mbit\"\ndelya = \"5ms\"\n");
    assert_eq!(line, Some(3));
    assert!(msg.contains("delya"), "{msg}");
}

#[test]
fn bad_values_name_their_line() {
    let cases = [
        ("[[link]]\nrate = \"20mbits\"\n", 2, "unknown unit"),
        ("[[link]]\nrate = \"20mbps\"\n", 2, "ambiguous"),
        ("[[link]]\nrate = \"1mbit\"\ndelay = \"5\"\n", 3, "no unit"),
        ("[[link]]\nspec = \"1mbit/5ms/ge=1%:20%:50%\"\n", 2, "cannot emulate ge"),
        ("[[link]]\nspec = \"1mbit/5ms/down=1s-2s,3s-4s\"\n", 2, "cuts a link once"),
        ("[[link]]\nspec = \"1mbit/5ms\"\nrate = \"2mbit\"\n", 1, "either spec or"),
        ("[[link]]\nrate = \"1mbit\"\nloss = \"60%\"\n", 3, "above 50%"),
        ("[[link]]\nrate = \"1mbit\"\nloss = -1\n", 3, "outside 0..100"),
        ("[[link]]\nrate = \"1mbit\"\nqueue = \"5s\"\n", 3, "queue"),
        ("[[link]]\nrate = \"1mbit\"\nrestore_at = \"5s\"\n", 3, "without cut_at"),
        (
            "[[link]]\nrate = \"1mbit\"\ncut_at = \"5s\"\nrestore_at = \"4s\"\n[[link]]\nrate = \"1mbit\"\n[[workload]]\nkind = \"cut\"\n",
            4,
            "after cut_at",
        ),
        ("duration = \"0.5s\"\n[[link]]\nrate = \"1mbit\"\n", 1, "between 1s and 600s"),
        ("repeats = 0\n[[link]]\nrate = \"1mbit\"\n", 1, "repeats"),
        ("name = \"a b\"\n[[link]]\nrate = \"1mbit\"\n", 1, "letters"),
        ("[[link]]\nrate = \"1mbit\"\n[[workload]]\nkind = \"video\"\n", 4, "unknown workload kind"),
        ("[[link]]\nrate = \"1mbit\"\n[[workload]]\nkind = \"bulk\"\ndirection = \"sideways\"\n", 5, "direction"),
        ("[[link]]\nrate = \"1mbit\"\n[[workload]]\nkind = \"bulk\"\nrate = \"1mbit\"\n", 5, "takes no rate"),
        ("[[link]]\nrate = \"1mbit\"\n[[workload]]\nkind = \"cbr\"\n", 3, "needs a rate"),
        ("[[link]]\nrate = \"1mbit\"\n[[workload]]\nkind = \"cut\"\nparallel = 8\n", 5, "takes no parallel"),
        ("[[link]]\nrate = \"1mbit\"\n[[workload]]\nkind = \"bulk\"\nparallel = 0\n", 5, "parallel = 0"),
        ("[[link]]\nrate = \"1mbit\"\n[[workload]]\nkind = \"cbr\"\nrate = \"1mbit\"\npacket_size = 9000\n", 6, "packet_size"),
        ("[[link]]\nrate = \"1mbit\"\n[contenders]\nbraid = [\"min rtt\"]\n", 4, "braid scheduler"),
        ("[[link]]\nrate = \"1mbit\"\n[contenders]\nbraid = [\"a\", \"a\"]\n", 4, "twice"),
        ("[[link]]\nrate = \"1mbit\"\n[contenders]\nsingles = false\n", 3, "no contenders"),
        ("[[link]]\nrate = \"1mbit\"\n[checks]\nmin_braid_ratio = 5.0\n", 4, "min_braid_ratio"),
    ];
    for (text, want_line, want_msg) in cases {
        let (line, msg) = error(text);
        assert_eq!(line, Some(want_line), "{text:?}: {msg}");
        assert!(msg.contains(want_msg), "{text:?}: {msg}");
    }
}

#[test]
fn link_count_and_presence() {
    let (line, msg) = error("name = \"x\"\n");
    assert_eq!(line, None);
    assert!(msg.contains("no links"), "{msg}");
    let nine = "[[link]]\nrate = \"1mbit\"\n".repeat(9);
    let (_, msg) = error(&nine);
    assert!(msg.contains("at most 8"), "{msg}");
}

#[test]
fn cut_schedule_must_match_a_cut_workload() {
    let (line, msg) = error("[[link]]\nrate = \"1mbit\"\ncut_at = \"2s\"\n[[link]]\nrate = \"1mbit\"\n");
    assert_eq!(line, Some(1), "{msg}");
    assert!(msg.contains("no workload has kind = \"cut\""), "{msg}");
    let (_, msg) = error("[[link]]\nrate = \"1mbit\"\n[[workload]]\nkind = \"cut\"\n");
    assert!(msg.contains("no link has cut_at"), "{msg}");
    let (_, msg) = error(
        "[[link]]\nrate = \"1mbit\"\ncut_at = \"9.5s\"\n[[link]]\nrate = \"1mbit\"\n[[workload]]\nkind = \"cut\"\nduration = \"10s\"\n",
    );
    assert!(msg.contains("at least 1s before"), "{msg}");
    let (_, msg) = error("[[link]]\nrate = \"1mbit\"\ncut_at = \"2s\"\n[[workload]]\nkind = \"cut\"\n");
    assert!(msg.contains("nothing would survive"), "{msg}");
}

#[test]
fn duplicate_workloads_are_rejected() {
    let (_, msg) = error(
        "[[link]]\nrate = \"1mbit\"\n[[workload]]\nkind = \"bulk\"\n[[workload]]\nkind = \"bulk\"\ndirection = \"both\"\n",
    );
    assert!(msg.contains("bulk-up appears twice"), "{msg}");
}

#[test]
fn never_panics_on_odd_input() {
    for text in [
        "",
        "\u{0}",
        "[[link]]",
        "link = 5",
        "[[link]]\nrate = 5\n",
        "[[link]]\nrate = \"\"\n",
        "[[link]]\nrate = \"mbit\"\n",
        "[[link]]\nrate = \"1e400mbit\"\n",
        "[[link]]\nrate = \"1mbit\"\ndelay = \"NaNms\"\n",
        "[[link]]\nrate = \"1mbit\"\ndelay = \"infs\"\n",
        "[[workload]]\nkind = 3\n",
        "[contenders]\nbraid = \"minrtt\"\n",
    ] {
        assert!(parse(text).is_err(), "{text:?} should be rejected");
    }
}

#[test]
fn a_piconet_keeps_a_link_for_the_client_and_runs_singles_and_braid_only() {
    let share = parse_scenario("share", include_str!("../../../../lab/share.toml"), "share").unwrap();
    assert_eq!(share.share, Some(ShareSpec { neighbours: 3, lan_rate_bps: 100_000_000 }));
    assert_eq!(share.own_links(), 1);
    let base = "[[link]]\nrate = \"10mbit\"\n[[link]]\nrate = \"10mbit\"\n";
    let ok = parse(&format!("{base}[contenders]\nbraid = [\"edpf\"]\n[share]\nneighbours = 1\n")).unwrap();
    assert_eq!(ok.share.unwrap().lan_rate_bps, 100_000_000);
    assert_eq!(ok.own_links(), 1);
    let (line, msg) = error(&format!("{base}[share]\nneighbours = 2\n"));
    assert_eq!(line, Some(6));
    assert!(msg.contains("neighbours = 2: must be 1..=1"), "{msg}");
    let (_, msg) = error(&format!("{base}[share]\nneighbours = 0\n"));
    assert!(msg.contains("must be 1..=1"), "{msg}");
    let (_, msg) = error(&format!("{base}[contenders]\nmptcp = true\n[share]\nneighbours = 1\n"));
    assert!(msg.contains("mptcp cannot use a neighbour's link"), "{msg}");
    let (_, msg) = error(&format!("{base}[share]\nneighbours = 1\nlan_rate = \"fast\"\n"));
    assert!(msg.contains("share: lan_rate"), "{msg}");
    assert_eq!(parse(base).unwrap().share, None);
    // The command line cannot bring them back either.
    let mut s = share.clone();
    let over = |list: &[&str]| list.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let e =
        crate::overrides::apply(&mut s, None, None, None, Some(&over(&["singles", "mptcp"]))).unwrap_err();
    assert!(e.to_string().contains("piconet scenario runs singles and braid only"), "{e}");
    assert!(crate::overrides::apply(&mut s, None, None, None, Some(&over(&["braid-tun"]))).is_err());
    crate::overrides::apply(&mut s, None, None, None, Some(&over(&["singles", "braid:edpf"]))).unwrap();
}
