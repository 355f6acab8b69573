//! The API's paths and methods, read from its own OpenAPI document: the fallback answer for an
//! unknown route (404 NOT_FOUND, or 405 METHOD_NOT_ALLOWED with `Allow` for a known path) and
//! the route label of an API request in the metrics.

use actix_web::{HttpRequest, HttpResponse, ResponseError, web};
use stablepay_http::error::{ApiError, ErrorCode};

/// The API's paths (templates split into segments, `{..}` matching any one segment) and the
/// methods each takes, from the OpenAPI document.
pub struct KnownRoutes(Vec<(Vec<String>, Vec<String>)>, Vec<&'static str>);

/// Whether `path` is an instance of the template `segments` (`{..}` matches any one non-empty
/// segment), without allocating.
fn template_matches(segments: &[String], path: &str) -> bool {
    let mut parts = path.split('/');
    segments.iter().all(|s| parts.next().is_some_and(|p| s == p || (s.starts_with('{') && !p.is_empty())))
        && parts.next().is_none()
}

impl KnownRoutes {
    /// The route a path belongs to, as a bounded label for metrics: its OpenAPI template
    /// (`/v1/invoices/{id}`); `None` for a path that is not the API's.
    pub fn label(&self, path: &str) -> Option<&'static str> {
        self.0.iter().position(|(segments, _)| template_matches(segments, path)).map(|i| self.1[i])
    }

    /// The routes of the served document.
    pub fn from_document(doc: &serde_json::Value) -> Self {
        let mut routes = Vec::new();
        let mut labels = Vec::new();
        if let Some(paths) = doc["paths"].as_object() {
            for (template, item) in paths {
                // Metrics labels without an allocation per request: the templates are few and
                // live as long as the process (one copy per HTTP worker).
                labels.push(&*Box::leak(template.clone().into_boxed_str()));
                let segments = template.split('/').map(str::to_owned).collect();
                let methods = item
                    .as_object()
                    .map(|m| {
                        ["get", "post", "put", "patch", "delete"]
                            .iter()
                            .filter(|k| m.contains_key(**k))
                            .map(|k| k.to_uppercase())
                            .collect()
                    })
                    .unwrap_or_default();
                routes.push((segments, methods));
            }
        }
        Self(routes, labels)
    }

    /// The methods `path` takes, if it is a known path. Where a literal segment and a
    /// placeholder both match (`/v1/exports/sync` and `/v1/exports/{id}`), the most literal
    /// templates decide, as the router does.
    fn allowed(&self, path: &str) -> Option<Vec<String>> {
        let placeholders = |segments: &[String]| segments.iter().filter(|s| s.starts_with('{')).count();
        let matching: Vec<&(Vec<String>, Vec<String>)> =
            self.0.iter().filter(|(segments, _)| template_matches(segments, path)).collect();
        let fewest = matching.iter().map(|(segments, _)| placeholders(segments)).min()?;
        let mut found: Vec<String> = Vec::new();
        for (_, methods) in matching.into_iter().filter(|(segments, _)| placeholders(segments) == fewest) {
            found.extend(methods.iter().filter(|m| !found.contains(m)).cloned().collect::<Vec<_>>());
        }
        (!found.is_empty()).then_some(found)
    }
}

/// Unknown routes: 404 NOT_FOUND in the envelope; a known path with another method: 405
/// METHOD_NOT_ALLOWED with `Allow`.
pub async fn not_found(req: HttpRequest) -> HttpResponse {
    let known = req.app_data::<web::Data<KnownRoutes>>().and_then(|k| k.allowed(req.path()));
    if let Some(methods) = known {
        let allow = methods.join(", ");
        return ApiError::new(
            ErrorCode::METHOD_NOT_ALLOWED,
            format!("{} does not take {}; it takes {allow}.", req.path(), req.method()),
        )
        .with_header("Allow", allow)
        .error_response();
    }
    ApiError::new(ErrorCode::NOT_FOUND, format!("No route for {} {}.", req.method(), req.path())).error_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_literal_segment_decides_over_a_placeholder() {
        let doc = serde_json::json!({ "paths": {
            "/v1/exports/sync": { "post": {} },
            "/v1/exports/{id}": { "get": {} },
            "/v1/exports/{id}/cancel": { "post": {} },
        }});
        let routes = KnownRoutes::from_document(&doc);
        assert_eq!(routes.allowed("/v1/exports/sync"), Some(vec!["POST".to_owned()]));
        assert_eq!(routes.allowed("/v1/exports/exp_1"), Some(vec!["GET".to_owned()]));
        assert_eq!(routes.allowed("/v1/exports/exp_1/cancel"), Some(vec!["POST".to_owned()]));
        assert_eq!(routes.allowed("/v1/nothing"), None);
        assert_eq!(routes.label("/v1/exports/exp_1"), Some("/v1/exports/{id}"));
    }
}
