//! `.distribute.yml`: which files, where rewrites go, how severe each
//! diagnostic is, and whether to shard datasets. Unknown keys and wrong types
//! are errors naming the key and its line.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use globset::{Glob, GlobSet, GlobSetBuilder};
use serde::Deserialize;

use crate::analysis::catalogue::{Catalogue, UserEntries};
use crate::diagnostics::{Code, Severity};
use std::sync::Arc;

pub const CONFIG_FILE_NAME: &str = ".distribute.yml";

/// The configuration as written in the file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    /// Globs (relative to the package root) of files to analyse; all `.py` files when empty.
    #[serde(default)]
    pub include: Vec<String>,
    /// Globs of files never analysed.
    #[serde(default)]
    pub exclude: Vec<String>,
    #[serde(default)]
    pub output: OutputConfig,
    /// Per-code severity: `DST101: off`, `dataset-not-sharded: error`.
    #[serde(default)]
    pub severity: BTreeMap<String, SeveritySetting>,
    /// Shard the tf.data pipeline a training loop walks once per epoch
    /// (`.shard(hvd.size(), hvd.rank())`): on unless turned off.
    #[serde(default = "sharding_by_default")]
    pub shard_datasets: bool,
    /// Epochs over which `fit` ramps a scaled learning rate up (Horovod's
    /// `LearningRateWarmupCallback`); `0` adds no warm-up.
    #[serde(default = "warmup_epochs_by_default")]
    pub warmup_epochs: u32,
    /// Apply unsafe rewrites too (those with an obligation the checker
    /// could not show), as `--unsafe-fixes` does.
    #[serde(default, rename = "unsafe-fixes")]
    pub unsafe_fixes: bool,
    /// What the user's own libraries do, in the catalogue's format
    /// (`calls:` and `names:`), over the shipped catalogue.
    #[serde(default)]
    pub library: UserEntries,
}

fn sharding_by_default() -> bool {
    true
}

/// What Horovod's own Keras examples use.
pub const DEFAULT_WARMUP_EPOCHS: u32 = 5;

fn warmup_epochs_by_default() -> u32 {
    DEFAULT_WARMUP_EPOCHS
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutputConfig {
    #[serde(default)]
    pub mode: OutputModeName,
    /// For `mode: suffix`: `train.py` -> `train<suffix>`.
    #[serde(default = "default_suffix")]
    pub suffix: String,
    /// For `mode: directory`: where the mirrored package goes (relative to the root).
    #[serde(default = "default_directory")]
    pub directory: String,
}

impl Default for OutputConfig {
    fn default() -> Self {
        OutputConfig {
            mode: OutputModeName::InPlace,
            suffix: default_suffix(),
            directory: default_directory(),
        }
    }
}

fn default_suffix() -> String {
    "_distributed.py".into()
}

fn default_directory() -> String {
    "distributed".into()
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OutputModeName {
    #[default]
    InPlace,
    Suffix,
    Directory,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SeveritySetting {
    Error,
    Warning,
    Info,
    Off,
}

/// Where `fix` writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OutputMode {
    InPlace,
    /// A sibling file: `train.py` -> `train_distributed.py`.
    Suffix(String),
    /// A directory (relative to the root) mirroring the package.
    Directory(PathBuf),
}

/// The configuration, checked and ready to use.
#[derive(Debug, Clone)]
pub struct Config {
    pub include: Option<GlobSet>,
    pub exclude: Option<GlobSet>,
    pub output: OutputMode,
    pub severity: BTreeMap<Code, Option<Severity>>,
    pub shard_datasets: bool,
    pub warmup_epochs: u32,
    /// Apply unsafe rewrites too (`unsafe-fixes: true`).
    pub unsafe_fixes: bool,
    /// The file it came from, if any.
    pub source: Option<PathBuf>,
    /// The catalogue of library behaviour, with the `library:` entries.
    pub library: Arc<Catalogue>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            include: None,
            exclude: None,
            output: OutputMode::InPlace,
            severity: BTreeMap::new(),
            shard_datasets: true,
            warmup_epochs: DEFAULT_WARMUP_EPOCHS,
            unsafe_fixes: false,
            source: None,
            library: Catalogue::builtin(),
        }
    }
}

/// A configuration error, with the file and line where it is.
#[derive(Debug, thiserror::Error)]
#[error("{path}{}: {message}", .line.map(|line| format!(":{line}")).unwrap_or_default())]
pub struct ConfigError {
    pub path: String,
    pub line: Option<usize>,
    pub message: String,
}

