//! Byte-range edits on the original text: the rewrite is the
//! original file with the smallest replacements, so every comment and line
//! outside an edit survives byte for byte.

use std::ops::Range;

/// One replacement of a byte range of the original text.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Edit {
    pub range: Range<usize>,
    pub content: String,
}

impl Edit {
    pub fn insertion(offset: usize, content: impl Into<String>) -> Self {
        Edit {
            range: offset..offset,
            content: content.into(),
        }
    }

    pub fn deletion(range: Range<usize>) -> Self {
        Edit {
            range,
            content: String::new(),
        }
    }

    pub fn replacement(range: Range<usize>, content: impl Into<String>) -> Self {
        Edit {
            range,
            content: content.into(),
        }
    }

    fn overlaps(&self, other: &Edit) -> bool {
        // Two insertions at the same point do not overlap: they are applied in order.
        self.range.start < other.range.end && other.range.start < self.range.end
    }
}

/// Two edits want to change the same bytes differently: a rule bug, reported
/// rather than resolved by guessing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConflictingEdits {
    pub first: Edit,
    pub second: Edit,
}

/// Applies edits in one left-to-right pass. Identical edits (the same import
/// wanted by two rules) are applied once; insertions at the same offset keep
/// the order in which rules produced them, except that whole lines inserted
/// at a line start go first, the more indented first: lines continuing the
/// block that ends there must precede lines opening the next statement.
pub fn apply_edits(text: &str, edits: &[Edit]) -> Result<String, ConflictingEdits> {
    let applied = applied_edits(text, edits)?;
    let mut output = String::with_capacity(text.len() + 256);
    let mut cursor = 0;
    for edit in applied {
        output.push_str(&text[cursor..edit.range.start]);
        output.push_str(&edit.content);
        cursor = edit.range.end;
    }
    output.push_str(&text[cursor..]);
    Ok(output)
}

/// The edits `apply_edits` applies, in the order it applies them, or the
/// first two that conflict.
fn applied_edits<'e>(text: &str, edits: &'e [Edit]) -> Result<Vec<&'e Edit>, ConflictingEdits> {
    let mut ordered: Vec<(usize, &Edit)> = edits.iter().enumerate().collect();
    ordered.sort_by_cached_key(|(order, edit)| {
        (
            edit.range.start,
            edit.range.end,
            line_insertion_rank(text, edit),
            *order,
        )
    });
    let mut unique: Vec<&Edit> = Vec::with_capacity(ordered.len());
    for (_, edit) in ordered {
        // Sorted by start, an equal edit can only be among the last ones
        // kept that start where this one does: searching all is quadratic.
        let is_duplicate = unique
            .iter()
            .rev()
            .take_while(|kept| kept.range.start == edit.range.start)
            .any(|kept| *kept == edit);
        if is_duplicate {
            continue;
        }
        if let Some(previous) = unique.last()
            && previous.overlaps(edit)
        {
            return Err(ConflictingEdits {
                first: (*previous).clone(),
                second: edit.clone(),
            });
        }
        unique.push(edit);
    }
    Ok(unique)
}

/// Where offsets of `text` land in the text `apply_edits` makes of it: after
/// every edit ending at or before them (an insertion there goes before
/// them). `None` for an offset inside a replaced range, and for all of them
/// when the edits conflict.
pub fn shifted_offsets(text: &str, edits: &[Edit], offsets: &[usize]) -> Vec<Option<usize>> {
    let Ok(applied) = applied_edits(text, edits) else {
        return vec![None; offsets.len()];
    };
    offsets
        .iter()
        .map(|&offset| {
            let mut shifted = offset;
            for edit in &applied {
                if edit.range.start < offset && offset < edit.range.end {
                    return None;
                }
                if edit.range.end <= offset {
                    shifted = (shifted + edit.content.len()).checked_sub(edit.range.len())?;
                }
            }
            Some(shifted)
        })
        .collect()
}

/// How the text `apply_edits` makes lines up with the original: each applied
/// edit's range in the original and in the rewrite.
#[derive(Debug, Clone, Default)]
pub struct EditMap {
    spans: Vec<(Range<usize>, Range<usize>)>,
}

