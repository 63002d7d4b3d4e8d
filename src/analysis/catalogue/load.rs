//! Reading catalogue files and the `library:` key of `.distribute.yml`:
//! typed, so that a misspelt effect or option is an error naming its file
//! and line.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::{
    Argument, Catalogue, Condition, ConditionTest, Effect, Entry, NameKind, NameRule, Origin,
    ShardLevel, ShellProgram, Shuffling,
};

/// Every `catalogue/*.yml`, embedded by the build script.
const FILES: &[(&str, &str)] = include!(concat!(env!("OUT_DIR"), "/catalogue_files.rs"));

/// A catalogue file or user entry that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}{}: {message}", .line.map(|line| format!(":{line}")).unwrap_or_default())]
pub struct CatalogueError {
    pub file: String,
    pub line: Option<usize>,
    pub message: String,
}

/// One catalogue file as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileText {
    /// The library family the file describes (`filesystem`, `pil`).
    #[allow(dead_code)]
    family: String,
    #[serde(default)]
    calls: BTreeMap<String, EntryText>,
    #[serde(default)]
    names: Vec<NameText>,
    #[serde(default)]
    shell: BTreeMap<String, ShellText>,
}

/// A program a notebook runs in a shell (`!wget URL`): what it does to the
/// files every worker shares.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct ShellText {
    #[serde(default)]
    writes: bool,
    /// Only when one of its words starts with one of these (`-o` of curl,
    /// `install` of pip); always when absent.
    #[serde(default)]
    when_any_word: Vec<String>,
}

/// The `library:` key of `.distribute.yml`: the same `calls` and `names`
/// as a catalogue file, which override and extend the built-in ones.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UserEntries {
    #[serde(default)]
    calls: BTreeMap<String, EntryText>,
    #[serde(default)]
    names: Vec<NameText>,
    #[serde(default)]
    shell: BTreeMap<String, ShellText>,
    /// The configuration file, for origins and errors (set after reading).
    #[serde(skip)]
    file: String,
    #[serde(skip)]
    text: String,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct EntryText {
    writes: Option<WritesText>,
    reads: Option<PathText>,
    downloads: Option<DownloadsText>,
    fetches: Option<bool>,
    creates_directory: Option<DirectoryText>,
    removes: Option<RemovesText>,
    temporary_path: Option<bool>,
    seeds: Option<bool>,
    seeds_with: Option<ArgumentText>,
    /// Runs the command in this argument (a string, or a list of words) as
    /// a program of the `shell` family (`os.system`, `subprocess.run`).
    runs_shell: Option<ArgumentText>,
    data_source: Option<DataSourceText>,
    initialises_variables: Option<bool>,
    saves_checkpoint: Option<bool>,
    restores_checkpoint: Option<bool>,
    summary_op: Option<bool>,
    windows_series: Option<bool>,
    writes_summary: Option<bool>,
    hides_inner_optimizer: Option<bool>,
    counts_steps: Option<StepsText>,
    callback_writes: Option<PathText>,
    trains_elsewhere: Option<TrainsElsewhereText>,
    /// Touches no storage and races with nobody: known, so its name says nothing.
    #[serde(default)]
    harmless: bool,
    /// The type of the value returned (`PIL.Image.Image`).
    returns: Option<String>,
}