impl Config {
    /// Reads `path`, or `.distribute.yml` at the root when `path` is `None` (absent: defaults).
    /// `codes` are the diagnostic codes `severity:` may name.
    pub fn load(root: &Path, path: Option<&Path>, codes: &[Code]) -> Result<Config, ConfigError> {
        let (path, required) = match path {
            Some(path) => (path.to_path_buf(), true),
            None => (root.join(CONFIG_FILE_NAME), false),
        };
        let display = path.display().to_string();
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound && !required => {
                return Ok(Config::default());
            }
            Err(error) => {
                return Err(ConfigError {
                    path: display,
                    line: None,
                    message: format!("cannot read: {error}"),
                });
            }
        };
        let mut config = Config::parse(&text, &display, codes)?;
        config.source = Some(path);
        Ok(config)
    }

    /// Parses configuration text; `display` names the file in errors.
    pub fn parse(text: &str, display: &str, codes: &[Code]) -> Result<Config, ConfigError> {
        let source = ConfigText { text, display };
        let file = source.deserialize()?;
        let severity = source.severity(&file.severity, codes)?;
        let output = source.output_mode(&file.output)?;
        Ok(Config {
            include: source.globs(&file.include, "include")?,
            exclude: source.globs(&file.exclude, "exclude")?,
            output,
            severity,
            shard_datasets: file.shard_datasets,
            warmup_epochs: file.warmup_epochs,
            unsafe_fixes: file.unsafe_fixes,
            source: None,
            library: source.library(file.library)?,
        })
    }

    /// Whether a file (relative to the root) is analysed at all.
    pub fn selects(&self, relative_path: &str) -> bool {
        if self
            .include
            .as_ref()
            .is_some_and(|include| !include.is_match(relative_path))
        {
            return false;
        }
        if self
            .exclude
            .as_ref()
            .is_some_and(|exclude| exclude.is_match(relative_path))
        {
            return false;
        }
        match &self.output {
            // The tool's own output is not input.
            OutputMode::Suffix(suffix) => {
                !relative_path.ends_with(suffix.as_str())
                    && !relative_path.ends_with(&notebook_suffix(suffix))
            }
            OutputMode::Directory(directory) => !Path::new(relative_path).starts_with(directory),
            OutputMode::InPlace => true,
        }
    }

    /// Where the rewrite of `relative_path` is written (relative to the root).
    pub fn output_path(&self, relative_path: &str) -> PathBuf {
        match &self.output {
            OutputMode::InPlace => PathBuf::from(relative_path),
            OutputMode::Suffix(suffix) => match relative_path.strip_suffix(".ipynb") {
                Some(stem) => PathBuf::from(format!("{stem}{}", notebook_suffix(suffix))),
                None => PathBuf::from(format!(
                    "{}{suffix}",
                    relative_path.strip_suffix(".py").unwrap_or(relative_path)
                )),
            },
            OutputMode::Directory(directory) => directory.join(relative_path),
        }
    }

    /// The severity a diagnostic is reported with, or `None` when it is off.
    pub fn severity_of(&self, code: Code) -> Option<Severity> {
        match self.severity.get(&code) {
            Some(setting) => *setting,
            None => Some(code.default_severity()),
        }
    }
}

/// The suffix a notebook's output takes: `_distributed.py` -> `_distributed.ipynb`.
fn notebook_suffix(suffix: &str) -> String {
    format!("{}.ipynb", suffix.strip_suffix(".py").unwrap_or(suffix))
}

/// Configuration text being checked, with the name of its file for errors.
struct ConfigText<'t> {
    text: &'t str,
    display: &'t str,
}

