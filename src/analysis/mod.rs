//! Package facts the rules rely on: bindings, class hierarchy,
//! training-loop summaries and the training API pattern of each module.

pub mod bindings;
pub mod call_graph;
pub mod catalogue;
pub mod cursors;
pub mod effects;
pub mod fetches;
pub mod import_lines;
pub mod index;
pub mod keras_version;
pub mod library;
pub mod loader;
pub mod neighbourhood;
pub mod package;
pub mod splits;
pub mod train_ops;
pub mod training;
pub mod walk;
