//! Property tests for SCTP: random two-path networks and association settings (both
//! controllers including JSCTP and JSCTP-ABE, single-homed, multihomed and CMT with every rule and retransmission policy),
//! every invariant checked after each step, and every finite transfer must complete.

mod common;
use common::*;
use proptest::prelude::*;

#[derive(Debug, Clone)]
struct Case {
    rates: [u32; 2],
    delays: [u32; 2],
    queues: [u32; 2],
    loss: String,
    /// Path b's link fails from 2 s to 30 s.
    outage: bool,
    flows: Vec<FlowCase>,
}

#[derive(Debug, Clone)]
struct FlowCase {
    bytes: u32,
    chunk: u32,
    cc: &'static str,
    /// 0: single-homed, 1: multihomed, 2: CMT.
    homing: u8,
    rules: [bool; 3],
    policy: &'static str,
    threshold: u8,
    bundling: bool,
    delayed_sack: bool,
    nr_sack: bool,
    rcv_buf: u32,
    start_ms: u32,
}

fn loss() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("\"0%\"".to_string()),
        (1u32..50).prop_map(|p| format!("\"{}%\"", p as f64 / 10.0)),
        (1u32..30, 1u32..6).prop_map(|(m, b)| format!("{{ model = \"gilbert\", mean = \"{}%\", burst = {b} }}", m as f64 / 10.0)),
    ]
}

fn flow() -> impl Strategy<Value = FlowCase> {
    (
        (
            1_000u32..800_000,
            100u32..1457,
            prop_oneof![Just("rfc4960"), Just("newreno"), Just("lia"), Just("olia"), Just("jsctp"), Just("jsctp_abe")],
            0u8..3,
        ),
        (any::<[bool; 3]>(), prop_oneof![Just("same"), Just("asap"), Just("cwnd"), Just("ssthresh")], 3u8..5),
        (any::<bool>(), any::<bool>(), any::<bool>(), 2u32..400, 0u32..2000),
    )
        .prop_map(|((bytes, chunk, cc, homing), (rules, policy, threshold), (bundling, delayed_sack, nr_sack, rcv_kb, start_ms))| {
            FlowCase {
                bytes,
                chunk,
                cc,
                homing,
                rules,
                policy,
                threshold,
                bundling,
                delayed_sack,
                nr_sack,
                rcv_buf: (rcv_kb * 1000).max(chunk),
                start_ms,
            }
        })
}

fn case() -> impl Strategy<Value = Case> {
    (any::<[u8; 2]>(), any::<[u8; 2]>(), any::<[u8; 2]>(), loss(), any::<bool>(), proptest::collection::vec(flow(), 1..3)).prop_map(
        |(r, d, q, loss, outage, flows)| Case {
            rates: [1 + r[0] as u32 % 40, 1 + r[1] as u32 % 40],
            delays: [d[0] as u32 % 80, d[1] as u32 % 80],
            queues: [3 + q[0] as u32 % 150, 3 + q[1] as u32 % 150],
            loss,
            outage,
            flows,
        },
    )
}

fn render(c: &Case) -> String {
    let mut t = "duration = \"600s\"\n[metrics]\ninterval = \"1s\"\n".to_string();
    for (i, name) in ["a", "b"].iter().enumerate() {
        let loss = if i == 0 { c.loss.as_str() } else { "\"0%\"" };
        let down = if i == 1 && c.outage { "down = [{ at = \"2s\", until = \"30s\" }]\n" } else { "" };
        t += &format!(
            "[[link]]\nname = \"{name}\"\nrate = \"{}Mbps\"\ndelay = \"{}ms\"\nqueue = \"{}pkt\"\nloss = {loss}\n{down}[[path]]\nname = \"p{name}\"\nlinks = [\"{name}\"]\n",
            c.rates[i], c.delays[i], c.queues[i]
        );
    }
    for (i, f) in c.flows.iter().enumerate() {
        let paths = if f.homing == 0 { "path = \"pa\"".to_string() } else { "paths = [\"pa\", \"pb\"]".to_string() };
        // JSCTP's keys: k from a tenth of a chunk to two chunks, the zero-sample fix on or off
        let jsctp_keys = if f.cc.starts_with("jsctp") {
            format!("jsctp_k = {}, jsctp_ignore_zero = {}, ", (f.chunk * (1 + f.start_ms % 20) / 10).max(1), f.bytes % 2 == 0)
        } else {
            String::new()
        };
        let (cmt_line, cmt_keys) = if f.homing == 2 {
            let keys = format!(
                "sfr = {}, cuc = {}, dac = {}, cmt_pf = {}, rtx_policy = \"{}\", ",
                f.rules[0],
                f.rules[1],
                f.rules[2],
                f.nr_sack ^ f.bundling,
                f.policy
            );
            ("cmt = true\n".to_string(), keys)
        } else {
            (String::new(), String::new())
        };
        t += &format!(
            "[[flow]]\nname = \"f{i}\"\n{paths}\ntransport = \"sctp\"\ncc = \"{}\"\n{cmt_line}start = \"{}ms\"\napp = {{ kind = \"bulk\", bytes = {} }}\nsctp = {{ {cmt_keys}{jsctp_keys}chunk = {}, fast_rtx_threshold = {}, bundling = {}, delayed_sack = {}, nr_sack = {}, rcv_buf = {}, snd_buf = {}, association_max_retrans = 1000 }}\n",
            f.cc, f.start_ms, f.bytes, f.chunk, f.threshold, f.bundling, f.delayed_sack, f.nr_sack, f.rcv_buf, f.rcv_buf.max(f.chunk * 2)
        );
    }
    t
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(48), ..ProptestConfig::default() })]

    #[test]
    fn random_networks_keep_sctp_invariants_and_deliver_everything(c in case()) {
        let text = render(&c);
        let out = run_checked(&parse(&text));
        for (f, fc) in out.summary.flows.iter().zip(&c.flows) {
            prop_assert_eq!(f.bytes_written, fc.bytes as u64);
            prop_assert!(f.complete, "flow {} delivered {} of {}\n{}", f.flow, f.bytes_delivered, fc.bytes, text);
            prop_assert!(f.max_receive_buffer_bytes <= fc.rcv_buf as u64);
        }
    }
}
