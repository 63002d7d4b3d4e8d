//! What one call does, by the catalogue: through its resolved callee, the
//! type of its receiver (`Image.fromarray(a).save(p)`, `img.save(p)` after
//! `img = Image.open(q)`, `model.save(p)` of a Keras model), or what its
//! name says when nothing else is known. Calls of the package's own
//! functions are named, not judged: their summaries say what they do.

use rustpython_parser::ast::{self, Expr};

use super::catalogue::{Catalogue, Entry, NameRule};
use super::training::{ModuleAnalysis, Scope, callee_name};
use super::walk::dotted_name;
use crate::analysis::package::Package;

/// What the analysis knows of one call.
#[derive(Debug, Clone, Copy)]
pub enum Known<'c> {
    /// A catalogued callable, by the name it was found under.
    Catalogued(&'c Entry),
    /// An uncatalogued library call whose name says what it does.
    ByName(&'c NameRule),
    /// Nothing: a harmless or unknown call.
    Nothing,
}

impl<'c> Known<'c> {
    pub fn entry(&self) -> Option<&'c Entry> {
        match self {
            Known::Catalogued(entry) => Some(entry),
            _ => None,
        }
    }
}

/// The call's resolved callee: a dotted library name, the qualified name of
/// a package function (methods through `self` included), or `builtins.x`.
pub fn resolved_callee(
    package: &Package,
    module: &ModuleAnalysis,
    scope: &Scope,
    func: &Expr,
) -> Option<String> {
    if let Some(callee) = callee_name(package, module.module, scope, func) {
        return Some(callee);
    }
    match func {
        Expr::Name(name) if !scope.bindings.is_bound(name.id.as_str()) => {
            Some(format!("builtins.{}", name.id))
        }
        Expr::Attribute(attribute) => own_method(module, scope, attribute),
        _ => None,
    }
}

/// `self.method(...)` of a method of the same class.
fn own_method(
    module: &ModuleAnalysis,
    scope: &Scope,
    attribute: &ast::ExprAttribute,
) -> Option<String> {
    let class = scope.class?;
    let Expr::Name(receiver) = attribute.value.as_ref() else {
        return None;
    };
    if scope.parameters.first().map(String::as_str) != Some(receiver.id.as_str()) {
        return None;
    }
    let owner = scope.qualified_name.rsplit_once('.')?.0;
    let wanted = format!("{owner}.{}", attribute.attr);
    module
        .scopes
        .iter()
        .any(|candidate| {
            candidate.qualified_name == wanted
                && candidate
                    .class
                    .is_some_and(|found| std::ptr::eq(found, class))
        })
        .then_some(wanted)
}

/// What a call of `scope` (the module's scope `scope_index`) does.
pub fn of_call<'c>(
    catalogue: &'c Catalogue,
    package: &Package,
    module: &ModuleAnalysis,
    scope_index: usize,
    call: &ast::ExprCall,
) -> Known<'c> {
    let scope = &module.scopes[scope_index];
    let callee = resolved_callee(package, module, scope, &call.func);
    if let Some(callee) = &callee {
        if is_package_function(package, callee) {
            return Known::Nothing;
        }
        if let Some(entry) = catalogue.call(callee) {
            return Known::Catalogued(entry);
        }
    }
    let types = Types {
        catalogue,
        package,
        module,
    };
    if let Expr::Attribute(attribute) = call.func.as_ref() {
        let receiver = types.of(scope_index, &attribute.value, 0);
        if let Some(entry) = catalogue.method(receiver.as_deref(), attribute.attr.as_str()) {
            return Known::Catalogued(entry);
        }
        // A method of a type the catalogue knows, and does not list: harmless.
        if receiver.is_some() || is_own_receiver(scope, &attribute.value) {
            return Known::Nothing;
        }
    }
    let (name, is_method) = match call.func.as_ref() {
        Expr::Attribute(attribute) => {
            let on_module = callee.as_deref().is_some_and(|callee| {
                dotted_name(&attribute.value).is_some_and(|receiver| {
                    scope.bindings.resolve_raw(&attribute.value).is_some()
                        && !callee.starts_with("builtins.")
                        && !receiver.is_empty()
                })
            });
            (attribute.attr.as_str(), !on_module)
        }
        Expr::Name(name) => (name.id.as_str(), false),
        _ => return Known::Nothing,
    };
    // Built-ins are catalogued or harmless (`print`, `len`).
    if callee
        .as_deref()
        .is_some_and(|callee| callee.starts_with("builtins."))
    {
        return Known::Nothing;
    }
    catalogue
        .by_name(name, is_method)
        .map_or(Known::Nothing, Known::ByName)
}

