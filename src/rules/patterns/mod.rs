//! Training patterns as plug-ins. Each pattern (Keras `fit`, a GradientTape
//! loop, a TF1 Session, ...) is one file implementing [`Pattern`]: what the
//! analysis' sites of that pattern need rewritten, which Horovod module its
//! generated code uses, how the init block pins devices, and the diagnostics
//! it owns. The registry lists them; the engine finds a module's plug-in
//! there by the pattern the analysis classified it as.

pub mod estimator;
pub mod gradient_tape;
pub mod keras;
pub mod monitored_session;
pub mod session;
mod session_broadcast;
mod session_steps_elsewhere;
pub mod tf1;

use rustpython_parser::ast::{self, Expr};

use super::context::RewriteContext;
use super::importer::Names;
use super::rewrite::ModuleRewrite;
use crate::analysis::training::{Analysis, ModuleAnalysis, TrainingPattern};
use crate::diagnostics::{Code, Diagnostic};

/// A training pattern's rewrite.
pub trait Pattern: Sync {
    /// The pattern of the analysis this plug-in rewrites.
    fn pattern(&self) -> TrainingPattern;

    /// How messages name a loop of this pattern ("a GradientTape loop").
    fn description(&self) -> &'static str;

    /// Whether the pattern trains in a TF1 graph-mode session: devices are
    /// then pinned through the session's `ConfigProto`, and barriers run in
    /// the session. The three TF1 patterns say yes; the rest follow from it.
    fn runs_in_a_session(&self) -> bool {
        false
    }

    /// The Horovod module generated code uses (`horovod.tensorflow` unless
    /// the pattern says otherwise).
    fn horovod_module(&self) -> &'static str {
        "horovod.tensorflow"
    }

    /// The Horovod module for this module in particular (a plug-in may need
    /// another one for some modules); the pattern's by default.
    fn horovod_module_for(&self, _analysis: &Analysis, _module: &ModuleAnalysis) -> &'static str {
        self.horovod_module()
    }

    /// Whether this module also needs `horovod.tensorflow` under its own name.
    fn needs_horovod_tensorflow(&self, _module: &ModuleAnalysis, _text: &str) -> bool {
        false
    }

    /// The lines after `hvd.init()` that pin one GPU per process: TF2's
    /// `tf.config` pinning, none for a session (pinned through its
    /// `ConfigProto` instead).
    fn device_pinning_lines(&self, context: &RewriteContext, names: &mut Names) -> Vec<String> {
        if self.runs_in_a_session() {
            return Vec::new();
        }
        tf2_device_pinning(context, names)
    }

    /// What to suggest when a scaled learning rate has no warm-up.
    fn warmup_suggestion(&self, _hvd: &str) -> String {
        "ramp the rate up from the single-worker value over the first epochs".to_string()
    }

    /// The statement that makes every rank wait until rank 0 has written a
    /// save that is read back further down (`save` is the saving call);
    /// `None` when this pattern cannot place one. A session runs one by default.
    fn save_barrier(&self, context: &RewriteContext, save: &ast::ExprCall) -> Option<String> {
        if self.runs_in_a_session() {
            return session_save_barrier(context, save);
        }
        None
    }

    /// A statement that makes every rank wait for the others, where the
    /// pattern can run one without a session (`name` names it); `None`
    /// otherwise.
    fn eager_barrier(&self, _context: &RewriteContext, _name: &str) -> Option<String> {
        None
    }

    /// The lines that make every rank wait for the others before anyone
    /// reads what rank 0 downloaded (`name` names the collective). Without a
    /// session, the pattern's own barrier; in a TF1 graph, a collective run
    /// in a graph and CPU-only session of its own, which works whether or
    /// not eager execution is on, before or after the user's session exists.
    fn download_barrier(&self, context: &RewriteContext, name: &str) -> Option<Vec<String>> {
        if !self.runs_in_a_session() {
            return self.eager_barrier(context, name).map(|line| vec![line]);
        }
        let v1 = tf1::compat_v1_name(context);
        Some(vec![
            format!(
                "with {v1}.Graph().as_default(), {v1}.Session(config={v1}.ConfigProto(device_count={{\"GPU\": 0}})) as {name}:"
            ),
            format!(
                "{}{name}.run({}.allreduce({v1}.constant(0), name=\"{name}\"))",
                context.stylist.indent_unit, context.hvd
            ),
        ])
    }

    /// The diagnostics this pattern raises and documents.
    fn codes(&self) -> &'static [Code] {
        &[]
    }

    /// Errors for the training loops of the module that cannot be made whole
    /// (an optimizer that cannot be wrapped): when there is one, the module
    /// is left as written, since half a rewrite trains one model per worker.
    fn refusals(&self, _rewrite: &ModuleRewrite) -> Vec<Diagnostic> {
        Vec::new()
    }

    /// The pattern's own edits and diagnostics; the shared passes run after.
    fn rewrite(&self, rewrite: &mut ModuleRewrite);
}

