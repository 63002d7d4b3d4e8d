//! Choosing the files: discovery under the package root.

pub mod discover;
