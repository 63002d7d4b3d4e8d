//! Choosing the files: discovery under the package root, git selection, configuration.

pub mod config;
pub mod discover;
pub mod git;
