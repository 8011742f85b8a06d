//! mpsim-core: a deterministic packet-level simulator of (multipath) transport protocols.
//!
//! The crate knows nothing of Python. Start from [`Scenario`] (parse a TOML file) and
//! [`Simulation`] (build and run it):
//!
//! ```
//! let text = r#"
//!     duration = "5s"
//!     [[link]]
//!     name = "l"
//!     rate = "10Mbps"
//!     delay = "10ms"
//!     [[path]]
//!     name = "p"
//!     links = ["l"]
//!     [[flow]]
//!     path = "p"
//! "#;
//! let scenario = mpsim_core::Scenario::from_toml(text, "example").unwrap();
//! let out = mpsim_core::Simulation::new(&scenario).run();
//! assert!(out.summary.flows[0].goodput_bps > 8e6);
//! ```

pub mod app;
pub mod cc;
pub mod engine;
pub mod estimate;
pub mod feedback;
pub mod metrics;
pub mod net;
pub mod rng;
pub mod scenario;
pub mod sched;
pub mod sim;
pub mod time;
pub mod transport;
pub mod view;

pub use estimate::Estimate;
pub use scenario::{Scenario, ScenarioError};
pub use sim::{Output, Simulation};
pub use time::{Dur, SimTime};
