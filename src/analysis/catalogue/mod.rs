//! What library calls do, as data: the catalogue of `catalogue/*.yml` (one
//! file per library family, embedded in the binary) extended by the
//! `library:` entries of `.distribute.yml`. Rules, the checker and the
//! effect summaries of the package's own functions ask it whether a call
//! writes, reads, downloads, creates or removes a path, returns a
//! per-process path, seeds randomness, is a data source, saves a
//! checkpoint or writes a summary. `catalogue/README.md` documents the format.

mod load;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use rustpython_parser::ast::{self, Constant, Expr};

pub use load::{CatalogueError, UserEntries};

/// Where an argument is: by position, by keyword, or both.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Argument {
    pub position: Option<usize>,
    pub keyword: Option<String>,
}

impl Argument {
    /// The expression a call passes for this argument.
    pub fn of<'c>(&self, call: &'c ast::ExprCall) -> Option<&'c Expr> {
        if let Some(keyword) = &self.keyword
            && let Some(found) = call
                .keywords
                .iter()
                .find(|given| given.arg.as_deref() == Some(keyword.as_str()))
        {
            return Some(&found.value);
        }
        let position = self.position?;
        // Arguments after a `*args` cannot be placed.
        let args = &call.args[..];
        if args
            .iter()
            .take(position + 1)
            .any(|arg| matches!(arg, Expr::Starred(_)))
        {
            return None;
        }
        args.get(position)
    }
}

/// A test of one argument, deciding whether an effect happens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Condition {
    pub argument: Argument,
    pub test: ConditionTest,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConditionTest {
    /// Passed and not a false constant (`exist_ok=True`, `extract=True`).
    Truthy,
    /// A string constant containing one of these characters (`mode="w"`).
    ContainsAny(String),
    /// This string constant, or not passed at all (`weights="imagenet"`,
    /// the default).
    EqualsOrAbsent(String),
}

/// How sure the condition is for a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Certainty {
    Holds,
    Fails,
    /// Passed as something the analysis cannot read.
    Unknown,
}

impl Condition {
    pub fn on(&self, call: &ast::ExprCall) -> Certainty {
        let Some(value) = self.argument.of(call) else {
            return match self.test {
                ConditionTest::EqualsOrAbsent(_) => Certainty::Holds,
                _ => Certainty::Fails,
            };
        };
        let Expr::Constant(constant) = value else {
            return Certainty::Unknown;
        };
        let holds = match (&self.test, &constant.value) {
            (ConditionTest::Truthy, Constant::Bool(flag)) => *flag,
            (ConditionTest::Truthy, Constant::None) => false,
            (ConditionTest::Truthy, Constant::Int(number)) => number.to_string() != "0",
            (ConditionTest::Truthy, _) => true,
            (ConditionTest::ContainsAny(characters), Constant::Str(text)) => {
                text.contains(|character| characters.contains(character))
            }
            (ConditionTest::ContainsAny(_), _) => return Certainty::Unknown,
            (ConditionTest::EqualsOrAbsent(wanted), Constant::Str(text)) => text == wanted,
            (ConditionTest::EqualsOrAbsent(_), _) => false,
        };
        if holds {
            Certainty::Holds
        } else {
            Certainty::Fails
        }
    }
}

/// A data source that shuffles what it yields: unless `flag` is passed as
/// false (when absent or `None`, as `by_default` says), and in an order of
/// its own in each process unless `seed` is passed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shuffling {
    pub flag: Argument,
    pub by_default: bool,
    pub seed: Argument,
    /// Passing the flag as false keeps the training order sound (other
    /// shuffles follow: file names); when not, the source's own shuffle is
    /// the only one, and an unseeded call is left whole instead.
    pub may_turn_off: bool,
}

impl Shuffling {
    /// Whether the call draws an order of its own in each process, so that
    /// shards of it taken by rank overlap.
    pub fn per_process(&self, call: &ast::ExprCall) -> Certainty {
        match self.shuffles(call) {
            None => Certainty::Unknown,
            Some(true) if !self.seeded(call) => Certainty::Holds,
            Some(_) => Certainty::Fails,
        }
    }

