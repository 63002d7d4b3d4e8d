use super::*;

fn read(text: &str) -> Result<Catalogue, CatalogueError> {
    let mut catalogue = Catalogue::default();
    load::read_file(&mut catalogue, "catalogue/test.yml", text)?;
    Ok(catalogue)
}

fn call(source: &str) -> ast::ExprCall {
    let parsed = rustpython_parser::parse(source, rustpython_parser::Mode::Expression, "<test>")
        .expect("a call");
    let rustpython_parser::ast::Mod::Expression(expression) = parsed else {
        panic!("an expression");
    };
    match *expression.body {
        Expr::Call(call) => call,
        other => panic!("not a call: {other:?}"),
    }
}

#[test]
fn every_shipped_file_parses_and_covers_its_family() {
    let catalogue = Catalogue::builtin();
    for (name, wanted) in [
        ("os.mkdir", "creates a directory"),
        ("shutil.rmtree", "removes"),
        ("tempfile.mkdtemp", "returns a per-process path"),
        ("urllib.request.urlretrieve", "downloads"),
        (
            "tensorflow.examples.tutorials.mnist.input_data.read_data_sets",
            "downloads",
        ),
        ("tensorflow_datasets.load", "downloads"),
        ("keras.datasets.mnist.load_data", "downloads"),
        ("tensorflow.keras.datasets.cifar10.load_data", "downloads"),
        ("numpy.save", "writes"),
        ("matplotlib.pyplot.savefig", "writes"),
        ("imageio.mimsave", "writes"),
        ("PIL.Image.Image.save", "writes"),
        ("google.cloud.storage.Blob.upload_from_filename", "writes"),
        ("boto3.Client.upload_file", "writes"),
        (
            "tensorflow.compat.v1.train.Saver.save",
            "saves a checkpoint",
        ),
        (
            "tensorflow.compat.v1.global_variables_initializer",
            "initialises variables",
        ),
        ("numpy.random.seed", "seeds randomness"),
        ("tensorflow.data.TFRecordDataset", "produces data"),
    ] {
        let entry = catalogue
            .call(name)
            .unwrap_or_else(|| panic!("{name} is not catalogued"));
        assert!(
            entry.effects.iter().any(|effect| effect.verb() == wanted),
            "{name}: {:?}",
            entry.effects
        );
        assert!(entry.origin.file.starts_with("catalogue/") && entry.origin.line > 1);
    }
}

#[test]
fn methods_are_found_through_the_type_of_their_receiver_or_for_any_receiver() {
    let catalogue = Catalogue::builtin();
    let image = catalogue
        .call("PIL.Image.fromarray")
        .and_then(|entry| entry.returns.clone());
    assert_eq!(image.as_deref(), Some("PIL.Image.Image"));
    assert!(catalogue.method(image.as_deref(), "save").is_some());
    // A receiver of unknown type: `save` says nothing, `savefig` does.
    assert!(catalogue.method(None, "save").is_none());
    assert!(catalogue.method(None, "savefig").is_some());
    assert!(catalogue.method(None, "append").is_none());
}

#[test]
fn conditions_read_the_call() {
    let catalogue = Catalogue::builtin();
    let race_free = |source: &str| {
        let entry = catalogue.call("os.makedirs").expect("catalogued");
        let Some(Effect::CreatesDirectory {
            race_free_when: Some(condition),
            ..
        }) = entry.find(|effect| matches!(effect, Effect::CreatesDirectory { .. }))
        else {
            panic!("no condition");
        };
        condition.on(&call(source))
    };
    assert_eq!(race_free("os.makedirs(d, exist_ok=True)"), Certainty::Holds);
    assert_eq!(race_free("os.makedirs(d, 0o755, True)"), Certainty::Holds);
    assert_eq!(race_free("os.makedirs(d)"), Certainty::Fails);
    assert_eq!(
        race_free("os.makedirs(d, exist_ok=False)"),
        Certainty::Fails
    );
    assert_eq!(
        race_free("os.makedirs(d, exist_ok=flag)"),
        Certainty::Unknown
    );
    let writes = |source: &str| {
        let entry = catalogue.call("builtins.open").expect("catalogued");
        let Some(Effect::Writes {
            when: Some(condition),
            ..
        }) = entry.find(|effect| matches!(effect, Effect::Writes { .. }))
        else {
            panic!("no condition");
        };
        condition.on(&call(source))
    };
    assert_eq!(writes("open(p, 'w')"), Certainty::Holds);
    assert_eq!(writes("open(p, mode='ab')"), Certainty::Holds);
    assert_eq!(writes("open(p)"), Certainty::Fails);
    assert_eq!(writes("open(p, 'rb')"), Certainty::Fails);
}

#[test]
fn a_source_with_no_seed_argument_shuffles_per_process_when_asked() {
    let catalogue = Catalogue::builtin();
    let entry = catalogue
        .call("tensorflow_datasets.load")
        .expect("catalogued");
    let Some(Effect::DataSource {
        shuffles: Some(shuffling),
        ..
    }) = entry.find(|effect| matches!(effect, Effect::DataSource { .. }))
    else {
        panic!("tfds.load names its file shuffle");
    };
    let per_process = |source: &str| shuffling.per_process(&call(source));
    assert_eq!(
        per_process("tfds.load('mnist', split='train')"),
        Certainty::Fails
    );
    assert_eq!(
        per_process("tfds.load('mnist', split='train', shuffle_files=True)"),
        Certainty::Holds
    );
    assert_eq!(
        per_process("tfds.load('mnist', shuffle_files=shuffle)"),
        Certainty::Unknown
    );
}