impl ConfigText<'_> {
    fn error(&self, line: Option<usize>, message: String) -> ConfigError {
        ConfigError {
            path: self.display.to_string(),
            line,
            message,
        }
    }

    /// The first line mentioning `needle`: serde does not say where a value was.
    fn line_of(&self, needle: &str) -> Option<usize> {
        self.text
            .lines()
            .position(|line| line.contains(needle))
            .map(|index| index + 1)
    }

    /// The file as written; an empty file is the defaults.
    fn deserialize(&self) -> Result<ConfigFile, ConfigError> {
        if self.text.trim().is_empty() {
            return Ok(ConfigFile::default());
        }
        serde_yaml::from_str(self.text)
            .map_err(|yaml| self.error(yaml.location().map(|at| at.line()), yaml.to_string()))
    }

    /// The shipped catalogue, extended by the `library:` entries.
    fn library(&self, entries: UserEntries) -> Result<Arc<Catalogue>, ConfigError> {
        if entries.is_empty() {
            return Ok(Catalogue::builtin());
        }
        let entries = entries
            .checked(self.display, self.text)
            .map_err(|error| self.error(error.line, format!("library: {}", error.message)))?;
        Ok(Arc::new(Catalogue::extended(&entries)))
    }

    /// The globs of `key`, or `None` when there are none.
    fn globs(&self, patterns: &[String], key: &str) -> Result<Option<GlobSet>, ConfigError> {
        if patterns.is_empty() {
            return Ok(None);
        }
        let mut builder = GlobSetBuilder::new();
        for pattern in patterns {
            let glob = Glob::new(pattern).map_err(|glob| {
                self.error(
                    self.line_of(pattern),
                    format!("{key}: invalid glob {pattern:?}: {glob}"),
                )
            })?;
            builder.add(glob);
        }
        builder
            .build()
            .map(Some)
            .map_err(|glob| self.error(self.line_of(key), format!("{key}: {glob}")))
    }

    /// Severity per known code; `off` is `None`.
    fn severity(
        &self,
        settings: &BTreeMap<String, SeveritySetting>,
        codes: &[Code],
    ) -> Result<BTreeMap<Code, Option<Severity>>, ConfigError> {
        let mut severity = BTreeMap::new();
        for (key, setting) in settings {
            let code = Code::from_id_or_name(key, codes).ok_or_else(|| {
                self.error(self.line_of(key), format!("severity: unknown diagnostic code `{key}` (expected a code such as DST101 or a name such as dataset-not-sharded)"))
            })?;
            let level = match setting {
                SeveritySetting::Error => Some(Severity::Error),
                SeveritySetting::Warning => Some(Severity::Warning),
                SeveritySetting::Info => Some(Severity::Info),
                SeveritySetting::Off => None,
            };
            severity.insert(code, level);
        }
        Ok(severity)
    }

    /// Where `fix` writes, with the suffix or directory checked.
    fn output_mode(&self, output: &OutputConfig) -> Result<OutputMode, ConfigError> {
        match output.mode {
            OutputModeName::InPlace => Ok(OutputMode::InPlace),
            OutputModeName::Suffix => {
                let suffix = output.suffix.clone();
                if !suffix.ends_with(".py") || suffix == ".py" || suffix.contains('/') {
                    return Err(self.error(
                        self.line_of("suffix:"),
                        format!(
                            "output.suffix: {suffix:?} must end with `.py`, add something before it, and contain no `/`"
                        ),
                    ));
                }
                Ok(OutputMode::Suffix(suffix))
            }
            OutputModeName::Directory => {
                let directory = PathBuf::from(&output.directory);
                if directory.is_absolute()
                    || directory
                        .components()
                        .any(|part| matches!(part, std::path::Component::ParentDir))
                    || output.directory.trim().is_empty()
                {
                    return Err(self.error(
                        self.line_of("directory:"),
                        format!(
                            "output.directory: {:?} must be a relative path inside the package root",
                            output.directory
                        ),
                    ));
                }
                Ok(OutputMode::Directory(directory))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The codes these tests name, as the registry would hand them down.
    const TEST_CODES: &[Code] = &[
        Code::new("DST101", "dataset-not-sharded", Severity::Warning, "test"),
        Code::new(
            "DST102",
            "learning-rate-without-warmup",
            Severity::Info,
            "test",
        ),
    ];

    #[test]
    fn unknown_keys_name_the_key_and_line() {
        let error = Config::parse(
            "include: ['**/*.py']\nshard_dataset: true\n",
            ".distribute.yml",
            TEST_CODES,
        )
        .unwrap_err();
        assert_eq!(error.line, Some(2));
        assert!(
            error.message.contains("unknown field `shard_dataset`"),
            "{}",
            error.message
        );
        assert!(
            error.to_string().starts_with(".distribute.yml:2: "),
            "{error}"
        );
    }

    #[test]
    fn wrong_types_name_the_line() {
        let error = Config::parse(
            "exclude: []\nshard_datasets: sometimes\n",
            "c.yml",
            TEST_CODES,
        )
        .unwrap_err();
        assert_eq!(error.line, Some(2));
        assert!(
            error.message.contains("shard_datasets"),
            "{}",
            error.message
        );
    }

    #[test]
    fn unknown_codes_and_bad_output_are_refused() {
        let error = Config::parse("severity:\n  DST999: off\n", "c.yml", TEST_CODES).unwrap_err();
        assert_eq!(error.line, Some(2));
        let error = Config::parse(
            "output:\n  mode: directory\n  directory: ../elsewhere\n",
            "c.yml",
            TEST_CODES,
        )
        .unwrap_err();
        assert_eq!(error.line, Some(3));
        let error = Config::parse("output:\n  mode: sideways\n", "c.yml", TEST_CODES).unwrap_err();
        assert_eq!(error.line, Some(2));
    }

    #[test]
    fn settings_apply() {
        let config = Config::parse(
            "include: ['src/**']\nexclude: ['src/vendor/**']\noutput:\n  mode: suffix\n  suffix: _hvd.py\nseverity:\n  DST101: off\n  learning-rate-without-warmup: error\nshard_datasets: true\n",
            "c.yml",
            TEST_CODES,
        )
        .unwrap();
        assert!(config.selects("src/train.py"));
        assert!(!config.selects("src/vendor/lib.py"));
        assert!(!config.selects("tools/x.py"));
        assert!(
            !config.selects("src/train_hvd.py"),
            "the tool's own output is not input"
        );
        assert_eq!(
            config.output_path("src/train.py"),
            PathBuf::from("src/train_hvd.py")
        );
        assert!(!config.selects("src/train_hvd.ipynb"));
        assert_eq!(
            config.output_path("src/train.ipynb"),
            PathBuf::from("src/train_hvd.ipynb")
        );
        assert_eq!(
            config.severity_of(crate::rules::passes::loop_steps::DATASET_NOT_SHARDED),
            None
        );
        assert_eq!(
            config.severity_of(crate::rules::passes::learning_rate::LEARNING_RATE_WITHOUT_WARMUP),
            Some(Severity::Error)
        );
        assert_eq!(
            config.severity_of(crate::rules::assumptions::KERAS_3),
            Some(Severity::Warning)
        );
        assert!(config.shard_datasets);
    }
}
