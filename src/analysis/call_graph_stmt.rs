//! Statements: definitions (with their decorators and defaults), classes,
//! imports, and control flow, whose branches join what they bind.

use std::collections::HashMap;

use rustpython_parser::ast::{self, Expr, Stmt};

use super::{Args, Ctx, DefId, FrameId, Interp, Value, Values};
use crate::analysis::bindings::ModuleContext;

impl<'a> Interp<'a> {
    // ---- statements ----

    pub(super) fn block(&mut self, ctx: &mut Ctx, body: &'a [Stmt]) {
        for stmt in body {
            self.statement(ctx, stmt);
        }
    }

    /// Runs a block that may not run: the names it binds join what they held.
    pub(super) fn maybe_block(&mut self, ctx: &mut Ctx, body: &'a [Stmt]) {
        let before = self.frames[ctx.frame].vars.clone();
        self.block(ctx, body);
        self.join_vars(ctx.frame, before);
    }

    pub(super) fn join_vars(&mut self, frame: FrameId, other: HashMap<String, Values>) {
        let vars = &mut self.frames[frame].vars;
        for (name, values) in other {
            vars.entry(name).or_default().extend(values);
        }
    }

    pub(super) fn statement(&mut self, ctx: &mut Ctx, stmt: &'a Stmt) {
        self.steps += 1;
        match stmt {
            Stmt::FunctionDef(node) => {
                self.function_def(ctx, stmt, &node.decorator_list, &node.args)
            }
            Stmt::AsyncFunctionDef(node) => {
                self.function_def(ctx, stmt, &node.decorator_list, &node.args)
            }
            Stmt::ClassDef(node) => self.class_def(ctx, stmt, node),
            Stmt::Assign(node) => {
                let values = self.eval(ctx, &node.value);
                for target in &node.targets {
                    self.assign(ctx, target, values.clone());
                }
            }
            Stmt::AnnAssign(node) => {
                if let Some(value) = &node.value {
                    let values = self.eval(ctx, value);
                    self.assign(ctx, &node.target, values);
                }
            }
            Stmt::AugAssign(node) => {
                self.eval(ctx, &node.value);
            }
            Stmt::Expr(node) => {
                self.eval(ctx, &node.value);
            }
            Stmt::Return(node) => {
                if let Some(value) = &node.value {
                    let values = self.eval(ctx, value);
                    ctx.returns.extend(values);
                }
            }
            Stmt::Raise(node) => self.raise(ctx, node),
            Stmt::Import(node) => self.import(ctx, node),
            Stmt::ImportFrom(node) => self.import_from(ctx, node),
            Stmt::Global(node) => {
                let globals = &mut self.frames[ctx.frame].globals;
                globals.extend(node.names.iter().map(|name| name.to_string()));
            }
            Stmt::Match(node) => {
                self.eval(ctx, &node.subject);
                for case in &node.cases {
                    self.maybe_block(ctx, &case.body);
                }
            }
            Stmt::Assert(node) => {
                self.eval(ctx, &node.test);
            }
            _ => self.compound_statement(ctx, stmt),
        }
    }

    /// Branches and loops: what a block that may not run binds joins what was there.
    fn compound_statement(&mut self, ctx: &mut Ctx, stmt: &'a Stmt) {
        match stmt {
            Stmt::If(node) => {
                self.eval(ctx, &node.test);
                let before = self.frames[ctx.frame].vars.clone();
                self.block(ctx, &node.body);
                let after_body = std::mem::replace(&mut self.frames[ctx.frame].vars, before);
                self.block(ctx, &node.orelse);
                self.join_vars(ctx.frame, after_body);
            }
            Stmt::While(node) => {
                self.eval(ctx, &node.test);
                self.maybe_block(ctx, &node.body);
                self.block(ctx, &node.orelse);
            }
            Stmt::For(node) => {
                self.for_loop(ctx, &node.target, &node.iter, &node.body, &node.orelse)
            }
            Stmt::AsyncFor(node) => {
                self.for_loop(ctx, &node.target, &node.iter, &node.body, &node.orelse)
            }
            Stmt::With(node) => self.with(ctx, &node.items, &node.body),
            Stmt::AsyncWith(node) => self.with(ctx, &node.items, &node.body),
            Stmt::Try(node) => self.try_block(
                ctx,
                &node.body,
                &node.handlers,
                &node.orelse,
                &node.finalbody,
            ),
            Stmt::TryStar(node) => self.try_block(
                ctx,
                &node.body,
                &node.handlers,
                &node.orelse,
                &node.finalbody,
            ),
            _ => {}
        }
    }

