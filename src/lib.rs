//! `distribute`: finds the code of a Python package that trains a TensorFlow
//! model on one GPU and rewrites it to train on many with Horovod, reporting
//! every assumption the rewrite relies on.
//!
//! Data flows one way: select files ([`workspace`]) -> load and parse
//! ([`analysis::package`]) -> analyse ([`analysis`]) -> rules produce edits
//! and diagnostics ([`rules`]) -> verify ([`engine`]) -> report ([`report`])
//! -> act ([`cli`]).

pub mod analysis;
pub mod cache;
pub mod checker;
pub mod cli;
pub mod diagnostics;
pub mod engine;
pub mod github;
pub mod outcome;
pub mod python;
pub mod registry;
pub mod report;
pub mod rules;
pub mod workspace;
