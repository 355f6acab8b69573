//! docs/dashboard.md prints the capability table: every action with every role's grant, in the
//! domain's order. A change of the table without the document (or the reverse) fails here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use stablepay_domain::account::{Action, CAPABILITIES, Grant, Role};

#[test]
fn the_documented_table_is_the_domains() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/dashboard.md")).unwrap();
    let header = format!("| action | what it covers | {} |", Role::ALL.map(Role::as_str).join(" | "));
    assert!(doc.contains(&header), "the table's header names the roles in order");
    // The table's rows: from its header to the first line that is not a row.
    let rows: Vec<Vec<String>> = doc
        .lines()
        .skip_while(|l| *l != header)
        .take_while(|l| l.starts_with('|'))
        .filter(|l| l.starts_with("| `"))
        .map(|l| l.trim_matches('|').split('|').map(|c| c.trim().to_owned()).collect())
        .collect();
    assert_eq!(rows.len(), Action::ALL.len());
    for ((action, grants), row) in CAPABILITIES.iter().zip(&rows) {
        assert_eq!(row[0], format!("`{}`", action.as_str()));
        let words: Vec<&str> = grants
            .iter()
            .map(|g| match g {
                Grant::Yes => "yes",
                Grant::TestOnly => "test mode",
                Grant::No => "no",
            })
            .collect();
        assert_eq!(row[2..], words, "{}", action.as_str());
    }
}