impl EditMap {
    pub fn new(text: &str, edits: &[Edit]) -> EditMap {
        let Ok(applied) = applied_edits(text, edits) else {
            return EditMap::default();
        };
        let mut shift: isize = 0;
        let spans = applied
            .into_iter()
            .map(|edit| {
                let start = (edit.range.start as isize + shift) as usize;
                shift += edit.content.len() as isize - edit.range.len() as isize;
                (edit.range.clone(), start..start + edit.content.len())
            })
            .collect();
        EditMap { spans }
    }

    /// The ranges of the rewrite that the edits wrote.
    pub fn written(&self) -> Vec<Range<usize>> {
        self.spans
            .iter()
            .map(|(_, written)| written.clone())
            .filter(|written| !written.is_empty())
            .collect()
    }

    /// Where an offset of the rewrite was in the original: the start of the
    /// edit that wrote it, for written text.
    pub fn original_offset(&self, offset: usize) -> usize {
        let mut shift: isize = 0;
        for (original, written) in &self.spans {
            if offset < written.start {
                break;
            }
            if offset < written.end {
                return original.start;
            }
            shift = written.end as isize - original.end as isize;
        }
        (offset as isize - shift).max(0) as usize
    }
}

/// For an insertion of whole lines at a line start: first, deeper indented
/// first, and of those a definition (`def`, `class`) first, so that code
/// inserted at the same place (a barrier before a statement) stays next to
/// it; anything else after them, in rule order.
fn line_insertion_rank(text: &str, edit: &Edit) -> (bool, std::cmp::Reverse<usize>, bool) {
    let at = edit.range.start;
    let at_line_start = at == 0 || text.as_bytes().get(at - 1) == Some(&b'\n');
    let whole_lines = edit.range.is_empty() && at_line_start && edit.content.ends_with('\n');
    if !whole_lines {
        return (true, std::cmp::Reverse(0), true);
    }
    let indent = edit.content.len() - edit.content.trim_start_matches([' ', '\t']).len();
    let code = edit.content.trim_start();
    let defines = code.starts_with("def ") || code.starts_with("class ");
    (false, std::cmp::Reverse(indent), !defines)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edits_apply_left_to_right_and_duplicates_once() {
        let text = "abc def";
        let edits = vec![
            Edit::replacement(4..7, "xyz"),
            Edit::insertion(0, ">"),
            Edit::insertion(0, ">"),
            Edit::insertion(3, "!"),
        ];
        assert_eq!(apply_edits(text, &edits).unwrap(), ">abc! xyz");
    }

    #[test]
    fn lines_continuing_a_block_precede_lines_opening_the_next_statement() {
        let text = "for x in y:\n    a()\nb()\n";
        let at = text.find("b()").unwrap();
        let edits = vec![
            Edit::insertion(at, "c = 1\n"),
            Edit::insertion(at, "    d()\n"),
        ];
        assert_eq!(
            apply_edits(text, &edits).unwrap(),
            "for x in y:\n    a()\n    d()\nc = 1\nb()\n"
        );
    }

    #[test]
    fn a_duplicate_is_dropped_though_another_edit_at_its_offset_comes_between() {
        let edits = vec![
            Edit::insertion(1, "1"),
            Edit::insertion(1, "2"),
            Edit::insertion(1, "1"),
            Edit::insertion(0, ">"),
            Edit::insertion(1, "2"),
        ];
        assert_eq!(apply_edits("ab", &edits).unwrap(), ">a12b");
    }

    #[test]
    fn insertions_at_one_offset_keep_rule_order() {
        let edits = vec![Edit::insertion(1, "1"), Edit::insertion(1, "2")];
        assert_eq!(apply_edits("ab", &edits).unwrap(), "a12b");
    }

    #[test]
    fn overlapping_edits_are_refused() {
        let edits = vec![Edit::replacement(0..3, "x"), Edit::replacement(2..4, "y")];
        assert!(apply_edits("abcd", &edits).is_err());
    }
}