    /// Whether the call shuffles with a seed passed to it: TensorFlow draws
    /// that order from the seed together with the global one, so a global
    /// seed made per rank gives each process its own order again. A flag
    /// passed as an expression may be on.
    pub fn seeded_order(&self, call: &ast::ExprCall) -> bool {
        self.shuffles(call).unwrap_or(true) && self.seeded(call)
    }

    /// Whether the call shuffles, by its flag (`None`: an expression, not
    /// known before it runs).
    fn shuffles(&self, call: &ast::ExprCall) -> Option<bool> {
        match self.flag.of(call) {
            None => Some(self.by_default),
            Some(Expr::Constant(constant)) => match &constant.value {
                Constant::None => Some(self.by_default),
                Constant::Bool(flag) => Some(*flag),
                _ => None,
            },
            Some(_) => None,
        }
    }

    /// Whether a seed other than `None` is passed.
    fn seeded(&self, call: &ast::ExprCall) -> bool {
        self.seed.of(call).is_some_and(
            |seed| !matches!(seed, Expr::Constant(constant) if constant.value.is_none()),
        )
    }
}

/// At what level sharding a data source is correct.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShardLevel {
    /// Shard the list of files before reading them.
    Files,
    /// Records of a file format, before parsing.
    Records,
    /// Examples, each one whole.
    Examples,
    /// A raw series that must be windowed before it is split.
    Series,
    /// Batches, each whole: a shard takes every N-th batch.
    Batches,
}

/// One effect of a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// Writes the path in `path`; only when `when` holds, if given.
    /// `input_data`: what it writes is data the job reads in to train (a
    /// record file), so the others wait for rank 0's write before going on.
    Writes {
        path: Option<Argument>,
        when: Option<Condition>,
        input_data: bool,
    },
    Reads {
        path: Option<Argument>,
    },
    /// Downloads into a place every process shares; `extracts_when`: the
    /// call unpacks the archive again, even when it is cached.
    Downloads {
        to: Option<Argument>,
        /// Downloads only when this holds (`weights="imagenet"`).
        when: Option<Condition>,
        extracts_when: Option<Condition>,
        /// A second call finds what the first downloaded and fetches nothing.
        cached: bool,
    },
    /// Reads from the network and writes nothing itself.
    Fetches,
    /// Creates a directory; `race_free_when`: an argument that makes a
    /// directory already there no error (`exist_ok=True`).
    CreatesDirectory {
        path: Option<Argument>,
        race_free_when: Option<Condition>,
        /// A function of the same module that creates the directory and
        /// parents, which `race_free_when` makes race-free (`os.makedirs`).
        race_free_sibling: Option<String>,
        /// A directory already there is no error (`tf.io.gfile.makedirs`).
        race_free: bool,
    },
    Removes {
        path: Option<Argument>,
        tree: bool,
    },
    /// Returns a path that differs in every process.
    TemporaryPath,
    Seeds,
    /// Seeds randomness (a graph's, an Estimator's) with this argument
    /// (`RunConfig(tf_random_seed=...)`).
    SeedsWith {
        argument: Argument,
    },
    /// Runs the command in `command` (`"wget URL"`, `["gsutil", "cp", a, b]`)
    /// in a shell: what it does is what the `shell` family says of its program.
    RunsShell {
        command: Argument,
    },
    DataSource {
        level: ShardLevel,
        /// It returns a tf.data pipeline, which `.shard(...)` splits.
        pipeline: bool,
        /// TensorFlow knows how many items the pipeline yields (not so for
        /// the records of files, or a generator's items), so its shards
        /// can be cut to one count.
        counted: bool,
        /// It shuffles what it yields (`list_files`, `image_dataset_from_directory`).
        shuffles: Option<Shuffling>,
    },
    InitialisesVariables,
    SavesCheckpoint,
    RestoresCheckpoint,
    /// Builds a summary op of a TF1 graph (computed by every rank).
    SummaryOp,
    /// Cuts a series into windows (`Dataset.window`): each window is one
    /// example, and TensorFlow knows their count when it knows the series'.
    WindowsSeries,
    WritesSummary,
    /// An optimizer wrapper that updates the variables through its inner
    /// optimizer's update ops, never its `apply_gradients` (tfa's SWA,
    /// MovingAverage, Lookahead): Horovod's DistributedOptimizer can wrap
    /// neither it (rebuilding it from its config is a TypeError) nor, to any
    /// effect, the inner one.
    HidesInnerOptimizer,
    /// A learning-rate schedule whose argument counts optimizer steps
    /// (`CosineDecay`'s `decay_steps`, `PiecewiseConstantDecay`'s
    /// boundaries): each worker takes 1/N of the steps once the work is
    /// split, so the count is divided too, or the schedule stops part-way.
    CountsSteps {
        argument: Argument,
    },
    /// A callback that writes files while `fit` runs (making it writes
    /// nothing), at the path in `path`.
    CallbackWrites {
        path: Option<Argument>,
    },
    /// Trains models through a loop of its own, which the rewrite does not
    /// distribute (`by`: "scikit-learn's fit"): a scikit-learn wrapper of the
    /// models `builder` builds, a reinforcement-learning agent.
    TrainsElsewhere {
        builder: Option<Argument>,
        by: String,
    },
}

