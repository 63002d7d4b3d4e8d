//! Every diagnostic code the tool can emit, gathered at the top of the crate
//! from where each is declared (the rules and their passes, the patterns,
//! the checker's invariants, the engine's linking of rewrites across
//! modules) and handed down to what looks codes up: the configuration, the
//! result cache and the SARIF rule table. The layers below never reach up
//! for it.

use crate::diagnostics::Code;

/// Every code, sorted by id: gathered once, since every diagnostic read
/// back from the result cache looks its code up here.
pub fn all_codes() -> &'static [Code] {
    static CODES: std::sync::LazyLock<Vec<Code>> = std::sync::LazyLock::new(|| {
        let mut codes = crate::rules::registry::codes();
        codes.extend(crate::checker::codes());
        codes.push(crate::engine::LINKED_REWRITES);
        codes.sort();
        codes
    });
    &CODES
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique_and_found_by_id_or_name() {
        let codes = all_codes();
        let mut ids: Vec<&str> = codes.iter().map(|code| code.id()).collect();
        let mut names: Vec<&str> = codes.iter().map(|code| code.name()).collect();
        ids.dedup();
        names.sort();
        names.dedup();
        assert_eq!(ids.len(), codes.len(), "a code id is declared twice");
        assert_eq!(names.len(), codes.len(), "a code name is declared twice");
        let mixed = Code::from_id_or_name("dst011", codes).expect("DST011 exists");
        assert_eq!(mixed.name(), "mixed-training-loops");
        assert_eq!(
            Code::from_id_or_name("mixed-training-loops", codes),
            Some(mixed)
        );
        assert_eq!(Code::from_id_or_name("DST999", codes), None);
        assert!(
            Code::from_id_or_name("rank-zero-writes", codes).is_some(),
            "the checker's codes are listed"
        );
    }
}
