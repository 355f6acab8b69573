//! Deprecated operations (the spec's Versioning rule 5): marked `deprecated` in the OpenAPI
//! document, and answered with `Deprecation` (RFC 9745) and `Sunset` (RFC 8594) headers.
//!
//! No operation of v1 is deprecated today; [`DEPRECATED`] is where one would be listed.

use actix_web::http::Method;
use actix_web::http::header::{HeaderMap, HeaderName, HeaderValue};
use utoipa::openapi::{Deprecated as OaDeprecated, OpenApi};

/// One deprecated operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Deprecated {
    pub method: &'static str,
    /// The route pattern as registered (`/v1/invoices/{id}`).
    pub path: &'static str,
    /// RFC 9745 value: `@` + Unix seconds of the deprecation date.
    pub deprecation: &'static str,
    /// RFC 8594 value: an HTTP date after which the operation may stop working.
    pub sunset: &'static str,
}

/// The deprecated operations of this build.
pub const DEPRECATED: &[Deprecated] = &[];

static DEPRECATIONS: std::sync::OnceLock<Vec<Deprecated>> = std::sync::OnceLock::new();

fn registry() -> &'static [Deprecated] {
    DEPRECATIONS.get().map_or(DEPRECATED, Vec::as_slice)
}

/// Replaces the registry (once per process; used by the mechanism's test).
pub fn install(list: Vec<Deprecated>) {
    let _ = DEPRECATIONS.set(list);
}

/// Whether any operation is deprecated.
pub(crate) fn any() -> bool {
    !registry().is_empty()
}

pub(crate) fn lookup(method: &Method, pattern: Option<&str>) -> Option<Deprecated> {
    let pattern = pattern?;
    registry().iter().copied().find(|d| d.method.eq_ignore_ascii_case(method.as_str()) && d.path == pattern)
}

pub(crate) fn apply(d: Deprecated, headers: &mut HeaderMap) {
    headers.insert(HeaderName::from_static("deprecation"), HeaderValue::from_static(d.deprecation));
    headers.insert(HeaderName::from_static("sunset"), HeaderValue::from_static(d.sunset));
}

/// Marks the registered operations deprecated in the document.
pub fn mark(doc: &mut OpenApi) {
    for d in registry() {
        if let Some(item) = doc.paths.paths.get_mut(d.path) {
            let op = match d.method.to_ascii_uppercase().as_str() {
                "GET" => item.get.as_mut(),
                "POST" => item.post.as_mut(),
                "PATCH" => item.patch.as_mut(),
                "PUT" => item.put.as_mut(),
                "DELETE" => item.delete.as_mut(),
                _ => None,
            };
            if let Some(op) = op {
                op.deprecated = Some(OaDeprecated::True);
            }
        }
    }
}
