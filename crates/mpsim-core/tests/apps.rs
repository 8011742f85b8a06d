//! Applications and background traffic: UDP datagram flows, on/off and VBR generators, the
//! background mix, and media streams with frame priorities, deadlines and PSNR.

mod common;
use common::*;

fn link_scenario(link: &str, flows: &str) -> String {
    format!(
        r#"
duration = "60s"
[metrics]
warmup = "5s"
interval = "500ms"
[[link]]
name = "l"
rate = "10Mbps"
delay = "20ms"
queue = "100pkt"
{link}
[[path]]
name = "p"
links = ["l"]
{flows}
"#
    )
}

#[test]
fn udp_cbr_loses_what_the_link_drops_and_nothing_else() {
    let text = link_scenario(
        "loss = \"2%\"",
        "[[flow]]\nname = \"u\"\npath = \"p\"\ntransport = \"udp\"\napp = { kind = \"cbr\", rate = \"2Mbps\", packet = \"1000B\" }",
    );
    let out = run_checked(&parse(&text));
    let f = &out.summary.flows[0];
    assert_eq!(f.transport, "udp");
    let (sent, got) = (f.datagrams_sent.unwrap() as f64, f.datagrams_received.unwrap() as f64);
    assert!((1.0 - got / sent - 0.02).abs() < 0.004, "loss {}", 1.0 - got / sent);
    assert!((f.goodput_bps / (2e6 * 0.98) - 1.0).abs() < 0.02, "{}", f.goodput_bps);
    assert_eq!(f.retransmits, 0);
    // one-way delay: 20 ms propagation + 1028 B at 10 Mbit/s, no queue
    assert!((f.delay_mean_ms.unwrap() - 20.82).abs() < 0.05, "{:?}", f.delay_mean_ms);
}

#[test]
fn onoff_and_vbr_offer_their_mean_rates() {
    let text = link_scenario(
        "queue = \"1000pkt\"",
        r#"[[flow]]
name = "onoff"
path = "p"
transport = "udp"
app = { kind = "onoff", rate = "4Mbps", packet = "1000B", on = "1s", off = "1s" }
[[flow]]
name = "vbr"
path = "p"
transport = "udp"
app = { kind = "vbr", rate = "2Mbps", sizes = "cmtqa" }"#,
    )
    .replace("queue = \"100pkt\"\n", "");
    let out = run_checked(&parse(&text));
    let by = |n: &str| out.summary.flows.iter().find(|f| f.flow == n).unwrap().clone();
    // on/off: half of 4 Mbit/s on average (exponential periods: loose bound)
    assert!((by("onoff").goodput_bps / 2e6 - 1.0).abs() < 0.2, "{}", by("onoff").goodput_bps);
    // vbr: 2 Mbit/s on the wire; goodput excludes the 28-byte headers of the 541-byte mean
    let payload_share = (0.5 * 16.0 + 0.25 * 548.0 + 0.25 * 1472.0) / 541.0;
    assert!((by("vbr").goodput_bps / (2e6 * payload_share) - 1.0).abs() < 0.05, "{}", by("vbr").goodput_bps);
}

#[test]
fn background_mix_expands_into_tcp_and_udp_flows_with_the_byte_shares() {
    let text = link_scenario(
        "",
        r#"[[background]]
name = "bg"
path = "p"
load = "50%"
tcp_share = "80%"
tcp_flows = 4
udp_flows = 1"#,
    );
    let s = parse(&text);
    assert_eq!(s.flows.len(), 5);
    assert!(s.flows.iter().all(|f| f.background));
    let out = run_checked(&s);
    let tcp: f64 = out.summary.flows.iter().filter(|f| f.transport == "tcp").map(|f| f.throughput_bps).sum();
    let udp: f64 = out.summary.flows.iter().filter(|f| f.transport == "udp").map(|f| f.throughput_bps).sum();
    let share = tcp / (tcp + udp);
    assert!((share - 0.8).abs() < 0.04, "tcp byte share {share}");
    let link = &out.summary.links[0];
    assert!((link.utilization - 0.5).abs() < 0.06, "utilization {}", link.utilization);
    assert_eq!(out.summary.jain_index, None, "background flows are not in the fairness index");
}

