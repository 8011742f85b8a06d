//! Runs a scenario file and prints the summary as JSON: `cargo run --release --example run -- FILE`.
fn main() {
    let path = std::env::args().nth(1).expect("usage: run SCENARIO.toml");
    let text = std::fs::read_to_string(&path).expect("readable file");
    let s = match mpsim_core::Scenario::from_toml(&text, &path) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    };
    let out = mpsim_core::Simulation::new(&s).run();
    println!("{}", serde_json::to_string_pretty(&out.summary).unwrap());
}
