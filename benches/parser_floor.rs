//! The floor under `distribute check` on a tree: the time to read and parse
//! every Python file of it as the tool's own parsing step does
//! (rustpython-parser; a large file in pieces, in parallel), and nothing
//! else. `scripts/bench` prints it beside the tool and ruff, so that a reader
//! can see how much of a cold run no analysis work can remove.
//!
//! Usage: parser_floor TREE

use distribute::python::parse::parse_module;
use rayon::prelude::*;

fn main() {
    let Some(tree) = std::env::args().nth(1) else {
        eprintln!("usage: parser_floor TREE");
        std::process::exit(2);
    };
    let root = std::path::Path::new(&tree);
    let (files, _) = distribute::workspace::discover::discover_python_files(root);
    let python: Vec<&String> = files.iter().filter(|path| path.ends_with(".py")).collect();
    let parsed = python
        .par_iter()
        .filter(|relative| {
            std::fs::read_to_string(root.join(relative))
                .is_ok_and(|text| parse_module(&text, relative).is_ok())
        })
        .count();
    println!("{parsed} of {} files parsed", python.len());
}
