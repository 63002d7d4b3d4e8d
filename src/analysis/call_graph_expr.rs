//! Expressions, assignment targets, attributes, containers and the builtins
//! the call graph models (those that call what they are given, or return it).

use rustpython_parser::ast::{self, Constant, Expr};

use super::containers::keys_of;
use super::{Args, ContainerKind, Ctx, DefId, DefKind, Interp, Value, Values};
use crate::analysis::walk;

impl<'a> Interp<'a> {
    pub(super) fn eval(&mut self, ctx: &mut Ctx, expr: &'a Expr) -> Values {
        match expr {
            Expr::Name(node) => self.lookup(ctx.frame, node.id.as_str()),
            Expr::Attribute(node) => {
                let base = self.eval(ctx, &node.value);
                self.attribute_of_all(&base, node.attr.as_str())
            }
            Expr::Call(node) => self.eval_call(ctx, node),
            Expr::Lambda(node) => {
                let site = self.site_of(ctx, expr);
                let Some(&def) = self.defs.at.get(&site) else {
                    return Values::new();
                };
                self.defaults_of(ctx, def, &node.args);
                self.defined_in.insert(def, ctx.frame);
                Values::from([Value::Function(def, ctx.frame)])
            }
            Expr::Constant(node) => match &node.value {
                Constant::Str(text) => Values::from([Value::Str(text.clone())]),
                Constant::Int(number) => number
                    .to_string()
                    .parse()
                    .map(|number| Values::from([Value::Int(number)]))
                    .unwrap_or_default(),
                _ => Values::new(),
            },
            Expr::Dict(node) => self.dict(ctx, expr, node),
            Expr::List(node) => self.sequence(ctx, expr, &node.elts, ContainerKind::List),
            Expr::Tuple(node) => self.sequence(ctx, expr, &node.elts, ContainerKind::Other),
            Expr::Set(node) => self.sequence(ctx, expr, &node.elts, ContainerKind::Other),
            Expr::Subscript(node) => self.subscript(ctx, expr, node),
            Expr::ListComp(node) => self.comprehension(ctx, expr, &[&node.elt], &node.generators),
            Expr::SetComp(node) => self.comprehension(ctx, expr, &[&node.elt], &node.generators),
            Expr::GeneratorExp(node) => {
                self.comprehension(ctx, expr, &[&node.elt], &node.generators)
            }
            Expr::DictComp(node) => {
                self.comprehension(ctx, expr, &[&node.key, &node.value], &node.generators)
            }
            Expr::BoolOp(node) => {
                let mut values = Values::new();
                for value in &node.values {
                    values.extend(self.eval(ctx, value));
                }
                values
            }
            Expr::IfExp(node) => {
                self.eval(ctx, &node.test);
                let mut values = self.eval(ctx, &node.body);
                values.extend(self.eval(ctx, &node.orelse));
                values
            }
            Expr::NamedExpr(node) => {
                let values = self.eval(ctx, &node.value);
                self.assign(ctx, &node.target, values.clone());
                values
            }
            Expr::Await(node) => self.eval(ctx, &node.value),
            Expr::Starred(node) => self.eval(ctx, &node.value),
            Expr::Yield(node) => {
                if let Some(value) = &node.value {
                    let values = self.eval(ctx, value);
                    ctx.yields.extend(values);
                }
                Values::new()
            }
            Expr::YieldFrom(node) => {
                let values = self.eval(ctx, &node.value);
                let items = self.iterate(ctx, &values);
                ctx.yields.extend(items);
                Values::new()
            }
            _ => {
                for child in walk::child_expressions(expr) {
                    self.eval(ctx, child);
                }
                Values::new()
            }
        }
    }

    pub(super) fn site_of(&self, ctx: &Ctx, expr: &Expr) -> (usize, usize) {
        (
            self.frames[ctx.frame].module,
            crate::python::parse::span(expr).start,
        )
    }

    pub(super) fn eval_call(&mut self, ctx: &mut Ctx, call: &'a ast::ExprCall) -> Values {
        let (callee, modelled) = match call.func.as_ref() {
            Expr::Attribute(node) => {
                let base = self.eval(ctx, &node.value);
                let callee = self.attribute_of_all(&base, node.attr.as_str());
                (callee, Some((base, node.attr.as_str())))
            }
            func => (self.eval(ctx, func), None),
        };
        let mut args = Args::default();
        for arg in &call.args {
            args.positional.push(self.eval(ctx, arg));
        }
        for keyword in &call.keywords {
            let values = self.eval(ctx, &keyword.value);
            if let Some(name) = &keyword.arg {
                args.keywords.push((name.to_string(), values));
            }
        }
        let site = (
            self.frames[ctx.frame].module,
            crate::python::parse::span(call).start,
        );
        let mut result = Values::new();
        if let Some((base, method)) = &modelled
            && let Some(values) = self.container_method(site, base, method, &args)
        {
            return values;
        }
        self.site = site;
        result.extend(self.call(ctx, &callee, &args));
        result
    }

