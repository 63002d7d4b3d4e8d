//! The abstract interpreter behind the call graph: values are sets of
//! functions, classes, instances, modules, library names, containers and
//! constants; statements run in order, so a later assignment replaces an
//! earlier one; branches join. Calls to package functions run their bodies
//! with the arguments' values (memoised by those values, bounded in depth
//! and in total work).

use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::hash::{Hash, Hasher};

use rustpython_parser::ast;

use super::{DefId, DefKind, Defs};
use crate::analysis::package::Package;

#[path = "call_graph_containers.rs"]
mod containers;
#[path = "call_graph_expr.rs"]
mod expr;
#[path = "call_graph_stmt.rs"]
mod stmt;

type FrameId = usize;
pub(super) type Values = BTreeSet<Value>;

/// Beyond this nesting of followed calls, a call's body is not run again.
const MAX_DEPTH: usize = 24;
/// Statements run in all, after which calls are no longer followed.
const BUDGET: usize = 1_000_000;
/// Statements a function no call reached may run when the budget is spent.
const UNREACHED_BUDGET: usize = 5_000;
/// A value set larger than this is cut (keeps pathological code bounded).
const MAX_VALUES: usize = 64;

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(super) enum Value {
    /// A function or lambda with the frame it closes over.
    Function(DefId, FrameId),
    /// A method bound to an instance of a class.
    Bound(DefId, FrameId, DefId),
    Class(DefId),
    Instance(DefId),
    /// `super()` in a method of the first class, for an instance of the second.
    Super(DefId, DefId),
    Module(String),
    /// Outside the package, by dotted import name.
    External(String),
    Builtin(String),
    /// A method of a builtin type (`<**PyStr**>.join`), PyCG's name for it.
    TypeMethod(String),
    Container(usize),
    Int(i64),
    Str(String),
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Key {
    Int(i64),
    Str(String),
    /// Stored under an unknown key or index.
    Any,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ContainerKind {
    List,
    Dict,
    Other,
}

struct Container {
    kind: ContainerKind,
    items: BTreeMap<Key, Values>,
}

struct Frame {
    vars: HashMap<String, Values>,
    parent: Option<FrameId>,
    module: usize,
    globals: HashSet<String>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum ModuleState {
    NotRun,
    Running,
    Done,
}

/// Where statements run: the frame, who calls (for edges), what is returned.
struct Ctx {
    frame: FrameId,
    caller: String,
    def: Option<DefId>,
    returns: Values,
    yields: Values,
}

/// Arguments of a call, evaluated.
#[derive(Default, Hash)]
struct Args {
    positional: Vec<Values>,
    keywords: Vec<(String, Values)>,
}

struct Interp<'a> {
    package: &'a Package,
    defs: &'a Defs<'a>,
    module_index: HashMap<&'a str, usize>,
    module_state: Vec<ModuleState>,
    module_frames: Vec<Option<FrameId>>,
    frames: Vec<Frame>,
    class_frames: HashMap<DefId, FrameId>,
    class_bases: HashMap<DefId, Vec<Values>>,
    /// The call being evaluated (module, offset): where builtins put their results.
    site: (usize, usize),
    statics: HashSet<DefId>,
    instance_attrs: HashMap<(DefId, String), Values>,
    containers: Vec<Container>,
    container_at: HashMap<(usize, usize), usize>,
    defaults: HashMap<(DefId, String), Values>,
    /// The frame each function was last defined in, to run it if no call reaches it.
    defined_in: BTreeMap<DefId, FrameId>,
    analysed: HashSet<DefId>,
    memo: HashMap<u64, Values>,
    stack: Vec<DefId>,
    steps: usize,
    budget: usize,
    edges: BTreeSet<(String, String)>,
}

/// The edges (caller, callee) of the package.
pub(super) fn run(package: &Package, defs: &Defs) -> BTreeSet<(String, String)> {
    let mut interp = Interp {
        package,
        defs,
        module_index: package
            .modules
            .iter()
            .enumerate()
            .map(|(index, module)| (module.name.as_str(), index))
            .collect(),
        module_state: vec![ModuleState::NotRun; package.modules.len()],
        module_frames: vec![None; package.modules.len()],
        frames: Vec::new(),
        class_frames: HashMap::new(),
        class_bases: HashMap::new(),
        site: (0, 0),
        statics: HashSet::new(),
        instance_attrs: HashMap::new(),
        containers: Vec::new(),
        container_at: HashMap::new(),
        defaults: HashMap::new(),
        defined_in: BTreeMap::new(),
        analysed: HashSet::new(),
        memo: HashMap::new(),
        stack: Vec::new(),
        steps: 0,
        budget: BUDGET,
        edges: BTreeSet::new(),
    };
    for index in 0..package.modules.len() {
        interp.run_module(index);
    }
    interp.run_unreached();
    interp.edges
}

impl<'a> Interp<'a> {
    pub(super) fn new_frame(&mut self, parent: Option<FrameId>, module: usize) -> FrameId {
        self.frames.push(Frame {
            vars: HashMap::new(),
            parent,
            module,
            globals: HashSet::new(),
        });
        self.frames.len() - 1
    }

    pub(super) fn run_module(&mut self, index: usize) {
        if self.module_state[index] != ModuleState::NotRun {
            return;
        }
        self.module_state[index] = ModuleState::Running;
        let frame = self.new_frame(None, index);
        self.module_frames[index] = Some(frame);
        let module = &self.package.modules[index];
        let mut ctx = Ctx {
            frame,
            caller: module.name.clone(),
            def: None,
            returns: Values::new(),
            yields: Values::new(),
        };
        self.block(&mut ctx, &module.body);
        self.module_state[index] = ModuleState::Done;
    }

    /// Functions no call reached run once, with their defaults (a method with
    /// an instance of its class), until no new one is reached.
    pub(super) fn run_unreached(&mut self) {
        loop {
            let pending: Vec<(DefId, FrameId)> = self
                .defined_in
                .iter()
                .filter(|(def, _)| !self.analysed.contains(def))
                .map(|(&def, &frame)| (def, frame))
                .collect();
            if pending.is_empty() {
                break;
            }
            for (def, frame) in pending {
                self.budget = self.steps + UNREACHED_BUDGET.max(BUDGET.saturating_sub(self.steps));
                let caller = self.defs.defs[def].name.clone();
                let ctx = Ctx {
                    frame,
                    caller,
                    def: None,
                    returns: Values::new(),
                    yields: Values::new(),
                };
                let receiver = self.defs.defs[def]
                    .owner
                    .filter(|_| !self.statics.contains(&def))
                    .map(|class| Values::from([Value::Instance(class)]));
                self.invoke(&ctx, def, frame, receiver, &Args::default());
                self.analysed.insert(def);
            }
        }
    }

    pub(super) fn edge(&mut self, ctx: &Ctx, callee: String) {
        self.edges.insert((ctx.caller.clone(), callee));
    }

    pub(super) fn module_frame(&self, frame: FrameId) -> Option<FrameId> {
        self.module_frames[self.frames[frame].module]
    }

    /// A name's values, from the frame outwards, then the builtins.
    pub(super) fn lookup(&self, frame: FrameId, name: &str) -> Values {
        let mut current = Some(frame);
        while let Some(id) = current {
            if let Some(values) = self.frames[id].vars.get(name) {
                return values.clone();
            }
            current = self.frames[id].parent;
        }
        if is_builtin(name) {
            return Values::from([Value::Builtin(name.to_string())]);
        }
        Values::new()
    }

    pub(super) fn bind(&mut self, frame: FrameId, name: &str, values: Values) {
        let target = if self.frames[frame].globals.contains(name) {
            self.module_frame(frame).unwrap_or(frame)
        } else {
            frame
        };
        self.frames[target]
            .vars
            .insert(name.to_string(), cap(values));
    }

    // ---- calls ----

    /// Calls every callable value; returns what the calls return.
    pub(super) fn call(&mut self, ctx: &Ctx, callee: &Values, args: &Args) -> Values {
        let mut result = Values::new();
        for value in callee {
            match value {
                Value::Function(def, frame) => {
                    self.edge(ctx, self.defs.defs[*def].name.clone());
                    result.extend(self.invoke(ctx, *def, *frame, None, args));
                }
                Value::Bound(def, frame, class) => {
                    self.edge(ctx, self.defs.defs[*def].name.clone());
                    let receiver = Values::from([Value::Instance(*class)]);
                    result.extend(self.invoke(ctx, *def, *frame, Some(receiver), args));
                }
                Value::Class(class) => result.extend(self.instantiate(ctx, *class, args)),
                Value::Instance(class) => {
                    // Only methods: an instance held as `__call__` would call itself.
                    let method: Values = self
                        .instance_attribute(*class, "__call__")
                        .into_iter()
                        .filter(|value| matches!(value, Value::Function(..) | Value::Bound(..)))
                        .collect();
                    result.extend(self.call(ctx, &method, args));
                }
                Value::External(name) => {
                    self.edge(ctx, name.clone());
                    result.insert(value.clone());
                }
                Value::TypeMethod(name) => self.edge(ctx, name.clone()),
                Value::Builtin(name) => {
                    self.edge(ctx, format!("<builtin>.{name}"));
                    result.extend(self.builtin(ctx, name, args));
                }
                _ => {}
            }
        }
        cap(result)
    }

    pub(super) fn instantiate(&mut self, ctx: &Ctx, class: DefId, args: &Args) -> Values {
        match self.class_attribute(class, "__init__") {
            Ok(init) => {
                for value in init {
                    if let Value::Function(def, frame) = value {
                        self.edge(ctx, self.defs.defs[def].name.clone());
                        let receiver = Values::from([Value::Instance(class)]);
                        self.invoke(ctx, def, frame, Some(receiver), args);
                    }
                }
            }
            Err(Some(external)) => self.edge(ctx, format!("{external}.__init__")),
            Err(None) => {}
        }
        Values::from([Value::Instance(class)])
    }

    /// Runs a function's body with its parameters bound; returns its result.
    pub(super) fn invoke(
        &mut self,
        ctx: &Ctx,
        def: DefId,
        closure: FrameId,
        receiver: Option<Values>,
        args: &Args,
    ) -> Values {
        if self.stack.len() >= MAX_DEPTH || self.steps >= self.budget || self.stack.contains(&def) {
            return Values::new();
        }
        let mut hasher = DefaultHasher::new();
        (def, closure, &receiver, args).hash(&mut hasher);
        let key = hasher.finish();
        if let Some(result) = self.memo.get(&key) {
            return result.clone();
        }
        self.memo.insert(key, Values::new());
        self.analysed.insert(def);
        let module = self.defs.defs[def].module;
        let frame = self.new_frame(Some(closure), module);
        let mut inner = Ctx {
            frame,
            caller: self.defs.defs[def].name.clone(),
            def: Some(def),
            returns: Values::new(),
            yields: Values::new(),
        };
        let _ = ctx;
        self.stack.push(def);
        let result = match &self.defs.defs[def].kind {
            DefKind::Function {
                args: parameters,
                body,
                generator,
            } => {
                self.bind_parameters(frame, def, parameters, receiver, args);
                self.block(&mut inner, body);
                if *generator {
                    let items = std::mem::take(&mut inner.yields);
                    Values::from([self.new_container(usize::MAX, def, ContainerKind::Other, items)])
                } else {
                    std::mem::take(&mut inner.returns)
                }
            }
            DefKind::Lambda {
                args: parameters,
                body,
            } => {
                self.bind_parameters(frame, def, parameters, receiver, args);
                self.eval(&mut inner, body)
            }
            DefKind::Class => Values::new(),
        };
        self.stack.pop();
        self.memo.insert(key, result.clone());
        result
    }

    pub(super) fn bind_parameters(
        &mut self,
        frame: FrameId,
        def: DefId,
        parameters: &ast::Arguments,
        receiver: Option<Values>,
        args: &Args,
    ) {
        let positional: Vec<&Values> = receiver.iter().chain(&args.positional).collect();
        let ordered = parameters.posonlyargs.iter().chain(&parameters.args);
        let named = |name: &str| {
            args.keywords
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v)
        };
        for (index, parameter) in ordered.enumerate() {
            let name = parameter.def.arg.as_str();
            let values = positional
                .get(index)
                .copied()
                .or_else(|| named(name))
                .or_else(|| self.defaults.get(&(def, name.to_string())))
                .cloned()
                .unwrap_or_default();
            self.frames[frame].vars.insert(name.to_string(), values);
        }
        for parameter in &parameters.kwonlyargs {
            let name = parameter.def.arg.as_str();
            let values = named(name)
                .or_else(|| self.defaults.get(&(def, name.to_string())))
                .cloned()
                .unwrap_or_default();
            self.frames[frame].vars.insert(name.to_string(), values);
        }
    }

    pub(super) fn new_container(
        &mut self,
        module: usize,
        start: usize,
        kind: ContainerKind,
        any: Values,
    ) -> Value {
        let id = match self.container_at.get(&(module, start)) {
            Some(&id) => id,
            None => {
                self.containers.push(Container {
                    kind,
                    items: BTreeMap::new(),
                });
                self.container_at
                    .insert((module, start), self.containers.len() - 1);
                self.containers.len() - 1
            }
        };
        let container = &mut self.containers[id];
        container.kind = kind;
        container.items.clear();
        if !any.is_empty() {
            container.items.insert(Key::Any, any);
        }
        Value::Container(id)
    }
}

fn cap(values: Values) -> Values {
    if values.len() <= MAX_VALUES {
        return values;
    }
    values.into_iter().take(MAX_VALUES).collect()
}

/// Python's builtin functions, classes and exceptions.
fn is_builtin(name: &str) -> bool {
    #[rustfmt::skip]
    const BUILTINS: &[&str] = &[
        "abs", "aiter", "all", "anext", "any", "ascii", "bin", "bool", "breakpoint", "bytearray",
        "bytes", "callable", "chr", "classmethod", "compile", "complex", "delattr", "dict", "dir",
        "divmod", "enumerate", "eval", "exec", "filter", "float", "format", "frozenset", "getattr",
        "globals", "hasattr", "hash", "help", "hex", "id", "input", "int", "isinstance",
        "issubclass", "iter", "len", "list", "locals", "map", "max", "memoryview", "min", "next",
        "object", "oct", "open", "ord", "pow", "print", "property", "range", "repr", "reversed",
        "round", "set", "setattr", "slice", "sorted", "staticmethod", "str", "sum", "super",
        "tuple", "type", "vars", "zip", "__import__", "BaseException", "Exception",
        "ArithmeticError", "AssertionError", "AttributeError", "EOFError", "ImportError",
        "IndexError", "KeyError", "KeyboardInterrupt", "LookupError", "MemoryError",
        "ModuleNotFoundError", "NameError", "NotImplementedError", "OSError", "OverflowError",
        "RecursionError", "RuntimeError", "StopIteration", "StopAsyncIteration", "SyntaxError",
        "SystemExit", "TypeError", "ValueError", "ZeroDivisionError", "FileNotFoundError",
        "PermissionError", "TimeoutError", "UnicodeError", "UnicodeDecodeError",
        "UnicodeEncodeError", "Warning", "DeprecationWarning", "UserWarning", "RuntimeWarning",
        "FutureWarning",
    ];
    BUILTINS.contains(&name)
}