    pub(super) fn for_loop(
        &mut self,
        ctx: &mut Ctx,
        target: &'a Expr,
        iter: &'a Expr,
        body: &'a [Stmt],
        orelse: &'a [Stmt],
    ) {
        let iterable = self.eval(ctx, iter);
        let items = self.iterate(ctx, &iterable);
        let before = self.frames[ctx.frame].vars.clone();
        self.assign(ctx, target, items);
        self.block(ctx, body);
        self.join_vars(ctx.frame, before);
        self.block(ctx, orelse);
    }

    pub(super) fn with(&mut self, ctx: &mut Ctx, items: &'a [ast::WithItem], body: &'a [Stmt]) {
        for item in items {
            let values = self.eval(ctx, &item.context_expr);
            if let Some(target) = &item.optional_vars {
                self.assign(ctx, target, values);
            }
        }
        self.block(ctx, body);
    }

    pub(super) fn try_block(
        &mut self,
        ctx: &mut Ctx,
        body: &'a [Stmt],
        handlers: &'a [ast::ExceptHandler],
        orelse: &'a [Stmt],
        finalbody: &'a [Stmt],
    ) {
        self.maybe_block(ctx, body);
        for handler in handlers {
            let ast::ExceptHandler::ExceptHandler(handler) = handler;
            if let Some(kind) = &handler.type_ {
                self.eval(ctx, kind);
            }
            self.maybe_block(ctx, &handler.body);
        }
        self.maybe_block(ctx, orelse);
        self.block(ctx, finalbody);
    }

    /// `raise A` instantiates the class `A`.
    pub(super) fn raise(&mut self, ctx: &mut Ctx, node: &'a ast::StmtRaise) {
        let Some(exception) = &node.exc else {
            return;
        };
        let values = self.eval(ctx, exception);
        if !matches!(exception.as_ref(), Expr::Call(_)) {
            for value in values {
                if let Value::Class(class) = value {
                    self.instantiate(ctx, class, &Args::default());
                }
            }
        }
    }

    pub(super) fn function_def(
        &mut self,
        ctx: &mut Ctx,
        stmt: &'a Stmt,
        decorators: &'a [Expr],
        args: &'a ast::Arguments,
    ) {
        let start = crate::python::parse::span(stmt).start;
        let module = self.frames[ctx.frame].module;
        let Some(&def) = self.defs.at.get(&(module, start)) else {
            return;
        };
        self.defaults_of(ctx, def, args);
        // A method closes over the scope around its class, not the class body.
        let closure = if self.defs.defs[def].owner.is_some() {
            self.frames[ctx.frame].parent.unwrap_or(ctx.frame)
        } else {
            ctx.frame
        };
        self.defined_in.insert(def, closure);
        let mut values = Values::from([Value::Function(def, closure)]);
        let decorator_values: Vec<Values> = decorators.iter().map(|d| self.eval(ctx, d)).collect();
        for decorator in decorator_values.into_iter().rev() {
            values = self.decorate(ctx, def, decorator, values);
        }
        let name = self.defs.defs[def]
            .name
            .rsplit('.')
            .next()
            .unwrap_or_default();
        self.bind(ctx.frame, name, values);
    }

    /// A decorator of the package is called with the function and the name
    /// then holds what it returns; a builtin or library one leaves it as is.
    pub(super) fn decorate(
        &mut self,
        ctx: &mut Ctx,
        def: DefId,
        decorator: Values,
        function: Values,
    ) -> Values {
        if decorator.contains(&Value::Builtin("staticmethod".to_string())) {
            self.statics.insert(def);
        }
        let callable = |value: &Value| {
            matches!(
                value,
                Value::Function(..) | Value::Bound(..) | Value::Class(_)
            )
        };
        if !decorator.iter().any(callable) {
            return function;
        }
        let decorator: Values = decorator.into_iter().filter(callable).collect();
        let args = Args {
            positional: vec![function.clone()],
            keywords: Vec::new(),
        };
        let result = self.call(ctx, &decorator, &args);
        if result.is_empty() { function } else { result }
    }

