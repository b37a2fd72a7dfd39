//! pfsim: a discrete-event simulator of a Lustre cluster that prints Lustre's own statistics
//! text and accepts the same tunable writes, so tools written for real clients run against it.
//!
//! Components (one module each): `engine` (the event loop and the cluster's state, with one
//! module under it per behaviour: set-up, application threads, writes, reads, the page cache,
//! RPCs), `dlm` (extent locks), `device` (network links, OST devices), `workload` (application
//! threads' requests), `params` (parameter files by lctl name), `stats` (counters, histograms and
//! their exact text), `parse` (the kernel's value parsers), `config` (the resolved scenario),
//! `model` (clients, OSCs, files, RPCs), `pageset` and `intervals` (sets of pages), `lockset`,
//! `lockqueue` and `callbacklist` (the granted locks, queued requests and called-back locks of
//! the OSTs, indexed for the lock queue's looks).
//!
//! Two modules serve the pfstune agent rather than the simulator: `probe` (reading and parsing a
//! client's statistics files for a tick) and `forest` (the leaves a model's trees leave open to
//! a row); both are exposed through the `python` bindings.

pub mod callbacklist;
pub mod chunked;
pub mod config;
pub mod device;
pub mod dlm;
pub mod engine;
pub mod forest;
pub mod intervals;
pub mod lockqueue;
pub mod lockset;
pub mod model;
pub mod pageset;
pub mod queue;
pub mod params;
pub mod parse;
pub mod probe;
pub mod rng;
pub mod stats;
pub mod workload;

#[cfg(feature = "python")]
mod python;

// The simulator allocates and frees small objects in every event (B-tree nodes, page bitmaps,
// RPC vectors); mimalloc serves them faster than glibc's malloc (docs/performance.md).
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

pub use config::Config;
pub use engine::{Sim, Totals};