#[test]
fn background_load_varies_in_time() {
    let text = link_scenario(
        "",
        r#"[[background]]
name = "bg"
path = "p"
load = "50%"
tcp_flows = 0
tcp_share = "0%"
udp_flows = 2
vary = { min = "0%", max = "100%", period = "5s" }"#,
    );
    let out = run_checked(&parse(&text));
    let mbps = |i: usize| {
        use mpsim_core::metrics::Column;
        let Some(Column::F64(g)) = out.flow_series.column("goodput_bps") else { panic!() };
        g[i]
    };
    // per 5 s period the rate changes; the two flows of the group vary together
    let n = out.flow_series.rows() / 2;
    let per_period: Vec<f64> = (1..12).map(|k| (0..10).map(|j| mbps(2 * (k * 10 + j).min(n - 1))).sum::<f64>()).collect();
    let (lo, hi) = per_period.iter().fold((f64::MAX, 0f64), |(a, b), &x| (a.min(x), b.max(x)));
    assert!(hi > 2.0 * lo + 1e6, "{per_period:?}");
}

fn media(link: &str, deadline: &str) -> String {
    link_scenario(
        link,
        &format!(
            r#"[[flow]]
name = "video"
path = "p"
app = {{ kind = "media", fps = 25, gop = "IPPPPPPPPPPP", classes = {{ I = {{ size = "30KB", priority = 1 }}, P = {{ size = "6KB" }} }}{deadline} }}"#
        ),
    )
}

#[test]
fn media_frames_are_counted_per_type_with_psnr() {
    let out = run_checked(&parse(&media("", "")));
    let f = &out.summary.flows[0];
    let (i, p) = (&f.classes[0], &f.classes[1]);
    assert_eq!((i.class.as_str(), i.priority, p.class.as_str(), p.priority), ("I", 1, "P", 0));
    // frames at 0, 40 ms, ..., 60 s inclusive: 1501, one I frame in 12 starting at 0
    assert_eq!(i.frames + p.frames, 1501);
    assert_eq!(i.frames, 126);
    assert!(i.delivered >= 125 && p.delivered >= 1370);
    // the link carries the stream (about 1.5 Mbit/s) easily: PSNR near its ceiling
    assert!(f.psnr_db.unwrap() > 25.0, "{:?}", f.psnr_db);
    assert!(i.delay_mean_ms.unwrap() > p.delay_mean_ms.unwrap(), "an I frame is five times larger");
}

#[test]
fn a_slow_link_makes_frames_late_and_lowers_psnr() {
    let fast = run_checked(&parse(&media("", ", deadline = \"150ms\"")));
    let slow = run_checked(&parse(&media("loss = \"3%\"", ", deadline = \"150ms\"").replace("10Mbps", "1.6Mbps")));
    let late = |o: &mpsim_core::Output| o.summary.flows[0].classes.iter().map(|c| c.late).sum::<u64>();
    assert_eq!(late(&fast), 0);
    assert!(late(&slow) > 100, "{}", late(&slow));
    assert!(slow.summary.flows[0].psnr_db.unwrap() < fast.summary.flows[0].psnr_db.unwrap() - 5.0);
}

#[test]
fn media_priorities_reach_the_scheduler_of_a_multipath_flow() {
    let text = media("", "").replace("path = \"p\"\napp", "paths = [\"p\"]\napp");
    let out = run_checked(&parse(&text));
    assert_eq!(out.summary.flows[0].transport, "mptcp");
    assert_eq!(out.summary.flows[0].classes[0].frames, 126);
}

#[test]
fn bad_app_parameters_are_named() {
    let e = mpsim_core::Scenario::from_toml(&link_scenario("", "[[flow]]\npath = \"p\"\ntransport = \"udp\"\napp = \"bulk\""), "s")
        .unwrap_err();
    assert_eq!(e.key, "flow[0].app");
    let e = mpsim_core::Scenario::from_toml(&media("", "").replace("IPPPPPPPPPPP", "IPX"), "s").unwrap_err();
    assert!(e.message.contains("no frame class 'X'"), "{e}");
    let e = mpsim_core::Scenario::from_toml(
        &link_scenario("", "[[background]]\nname = \"b\"\npath = \"p\"\nload = \"50%\"\nsizes = \"huge\""),
        "s",
    )
    .unwrap_err();
    assert_eq!(e.key, "background[0].sizes");
}

/// `scenarios/po_mptcp/wifi_wimax.toml` with both router links at `loss`, cut to `duration`,
/// with `extra` added to the video's application table (e.g. `backlog = "2MB", `).
fn wifi_wimax(loss: &str, duration: &str, extra: &str) -> mpsim_core::Scenario {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scenarios/po_mptcp/wifi_wimax.toml");
    let text = std::fs::read_to_string(path).unwrap();
    let text =
        text.replace("loss = \"1%\"", &format!("loss = \"{loss}\"")).replace("duration = \"60s\"", &format!("duration = \"{duration}\""));
    let text = text.replace("app = { kind = \"media\", ", &format!("app = {{ kind = \"media\", {extra}"));
    assert_eq!(text.matches(&format!("loss = \"{loss}\"")).count(), 2);
    parse(&text)
}

