//! Table tests: each row is a file, the move made on it, and the file after.

use super::*;
use crate::python::edit::apply_edits;
use crate::python::parse::parse_module;

fn first_call(stmt: &Stmt) -> &ast::ExprCall {
    let mut found = None;
    walk_statement_expressions(stmt, &mut |expr| {
        if let Expr::Call(call) = expr
            && found.is_none()
        {
            found = Some(call);
        }
    });
    found.expect("the statement has a call")
}

/// Applies the edits a builder made for statement `index` of `text`.
fn apply(text: &str, build: impl Fn(&Stylist, &[Stmt]) -> Vec<Edit>) -> String {
    let body = parse_module(text, "t.py").unwrap();
    let stylist = Stylist::detect(text, &body);
    let rewritten = apply_edits(text, &build(&stylist, &body)).unwrap();
    parse_module(&rewritten, "t.py").expect("the result parses");
    rewritten
}

#[test]
fn insert_after_and_before_take_the_statement_indentation() {
    let lines = ["a = 1".to_string(), "if a:\n    b = 2".to_string()];
    let cases: &[(&str, usize, bool, &str)] = &[
        (
            "x = 1\ny = 2\n",
            0,
            true,
            "x = 1\na = 1\nif a:\n    b = 2\ny = 2\n",
        ),
        (
            "x = 1\ny = 2\n",
            1,
            false,
            "x = 1\na = 1\nif a:\n    b = 2\ny = 2\n",
        ),
        // The last line has no newline: one is added before the insertion.
        ("x = 1", 0, true, "x = 1\na = 1\nif a:\n    b = 2\n"),
        (
            "def f():\n  x = 1\n",
            0,
            true,
            "def f():\n  x = 1\na = 1\nif a:\n    b = 2\n",
        ),
    ];
    for (text, index, after, expected) in cases {
        let result = apply(text, |stylist, body| {
            let range = span(&body[*index]);
            if *after {
                vec![insert_after_statement(text, stylist, &range, &lines)]
            } else {
                vec![insert_before_statement(text, stylist, &range, &lines)]
            }
        });
        assert_eq!(&result, expected, "{text:?}");
    }
    // Inside a block, at the block's indentation.
    let text = "def f():\n  x = 1\n";
    let result = apply(text, |stylist, body| {
        let Stmt::FunctionDef(function) = &body[0] else {
            unreachable!()
        };
        let range = span(&function.body[0]);
        vec![insert_after_statement(
            text,
            stylist,
            &range,
            &["y = 2".to_string()],
        )]
    });
    assert_eq!(result, "def f():\n  x = 1\n  y = 2\n");
}

#[test]
fn guard_indents_code_lines_but_not_strings_or_blank_lines() {
    let cases: &[(&str, &str)] = &[
        ("print(1)\n", "if hvd.rank() == 0:\n    print(1)\n"),
        (
            "print(1)\n\nprint(2)\n",
            "if hvd.rank() == 0:\n    print(1)\n\n    print(2)\n",
        ),
        (
            "print('''a\nb''')\nprint(2)\n",
            "if hvd.rank() == 0:\n    print('''a\nb''')\n    print(2)\n",
        ),
        (
            "for i in x:\n\tprint(i)\n\tsave(i)\n",
            "for i in x:\n\tif hvd.rank() == 0:\n\t\tprint(i)\n\t\tsave(i)\n",
        ),
    ];
    for (text, expected) in cases {
        let result = apply(text, |stylist, body| {
            let statements: Vec<&Stmt> = match &body[0] {
                Stmt::For(node) => node.body.iter().collect(),
                _ => body.iter().collect(),
            };
            guard_statements(text, stylist, &statements, "hvd.rank() == 0")
        });
        assert_eq!(&result, expected, "{text:?}");
    }
}

#[test]
fn remove_deletes_lines_or_leaves_pass() {
    let cases: &[(&str, bool, &str)] = &[
        ("x = 1\ny = 2  # note\nz = 3\n", false, "x = 1\nz = 3\n"),
        (
            "if a:\n    y = 2\nz = 3\n",
            true,
            "if a:\n    pass\nz = 3\n",
        ),
    ];
    for (text, only, expected) in cases {
        let result = apply(text, |stylist, body| {
            let target = match &body[0] {
                Stmt::If(node) => &node.body[0],
                _ => &body[1],
            };
            vec![remove_statement(text, stylist, &span(target), *only)]
        });
        assert_eq!(&result, expected, "{text:?}");
    }
}

#[test]
fn owns_its_lines_is_false_for_shared_lines() {
    let text = "x = 1; y = 2\nz = 3  # c\n";
    let body = parse_module(text, "t.py").unwrap();
    let owned: Vec<bool> = body
        .iter()
        .map(|stmt| owns_its_lines(text, &span(stmt)))
        .collect();
    assert_eq!(owned, [false, false, true]);
}

#[test]
fn add_keyword_follows_the_call_layout() {
    let long = format!("fit(x, {})\n", "a".repeat(80));
    let long_expected = format!("fit(x, {},\n    verbose=0)\n", "a".repeat(80));
    // A break inside an f-string's replacement field does not parse before
    // Python 3.12: the keyword stays on the line.
    let in_fstring = format!("f\"{{fit(x, {})[1]:.3f}}\"\n", "a".repeat(80));
    let in_fstring_expected = format!("f\"{{fit(x, {}, verbose=0)[1]:.3f}}\"\n", "a".repeat(80));
    let cases: Vec<(&str, &str)> = vec![
        ("fit()\n", "fit(verbose=0)\n"),
        ("fit(x, y)\n", "fit(x, y, verbose=0)\n"),
        (
            "fit(\n    x,\n    y\n)\n",
            "fit(\n    x,\n    y,\n    verbose=0\n)\n",
        ),
        (
            "fit(\n    x,\n    y,\n)\n",
            "fit(\n    x,\n    y,\n    verbose=0,\n)\n",
        ),
        (
            "fit(\n    x,\n    y,  # data\n)\n",
            "fit(\n    x,\n    y,  # data\n    verbose=0,\n)\n",
        ),
        (
            "fit(\n    x,\n    y  # data\n)\n",
            "fit(\n    x,\n    y,  # data\n    verbose=0\n)\n",
        ),
        (&long, &long_expected),
        (&in_fstring, &in_fstring_expected),
    ];
    for (text, expected) in cases {
        let result = apply(text, |stylist, body| {
            add_keyword(text, stylist, first_call(&body[0]), "verbose", "0", false).edits
        });
        assert_eq!(result, expected, "{text:?}");
    }
}

#[test]
fn a_continued_call_keeps_continuing() {
    let text = "fit(x, y)\n";
    let body = parse_module(text, "t.py").unwrap();
    let stylist = Stylist::detect(text, &body);
    let added = add_keyword(text, &stylist, first_call(&body[0]), "a", "1", true);
    assert!(added.continued);
    assert_eq!(
        apply_edits(text, &added.edits).unwrap(),
        "fit(x, y,\n    a=1)\n"
    );
}
