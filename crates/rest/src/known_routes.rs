//! The API's paths and methods, read from its own OpenAPI document: the fallback answer for an
//! unknown route (404 NOT_FOUND, or 405 METHOD_NOT_ALLOWED with `Allow` for a known path) and
//! the route label of an API request in the metrics.

use actix_web::{HttpRequest, HttpResponse, ResponseError, web};
use stablepay_http::error::{ApiError, ErrorCode};

/// The API's paths (templates split into segments, `{..}` matching any one segment) and the
/// methods each takes, from the OpenAPI document, with their labels and an index of them by
/// shape ([`Shapes`]).
pub struct KnownRoutes(Vec<(Vec<String>, Vec<String>)>, Vec<&'static str>, Shapes);

/// The templates by their number of segments and their key segment (the third, after `""` and
/// `v1`, or the last of shorter ones), so that labelling a request tries the few templates of
/// its shape (every request is labelled for the metrics) instead of all of them; templates
/// whose key segment is a placeholder are tried for every path of their length.
#[derive(Default)]
struct Shapes(std::collections::HashMap<usize, Shape>);

/// The templates of one length: by their literal key segment, and those whose key segment is a
/// placeholder.
#[derive(Default)]
struct Shape {
    literal: std::collections::HashMap<String, Vec<usize>>,
    wild: Vec<usize>,
}

/// The position of the key segment among `count` segments.
fn key_position(count: usize) -> usize {
    if count > 2 { 2 } else { count.saturating_sub(1) }
}

impl Shapes {
    fn of(routes: &[(Vec<String>, Vec<String>)]) -> Self {
        let mut shapes = Self::default();
        for (i, (segments, _)) in routes.iter().enumerate() {
            let shape = shapes.0.entry(segments.len()).or_default();
            match segments.get(key_position(segments.len())) {
                Some(key) if !key.starts_with('{') => shape.literal.entry(key.clone()).or_default().push(i),
                _ => shape.wild.push(i),
            }
        }
        shapes
    }

    /// The templates `path` may be an instance of, in document order.
    fn candidates(&self, path: &str) -> impl Iterator<Item = usize> + '_ {
        let count = path.split('/').count();
        let key = path.split('/').nth(key_position(count)).unwrap_or_default();
        let (literal, wild) = match self.0.get(&count) {
            Some(shape) => (shape.literal.get(key).map_or(&[][..], Vec::as_slice), shape.wild.as_slice()),
            None => (&[][..], &[][..]),
        };
        let (mut a, mut b) = (literal.iter().copied().peekable(), wild.iter().copied().peekable());
        std::iter::from_fn(move || match (a.peek(), b.peek()) {
            (Some(x), Some(y)) if x < y => a.next(),
            (Some(_), Some(_)) | (None, Some(_)) => b.next(),
            (Some(_), None) => a.next(),
            (None, None) => None,
        })
    }
}

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
        self.2.candidates(path).find(|i| template_matches(&self.0[*i].0, path)).map(|i| self.1[i])
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
        let shapes = Shapes::of(&routes);
        Self(routes, labels, shapes)
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

    /// The index by shape labels every path as trying every template in document order would.
    #[test]
    fn the_shape_index_labels_as_the_whole_list_does() {
        let doc = crate::api::document();
        let doc = serde_json::to_value(&doc).unwrap();
        let routes = KnownRoutes::from_document(&doc);
        let every = |path: &str| routes.0.iter().position(|(s, _)| template_matches(s, path)).map(|i| routes.1[i]);
        let mut paths: Vec<String> = routes.1.iter().map(|t| t.replace('{', "x_").replace('}', "")).collect();
        paths.extend(
            ["/", "/v1", "/v1/", "/healthz", "/v1/invoices/inv_1/nothing", "/checkout/cs_1", ""].map(String::from),
        );
        for path in &paths {
            assert_eq!(routes.label(path), every(path), "{path}");
        }
        assert_eq!(routes.label("/v1/invoices/inv_1"), Some("/v1/invoices/{id}"));
        assert_eq!(routes.label("/v1/exports/sync"), every("/v1/exports/sync"));
    }
}