#[test]
fn a_media_sender_discards_b_and_p_frames_before_any_i_frame() {
    // seed 004's stream (9.5 Mbit/s, I frames 150 KB with priority 1, P 60 KB and B 30 KB with
    // priority 0) over paths that carry about 3 Mbit/s at 2% loss: the sender must discard
    // frames. Its application queue holds what the 256 KB send buffer cannot take yet, up to
    // `backlog`, and discards the lowest priority first, so with room for several I frames
    // it discards B and P frames and not one I frame (I frames wait instead: the paths carry
    // little more than the I frames' own 2.5 Mbit/s)
    let classes = |backlog: &str| {
        let out = run_checked(&wifi_wimax("2%", "8s", &format!("backlog = \"{backlog}\", ")));
        let f = out.summary.flows.iter().find(|f| f.flow == "video").unwrap();
        let by = |name: &str| f.classes.iter().find(|c| c.class == name).unwrap().clone();
        (by("I"), by("P"), by("B"), f.app_bytes_refused)
    };
    let (i, p, b, bytes) = classes("2MB");
    assert_eq!(i.refused, 0, "I frames discarded: {i:?}");
    assert!(p.refused + b.refused > 50, "P {p:?}, B {b:?}");
    assert_eq!(bytes, 60_000 * p.refused + 30_000 * b.refused);
    // every frame generated (25 frames/s from 0 to 8 s inclusive, GOP IBBPBBPBBPBB: 17 I,
    // 50 P, 134 B) is written, discarded or still queued; written frames are delivered or not
    for (c, generated) in [(&i, 17), (&p, 50), (&b, 134)] {
        assert_eq!(c.frames + c.refused + c.queued, generated, "{c:?}");
        assert!(c.delivered <= c.frames && c.late <= c.delivered, "{c:?}");
    }
    assert!(i.delivered > 0 && i.queued > 0, "{i:?}");
    // without a queue (the sender before it had one), a frame the send buffer cannot take at
    // once is refused: the large I frames first, far more often than the others
    let (i, p, b, _) = classes("0B");
    assert_eq!(i.queued + p.queued + b.queued, 0);
    let share = |c: &mpsim_core::metrics::ClassSummary| c.refused as f64 / (c.frames + c.refused) as f64;
    assert!(share(&i) > 0.8 && share(&i) > share(&b) + 0.2, "I {i:?}, B {b:?}");
}

/// The first transmissions of the video flow in the trace, in order: (path, DSN, length).
fn first_sends(out: &mpsim_core::Output) -> Vec<(String, u64, u64)> {
    use mpsim_core::metrics::Column;
    let tr = out.trace.as_ref().expect("a trace");
    let (Some(Column::Str(flow)), Some(Column::Str(path)), Some(Column::Str(event)), Some(Column::U64(dsn)), Some(Column::U64(len))) =
        (tr.column("flow"), tr.column("path"), tr.column("event"), tr.column("dsn"), tr.column("len"))
    else {
        panic!("trace columns")
    };
    (0..tr.rows()).filter(|&k| flow[k] == "video" && event[k] == "send" && len[k] > 0).map(|k| (path[k].clone(), dsn[k], len[k])).collect()
}