/// Every pattern the tool rewrites.
pub static REGISTRY: &[&dyn Pattern] = &[
    &keras::Keras,
    &gradient_tape::GradientTape,
    &session::Session,
    &monitored_session::MonitoredSession,
    &estimator::Estimator,
];

/// The plug-in of a pattern.
pub fn plugin_for(pattern: TrainingPattern) -> &'static dyn Pattern {
    *REGISTRY
        .iter()
        .find(|plugin| plugin.pattern() == pattern)
        .expect("every pattern the analysis finds has a plug-in")
}

/// `hvd.init()` is followed by TF2's pinning: memory growth on every GPU, and
/// the one at the process's local rank made the only visible one.
pub fn tf2_device_pinning(context: &RewriteContext, names: &mut Names) -> Vec<String> {
    let (tf, hvd) = (&context.tf, &context.hvd);
    if enables_eager_execution(context.module) {
        let config = names.fresh(&["hvd_config", "horovod_config"]);
        return vec![
            format!("{config} = {tf}.ConfigProto()"),
            format!("{config}.gpu_options.allow_growth = True"),
            format!("{config}.gpu_options.visible_device_list = str({hvd}.local_rank())"),
            format!("{tf}.enable_eager_execution(config={config})"),
        ];
    }
    let gpus = names.fresh(&["gpus", "hvd_gpus"]);
    let gpu = names.fresh(&["gpu", "hvd_gpu"]);
    let gpu_string = context.string("GPU");
    let unit = &context.stylist.indent_unit;
    vec![
        format!("{gpus} = {tf}.config.experimental.list_physical_devices({gpu_string})"),
        format!(
            "for {gpu} in {gpus}:\n{unit}{tf}.config.experimental.set_memory_growth({gpu}, True)"
        ),
        format!(
            "if {gpus}:\n{unit}{tf}.config.experimental.set_visible_devices({gpus}[{hvd}.local_rank()], {gpu_string})"
        ),
    ]
}

/// Whether the module is TF1 code that turns eager execution on itself, with
/// no options (`tf.enable_eager_execution()`): it must be turned on before
/// any TensorFlow op exists (a barrier's), so the init block turns it on,
/// with the local rank's GPU as the only visible one; the program's own
/// call then changes nothing.
fn enables_eager_execution(module: &ModuleAnalysis) -> bool {
    let mut calls = module.scopes.iter().flat_map(|scope| {
        crate::analysis::training::calls_in_scope(scope)
            .into_iter()
            .filter(|(_, call)| {
                scope.bindings.resolve(&call.func).is_some_and(|callee| {
                    matches!(
                        crate::analysis::library::canonical_name(&callee).as_str(),
                        "tensorflow.enable_eager_execution"
                            | "tensorflow.contrib.eager.enable_eager_execution"
                    )
                })
            })
            .map(|(_, call)| call.args.is_empty() && call.keywords.is_empty())
    });
    calls
        .next()
        .is_some_and(|first| first && calls.all(|bare| bare))
}

/// Graph mode: the barrier runs in the session that saved (the session is
/// the first argument of `saver.save(sess, path)`).
pub fn session_save_barrier(context: &RewriteContext, save: &ast::ExprCall) -> Option<String> {
    // Only a saver's `save(sess, ...)` takes a session first (`open(path,
    // "w")` takes a path).
    if !matches!(save.func.as_ref(), Expr::Attribute(attribute) if attribute.attr.as_str() == "save")
    {
        return None;
    }
    // `np.save(path, array)`: a function of an imported module, not a saver.
    if let Expr::Attribute(attribute) = save.func.as_ref()
        && let Expr::Name(receiver) = attribute.value.as_ref()
        && context
            .module
            .module
            .bindings
            .get(receiver.id.as_str())
            .is_some_and(|binding| binding.kind == crate::analysis::bindings::BindingKind::Import)
    {
        return None;
    }
    match save.args.first() {
        Some(Expr::Name(session)) => Some(format!(
            "{}.run({}.allreduce({}.constant(0), name=\"save_barrier\"))",
            session.id, context.hvd, context.tf
        )),
        _ => None,
    }
}
