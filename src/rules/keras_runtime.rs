//! Which Keras the rewritten module runs: Keras 2 and Keras 3 differ in
//! APIs that generated code calls (an optimizer's `variables`, what
//! `get_file(..., extract=True)` returns), and `tf.keras` is either one,
//! by the TensorFlow release (2.16 and later ship Keras 3).

use crate::analysis::keras_version::{self, KerasGeneration};
use crate::analysis::library;

use super::rewrite::ModuleRewrite;

/// The Keras generation the module is known to run, or `None` when the
/// program does not say.
pub fn known_generation(rewrite: &ModuleRewrite) -> Option<Generation> {
    let module = rewrite.module.module;
    let generation = keras_version::generation_of(rewrite.analysis.keras_pin.as_ref(), module);
    let imports_keras = module
        .bindings
        .iter()
        .any(|(_, binding)| library::is_standalone_keras(&binding.qualified));
    // A standalone `import keras` is judged on its own: its pin, its
    // idioms, else Keras 3 (what `pip install keras` gives).
    if imports_keras && matches!(generation, KerasGeneration::Three { .. }) {
        return Some(Generation::Three);
    }
    // Horovod's Keras API, which the rewrite imports, runs on Keras 2 only.
    let horovod = rewrite
        .plugin
        .horovod_module_for(rewrite.analysis, rewrite.module);
    if matches!(horovod, "horovod.keras" | "horovod.tensorflow.keras") {
        return Some(Generation::Two);
    }
    if let Some((release, _)) =
        keras_version::tensorflow_release(&rewrite.analysis.package.root, module)
    {
        return Some(match release < (2, 16) {
            true => Generation::Two,
            false => Generation::Three,
        });
    }
    match generation {
        KerasGeneration::Two { .. } => Some(Generation::Two),
        KerasGeneration::Three { .. } => None,
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Generation {
    Two,
    Three,
}