#[test]
fn media_priorities_reach_the_connection_through_the_application_queue() {
    // a backlogged stream (9.5 Mbit/s over two 4 Mbit/s paths) whose frames all fit in a
    // 100 MB send buffer: none waits in the application's queue (which would write I frames
    // ahead of older ones) or is discarded, so the byte stream is the GOP's frames one after
    // the other and the unsent data piles up in the send buffer. PO-MPTCP's priority dequeue hands
    // the I frames' bytes to the subflows ahead of older B and P bytes still in the send
    // buffer; its FIFO form hands out the bytes in order, so each subflow sends its bytes in
    // order. If the frames lost their priority on the way (every write at priority 0), both
    // would hand out in order.
    //
    // (The I frames' delay at the receiving application is not the test: one byte stream is
    // delivered in order, so an I frame that leaves early still waits for the older bytes,
    // and its mean delay differs between the two by less than the runs' noise.)
    let text = |sched: &str| {
        format!(
            r#"
duration = "6s"
[tcp]
snd_buf = "100MB"
rcv_buf = "16MB"
[metrics]
trace = true
interval = "0s"
[[link]]
name = "a"
rate = "4Mbps"
delay = "15ms"
queue = "50pkt"
[[link]]
name = "b"
rate = "4Mbps"
delay = "35ms"
queue = "50pkt"
[[path]]
name = "pa"
links = ["a"]
[[path]]
name = "pb"
links = ["b"]
[[flow]]
name = "video"
paths = ["pa", "pb"]
scheduler = "{sched}"
cc = "lia"
app = {{ kind = "media", fps = 25, gop = "IBBPBBPBBPBB", backlog = "100MB", classes = {{ I = {{ size = "150KB", priority = 1 }}, P = {{ size = "60KB" }}, B = {{ size = "30KB" }} }} }}
"#
        )
    };
    // the frame (GOP number, class) of the byte at `dsn`: frames follow the GOP without gaps
    let gop: Vec<(char, u64)> = "IBBPBBPBBPBB"
        .chars()
        .map(|c| {
            (
                c,
                if c == 'I' {
                    150_000
                } else if c == 'P' {
                    60_000
                } else {
                    30_000
                },
            )
        })
        .collect();
    let per_gop: u64 = gop.iter().map(|g| g.1).sum();
    let frame_at = |dsn: u64| {
        let mut off = dsn % per_gop;
        for &(c, size) in &gop {
            if off < size {
                return (dsn / per_gop, c);
            }
            off -= size;
        }
        unreachable!()
    };
    // the bytes a subflow sent after newer bytes (each overtaken chunk's frame), and the
    // frames of the newer bytes that overtook them
    let overtaken = |sched: &str| {
        let out = run_checked(&parse(&text(sched)));
        let f = &out.summary.flows[0];
        assert!(f.classes.iter().all(|c| c.refused == 0 && c.queued == 0), "{sched}: {:?}", f.classes);
        let mut newest: std::collections::HashMap<String, (u64, u64)> = Default::default();
        let (mut behind, mut ahead) = (Vec::new(), std::collections::BTreeSet::new());
        for (path, dsn, len) in first_sends(&out) {
            let top = newest.entry(path).or_insert((0, 0));
            if dsn < top.0 {
                behind.push(frame_at(dsn));
                ahead.insert(frame_at(top.1));
            } else {
                *top = (dsn + len, dsn);
            }
        }
        (behind, ahead, f.classes.iter().find(|c| c.class == "I").unwrap().frames)
    };
    let (behind, _, _) = overtaken("po_mptcp_fifo");
    assert!(behind.is_empty(), "po_mptcp_fifo sent older bytes after newer ones: {:?}", &behind[..behind.len().min(5)]);
    let (behind, ahead, i_written) = overtaken("po_mptcp");
    // only I frames overtake, and only B and P bytes are overtaken
    assert!(ahead.iter().all(|&(_, c)| c == 'I'), "{ahead:?}");
    assert!(!behind.is_empty() && behind.iter().all(|&(_, c)| c != 'I'), "{:?}", &behind[..behind.len().min(5)]);
    // most I frames written overtook older data
    assert!(ahead.len() as u64 * 2 > i_written, "{} of {i_written} I frames overtook older data", ahead.len());
}

#[test]
fn a_media_backlog_is_read_and_checked() {
    let with = |extra: &str| media("", extra);
    let backlog = |s: &mpsim_core::Scenario| match &s.flows[0].app {
        mpsim_core::scenario::AppSpec::Media(m) => m.backlog,
        other => panic!("{other:?}"),
    };
    assert_eq!(backlog(&parse(&with(""))), None);
    assert_eq!(backlog(&parse(&with(", backlog = \"0B\""))), Some(0));
    assert_eq!(backlog(&parse(&with(", backlog = \"1.5MB\""))), Some(1_500_000));
    assert_eq!(backlog(&parse(&with(", backlog = 4096"))), Some(4096));
    let bad = |extra: &str| mpsim_core::Scenario::from_toml(&with(extra), "s").unwrap_err();
    for (extra, says) in [
        (", backlog = \"2TB\"", "at most 1 TB"),
        (", backlog = \"2PB\"", "at most 1 PB"),
        (", backlog = \"-1KB\"", "negative"),
        (", backlog = \"10ms\"", "unknown size unit"),
        (", backlog = true", "expected a quantity"),
    ] {
        let e = bad(extra);
        assert_eq!(e.key, "flow[0].app.backlog", "{extra}: {e}");
        assert!(e.message.contains(says), "{extra}: {e}");
    }
    // a parameter of media applications only
    let e = mpsim_core::Scenario::from_toml(
        &link_scenario("", "[[flow]]\npath = \"p\"\napp = { kind = \"cbr\", rate = \"1Mbps\", backlog = \"1MB\" }"),
        "s",
    )
    .unwrap_err();
    assert_eq!(e.key, "flow[0].app.backlog");
    assert!(e.message.contains("not a parameter of the cbr application"), "{e}");
}
