//! The JSON body extractor: `Content-Type: application/json` required, 1 MiB ceiling, and
//! every parse failure reported as a precise error naming the field.

use actix_web::dev::Payload;
use actix_web::http::header::CONTENT_TYPE;
use actix_web::{FromRequest, HttpRequest};
use futures_util::future::LocalBoxFuture;
use serde::de::DeserializeOwned;
use stablepay_http::body::read_body;
use stablepay_http::error::{ApiError, ErrorCode};

/// Field names whose type errors are INVALID_AMOUNT rather than VALIDATION_ERROR: a JSON
/// number where a decimal string is required is an invalid amount.
const AMOUNT_FIELDS: &[&str] = &["amount", "unitAmount", "quantity", "minimumAmount", "maximumAmount"];

/// Field names whose type errors are INVALID_EXPIRY.
const EXPIRY_FIELDS: &[&str] = &["expiresInMinutes", "checkoutExpiresInMinutes"];

/// A JSON request body deserialized into `T` (a wire type with `deny_unknown_fields`), with
/// the raw bytes (for idempotency fingerprints).
pub struct ApiJson<T>(pub T, pub Vec<u8>);

/// Like [`ApiJson`], but an empty body means `T::default()`.
pub struct OptionalJson<T>(pub T, pub Vec<u8>);

impl<T: DeserializeOwned + Default + 'static> FromRequest for OptionalJson<T> {
    type Error = ApiError;
    type Future = LocalBoxFuture<'static, Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        body_of(req, payload, |bytes| Ok(OptionalJson(T::default(), bytes)), |v, bytes| OptionalJson(v, bytes))
    }
}

/// Reads the body of `req` and parses it: an empty (or blank) body is answered by `empty`, any
/// other must be JSON (by its Content-Type) and becomes `made` of the value and the bytes.
fn body_of<T: DeserializeOwned + 'static, J: 'static>(
    req: &HttpRequest,
    payload: &mut Payload,
    empty: impl FnOnce(Vec<u8>) -> Result<J, ApiError> + 'static,
    made: impl FnOnce(T, Vec<u8>) -> J + 'static,
) -> LocalBoxFuture<'static, Result<J, ApiError>> {
    let content_type_ok = is_json(req);
    let req = req.clone();
    let mut payload = payload.take();
    Box::pin(async move {
        let bytes = read_body(&req, &mut payload).await?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return empty(bytes);
        }
        if !content_type_ok {
            return Err(content_type_error());
        }
        parse(&bytes).map(|v| made(v, bytes))
    })
}

fn is_json(req: &HttpRequest) -> bool {
    req.headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"))
}

fn content_type_error() -> ApiError {
    ApiError::field(
        ErrorCode::VALIDATION_ERROR,
        "Content-Type",
        "JSON requests must carry Content-Type: application/json.",
    )
}

impl<T: DeserializeOwned + 'static> FromRequest for ApiJson<T> {
    type Error = ApiError;
    type Future = LocalBoxFuture<'static, Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        // An empty body names what is missing: the first required field, or the body itself.
        let missing = |_| {
            Err(match parse::<T>(b"{}") {
                Err(e) => e,
                Ok(_) => ApiError::validation("body", "A JSON object body is required."),
            })
        };
        body_of(req, payload, missing, |v, bytes| ApiJson(v, bytes))
    }
}

/// Whether a JSON text holds an escaped NUL character (`\u0000`) in a string or a key. (A raw
/// NUL byte is not valid JSON at all.) Outside strings JSON has no backslashes, so a linear scan
/// over escape pairs is exact.
fn has_nul_escape(bytes: &[u8]) -> bool {
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' {
            if bytes.get(i + 1) == Some(&b'u') && bytes.get(i + 2..i + 6) == Some(b"0000".as_slice()) {
                return true;
            }
            i += 2;
        } else {
            i += 1;
        }
    }
    false
}

/// The JSON path of the first string (or object key) holding a NUL character.
fn nul_path(value: &serde_json::Value, path: &str) -> Option<String> {
    use serde_json::Value;
    match value {
        Value::String(s) if s.contains('\0') => Some(path.to_owned()),
        Value::Array(items) => items.iter().enumerate().find_map(|(i, v)| nul_path(v, &format!("{path}[{i}]"))),
        Value::Object(map) => map.iter().find_map(|(k, v)| {
            if k.contains('\0') {
                Some(if path.is_empty() { "body".to_owned() } else { path.to_owned() })
            } else {
                nul_path(v, &join(path, k))
            }
        }),
        _ => None,
    }
}