#[test]
fn names_say_what_unknown_calls_do() {
    let catalogue = Catalogue::builtin();
    let effect = |name: &str, method: bool| {
        catalogue
            .by_name(name, method)
            .map(|rule| rule.effect.verb())
    };
    assert_eq!(effect("save_images", false), Some("writes"));
    assert_eq!(effect("saveModel", true), Some("writes"));
    assert_eq!(effect("maybe_download", false), Some("downloads"));
    assert_eq!(effect("makedirs", true), Some("creates a directory"));
    // `list.remove` and `file.write` are not storage.
    assert_eq!(effect("remove", true), None);
    assert_eq!(effect("write", true), None);
    assert_eq!(effect("saved", false), None);
    assert_eq!(effect("evaluate", false), None);
}

#[test]
fn a_bad_entry_is_an_error_naming_the_file_and_line() {
    let unknown_effect =
        "family: x\ncalls:\n  a.b:\n    writes: {path: 0}\n  c.d:\n    wrties: {path: 0}\n";
    let error = read(unknown_effect).expect_err("misspelt effect");
    assert_eq!(error.file, "catalogue/test.yml");
    assert_eq!(error.line, Some(6), "{error}");
    assert!(error.to_string().contains("wrties"), "{error}");

    let no_argument = "family: x\ncalls:\n  a.b:\n    writes: {path: 0}\n  c.d:\n    creates-directory: {race-free-when: {truthy: true}}\n";
    let error = read(no_argument).expect_err("condition without argument");
    assert_eq!(error.line, Some(5), "{error}");
    assert!(
        error
            .to_string()
            .starts_with("catalogue/test.yml:5: c.d: a condition needs"),
        "{error}"
    );

    let nothing = "family: x\ncalls:\n  a.b: {}\n";
    let error = read(nothing).expect_err("no effect");
    assert!(
        error
            .to_string()
            .starts_with("catalogue/test.yml:3: a.b: no effect given"),
        "{error}"
    );

    let bad_name = "family: x\ncalls:\n  \"a b\":\n    seeds: true\n";
    assert!(
        read(bad_name)
            .expect_err("bad name")
            .to_string()
            .contains("not a dotted name")
    );
}

#[test]
fn user_entries_override_and_extend() {
    let text = "calls:\n  mylib.io.save_artifact:\n    writes: {path: 0}\n  os.mkdir:\n    creates-directory: {path: 0, race-free-when: {keyword: exist_ok, truthy: true}}\nnames:\n  - {word: persist, applies-to: both, effect: writes}\nshell:\n  fetch-data: {writes: true}\n";
    let user: UserEntries = serde_yaml::from_str(text).expect("valid");
    let user = user.checked(".distribute.yml", text).expect("checked");
    let catalogue = Catalogue::extended(&user);
    let added = catalogue.call("mylib.io.save_artifact").expect("added");
    assert_eq!(
        added.origin,
        Origin {
            file: ".distribute.yml".into(),
            line: 2
        }
    );
    let mkdir = catalogue.call("os.mkdir").expect("still there");
    assert_eq!(mkdir.origin.file, ".distribute.yml");
    assert!(catalogue.by_name("persist_state", false).is_some());
    assert!(catalogue.shell_command_writes("fetch-data --all"));
    // The built-in catalogue itself is untouched.
    assert_eq!(
        Catalogue::builtin()
            .call("os.mkdir")
            .map(|entry| entry.origin.file.as_str()),
        Some("catalogue/filesystem.yml")
    );
}

#[test]
fn shell_programs_say_which_command_lines_write() {
    let catalogue = Catalogue::builtin();
    assert!(catalogue.shell_command_writes("wget -q https://example.com/a.zip"));
    // `curl URL` prints; `-o` or `-O` writes a file.
    assert!(!catalogue.shell_command_writes("curl https://example.com"));
    assert!(catalogue.shell_command_writes("curl -sSL -o a.zip https://example.com/a.zip"));
    assert!(!catalogue.shell_command_writes("pip install -q keras-tuner"));
    assert!(!catalogue.shell_command_writes("nvidia-smi"));

    let text = "family: x\nshell:\n  tool: {writes: false}\n";
    let mut read = Catalogue::default();
    let error = super::load::read_file(&mut read, "catalogue/x.yml", text)
        .expect_err("a listed program writes");
    assert_eq!(error.line, Some(3));
    assert!(error.to_string().contains("`writes: true`"));
}

#[test]
fn only_output_sent_to_a_file_is_a_write() {
    use super::redirects_to_a_file;
    assert!(redirects_to_a_file("python prepare.py > data.csv"));
    assert!(redirects_to_a_file("echo done >> log.txt"));
    assert!(!redirects_to_a_file(
        "pip install comet_ml > /dev/null 2>&1"
    ));
    assert!(!redirects_to_a_file("apt-get install -y swig 2>&1"));
    assert!(!redirects_to_a_file("nvidia-smi"));
}
