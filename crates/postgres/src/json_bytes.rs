//! A jsonb column read and written as JSON text, so rows decode straight into the store's own
//! structs without building a `serde_json::Value` tree first.

use std::io::Write;

use diesel::deserialize::{self, FromSql, FromSqlRow};
use diesel::expression::AsExpression;
use diesel::pg::{Pg, PgValue};
use diesel::serialize::{self, IsNull, Output, ToSql};
use diesel::sql_types::Jsonb;

/// jsonb's binary wire format is a version byte (1) followed by the JSON text.
const JSONB_VERSION: u8 = 1;

#[derive(Debug, Clone, PartialEq, Eq, AsExpression, FromSqlRow)]
#[diesel(sql_type = Jsonb)]
pub(crate) struct JsonBytes(pub Vec<u8>);

impl FromSql<Jsonb, Pg> for JsonBytes {
    fn from_sql(value: PgValue<'_>) -> deserialize::Result<Self> {
        match value.as_bytes().split_first() {
            Some((&JSONB_VERSION, text)) => Ok(JsonBytes(text.to_vec())),
            _ => Err("unsupported jsonb format".into()),
        }
    }
}

impl ToSql<Jsonb, Pg> for JsonBytes {
    fn to_sql<'b>(&'b self, out: &mut Output<'b, '_, Pg>) -> serialize::Result {
        out.write_all(&[JSONB_VERSION])?;
        out.write_all(&self.0)?;
        Ok(IsNull::No)
    }
}