impl Effect {
    /// Whether the effect touches storage every process shares.
    pub fn changes_storage(&self) -> bool {
        matches!(
            self,
            Effect::Writes { .. }
                | Effect::Downloads { .. }
                | Effect::CreatesDirectory { .. }
                | Effect::Removes { .. }
                | Effect::SavesCheckpoint
                | Effect::WritesSummary
        )
    }

    /// A few words for messages: "writes", "downloads", ...
    pub fn verb(&self) -> &'static str {
        match self {
            Effect::Writes { .. } => "writes",
            Effect::Reads { .. } => "reads",
            Effect::Downloads { .. } => "downloads",
            Effect::Fetches => "fetches",
            Effect::CreatesDirectory { .. } => "creates a directory",
            Effect::Removes { .. } => "removes",
            Effect::TemporaryPath => "returns a per-process path",
            Effect::Seeds | Effect::SeedsWith { .. } => "seeds randomness",
            Effect::RunsShell { .. } => "runs a shell command",
            Effect::DataSource { .. } => "produces data",
            Effect::InitialisesVariables => "initialises variables",
            Effect::SavesCheckpoint => "saves a checkpoint",
            Effect::RestoresCheckpoint => "restores a checkpoint",
            Effect::SummaryOp => "builds a summary op",
            Effect::WindowsSeries => "cuts a series into windows",
            Effect::WritesSummary => "writes a summary",
            Effect::HidesInnerOptimizer => "hides its inner optimizer",
            Effect::CountsSteps { .. } => "counts optimizer steps",
            Effect::CallbackWrites { .. } => "writes while fit runs",
            Effect::TrainsElsewhere { .. } => "trains models in a loop of its own",
        }
    }
}

/// Where an entry was written: a catalogue file or `.distribute.yml`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    pub file: String,
    pub line: usize,
}

/// What the catalogue says of one callable.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub effects: Vec<Effect>,
    /// The type of what it returns, when methods on it are catalogued.
    pub returns: Option<String>,
    pub origin: Origin,
}

impl Entry {
    pub fn has(&self, wanted: impl Fn(&Effect) -> bool) -> bool {
        self.effects.iter().any(wanted)
    }

    pub fn find(&self, wanted: impl Fn(&Effect) -> bool) -> Option<&Effect> {
        self.effects.iter().find(|effect| wanted(effect))
    }
}