/// Refuses a body whose strings hold NUL (PostgreSQL's text cannot store it), naming the field.
fn refuse_nul(bytes: &[u8]) -> Result<(), ApiError> {
    if !has_nul_escape(bytes) {
        return Ok(());
    }
    let value: serde_json::Value =
        serde_json::from_slice(bytes).map_err(|e| ApiError::validation("body", format!("Malformed JSON: {e}")))?;
    let field = nul_path(&value, "").unwrap_or_else(|| "body".to_owned());
    Err(ApiError::validation(field, "Text must not contain the NUL character (U+0000)."))
}

/// Walks a JSON document and stops at the first key an object holds twice, leaving its path
/// in `found`.
struct Walk<'a> {
    path: String,
    found: &'a std::cell::RefCell<Option<String>>,
}

impl<'de> serde::de::DeserializeSeed<'de> for Walk<'_> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Walk<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }

    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut i = 0usize;
        while seq.next_element_seed(Walk { path: format!("{}[{i}]", self.path), found: self.found })?.is_some() {
            i += 1;
        }
        Ok(())
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = std::collections::HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            let path = join(&self.path, &key);
            if !seen.insert(key) {
                *self.found.borrow_mut() = Some(path);
                return Err(serde::de::Error::custom("duplicate key"));
            }
            map.next_value_seed(Walk { path, found: self.found })?;
        }
        Ok(())
    }
}

/// The path of the first key that appears twice in one object (`lines[1].unitAmount`), if any.
/// JSON leaves duplicates undefined and parsers differ (first wins, last wins, refused), so a
/// body with one is refused rather than read one way here and another way by a proxy or a log.
fn duplicate_key(bytes: &[u8]) -> Option<String> {
    let found = std::cell::RefCell::new(None);
    let mut de = serde_json::Deserializer::from_slice(bytes);
    // A syntax error is reported by the real parse; only a duplicate matters here.
    let _ = serde::de::DeserializeSeed::deserialize(Walk { path: String::new(), found: &found }, &mut de);
    found.into_inner()
}

/// Deserializes `bytes`, mapping failures to precise errors.
pub fn parse<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::validation("body", "A JSON object body is required."));
    }
    refuse_nul(bytes)?;
    if let Some(field) = duplicate_key(bytes) {
        let name = field.rsplit('.').next().unwrap_or(&field).to_owned();
        return Err(ApiError::validation(field, format!("{name} appears more than once in its object.")));
    }
    if bytes.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return Err(ApiError::validation("body", "The body must be a JSON object."));
    }
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let result: Result<T, _> = serde_path_to_error::deserialize(&mut de);
    let value = match result {
        Ok(value) => value,
        // A number written with a fraction or an exponent (`5.0`, `1e3`) is still an integer
        // when its value is one (JSON Schema's view): read again with such numbers as integers.
        Err(err) if err.inner().is_data() && bytes.iter().any(|b| matches!(b, b'.' | b'e' | b'E')) => {
            let value: serde_json::Value = serde_json::from_slice(bytes)
                .map_err(|e| ApiError::validation("body", format!("Malformed JSON: {e}")))?;
            return from_value(value);
        }
        Err(err) => {
            let path = err.path().to_string();
            return Err(describe(&path, err.inner()));
        }
    };
    de.end().map_err(|e| ApiError::validation("body", format!("Malformed JSON: {e}")))?;
    Ok(value)
}