/// `self.x` in a method: the package's own object.
fn is_own_receiver(scope: &Scope, receiver: &Expr) -> bool {
    scope.class.is_some()
        && matches!(receiver, Expr::Name(name)
            if scope.parameters.first().map(String::as_str) == Some(name.id.as_str()))
}

/// Whether a resolved name is a function, method or class of the package.
pub fn is_package_function(package: &Package, callee: &str) -> bool {
    package.modules.iter().any(|module| {
        callee
            .strip_prefix(module.name.as_str())
            .is_some_and(|rest| rest.starts_with('.'))
    })
}

/// The catalogued type of an expression, where it can be told.
struct Types<'a, 'c> {
    catalogue: &'c Catalogue,
    package: &'a Package,
    module: &'a ModuleAnalysis<'a>,
}

impl Types<'_, '_> {
    fn of(&self, scope_index: usize, expr: &Expr, depth: usize) -> Option<String> {
        if depth > 4 {
            return None;
        }
        let scope = &self.module.scopes[scope_index];
        match expr {
            Expr::Call(call) => {
                if let Some(callee) =
                    callee_name(self.package, self.module.module, scope, &call.func)
                    && let Some(returns) = self
                        .catalogue
                        .call(&callee)
                        .and_then(|entry| entry.returns.clone())
                {
                    return Some(returns);
                }
                let Expr::Attribute(attribute) = call.func.as_ref() else {
                    return None;
                };
                let receiver = self.of(scope_index, &attribute.value, depth + 1)?;
                self.catalogue
                    .call(&format!("{receiver}.{}", attribute.attr))
                    .and_then(|entry| entry.returns.clone())
            }
            Expr::Name(_) | Expr::Attribute(_) => {
                let name = dotted_name(expr)?;
                if self.is_model(scope_index, &name) {
                    return Some(crate::analysis::library::KERAS_MODEL.to_string());
                }
                self.of_name(scope_index, &name, depth)
            }
            _ => None,
        }
    }

    fn is_model(&self, scope_index: usize, name: &str) -> bool {
        [scope_index, 0].iter().any(|index| {
            self.module
                .models
                .get(*index)
                .is_some_and(|models| models.contains(name))
        })
    }

    /// The type of the last value assigned to `name` in the scope, in the
    /// module's top level, or (for `self.x`) in any method of the class.
    fn of_name(&self, scope_index: usize, name: &str, depth: usize) -> Option<String> {
        let scope = &self.module.scopes[scope_index];
        let mut places = vec![scope_index, 0];
        if name.starts_with("self.")
            && let Some(class) = scope.class
        {
            places.extend(
                self.module
                    .scopes
                    .iter()
                    .enumerate()
                    .filter_map(|(index, other)| {
                        other
                            .class
                            .is_some_and(|found| std::ptr::eq(found, class))
                            .then_some(index)
                    }),
            );
        }
        places.dedup();
        places.into_iter().find_map(|index| {
            self.module.scopes[index]
                .facts
                .assignments
                .iter()
                .rev()
                .filter(|assignment| assignment.name == name)
                .find_map(|assignment| self.of(index, assignment.value, depth + 1))
        })
    }
}
