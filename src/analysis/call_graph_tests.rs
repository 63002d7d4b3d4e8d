use super::*;

/// The call graph of a package made of the given files.
fn graph(files: &[(&str, &str)]) -> CallGraph {
    let root = tempfile::tempdir().unwrap();
    for (path, text) in files {
        let path = root.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let paths: Vec<String> = files.iter().map(|(path, _)| path.to_string()).collect();
    CallGraph::build(&load_package(root.path(), &paths))
}

fn callees<'g>(graph: &'g CallGraph, caller: &str) -> Vec<&'g str> {
    graph.callees(caller).collect()
}

#[test]
fn a_method_found_through_the_bases_in_resolution_order() {
    let graph = graph(&[(
        "main.py",
        "class A:\n    def __init__(self):\n        pass\n    def run(self):\n        pass\n\
         class B(A):\n    pass\n\
         class C(A):\n    def run(self):\n        self.helper()\n    def helper(self):\n        pass\n\
         class D(B, C):\n    pass\n\
         D().run()\n",
    )]);
    assert_eq!(callees(&graph, "main"), ["main.A.__init__", "main.C.run"]);
    assert_eq!(callees(&graph, "main.C.run"), ["main.C.helper"]);
}

#[test]
fn super_calls_the_next_class_in_the_order() {
    let graph = graph(&[(
        "main.py",
        "class A:\n    def __init__(self):\n        pass\n\
         class B(A):\n    def __init__(self):\n        super().__init__()\n\
         B()\n",
    )]);
    assert_eq!(
        callees(&graph, "main.B.__init__"),
        ["<builtin>.super", "main.A.__init__"]
    );
}

#[test]
fn a_decorated_name_holds_what_the_decorator_returns() {
    let graph = graph(&[(
        "main.py",
        "def logged(f):\n    def wrapper():\n        print('call')\n        return f()\n    return wrapper\n\
         @logged\ndef work():\n    pass\n\
         def main():\n    work()\n\
         main()\n",
    )]);
    assert_eq!(callees(&graph, "main"), ["main.logged", "main.main"]);
    assert_eq!(callees(&graph, "main.main"), ["main.logged.wrapper"]);
    assert_eq!(
        callees(&graph, "main.logged.wrapper"),
        ["<builtin>.print", "main.work"]
    );
}

#[test]
fn a_returned_function_is_called_where_the_result_is() {
    let graph = graph(&[(
        "main.py",
        "import numpy as np\n\
         def save(x):\n    np.save('x.npy', x)\n\
         def pick():\n    return save\n\
         def run(action):\n    action(1)\n\
         run(pick())\n",
    )]);
    assert_eq!(callees(&graph, "main"), ["main.pick", "main.run"]);
    assert_eq!(callees(&graph, "main.run"), ["main.save"]);
    assert_eq!(callees(&graph, "main.save"), ["numpy.save"]);
}

#[test]
fn a_stored_function_replaced_under_its_key_is_no_longer_called() {
    let graph = graph(&[(
        "main.py",
        "def a():\n    pass\ndef b():\n    pass\n\
         table = {'k': a}\ntable['k'] = b\ntable['k']()\n",
    )]);
    assert_eq!(callees(&graph, "main"), ["main.b"]);
    assert_eq!(callees(&graph, "main.a"), Vec::<&str>::new());
}

#[test]
fn relative_imports_and_package_init_re_exports() {
    let graph = graph(&[
        ("pkg/__init__.py", "from .tools import helper\n"),
        ("pkg/tools.py", "def helper():\n    pass\n"),
        (
            "pkg/run.py",
            "from . import helper\nfrom .tools import helper as h\nhelper()\nh()\n",
        ),
    ]);
    assert_eq!(callees(&graph, "pkg.run"), ["pkg.tools.helper"]);
    assert!(graph.callers().any(|caller| caller == "pkg"));
}

#[test]
fn restricted_to_keeps_the_callers_of_the_named_modules() {
    let graph = graph(&[
        ("a.py", "def f():\n    pass\n"),
        ("b.py", "from a import f\ndef g():\n    f()\n"),
    ]);
    let only_b = graph.restricted_to(&BTreeSet::from(["b".to_string()]));
    assert_eq!(only_b.callers().collect::<Vec<_>>(), ["b", "b.g"]);
    assert_eq!(
        only_b.to_json(),
        serde_json::json!({"b": [], "b.g": ["a.f"]})
    );
}