/// Rewrites every number whose value is an integer but whose text is not (`5.0`, `1e3`,
/// `-2.50e1`) as that integer. Every number of this API is an integer (amounts are strings), so
/// nothing is lost; a number with a true fraction stays as it is and is refused where an integer
/// is expected.
fn integral_numbers(value: &mut serde_json::Value) {
    use serde_json::Value;
    match value {
        Value::Number(n) if n.is_f64() => {
            if let Some(i) = integral(&n.to_string()) {
                *value = Value::from(i);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(integral_numbers),
        Value::Object(map) => map.values_mut().for_each(integral_numbers),
        _ => {}
    }
}

/// The integer a JSON number's text denotes, if it denotes one that fits an `i64`.
fn integral(text: &str) -> Option<i64> {
    let (mantissa, exponent) = match text.find(['e', 'E']) {
        Some(i) => (&text[..i], text[i + 1..].parse::<i32>().ok()?),
        None => (text, 0),
    };
    let (negative, mantissa) = mantissa.strip_prefix('-').map_or((false, mantissa), |m| (true, m));
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let mut digits = format!("{int}{frac}");
    let shift = exponent.checked_sub(i32::try_from(frac.len()).ok()?)?;
    if shift >= 0 {
        digits.push_str(&"0".repeat(usize::try_from(shift).ok().filter(|s| *s <= 20)?));
    } else {
        let cut = usize::try_from(shift.checked_neg()?).ok()?;
        let keep = digits.len().checked_sub(cut)?;
        if !digits[keep..].bytes().all(|b| b == b'0') {
            return None;
        }
        digits.truncate(keep);
    }
    let magnitude: i64 = digits.parse().ok()?;
    Some(if negative { magnitude.checked_neg()? } else { magnitude })
}

/// Deserializes an already parsed JSON value (a body whose form was chosen on its members),
/// with the same precise errors as [`parse`].
pub fn from_value<T: DeserializeOwned>(mut value: serde_json::Value) -> Result<T, ApiError> {
    integral_numbers(&mut value);
    serde_path_to_error::deserialize(value).map_err(|err| {
        let path = err.path().to_string();
        describe(&path, err.inner())
    })
}

fn join(path: &str, field: &str) -> String {
    if path.is_empty() || path == "." { field.to_owned() } else { format!("{path}.{field}") }
}

/// The name between the first pair of backticks of a serde message.
fn quoted(message: &str) -> Option<&str> {
    let start = message.find('`')? + 1;
    let len = message[start..].find('`')?;
    Some(&message[start..start + len])
}

fn describe(path: &str, err: &serde_json::Error) -> ApiError {
    use serde_json::error::Category;
    let message = err.to_string();
    let text = message.split(" at line ").next().unwrap_or(&message).to_owned();
    match err.classify() {
        Category::Syntax | Category::Eof | Category::Io => {
            ApiError::validation("body", format!("Malformed JSON: {message}"))
        }
        Category::Data => {
            if let Some(rest) = text.strip_prefix("missing field ") {
                let name = quoted(rest).unwrap_or(rest);
                return ApiError::validation(join(path, name), format!("{name} is required."));
            }
            if text.starts_with("unknown field") {
                let name = quoted(&text).unwrap_or("");
                let field = if path.ends_with(name) { path.to_owned() } else { join(path, name) };
                return ApiError::validation(field, format!("Unknown field {name}."));
            }
            let field = if path.is_empty() || path == "." { "body".to_owned() } else { path.to_owned() };
            let last = field.rsplit('.').next().unwrap_or(&field);
            let last = last.split('[').next().unwrap_or(last);
            // serde names the Rust types it expected; the wire has only JSON shapes.
            let text = if text.contains("expected struct") || text.contains("expected a map") {
                format!("{last} must be a JSON object.")
            } else if text.contains("expected enum") {
                format!("{last} has an unsupported value.")
            } else {
                text
            };
            let code = if AMOUNT_FIELDS.contains(&last) {
                ErrorCode::INVALID_AMOUNT
            } else if EXPIRY_FIELDS.contains(&last) {
                ErrorCode::INVALID_EXPIRY
            } else {
                ErrorCode::VALIDATION_ERROR
            };
            ApiError::field(code, field, text)
        }
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;

    #[derive(Deserialize, Debug)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    #[allow(dead_code)]
    struct Body {
        amount: String,
        customer: Option<Customer>,
        lines: Option<Vec<Line>>,
    }

    #[derive(Deserialize, Debug)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    #[allow(dead_code)]
    struct Customer {
        email: Option<String>,
    }

    #[derive(Deserialize, Debug)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    #[allow(dead_code)]
    struct Line {
        unit_amount: String,
    }

    fn err(body: &str) -> (String, Option<String>) {
        let e = parse::<Body>(body.as_bytes()).unwrap_err();
        let field = e.details().and_then(|d| d.get("field").and_then(|f| f.as_str()).map(str::to_owned));
        (e.code.as_str().to_owned(), field)
    }

    #[test]
    fn names_the_field() {
        assert_eq!(err("{"), ("VALIDATION_ERROR".into(), Some("body".into())));
        assert_eq!(err(""), ("VALIDATION_ERROR".into(), Some("body".into())));
        assert_eq!(err("[]"), ("VALIDATION_ERROR".into(), Some("body".into())));
        assert_eq!(err("{}"), ("VALIDATION_ERROR".into(), Some("amount".into())));
        assert_eq!(err(r#"{"amount":10}"#), ("INVALID_AMOUNT".into(), Some("amount".into())));
        assert_eq!(err(r#"{"amount":"1","x":1}"#), ("VALIDATION_ERROR".into(), Some("x".into())));
        assert_eq!(
            err(r#"{"amount":"1","customer":{"email":5}}"#),
            ("VALIDATION_ERROR".into(), Some("customer.email".into()))
        );
        assert_eq!(
            err(r#"{"amount":"1","customer":{"mail":"a"}}"#),
            ("VALIDATION_ERROR".into(), Some("customer.mail".into()))
        );
        assert_eq!(
            err(r#"{"amount":"1","lines":[{"unitAmount":"1"},{"unitAmount":2}]}"#),
            ("INVALID_AMOUNT".into(), Some("lines[1].unitAmount".into()))
        );
        assert_eq!(err(r#"{"amount":"1"} x"#), ("VALIDATION_ERROR".into(), Some("body".into())));
    }

    #[test]
    fn nul_characters_are_refused_naming_the_field() {
        assert_eq!(err(r#"{"amount":"1\u0000"}"#), ("VALIDATION_ERROR".into(), Some("amount".into())));
        assert_eq!(
            err(r#"{"amount":"1","lines":[{"unitAmount":"1"},{"unitAmount":"\u0000"}]}"#),
            ("VALIDATION_ERROR".into(), Some("lines[1].unitAmount".into()))
        );
        assert_eq!(
            err(r#"{"amount":"1","customer":{"email":"a\u0000@b.c"}}"#),
            ("VALIDATION_ERROR".into(), Some("customer.email".into()))
        );
        // An escaped backslash followed by "u0000" is plain text, not NUL.
        assert!(parse::<serde_json::Value>(br#"{"a":"\\u0000"}"#).is_ok());
        assert!(has_nul_escape(br#"{"a\u0000":1}"#));
    }

    /// A key twice in one object is refused, naming it, wherever the object is (maps that
    /// would keep the last value, such as metadata, included).
    #[test]
    fn duplicate_keys_are_refused_naming_the_key() {
        let field = |body: &str| err(body);
        let v = |path: &str| ("VALIDATION_ERROR".to_owned(), Some(path.to_owned()));
        assert_eq!(field(r#"{"amount":"1","amount":"2"}"#), v("amount"));
        assert_eq!(field(r#"{"amount":"1","\u0061mount":"2"}"#), v("amount"), "the same key escaped");
        assert_eq!(field(r#"{"amount":"1","customer":{"email":"a@b.c","email":"d@e.f"}}"#), v("customer.email"));
        assert_eq!(
            field(r#"{"amount":"1","lines":[{"unitAmount":"1"},{"unitAmount":"1","unitAmount":"2"}]}"#),
            v("lines[1].unitAmount")
        );
        assert_eq!(duplicate_key(br#"{"metadata":{"a":"1","a":"2"}}"#).as_deref(), Some("metadata.a"));
        assert_eq!(duplicate_key(br#"{"a":{"x":1},"b":{"x":1},"c":[{"x":1},{"x":1}]}"#), None);
        assert_eq!(duplicate_key(b"{"), None, "syntax is the parser's to report");
    }
}

#[cfg(test)]
mod integral_tests {
    use super::integral;

    #[test]
    fn integral_values_in_any_notation() {
        for (text, want) in [
            ("5.0", Some(5)),
            ("162.000", Some(162)),
            ("1e3", Some(1000)),
            ("1E+3", Some(1000)),
            ("-2.50e1", Some(-25)),
            ("1259805672.0", Some(1_259_805_672)),
            ("2500e-2", Some(25)),
            ("0.0", Some(0)),
            ("5.5", None),
            ("1e-3", None),
            ("1e400", None),
            ("99999999999999999999.0", None),
        ] {
            assert_eq!(integral(text), want, "{text}");
        }
    }
}
