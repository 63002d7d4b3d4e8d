//! The init block: `hvd.init()` and the pattern's GPU pinning, once per
//! module that drives training, after the module's import block (code between
//! imports is what linters flag, and code further down may use `hvd`).
//!
//! Input: the context (the module, its plug-in, names) and fresh names.
//! Output: one insertion, unless the module already calls `hvd.init()` or
//! only holds code that runs inside another module's loop.

use crate::python::edit::Edit;
use crate::python::parse::span;
use crate::python::source::line_end_including_newline;
use crate::rules::importer::after_docstring_and_future;
use crate::rules::rewrite::ModuleRewrite;

pub fn run(rewrite: &mut ModuleRewrite) {
    if let Some(init) = &rewrite.module.index.horovod_init {
        rewrite.horovod_initialised_at = Some(init.start);
        return;
    }
    if rewrite
        .module
        .sites
        .iter()
        .all(|site| site.is_model_function)
    {
        // A model_fn or a step function runs inside a loop of another module,
        // after that module's hvd.init().
        return;
    }
    let plugin = rewrite.plugin;
    let pinning = plugin.device_pinning_lines(&rewrite.context, &mut rewrite.names);
    let mut lines = vec![String::new(), format!("{}.init()", rewrite.hvd)];
    let pins_here = !pinning.is_empty();
    lines.extend(pinning);
    let body = &rewrite.module.module.body;
    let text = rewrite.text;
    if let Some(at) = rewrite.early_init_at {
        // Above files the module prepares before its TensorFlow import.
        let mut block = rewrite.stylist.indented_lines("", &lines[1..]);
        block.push_str(rewrite.stylist.newline);
        let edit = Edit::insertion(at, block);
        rewrite.horovod_initialised_at = Some(at);
        rewrite.edit(edit);
        return;
    }
    let edit = match crate::rules::init_position::init_anchor(body).map(span) {
        Some(range) => {
            let next_offset = line_end_including_newline(text, range.end.saturating_sub(1));
            // A blank line between the block and the code that follows.
            if pins_here
                && !text[next_offset..].starts_with(['\n', '\r'])
                && next_offset < text.len()
            {
                lines.push(String::new());
            }
            let stylist = &rewrite.stylist;
            crate::rules::edit_builders::insert_after_statement(text, stylist, &range, &lines)
        }
        None => {
            let offset = after_docstring_and_future(body, text);
            let mut block = rewrite.stylist.indented_lines("", &lines[1..]);
            if pins_here {
                block.push_str(rewrite.stylist.newline);
            }
            Edit::insertion(offset, block)
        }
    };
    rewrite.horovod_initialised_at = Some(edit.range.start);
    rewrite.edit(edit);
}
