//! pfsim: a discrete-event simulator of a Lustre cluster that prints Lustre's own statistics
//! text and accepts the same tunable writes, so tools written for real clients run against it.
//!
//! Components (one module each): `engine` (event loop, clients, OSCs, OSS), `device` (network
//! links, OST devices), `workload` (application threads), `params` (parameter files by lctl
//! name), `stats` (counters, histograms and their exact text), `parse` (the kernel's value
//! parsers), `config` (the resolved scenario).

pub mod config;
pub mod device;
pub mod dlm;
pub mod engine;
pub mod model;
pub mod pageset;
pub mod queue;
pub mod params;
pub mod parse;
pub mod rng;
pub mod stats;
pub mod workload;

#[cfg(feature = "python")]
mod python;

pub use config::Config;
pub use engine::{Sim, Totals};