    pub(super) fn attribute_of_all(&mut self, base: &Values, attr: &str) -> Values {
        let mut values = Values::new();
        for value in base {
            values.extend(self.attribute(value, attr));
        }
        values
    }

    pub(super) fn attribute(&mut self, value: &Value, attr: &str) -> Values {
        match value {
            Value::Module(name) => {
                if let Some(&index) = self.module_index.get(name.as_str()) {
                    self.run_module(index);
                    let frame = self.module_frames[index];
                    if let Some(values) = frame.and_then(|frame| self.frames[frame].vars.get(attr))
                    {
                        return values.clone();
                    }
                }
                let submodule = format!("{name}.{attr}");
                if self.is_package_module(&submodule) {
                    self.run_module_named(&submodule);
                    return Values::from([Value::Module(submodule)]);
                }
                Values::new()
            }
            Value::Class(class) => match self.class_attribute(*class, attr) {
                Ok(values) => values,
                Err(Some(external)) => {
                    Values::from([Value::External(format!("{external}.{attr}"))])
                }
                Err(None) => Values::new(),
            },
            Value::Instance(class) => self.instance_attribute(*class, attr),
            Value::Super(after, class) => {
                let (order, _) = self.mro(*class);
                let start = order
                    .iter()
                    .position(|k| k == after)
                    .map_or(order.len(), |p| p + 1);
                for k in &order[start..] {
                    if let Some(values) = self.own_class_attribute(*k, attr) {
                        return self.bind_methods(values, *class);
                    }
                }
                Values::new()
            }
            Value::External(name) => Values::from([Value::External(format!("{name}.{attr}"))]),
            Value::Str(_) => Values::from([Value::TypeMethod(format!("<**PyStr**>.{attr}"))]),
            Value::Container(id) => match self.containers[*id].kind {
                ContainerKind::Dict => {
                    Values::from([Value::TypeMethod(format!("<**PyDict**>.{attr}"))])
                }
                ContainerKind::List => {
                    Values::from([Value::TypeMethod(format!("<**PyList**>.{attr}"))])
                }
                ContainerKind::Other => Values::new(),
            },
            _ => Values::new(),
        }
    }

    pub(super) fn own_class_attribute(&self, class: DefId, attr: &str) -> Option<Values> {
        let frame = *self.class_frames.get(&class)?;
        self.frames[frame].vars.get(attr).cloned()
    }

    /// An attribute found on the class or its bases, else the first library
    /// base the class has (the attribute may come from it), if any.
    pub(super) fn class_attribute(
        &self,
        class: DefId,
        attr: &str,
    ) -> Result<Values, Option<String>> {
        let (order, externals) = self.mro(class);
        for k in order {
            if let Some(values) = self.own_class_attribute(k, attr) {
                return Ok(values);
            }
        }
        Err(externals.into_iter().next())
    }

    pub(super) fn instance_attribute(&self, class: DefId, attr: &str) -> Values {
        if let Some(values) = self.instance_attrs.get(&(class, attr.to_string()))
            && !values.is_empty()
        {
            return values.clone();
        }
        match self.class_attribute(class, attr) {
            Ok(values) => self.bind_methods(values, class),
            Err(Some(external)) => Values::from([Value::External(format!("{external}.{attr}"))]),
            Err(None) => Values::new(),
        }
    }

    pub(super) fn bind_methods(&self, values: Values, class: DefId) -> Values {
        values
            .into_iter()
            .map(|value| match value {
                Value::Function(def, frame) if !self.statics.contains(&def) => {
                    Value::Bound(def, frame, class)
                }
                other => other,
            })
            .collect()
    }

    /// The package classes in method resolution order (each after all its
    /// subclasses, as C3 orders the usual hierarchies), and the library bases.
    pub(super) fn mro(&self, class: DefId) -> (Vec<DefId>, Vec<String>) {
        self.linearize(class, 0)
    }

    pub(super) fn linearize(&self, class: DefId, depth: usize) -> (Vec<DefId>, Vec<String>) {
        let mut tail = Vec::new();
        let mut externals = Vec::new();
        if depth < 32 {
            for base in self.class_bases.get(&class).into_iter().flatten() {
                for value in base {
                    match value {
                        Value::Class(parent) if *parent != class => {
                            let (order, more) = self.linearize(*parent, depth + 1);
                            tail.extend(order);
                            externals.extend(more);
                        }
                        Value::External(name) => externals.push(name.clone()),
                        _ => {}
                    }
                }
            }
        }
        let mut order = vec![class];
        for (index, k) in tail.iter().enumerate() {
            if *k != class && !tail[index + 1..].contains(k) {
                order.push(*k);
            }
        }
        (order, externals)
    }

