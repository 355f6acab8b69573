//! Nested objects read only from JSON objects. serde's derive lets a struct be written as an
//! array of its fields in order (`["x", "1", "2"]` for a line item); the wire has objects only.
//! A field of a struct type takes one of these helpers (`deserialize_with`); the struct's own
//! fields still go through the same deserializer, so a refusal deeper down keeps its path.

use serde::de::{Deserialize, Deserializer, Visitor};

/// `T` from a JSON object only.
struct Obj<T>(T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Obj<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        T::deserialize(MapOnly(deserializer)).map(Obj)
    }
}

/// Forwards to the inner deserializer, except that a struct is read as a map (which refuses an
/// array with "expected struct ...", reported as "must be a JSON object").
struct MapOnly<D>(D);

impl<'de, D: Deserializer<'de>> Deserializer<'de> for MapOnly<D> {
    type Error = D::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.0.deserialize_any(visitor)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0.deserialize_map(visitor)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option
        unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier ignored_any
    }
}

/// An optional object field (absent or null: `None`).
pub fn opt_object<'de, D: Deserializer<'de>, T: Deserialize<'de>>(deserializer: D) -> Result<Option<T>, D::Error> {
    Option::<Obj<T>>::deserialize(deserializer).map(|o| o.map(|Obj(t)| t))
}

/// An array of objects.
pub fn objects<'de, D: Deserializer<'de>, T: Deserialize<'de>>(deserializer: D) -> Result<Vec<T>, D::Error> {
    Vec::<Obj<T>>::deserialize(deserializer).map(|v| v.into_iter().map(|Obj(t)| t).collect())
}

/// An optional array of objects.
pub fn opt_objects<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    deserializer: D,
) -> Result<Option<Vec<T>>, D::Error> {
    Option::<Vec<Obj<T>>>::deserialize(deserializer).map(|o| o.map(|v| v.into_iter().map(|Obj(t)| t).collect()))
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    #[derive(Deserialize, Debug, PartialEq)]
    struct Inner {
        a: String,
    }

    #[derive(Deserialize, Debug, PartialEq)]
    struct Outer {
        #[serde(default, deserialize_with = "super::opt_object")]
        one: Option<Inner>,
        #[serde(default, deserialize_with = "super::objects")]
        many: Vec<Inner>,
    }

    #[test]
    fn objects_are_read_and_arrays_refused() {
        let ok: Outer = serde_json::from_str(r#"{"one": {"a": "x"}, "many": [{"a": "y"}]}"#).unwrap();
        assert_eq!(ok.one, Some(Inner { a: "x".into() }));
        assert_eq!(ok.many, vec![Inner { a: "y".into() }]);
        let none: Outer = serde_json::from_str(r#"{"one": null}"#).unwrap();
        assert_eq!(none.one, None);
        // serde's derive alone takes these arrays.
        assert!(serde_json::from_str::<Inner>(r#"["x"]"#).is_ok());
        let err = serde_json::from_str::<Outer>(r#"{"one": ["x"]}"#).unwrap_err().to_string();
        assert!(err.contains("expected struct"), "{err}");
        assert!(serde_json::from_str::<Outer>(r#"{"many": [["y"]]}"#).is_err());
        // From a Value too (the forms parsed in two steps).
        let v = serde_json::json!({"many": [["y"]]});
        assert!(serde_json::from_value::<Outer>(v).is_err());
    }
}
