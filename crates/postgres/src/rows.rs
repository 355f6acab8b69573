//! What the store's row types share: the refusal of a corrupt stored value, the mode column,
//! a page fetched with one extra row and its cursor, and a claimed record's scope.

use stablepay_domain::{Error, Mode};

pub(crate) fn corrupt(what: &str) -> Error {
    Error::Internal(format!("stored record is corrupt: {what}"))
}

pub(crate) fn mode(text: &str) -> Result<Mode, Error> {
    Mode::parse(text).ok_or_else(|| corrupt("mode"))
}

/// A page of `rows` fetched with one extra to tell whether there is more.
pub(crate) fn page_of<R, T>(
    mut rows: Vec<R>,
    page: &stablepay_domain::page::PageRequest,
    convert: impl Fn(R) -> Result<T, stablepay_domain::Error>,
) -> Result<stablepay_domain::page::Page<T>, stablepay_domain::Error> {
    let limit = usize::try_from(page.limit).unwrap_or(100);
    let has_more = rows.len() > limit;
    rows.truncate(limit);
    Ok(stablepay_domain::page::Page { items: rows.into_iter().map(convert).collect::<Result<_, _>>()?, has_more })
}

/// Narrows the newest-first boxed `query` to the rows after `page`'s cursor: the cursor is the id
/// of a row of `table` found by the filters given (`cursor` binds the cursor's text in them; they
/// scope it to the merchant), and the rows kept are those whose `seq` column is below its. A
/// cursor naming no such row (unknown, another merchant's or mode's) is `InvalidCursor`.
macro_rules! after_cursor {
    ($conn:expr, $query:ident, $page:expr, $table:ident::$seq:ident, |$cursor:ident| [$($filter:expr),+ $(,)?]) => {
        if let Some($cursor) = &$page.starting_after {
            let seq: Option<i64> = $table::table
                $(.filter($filter))+
                .select($table::$seq)
                .first($conn)
                .await
                .optional()
                .map_err($crate::error::db)?;
            $query = $query.filter($table::$seq.lt(seq.ok_or(stablepay_domain::Error::InvalidCursor)?));
        }
    };
}
pub(crate) use after_cursor;

/// A row naming a record and its scope (the worker's claims across merchants).
#[derive(diesel::QueryableByName)]
pub(crate) struct ScopedRow {
    #[diesel(sql_type = diesel::sql_types::Text)]
    pub merchant_id: String,
    #[diesel(sql_type = diesel::sql_types::Text)]
    pub mode: String,
    #[diesel(sql_type = diesel::sql_types::Text)]
    pub id: String,
}

impl ScopedRow {
    pub(crate) fn scope(&self) -> Result<stablepay_domain::Scope, stablepay_domain::Error> {
        Ok(stablepay_domain::Scope::new(
            stablepay_domain::ids::MerchantId::from_trusted(self.merchant_id.clone()),
            mode(&self.mode)?,
        ))
    }
}

/// `states` as the SQL list of their stored names (tests hold the store's statements to the
/// domain's state sets with it).
#[cfg(test)]
pub(crate) fn in_list(states: &[stablepay_domain::invoice::collection::CollectionState]) -> String {
    states.iter().map(|s| format!("'{}'", s.as_str())).collect::<Vec<_>>().join(", ")
}
