//! Python source handling: text and positions, parsing, byte-range edits.

pub mod edit;
pub mod parse;
pub mod source;
