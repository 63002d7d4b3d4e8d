//! Python source handling: text and positions, parsing, byte-range edits,
//! and notebooks read as Python modules.

pub mod edit;
pub mod magics;
pub mod notebook;
pub mod parse;
mod pieces;
pub mod source;