/// What an unknown call's name says it does.
#[derive(Debug, Clone, PartialEq)]
pub struct NameRule {
    /// Matches a name equal to this, or starting with it followed by `_`
    /// or an upper-case letter (`save`, `save_plot`, `saveModel`).
    pub word: String,
    pub applies_to: NameKind,
    pub effect: Effect,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameKind {
    Functions,
    Methods,
    Both,
}

impl NameRule {
    pub fn matches(&self, name: &str, is_method: bool) -> bool {
        let kind = match self.applies_to {
            NameKind::Functions => !is_method,
            NameKind::Methods => is_method,
            NameKind::Both => true,
        };
        let lower = name.trim_start_matches('_');
        kind && (lower == self.word
            || lower.strip_prefix(self.word.as_str()).is_some_and(|rest| {
                rest.starts_with('_') || rest.starts_with(|c: char| c.is_ascii_uppercase())
            }))
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
/// A program run in a shell that writes files where it runs (a download,
/// an archive unpacked, a clone).
pub struct ShellProgram {
    /// Only when a word of the command starts with one of these; always
    /// when empty.
    pub when_any_word: Vec<String>,
}

/// The catalogue: callables by dotted name (a `*` stands for one segment),
/// methods of catalogued types as `Type.method`, and what unknown names say.
#[derive(Debug, Clone, Default)]
pub struct Catalogue {
    entries: HashMap<String, Entry>,
    /// Names with a `*` segment, in the order written.
    patterns: Vec<(Vec<String>, Entry)>,
    /// `method` -> entry, for a method whatever its receiver.
    any_receiver: HashMap<String, Entry>,
    names: Vec<NameRule>,
    /// Programs a notebook runs in a shell, by name.
    shell: HashMap<String, ShellProgram>,
}

impl Catalogue {
    /// The catalogue shipped with the tool.
    pub fn builtin() -> Arc<Catalogue> {
        static BUILTIN: OnceLock<Arc<Catalogue>> = OnceLock::new();
        BUILTIN
            .get_or_init(|| {
                Arc::new(load::builtin().unwrap_or_else(|error| {
                    // The shipped files are checked by the test suite.
                    panic!("the embedded catalogue is invalid: {error}")
                }))
            })
            .clone()
    }

    /// The built-in catalogue with the user's entries on top (they win).
    pub fn extended(user: &UserEntries) -> Catalogue {
        let mut catalogue = Catalogue::builtin().as_ref().clone();
        user.apply_to(&mut catalogue);
        catalogue
    }

    /// The entry of a resolved callable: the name as resolved, then in the
    /// canonical spelling (`keras.x` is `tensorflow.keras.x`).
    pub fn call(&self, resolved: &str) -> Option<&Entry> {
        self.exact_or_pattern(resolved).or_else(|| {
            let canonical = crate::analysis::library::canonical_name(resolved);
            (canonical != resolved)
                .then(|| self.exact_or_pattern(&canonical))
                .flatten()
        })
    }

    fn exact_or_pattern(&self, name: &str) -> Option<&Entry> {
        if let Some(entry) = self.entries.get(name) {
            return Some(entry);
        }
        let segments: Vec<&str> = name.split('.').collect();
        // `*` stands for a segment, `TF*` for one that starts with `TF`.
        let matches = |want: &String, have: &&str| match want.strip_suffix('*') {
            Some(prefix) => have.starts_with(prefix),
            None => want == have,
        };
        // The most specific pattern wins (fewest `*` segments, then fewest
        // prefixes), then the one written last.
        self.patterns
            .iter()
            .filter(|(pattern, _)| {
                pattern.len() == segments.len()
                    && pattern
                        .iter()
                        .zip(&segments)
                        .all(|(want, have)| matches(want, have))
            })
            .min_by_key(|(pattern, _)| {
                let wild = pattern.iter().filter(|segment| *segment == "*").count();
                let prefixes = pattern
                    .iter()
                    .filter(|segment| segment.ends_with('*'))
                    .count();
                (wild, prefixes)
            })
            .map(|(_, entry)| entry)
    }

    /// A method called on a receiver of a catalogued type, or on any
    /// receiver when the method is catalogued for every receiver.
    pub fn method(&self, receiver_type: Option<&str>, method: &str) -> Option<&Entry> {
        receiver_type
            .and_then(|receiver| self.call(&format!("{receiver}.{method}")))
            .or_else(|| self.any_receiver.get(method))
    }

    /// Whether a shell command line (`wget -q URL`) writes files where it
    /// runs: the catalogue knows its program, and its words say it writes.
    pub fn shell_command_writes(&self, command: &str) -> bool {
        let mut words = command.split_whitespace();
        let Some(program) = words.next().and_then(|name| self.shell.get(name)) else {
            return false;
        };
        program.when_any_word.is_empty()
            || words.any(|word| {
                program
                    .when_any_word
                    .iter()
                    .any(|wanted| word.starts_with(wanted.as_str()))
            })
    }

    /// The command a call runs in a shell, when its catalogue entry says it
    /// runs one and the command is written out: a string literal (its
    /// leading literal part, for an f-string), or a list of words whose
    /// first ones are literals.
    pub fn shell_command_of(&self, entry: &Entry, call: &ast::ExprCall) -> Option<String> {
        let command = entry.effects.iter().find_map(|effect| match effect {
            Effect::RunsShell { command } => command.of(call),
            _ => None,
        })?;
        let literal = |expr: &Expr| match expr {
            Expr::Constant(ast::ExprConstant {
                value: ast::Constant::Str(text),
                ..
            }) => Some(text.to_string()),
            Expr::JoinedStr(joined) => match joined.values.first() {
                Some(Expr::Constant(ast::ExprConstant {
                    value: ast::Constant::Str(text),
                    ..
                })) => Some(text.to_string()),
                _ => None,
            },
            _ => None,
        };
        match command {
            Expr::List(ast::ExprList { elts, .. }) | Expr::Tuple(ast::ExprTuple { elts, .. }) => {
                let words: Vec<String> = elts.iter().map_while(literal).collect();
                (!words.is_empty()).then(|| words.join(" "))
            }
            other => literal(other),
        }
    }

    /// What a call that runs a writing shell program does (`subprocess.run(
    /// ["wget", url])`): it writes, where the program puts its files, data
    /// the job may read in.
    pub fn shell_program_writes() -> &'static Entry {
        static WRITES: OnceLock<Entry> = OnceLock::new();
        WRITES.get_or_init(|| Entry {
            effects: vec![Effect::Writes {
                path: None,
                when: None,
                input_data: true,
            }],
            returns: None,
            origin: Origin {
                file: "catalogue/shell.yml".to_string(),
                line: 1,
            },
        })
    }

    /// Whether a notebook's shell line writes files where it runs: its
    /// program is catalogued as writing, or it sends its output to a file.
    pub fn shell_line_writes(&self, command: &str) -> bool {
        self.shell_command_writes(command) || redirects_to_a_file(command)
    }

    /// What an unknown call's name says it does, if anything.
    pub fn by_name(&self, name: &str, is_method: bool) -> Option<&NameRule> {
        self.names.iter().find(|rule| rule.matches(name, is_method))
    }

    /// Every callable with an effect matching `wanted`, for documentation
    /// and tests.
    pub fn names_with(&self, wanted: impl Fn(&Effect) -> bool) -> Vec<&str> {
        let mut names: Vec<&str> = self
            .entries
            .iter()
            .filter(|(_, entry)| entry.has(&wanted))
            .map(|(name, _)| name.as_str())
            .collect();
        names.sort_unstable();
        names
    }

    fn insert(&mut self, name: String, entry: Entry) {
        if let Some(method) = name.strip_prefix("*.") {
            self.any_receiver.insert(method.to_string(), entry);
        } else if name.split('.').any(|segment| segment.ends_with('*')) {
            let segments: Vec<String> = name.split('.').map(str::to_string).collect();
            self.patterns.retain(|(existing, _)| *existing != segments);
            // User entries are inserted last and must win: first match wins.
            self.patterns.insert(0, (segments, entry));
        } else {
            self.entries.insert(name, entry);
        }
    }
}

/// Whether a command line sends output to a file (`> log.txt`, `>> out`);
/// `> /dev/null` and `2>&1` write nothing anyone reads.
fn redirects_to_a_file(command: &str) -> bool {
    command.match_indices('>').any(|(at, _)| {
        let target = command[at..].trim_start_matches('>').trim_start();
        let follows_another = command[..at].ends_with('>');
        !follows_another
            && !target.is_empty()
            && !target.starts_with('&')
            && !target.starts_with("/dev/null")
    })
}