/// `0`, `path`, or `{position: 0, keyword: path}`.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum ArgumentText {
    Position(usize),
    Keyword(String),
    Both {
        position: Option<usize>,
        keyword: Option<String>,
    },
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct StepsText {
    argument: Option<ArgumentText>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct TrainsElsewhereText {
    builder: Option<ArgumentText>,
    by: String,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct PathText {
    path: Option<ArgumentText>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct WritesText {
    path: Option<ArgumentText>,
    when: Option<ConditionText>,
    #[serde(default)]
    input_data: bool,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct DownloadsText {
    to: Option<ArgumentText>,
    when: Option<ConditionText>,
    extracts_when: Option<ConditionText>,
    #[serde(default)]
    cached: bool,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct DirectoryText {
    path: Option<ArgumentText>,
    race_free_when: Option<ConditionText>,
    race_free_sibling: Option<String>,
    #[serde(default)]
    race_free: bool,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RemovesText {
    path: Option<ArgumentText>,
    #[serde(default)]
    tree: bool,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct DataSourceText {
    level: ShardLevelText,
    #[serde(default)]
    pipeline: bool,
    #[serde(default = "counted_by_default")]
    counted: bool,
    shuffles: Option<ShufflingText>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct ShufflingText {
    flag: ArgumentText,
    by_default: bool,
    /// Absent: the call takes no seed, so its shuffle differs per process.
    seed: Option<ArgumentText>,
    #[serde(default = "may_turn_off_by_default")]
    may_turn_off: bool,
}

fn may_turn_off_by_default() -> bool {
    true
}

fn counted_by_default() -> bool {
    true
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum ShardLevelText {
    Files,
    Records,
    Examples,
    Series,
    Batches,
}

/// `{keyword: exist_ok, position: 2, truthy: true}` or `{..., contains-any: "wax"}`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct ConditionText {
    position: Option<usize>,
    keyword: Option<String>,
    truthy: Option<bool>,
    contains_any: Option<String>,
    equals_or_absent: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct NameText {
    word: String,
    applies_to: NameKindText,
    effect: NameEffectText,
    /// A directory made this way is no race when the condition holds
    /// (`exist_ok=True`, whatever the receiver).
    race_free_when: Option<ConditionText>,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum NameKindText {
    Functions,
    Methods,
    Both,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum NameEffectText {
    Writes,
    Downloads,
    CreatesDirectory,
    Removes,
}

/// Reads every embedded catalogue file.
pub(super) fn builtin() -> Result<Catalogue, CatalogueError> {
    let mut catalogue = Catalogue::default();
    for (file, text) in FILES {
        read_file(&mut catalogue, &format!("catalogue/{file}"), text)?;
    }
    Ok(catalogue)
}

/// Reads one catalogue file into `catalogue` (later entries win).
pub(super) fn read_file(
    catalogue: &mut Catalogue,
    file: &str,
    text: &str,
) -> Result<(), CatalogueError> {
    let parsed: FileText = serde_yaml::from_str(text).map_err(|yaml| CatalogueError {
        file: file.to_string(),
        line: yaml.location().map(|at| at.line()),
        message: yaml.to_string(),
    })?;
    let source = Source { file, text };
    add_entries(catalogue, &source, &parsed.calls, &parsed.names)?;
    add_shell_programs(catalogue, &source, &parsed.shell)
}

fn add_shell_programs(
    catalogue: &mut Catalogue,
    source: &Source,
    programs: &BTreeMap<String, ShellText>,
) -> Result<(), CatalogueError> {
    for (name, text) in programs {
        if !text.writes {
            return Err(source.error(
                name,
                format!("{name}: a shell program is listed for what it does: `writes: true`"),
            ));
        }
        catalogue.shell.insert(
            name.clone(),
            ShellProgram {
                when_any_word: text.when_any_word.clone(),
            },
        );
    }
    Ok(())
}

/// The text entries came from, for origins and errors.
struct Source<'t> {
    file: &'t str,
    text: &'t str,
}

impl Source<'_> {
    /// The line where a key is written: serde does not say where a value was.
    fn line_of(&self, key: &str) -> usize {
        self.text
            .lines()
            .position(|line| {
                let line = line.trim_start().trim_start_matches(['"', '\'', '-', ' ']);
                line.strip_prefix(key)
                    .is_some_and(|rest| rest.trim_start_matches(['"', '\'']).starts_with(':'))
            })
            .map_or(1, |index| index + 1)
    }

    fn error(&self, key: &str, message: String) -> CatalogueError {
        CatalogueError {
            file: self.file.to_string(),
            line: Some(self.line_of(key)),
            message,
        }
    }
}

fn add_entries(
    catalogue: &mut Catalogue,
    source: &Source,
    calls: &BTreeMap<String, EntryText>,
    names: &[NameText],
) -> Result<(), CatalogueError> {
    for (name, text) in calls {
        let valid_name = !name.is_empty()
            && name.split('.').all(|segment| {
                // `TF*`: any segment that starts with `TF`.
                let stem = segment.strip_suffix('*').unwrap_or(segment);
                segment == "*"
                    || segment == "<builtin>"
                    || stem
                        .chars()
                        .all(|character| character.is_alphanumeric() || character == '_')
                        && !stem.is_empty()
            });
        if !valid_name {
            return Err(source.error(
                name,
                format!(
                    "`{name}` is not a dotted name (`module.function`, `Type.method`, `*.method`)"
                ),
            ));
        }
        let effects =
            effects_of(text).map_err(|message| source.error(name, format!("{name}: {message}")))?;
        if effects.is_empty() && text.returns.is_none() && !text.harmless {
            return Err(source.error(name, format!("{name}: no effect given (writes, reads, downloads, fetches, creates-directory, removes, temporary-path, seeds, seeds-with, runs-shell, data-source, initialises-variables, saves-checkpoint, restores-checkpoint, summary-op, windows-series, writes-summary, hides-inner-optimizer, counts-steps, callback-writes, trains-elsewhere, returns, or harmless: true)")));
        }
        let origin = Origin {
            file: source.file.to_string(),
            line: source.line_of(name),
        };
        let entry = Entry {
            effects,
            returns: text.returns.clone(),
            origin,
        };
        catalogue.insert(name.clone(), entry);
    }
    for name in names {
        if name.word.is_empty() {
            return Err(source.error("word", "names: an empty `word` matches every name".into()));
        }
        let rule = NameRule {
            word: name.word.clone(),
            applies_to: match name.applies_to {
                NameKindText::Functions => NameKind::Functions,
                NameKindText::Methods => NameKind::Methods,
                NameKindText::Both => NameKind::Both,
            },
            effect: match name.effect {
                NameEffectText::Writes => Effect::Writes {
                    path: None,
                    when: None,
                    input_data: false,
                },
                NameEffectText::Downloads => Effect::Downloads {
                    to: None,
                    when: None,
                    extracts_when: None,
                    cached: false,
                },
                NameEffectText::CreatesDirectory => Effect::CreatesDirectory {
                    path: None,
                    race_free_when: condition(name.race_free_when.as_ref())
                        .map_err(|message| source.error(&name.word, message))?,
                    race_free_sibling: None,
                    race_free: false,
                },
                NameEffectText::Removes => Effect::Removes {
                    path: None,
                    tree: false,
                },
            },
        };
        catalogue
            .names
            .retain(|existing| existing.word != rule.word);
        catalogue.names.insert(0, rule);
    }
    Ok(())
}

fn effects_of(text: &EntryText) -> Result<Vec<Effect>, String> {
    let mut effects = Vec::new();
    if let Some(writes) = &text.writes {
        effects.push(Effect::Writes {
            path: argument(writes.path.as_ref())?,
            when: condition(writes.when.as_ref())?,
            input_data: writes.input_data,
        });
    }
    if let Some(reads) = &text.reads {
        effects.push(Effect::Reads {
            path: argument(reads.path.as_ref())?,
        });
    }
    if let Some(downloads) = &text.downloads {
        effects.push(Effect::Downloads {
            to: argument(downloads.to.as_ref())?,
            when: condition(downloads.when.as_ref())?,
            extracts_when: condition(downloads.extracts_when.as_ref())?,
            cached: downloads.cached,
        });
    }
    if let Some(directory) = &text.creates_directory {
        effects.push(Effect::CreatesDirectory {
            path: argument(directory.path.as_ref())?,
            race_free_when: condition(directory.race_free_when.as_ref())?,
            race_free_sibling: directory.race_free_sibling.clone(),
            race_free: directory.race_free,
        });
    }
    if let Some(removes) = &text.removes {
        effects.push(Effect::Removes {
            path: argument(removes.path.as_ref())?,
            tree: removes.tree,
        });
    }
    if let Some(steps) = &text.counts_steps {
        let Some(argument) = argument(steps.argument.as_ref())? else {
            return Err("counts-steps needs its argument (position, keyword or both)".into());
        };
        effects.push(Effect::CountsSteps { argument });
    }
    if let Some(elsewhere) = &text.trains_elsewhere {
        effects.push(Effect::TrainsElsewhere {
            builder: argument(elsewhere.builder.as_ref())?,
            by: elsewhere.by.clone(),
        });
    }
    if let Some(callback) = &text.callback_writes {
        effects.push(Effect::CallbackWrites {
            path: argument(callback.path.as_ref())?,
        });
    }
    if let Some(seed) = argument(text.seeds_with.as_ref())? {
        effects.push(Effect::SeedsWith { argument: seed });
    }
    if let Some(command) = argument(text.runs_shell.as_ref())? {
        effects.push(Effect::RunsShell { command });
    }
    if let Some(source) = &text.data_source {
        let level = match source.level {
            ShardLevelText::Files => ShardLevel::Files,
            ShardLevelText::Records => ShardLevel::Records,
            ShardLevelText::Examples => ShardLevel::Examples,
            ShardLevelText::Series => ShardLevel::Series,
            ShardLevelText::Batches => ShardLevel::Batches,
        };
        let shuffles = match &source.shuffles {
            Some(text) => Some(Shuffling {
                flag: argument(Some(&text.flag))?.ok_or("shuffles needs its flag argument")?,
                by_default: text.by_default,
                seed: argument(text.seed.as_ref())?.unwrap_or(Argument {
                    position: None,
                    keyword: None,
                }),
                may_turn_off: text.may_turn_off,
            }),
            None => None,
        };
        effects.push(Effect::DataSource {
            level,
            pipeline: source.pipeline,
            counted: source.counted,
            shuffles,
        });
    }
    let flags = [
        (text.fetches, Effect::Fetches),
        (text.temporary_path, Effect::TemporaryPath),
        (text.seeds, Effect::Seeds),
        (text.initialises_variables, Effect::InitialisesVariables),
        (text.saves_checkpoint, Effect::SavesCheckpoint),
        (text.restores_checkpoint, Effect::RestoresCheckpoint),
        (text.summary_op, Effect::SummaryOp),
        (text.windows_series, Effect::WindowsSeries),
        (text.writes_summary, Effect::WritesSummary),
        (text.hides_inner_optimizer, Effect::HidesInnerOptimizer),
    ];
    effects.extend(
        flags
            .into_iter()
            .filter(|(flag, _)| *flag == Some(true))
            .map(|(_, effect)| effect),
    );
    Ok(effects)
}

fn argument(text: Option<&ArgumentText>) -> Result<Option<Argument>, String> {
    let Some(text) = text else {
        return Ok(None);
    };
    let argument = match text {
        ArgumentText::Position(position) => Argument {
            position: Some(*position),
            keyword: None,
        },
        ArgumentText::Keyword(keyword) => Argument {
            position: None,
            keyword: Some(keyword.clone()),
        },
        ArgumentText::Both { position, keyword } => Argument {
            position: *position,
            keyword: keyword.clone(),
        },
    };
    if argument.position.is_none() && argument.keyword.is_none() {
        return Err("an argument needs a `position` or a `keyword`".into());
    }
    Ok(Some(argument))
}

fn condition(text: Option<&ConditionText>) -> Result<Option<Condition>, String> {
    let Some(text) = text else {
        return Ok(None);
    };
    if text.position.is_none() && text.keyword.is_none() {
        return Err(
            "a condition needs the `position` or `keyword` of the argument it tests".into(),
        );
    }
    let test = match (&text.truthy, &text.contains_any, &text.equals_or_absent) {
        (Some(true), None, None) => ConditionTest::Truthy,
        (None, Some(characters), None) if !characters.is_empty() => {
            ConditionTest::ContainsAny(characters.clone())
        }
        (None, None, Some(value)) => ConditionTest::EqualsOrAbsent(value.clone()),
        _ => {
            return Err(
                "a condition tests `truthy: true`, `contains-any: \"...\"` or `equals-or-absent: \"...\"` (one of them)".into(),
            );
        }
    };
    Ok(Some(Condition {
        argument: Argument {
            position: text.position,
            keyword: text.keyword.clone(),
        },
        test,
    }))
}

impl UserEntries {
    /// Checks the entries and keeps where they were written, for errors
    /// and origins.
    pub fn checked(mut self, file: &str, text: &str) -> Result<UserEntries, CatalogueError> {
        self.file = file.to_string();
        self.text = text.to_string();
        let mut scratch = Catalogue::default();
        let source = Source { file, text };
        add_entries(&mut scratch, &source, &self.calls, &self.names)?;
        Ok(self)
    }

    pub fn is_empty(&self) -> bool {
        self.calls.is_empty() && self.names.is_empty()
    }

    pub(super) fn apply_to(&self, catalogue: &mut Catalogue) {
        let source = Source {
            file: &self.file,
            text: &self.text,
        };
        // Checked when read: no error is left here.
        let _ = add_entries(catalogue, &source, &self.calls, &self.names);
        let _ = add_shell_programs(catalogue, &source, &self.shell);
    }
}
