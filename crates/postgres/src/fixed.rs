//! Statements whose SQL text is built once per process. diesel-async builds a query's SQL text
//! on every call, a statement it prepared long ago included (it walks the whole query, quoting
//! every identifier, before it looks in its cache): the read of one invoice spent a fifth of
//! its instructions writing the same text again. A fixed statement is the text of a diesel
//! query built once, cut where its binds go; each call pushes the pieces and binds the values,
//! so it costs copying a few strings, and with its static query id it is prepared once per
//! connection as before.

use std::sync::OnceLock;

use diesel::QueryResult;
use diesel::pg::{Pg, PgQueryBuilder};
use diesel::query_builder::{AstPass, QueryBuilder, QueryFragment};
use diesel::sql_types::Text;

/// The SQL of a diesel query, cut at its bind placeholders (`$1`, `$2` ...): one more piece
/// than binds.
pub(crate) struct FixedSql(Vec<String>);

impl FixedSql {
    /// The text of `query` (built with any values: only their places matter), cut at its binds.
    pub(crate) fn of(query: &impl QueryFragment<Pg>) -> QueryResult<Self> {
        let mut builder = PgQueryBuilder::default();
        query.to_sql(&mut builder, &Pg)?;
        Ok(Self::cut(&builder.finish()))
    }

    /// `sql` cut at each `$` followed by digits (diesel writes no other `$`: values are binds).
    fn cut(sql: &str) -> Self {
        let mut pieces = Vec::new();
        let mut rest = sql;
        while let Some(at) = rest.find('$') {
            let digits = rest[at + 1..].bytes().take_while(u8::is_ascii_digit).count();
            if digits == 0 {
                break;
            }
            pieces.push(rest[..at].to_owned());
            rest = &rest[at + 1 + digits..];
        }
        pieces.push(rest.to_owned());
        Self(pieces)
    }

    /// Writes the statement with text `binds` in their places (their number is the pieces' less
    /// one: a mismatch is a bug of the statement, answered as a query error).
    pub(crate) fn walk<'b>(&'b self, mut out: AstPass<'_, 'b, Pg>, binds: &[&'b str]) -> QueryResult<()> {
        if binds.len() + 1 != self.0.len() {
            return Err(diesel::result::Error::QueryBuilderError("a fixed statement got the wrong binds".into()));
        }
        for (piece, bind) in self.0.iter().zip(binds) {
            out.push_sql(piece);
            out.push_bind_param::<Text, str>(bind)?;
        }
        if let Some(last) = self.0.last() {
            out.push_sql(last);
        }
        Ok(())
    }
}

/// The text of `query`, built once into `cell`.
pub(crate) fn once<Q: QueryFragment<Pg>>(
    cell: &'static OnceLock<Result<FixedSql, String>>,
    query: impl FnOnce() -> Q,
) -> QueryResult<&'static FixedSql> {
    cell.get_or_init(|| FixedSql::of(&query()).map_err(|e| e.to_string()))
        .as_ref()
        .map_err(|e| diesel::result::Error::QueryBuilderError(e.clone().into()))
}

/// A statement of fixed SQL with text binds: its text (built once from a diesel query), its
/// binds in order, and its result's SQL type.
macro_rules! fixed_statement {
    ($(#[$doc:meta])* $name:ident { $($field:ident),* }, $sql_type:ty, $query:expr) => {
        $(#[$doc])*
        pub(crate) struct $name<'a> {
            $(pub $field: &'a str),*
        }

        impl diesel::query_builder::QueryId for $name<'_> {
            type QueryId = $name<'static>;
            const HAS_STATIC_QUERY_ID: bool = true;
        }

        impl diesel::query_builder::Query for $name<'_> {
            type SqlType = $sql_type;
        }

        impl diesel::query_builder::QueryFragment<diesel::pg::Pg> for $name<'_> {
            fn walk_ast<'b>(
                &'b self,
                out: diesel::query_builder::AstPass<'_, 'b, diesel::pg::Pg>,
            ) -> diesel::QueryResult<()> {
                static SQL: std::sync::OnceLock<Result<$crate::fixed::FixedSql, String>> = std::sync::OnceLock::new();
                $crate::fixed::once(&SQL, || $query)?.walk(out, &[$(self.$field),*])
            }
        }
    };
}

pub(crate) use fixed_statement;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_is_cut_at_its_placeholders() {
        let sql = FixedSql::cut(r#"SELECT "a" FROM "t" WHERE "t"."id" = $1 AND "t"."m" = $2 ORDER BY "a""#);
        assert_eq!(sql.0, vec![r#"SELECT "a" FROM "t" WHERE "t"."id" = "#, r#" AND "t"."m" = "#, r#" ORDER BY "a""#]);
        assert_eq!(FixedSql::cut("SELECT 1").0, vec!["SELECT 1"]);
        assert_eq!(FixedSql::cut("SELECT $10, $2").0, vec!["SELECT ", ", ", ""]);
    }
}
