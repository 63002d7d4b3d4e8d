//! Lists, tuples, dicts and sets: items by constant key or index, so that a
//! function stored under one key is called from that key only.

use rustpython_parser::ast::{self, Expr};

use super::{Args, Container, ContainerKind, Ctx, Interp, Key, Value, Values};

impl<'a> Interp<'a> {
    /// `a, *b, c = values`: each target gets the item at its position.
    pub(super) fn unpack(
        &mut self,
        ctx: &mut Ctx,
        target: &'a Expr,
        elts: &'a [Expr],
        values: &Values,
    ) {
        let star = elts.iter().position(|elt| matches!(elt, Expr::Starred(_)));
        let after_star = star.map_or(0, |star| elts.len() - star - 1);
        for (index, elt) in elts.iter().enumerate() {
            let mut item = Values::new();
            let mut starred_items = Values::new();
            for value in values {
                let Value::Container(id) = value else {
                    continue;
                };
                let items = &self.containers[*id].items;
                let length = items
                    .keys()
                    .filter(|key| matches!(key, Key::Int(_)))
                    .count() as i64;
                let any = items.get(&Key::Any).cloned().unwrap_or_default();
                let position = match star {
                    Some(star) if index > star => length - (elts.len() - index) as i64,
                    _ => index as i64,
                };
                if Some(index) == star {
                    for i in index as i64..length - after_star as i64 {
                        starred_items.extend(items.get(&Key::Int(i)).cloned().unwrap_or_default());
                    }
                    starred_items.extend(any);
                } else {
                    item.extend(items.get(&Key::Int(position)).cloned().unwrap_or_default());
                    item.extend(any);
                }
            }
            if Some(index) == star {
                let site = (
                    self.frames[ctx.frame].module,
                    crate::python::parse::span(target).start,
                );
                item = Values::from([self.new_container(
                    site.0,
                    site.1,
                    ContainerKind::List,
                    starred_items,
                )]);
            }
            self.assign(ctx, elt, item);
        }
    }

    pub(super) fn dict(
        &mut self,
        ctx: &mut Ctx,
        expr: &'a Expr,
        node: &'a ast::ExprDict,
    ) -> Values {
        let mut entries = Vec::new();
        for (key, value) in node.keys.iter().zip(&node.values) {
            let values = self.eval(ctx, value);
            match key {
                Some(key) => {
                    let keys = self.eval(ctx, key);
                    entries.push((keys_of(&keys), values));
                }
                None => {
                    for value in values {
                        if let Value::Container(id) = value {
                            let items = self.containers[id].items.clone();
                            entries.extend(items.into_iter().map(|(k, v)| (Some(vec![k]), v)));
                        }
                    }
                }
            }
        }
        let site = self.site_of(ctx, expr);
        let container = self.new_container(site.0, site.1, ContainerKind::Dict, Values::new());
        let Value::Container(id) = container else {
            unreachable!()
        };
        for (keys, values) in entries {
            for key in keys.unwrap_or_else(|| vec![Key::Any]) {
                self.containers[id].items.insert(key, values.clone());
            }
        }
        Values::from([container])
    }

    pub(super) fn sequence(
        &mut self,
        ctx: &mut Ctx,
        expr: &'a Expr,
        elts: &'a [Expr],
        kind: ContainerKind,
    ) -> Values {
        let mut items = Vec::new();
        let mut any = Values::new();
        for elt in elts {
            let values = self.eval(ctx, elt);
            if matches!(elt, Expr::Starred(_)) {
                any.extend(self.iterate(ctx, &values));
            } else {
                items.push(values);
            }
        }
        let site = self.site_of(ctx, expr);
        let container = self.new_container(site.0, site.1, kind, any);
        let Value::Container(id) = container else {
            unreachable!()
        };
        for (index, values) in items.into_iter().enumerate() {
            self.containers[id]
                .items
                .insert(Key::Int(index as i64), values);
        }
        Values::from([container])
    }

