//! The README documents every diagnostic code with its name and default
//! severity, and what `action.yml` takes and gives.

use std::path::Path;

use distribute::registry::all_codes;

#[test]
fn readme_lists_every_diagnostic_code() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    for code in all_codes() {
        let (id, name, severity) = (code.id(), code.name(), code.default_severity());
        let row = format!("| {id} | {name} | {} |", severity.name());
        assert!(
            readme.contains(&row),
            "README.md lacks the row starting `{row}`"
        );
    }
}

/// `action.yml` declares what the README promises (inputs, outputs, the
/// composite step that runs `distribute github`), and every input reaches the
/// command through the environment, never spliced into the script.
#[test]
fn the_action_declares_the_documented_inputs_and_outputs() {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("action.yml"))
        .expect("action.yml at the repository root");
    let action: serde_yaml::Value = serde_yaml::from_str(&text).expect("action.yml is YAML");
    let keys = |section: &str| -> Vec<String> {
        action[section]
            .as_mapping()
            .unwrap_or_else(|| panic!("action.yml has no {section}"))
            .keys()
            .map(|key| key.as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        keys("inputs"),
        ["github-token", "mode", "config", "fail-on"]
    );
    assert_eq!(
        keys("outputs"),
        ["rewritten-files", "diagnostics", "pull-request"]
    );
    assert_eq!(
        action["inputs"]["github-token"]["default"],
        "${{ github.token }}"
    );
    assert_eq!(action["runs"]["using"], "composite");
    let steps = action["runs"]["steps"].as_sequence().unwrap();
    let run = steps
        .iter()
        .find(|step| step["id"] == "run")
        .expect("a step with id `run` (the outputs read it)");
    let script = run["run"].as_str().unwrap();
    assert!(script.contains("github --mode"), "{script}");
    assert!(
        !script.contains("${{ inputs."),
        "inputs must reach the script through env, not be spliced into it: {script}"
    );
    assert_eq!(run["env"]["GITHUB_TOKEN"], "${{ inputs.github-token }}");
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    for input in keys("inputs").iter().chain(keys("outputs").iter()) {
        assert!(
            readme.contains(&format!("`{input}`")),
            "the README does not document `{input}`"
        );
    }
}