    pub(super) fn defaults_of(&mut self, ctx: &mut Ctx, def: DefId, args: &'a ast::Arguments) {
        let parameters = args
            .posonlyargs
            .iter()
            .chain(&args.args)
            .chain(&args.kwonlyargs);
        for parameter in parameters {
            if let Some(default) = &parameter.default {
                let values = self.eval(ctx, default);
                self.defaults
                    .insert((def, parameter.def.arg.to_string()), values);
            }
        }
    }

    pub(super) fn class_def(&mut self, ctx: &mut Ctx, stmt: &'a Stmt, node: &'a ast::StmtClassDef) {
        let start = crate::python::parse::span(stmt).start;
        let module = self.frames[ctx.frame].module;
        let Some(&class) = self.defs.at.get(&(module, start)) else {
            return;
        };
        let bases: Vec<Values> = node.bases.iter().map(|base| self.eval(ctx, base)).collect();
        for decorator in &node.decorator_list {
            self.eval(ctx, decorator);
        }
        self.class_bases.insert(class, bases);
        let frame = self.new_frame(Some(ctx.frame), module);
        self.class_frames.insert(class, frame);
        let mut body_ctx = Ctx {
            frame,
            caller: ctx.caller.clone(),
            def: ctx.def,
            returns: Values::new(),
            yields: Values::new(),
        };
        self.block(&mut body_ctx, &node.body);
        self.bind(
            ctx.frame,
            node.name.as_str(),
            Values::from([Value::Class(class)]),
        );
    }

    pub(super) fn import(&mut self, ctx: &mut Ctx, node: &'a ast::StmtImport) {
        for alias in &node.names {
            let name = self.absolute_module(ctx, Some(alias.name.as_str()), 0);
            let segments: Vec<&str> = name.split('.').collect();
            for end in 1..=segments.len() {
                self.run_module_named(&segments[..end].join("."));
            }
            let (bound, target) = match &alias.asname {
                Some(asname) => (asname.to_string(), name.clone()),
                None => {
                    let first = alias.name.split('.').next().unwrap_or_default();
                    (first.to_string(), segments[0].to_string())
                }
            };
            let value = self.module_value(&target);
            self.bind(ctx.frame, &bound, Values::from([value]));
        }
    }

    pub(super) fn import_from(&mut self, ctx: &mut Ctx, node: &'a ast::StmtImportFrom) {
        let level = node.level.map_or(0, |level| level.to_u32() as usize);
        let base = self.absolute_module(ctx, node.module.as_deref(), level);
        self.run_module_named(&base);
        let base_value = self.module_value(&base);
        for alias in &node.names {
            if alias.name.as_str() == "*" {
                self.import_all(ctx, &base);
                continue;
            }
            let values = self.attribute(&base_value, alias.name.as_str());
            let bound = alias.asname.as_ref().unwrap_or(&alias.name);
            self.bind(ctx.frame, bound.as_str(), values);
        }
    }

    pub(super) fn import_all(&mut self, ctx: &mut Ctx, module: &str) {
        let Some(&index) = self.module_index.get(module) else {
            return;
        };
        let Some(frame) = self.module_frames[index] else {
            return;
        };
        let names: Vec<(String, Values)> = self.frames[frame]
            .vars
            .iter()
            .filter(|(name, _)| !name.starts_with('_'))
            .map(|(name, values)| (name.clone(), values.clone()))
            .collect();
        for (name, values) in names {
            self.bind(ctx.frame, &name, values);
        }
    }

    pub(super) fn absolute_module(&self, ctx: &Ctx, module: Option<&str>, level: usize) -> String {
        let index = self.frames[ctx.frame].module;
        let module_info = &self.package.modules[index];
        let context = ModuleContext {
            module_name: &module_info.name,
            is_package_init: module_info.is_package_init,
            package_modules: &self.package.module_names,
        };
        context.absolute_module(module, level)
    }

    pub(super) fn is_package_module(&self, name: &str) -> bool {
        self.module_index.contains_key(name)
            || self.package.modules.iter().any(|module| {
                module
                    .name
                    .strip_prefix(name)
                    .is_some_and(|rest| rest.starts_with('.'))
            })
    }

    pub(super) fn module_value(&self, name: &str) -> Value {
        if self.is_package_module(name) {
            Value::Module(name.to_string())
        } else {
            Value::External(name.to_string())
        }
    }

    pub(super) fn run_module_named(&mut self, name: &str) {
        if let Some(&index) = self.module_index.get(name) {
            self.run_module(index);
        }
    }
}
