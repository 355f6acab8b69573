//! CSV as exports write it: RFC 4180 (comma separated, CRLF line ends, a field quoted when it
//! holds a comma, a quote or a line break, quotes doubled), UTF-8, and text that a spreadsheet
//! would run as a formula neutralised as OWASP's "CSV Injection" page recommends: a text cell
//! starting with `=`, `+`, `-`, `@`, a tab or a carriage return gets a leading `'`. Amounts
//! and counts are numbers the service wrote, left as they are (`-1.50` stays a number).

use chrono::{DateTime, Utc};

/// One cell of a row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Cell {
    /// Text from a merchant or a customer (guarded against formulas).
    Text(String),
    /// A number or a code the service wrote (amounts, counts, ids, states): never guarded.
    Plain(String),
    /// Nothing.
    Empty,
}

impl Cell {
    /// Text, or empty.
    pub fn text(value: Option<&str>) -> Self {
        value.map_or(Cell::Empty, |v| Cell::Text(v.to_owned()))
    }

    /// A value the service wrote, or empty.
    pub fn plain(value: Option<impl ToString>) -> Self {
        value.map_or(Cell::Empty, |v| Cell::Plain(v.to_string()))
    }

    /// A time as the API writes it (RFC 3339 in UTC, milliseconds), or empty.
    pub fn time(at: Option<DateTime<Utc>>) -> Self {
        at.map_or(Cell::Empty, |t| Cell::Plain(t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)))
    }
}

/// Whether a spreadsheet would read `text` as a formula.
fn formula_like(text: &str) -> bool {
    text.starts_with(['=', '+', '-', '@', '\t', '\r'])
}

/// Appends one field to `out`, quoted when it must be.
fn field(out: &mut String, value: &str) {
    if value.contains([',', '"', '\r', '\n']) {
        out.push('"');
        out.push_str(&value.replace('"', "\"\""));
        out.push('"');
    } else {
        out.push_str(value);
    }
}

/// Appends one record (a row) to `out`, ended by CRLF.
pub fn write_row(out: &mut String, cells: &[Cell]) {
    for (i, cell) in cells.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        match cell {
            Cell::Text(t) if formula_like(t) => field(out, &format!("'{t}")),
            Cell::Text(t) | Cell::Plain(t) => field(out, t),
            Cell::Empty => {}
        }
    }
    out.push_str("\r\n");
}

/// The header row of `columns`.
pub fn write_header(out: &mut String, columns: &[&str]) {
    let cells: Vec<Cell> = columns.iter().map(|c| Cell::Plain((*c).to_owned())).collect();
    write_row(out, &cells);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(cells: &[Cell]) -> String {
        let mut out = String::new();
        write_row(&mut out, cells);
        out
    }

    #[test]
    fn fields_are_quoted_as_rfc_4180_says() {
        let t = |s: &str| Cell::Text(s.to_owned());
        assert_eq!(
            row(&[t("a"), t("b,c"), t("say \"hi\""), t("two\nlines"), Cell::Empty]),
            "a,\"b,c\",\"say \"\"hi\"\"\",\"two\nlines\",\r\n"
        );
    }

    #[test]
    fn formulas_in_text_are_neutralised_and_numbers_are_not() {
        let t = |s: &str| Cell::Text(s.to_owned());
        assert_eq!(
            row(&[t("=SUM(A1:A9)"), t("+1"), t("-2"), t("@cmd"), t("\tx"), t("\rx")]),
            "'=SUM(A1:A9),'+1,'-2,'@cmd,'\tx,\"'\rx\"\r\n"
        );
        assert_eq!(row(&[Cell::Plain("-1.500000".into()), t("a=b")]), "-1.500000,a=b\r\n");
        assert_eq!(row(&[t("=HYPERLINK(\"http://x\",\"y\")")]), "\"'=HYPERLINK(\"\"http://x\"\",\"\"y\"\")\"\r\n");
    }
}