    pub(super) fn subscript(
        &mut self,
        ctx: &mut Ctx,
        expr: &'a Expr,
        node: &'a ast::ExprSubscript,
    ) -> Values {
        let base = self.eval(ctx, &node.value);
        if let Expr::Slice(slice) = node.slice.as_ref() {
            let mut bound = |part: &'a Option<Box<Expr>>, this: &mut Self| match part {
                None => Some(None),
                Some(part) => match this.eval(ctx, part).into_iter().collect::<Vec<_>>()[..] {
                    [Value::Int(number)] => Some(Some(number)),
                    _ => None,
                },
            };
            let lower = bound(&slice.lower, self);
            let upper = bound(&slice.upper, self);
            return self.slice(ctx, expr, &base, lower, upper);
        }
        let keys = self.eval(ctx, &node.slice);
        self.load_item(&base, keys_of(&keys))
    }

    /// `ls[1:3]`: a new list of the items in range (all of them when a bound is unknown).
    pub(super) fn slice(
        &mut self,
        ctx: &Ctx,
        expr: &Expr,
        base: &Values,
        lower: Option<Option<i64>>,
        upper: Option<Option<i64>>,
    ) -> Values {
        let mut items = std::collections::BTreeMap::new();
        for value in base {
            let Value::Container(id) = value else {
                continue;
            };
            for (key, values) in &self.containers[*id].items {
                let key = match (key, lower, upper) {
                    (Key::Int(i), Some(lower), Some(upper)) if *i >= 0 => {
                        let lower = lower.unwrap_or(0);
                        if *i < lower || upper.is_some_and(|upper| upper >= 0 && *i >= upper) {
                            continue;
                        }
                        Key::Int(i - lower)
                    }
                    _ => Key::Any,
                };
                items
                    .entry(key)
                    .or_insert_with(Values::new)
                    .extend(values.clone());
            }
        }
        let site = self.site_of(ctx, expr);
        let container = self.new_container(site.0, site.1, ContainerKind::List, Values::new());
        let Value::Container(id) = container else {
            unreachable!()
        };
        self.containers[id].items = items;
        Values::from([container])
    }

    pub(super) fn load_item(&self, base: &Values, keys: Option<Vec<Key>>) -> Values {
        let mut values = Values::new();
        for value in base {
            let Value::Container(id) = value else {
                continue;
            };
            let Container { items, .. } = &self.containers[*id];
            match &keys {
                Some(keys) => {
                    let length = items
                        .keys()
                        .filter(|key| matches!(key, Key::Int(_)))
                        .count() as i64;
                    for key in keys {
                        let key = match key {
                            Key::Int(i) if *i < 0 => Key::Int(length + i),
                            other => other.clone(),
                        };
                        values.extend(items.get(&key).cloned().unwrap_or_default());
                    }
                    values.extend(items.get(&Key::Any).cloned().unwrap_or_default());
                }
                None => values.extend(items.values().flatten().cloned()),
            }
        }
        values
    }

    /// A store under one known key of one container replaces what it held.
    pub(super) fn store_item(&mut self, base: &Values, keys: Option<Vec<Key>>, values: Values) {
        let containers: Vec<usize> = base
            .iter()
            .filter_map(|value| match value {
                Value::Container(id) => Some(*id),
                _ => None,
            })
            .collect();
        let keys = keys.unwrap_or_else(|| vec![Key::Any]);
        let strong = containers.len() == 1 && keys.len() == 1 && keys[0] != Key::Any;
        for id in containers {
            for key in &keys {
                let items = &mut self.containers[id].items;
                if strong {
                    items.insert(key.clone(), values.clone());
                } else {
                    items.entry(key.clone()).or_default().extend(values.clone());
                }
            }
        }
    }

    pub(super) fn comprehension(
        &mut self,
        ctx: &mut Ctx,
        expr: &'a Expr,
        elements: &[&'a Expr],
        generators: &'a [ast::Comprehension],
    ) -> Values {
        for generator in generators {
            let iterable = self.eval(ctx, &generator.iter);
            let items = self.iterate(ctx, &iterable);
            self.assign(ctx, &generator.target, items);
            for condition in &generator.ifs {
                self.eval(ctx, condition);
            }
        }
        let mut any = Values::new();
        for element in elements {
            any.extend(self.eval(ctx, element));
        }
        let site = self.site_of(ctx, expr);
        Values::from([self.new_container(site.0, site.1, ContainerKind::List, any)])
    }

    /// Methods of lists and dicts that store or return their items; `None`
    /// for other calls.
    pub(super) fn container_method(
        &mut self,
        site: (usize, usize),
        base: &Values,
        method: &str,
        args: &Args,
    ) -> Option<Values> {
        if !base
            .iter()
            .any(|value| matches!(value, Value::Container(_)))
        {
            return None;
        }
        let first = args.positional.first().cloned().unwrap_or_default();
        let mut result = Values::new();
        match method {
            "append" | "add" | "insert" => {
                let item = args.positional.last().cloned().unwrap_or_default();
                self.store_item(base, None, item);
            }
            "extend" => {
                let items = self.load_item(&first, None);
                self.store_item(base, None, items);
            }
            "update" => {
                for value in &first {
                    if let Value::Container(id) = value {
                        for (key, values) in self.containers[*id].items.clone() {
                            self.store_item(base, Some(vec![key]), values);
                        }
                    }
                }
                for (name, values) in &args.keywords {
                    self.store_item(base, Some(vec![Key::Str(name.clone())]), values.clone());
                }
            }
            "get" | "pop" | "setdefault" => {
                result = self.load_item(base, keys_of(&first));
                result.extend(args.positional.get(1).cloned().unwrap_or_default());
            }
            "values" | "copy" => {
                let items = self.load_item(base, None);
                result.insert(self.new_container(site.0, site.1, ContainerKind::List, items));
            }
            _ => return None,
        }
        Some(result)
    }
}

/// The keys the values name, when all are known constants.
pub(super) fn keys_of(values: &Values) -> Option<Vec<Key>> {
    if values.is_empty() {
        return None;
    }
    values
        .iter()
        .map(|value| match value {
            Value::Int(number) => Some(Key::Int(*number)),
            Value::Str(text) => Some(Key::Str(text.clone())),
            _ => None,
        })
        .collect()
}