    pub(super) fn assign(&mut self, ctx: &mut Ctx, target: &'a Expr, values: Values) {
        match target {
            Expr::Name(node) => self.bind(ctx.frame, node.id.as_str(), values),
            Expr::Attribute(node) => {
                let base = self.eval(ctx, &node.value);
                let attr = node.attr.to_string();
                for value in base {
                    match value {
                        Value::Instance(class) => self
                            .instance_attrs
                            .entry((class, attr.clone()))
                            .or_default()
                            .extend(values.clone()),
                        Value::Class(class) => {
                            if let Some(&frame) = self.class_frames.get(&class) {
                                self.frames[frame].vars.insert(attr.clone(), values.clone());
                            }
                        }
                        Value::Module(name) => {
                            let index = self.module_index.get(name.as_str()).copied();
                            if let Some(frame) = index.and_then(|index| self.module_frames[index]) {
                                self.frames[frame].vars.insert(attr.clone(), values.clone());
                            }
                        }
                        _ => {}
                    }
                }
            }
            Expr::Subscript(node) => {
                let base = self.eval(ctx, &node.value);
                let keys = self.eval(ctx, &node.slice);
                self.store_item(&base, keys_of(&keys), values);
            }
            Expr::Tuple(ast::ExprTuple { elts, .. }) | Expr::List(ast::ExprList { elts, .. }) => {
                self.unpack(ctx, target, elts, &values)
            }
            Expr::Starred(node) => self.assign(ctx, &node.value, values),
            _ => {}
        }
    }

    /// What a `for` over the values gets: container items, or what an
    /// instance's `__iter__` then `__next__` return.
    pub(super) fn iterate(&mut self, ctx: &Ctx, values: &Values) -> Values {
        let mut items = Values::new();
        for value in values {
            match value {
                Value::Container(_) => {
                    items.extend(self.load_item(&Values::from([value.clone()]), None))
                }
                Value::Instance(class) => {
                    let iter = self.instance_attribute(*class, "__iter__");
                    for iterator in self.call(ctx, &iter, &Args::default()) {
                        match iterator {
                            Value::Instance(class) => {
                                let next = self.instance_attribute(class, "__next__");
                                items.extend(self.call(ctx, &next, &Args::default()));
                            }
                            Value::Container(_) => {
                                items.extend(self.load_item(&Values::from([iterator]), None))
                            }
                            _ => {}
                        }
                    }
                }
                _ => {}
            }
        }
        items
    }

    /// The builtins that call what they are given or return its items.
    pub(super) fn builtin(&mut self, ctx: &Ctx, name: &str, args: &Args) -> Values {
        let first = args.positional.first().cloned().unwrap_or_default();
        let site = self.site;
        match name {
            "map" | "filter" => {
                let callable = |value: &Value| {
                    matches!(
                        value,
                        Value::Function(..) | Value::Bound(..) | Value::Class(_)
                    )
                };
                let all: Values = args.positional.iter().flatten().cloned().collect();
                let functions: Values = all
                    .iter()
                    .filter(|value| callable(value))
                    .cloned()
                    .collect();
                let iterables: Values = all.into_iter().filter(|value| !callable(value)).collect();
                let items = self.iterate(ctx, &iterables);
                let call_args = Args {
                    positional: vec![items.clone()],
                    keywords: Vec::new(),
                };
                let returned = self.call(ctx, &functions, &call_args);
                let result = if name == "map" { returned } else { items };
                Values::from([self.new_container(site.0, site.1, ContainerKind::List, result)])
            }
            "sorted" | "list" | "tuple" | "set" | "reversed" | "iter" | "frozenset" => {
                let items = self.iterate(ctx, &first);
                Values::from([self.new_container(site.0, site.1, ContainerKind::List, items)])
            }
            "next" => self.iterate(ctx, &first),
            "getattr" => {
                let mut values = Values::new();
                if let Some(names) = args.positional.get(1) {
                    for attr in names {
                        if let Value::Str(attr) = attr {
                            values.extend(self.attribute_of_all(&first, attr));
                        }
                    }
                }
                values.extend(args.positional.get(2).cloned().unwrap_or_default());
                values
            }
            "super" => self.super_value(ctx, args),
            _ => Values::new(),
        }
    }

    /// `super()` in a method: its class, for the instances `self` holds.
    pub(super) fn super_value(&self, ctx: &Ctx, args: &Args) -> Values {
        let explicit = |index: usize| args.positional.get(index).cloned().unwrap_or_default();
        let mut classes: Vec<DefId> = explicit(0)
            .iter()
            .filter_map(|value| match value {
                Value::Class(class) => Some(*class),
                _ => None,
            })
            .collect();
        let mut receivers = explicit(1);
        if let Some(def) = ctx.def
            && classes.is_empty()
        {
            classes.extend(self.defs.defs[def].owner);
            if let DefKind::Function {
                args: parameters, ..
            } = &self.defs.defs[def].kind
                && let Some(first) = parameters.posonlyargs.iter().chain(&parameters.args).next()
            {
                receivers = self.lookup(ctx.frame, first.def.arg.as_str());
            }
        }
        let mut values = Values::new();
        for class in classes {
            let instances: Vec<DefId> = receivers
                .iter()
                .filter_map(|value| match value {
                    Value::Instance(instance) => Some(*instance),
                    _ => None,
                })
                .collect();
            if instances.is_empty() {
                values.insert(Value::Super(class, class));
            }
            values.extend(
                instances
                    .into_iter()
                    .map(|instance| Value::Super(class, instance)),
            );
        }
        values
    }
}
