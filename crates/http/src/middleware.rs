//! Cross-cutting request handling: request id, tracing span, panic guard, global body ceiling,
//! the rate-limit headers and the request metrics.

use std::future::{Ready, ready};
use std::panic::AssertUnwindSafe;
use std::rc::Rc;

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{Service, ServiceRequest, ServiceResponse, Transform, forward_ready};
use actix_web::http::header::{CONTENT_LENGTH, HeaderName, HeaderValue};
use actix_web::{Error, HttpMessage, HttpResponse, ResponseError};
use futures_util::FutureExt;
use futures_util::future::LocalBoxFuture;
use tracing::Instrument;

use crate::body::{MAX_BODY_BYTES, too_large_error};
use crate::error::ApiError;
use crate::limit_headers::RateLimitHeaders;
use crate::request_id::{REQUEST_ID, X_REQUEST_ID};
use crate::state::AppState;

/// How requests are labelled in the metrics: a route template (`/v1/invoices/{id}`) or a page
/// family (`/checkout/*`), never an id. The application registers one as app data; without one
/// every request is `unmatched`.
pub struct RouteLabels(Box<dyn Fn(&str) -> &'static str + Send + Sync>);

impl RouteLabels {
    /// Labels paths with `label`.
    pub fn new(label: impl Fn(&str) -> &'static str + Send + Sync + 'static) -> Self {
        Self(Box::new(label))
    }

    /// The label of `path`.
    pub fn label(&self, path: &str) -> &'static str {
        (self.0)(path)
    }
}

/// Wraps every request: assigns its id, opens its span, turns a panic into a 500 in the
/// envelope, refuses declared bodies above 1 MiB, adds X-Request-Id and the rate-limit headers,
/// and records the request's metrics.
pub struct RequestContext;

impl<S, B> Transform<S, ServiceRequest> for RequestContext
where
    S: Service<ServiceRequest, Response = ServiceResponse<B>, Error = Error> + 'static,
    B: MessageBody + 'static,
{
    type Response = ServiceResponse<BoxBody>;
    type Error = Error;
    type Transform = RequestContextService<S>;
    type InitError = ();
    type Future = Ready<Result<Self::Transform, Self::InitError>>;

    fn new_transform(&self, service: S) -> Self::Future {
        ready(Ok(RequestContextService { service: Rc::new(service) }))
    }
}

pub struct RequestContextService<S> {
    service: Rc<S>,
}

impl<S, B> Service<ServiceRequest> for RequestContextService<S>
where
    S: Service<ServiceRequest, Response = ServiceResponse<B>, Error = Error> + 'static,
    B: MessageBody + 'static,
{
    type Response = ServiceResponse<BoxBody>;
    type Error = Error;
    type Future = LocalBoxFuture<'static, Result<Self::Response, Self::Error>>;

    forward_ready!(service);

    fn call(&self, req: ServiceRequest) -> Self::Future {
        let service = Rc::clone(&self.service);
        let request_id =
            req.app_data::<actix_web::web::Data<AppState>>().map(|s| s.new_request_id()).unwrap_or_default();
        let span = tracing::info_span!(
            "request",
            request_id = %request_id,
            method = %req.method(),
            path = %loggable_path(req.path()),
            status = tracing::field::Empty,
            merchant = tracing::field::Empty,
            mode = tracing::field::Empty,
        );
        let too_large = declared_length(&req).is_some_and(|n| n > MAX_BODY_BYTES);
        let nul_in_path = req.uri().path().contains("%00");
        let id_for_scope = request_id.clone();
        let started = std::time::Instant::now();
        let route = req.app_data::<actix_web::web::Data<RouteLabels>>().map_or("unmatched", |k| k.label(req.path()));
        let method = method_label(req.method());
        let fut = async move {
            let result = if too_large {
                Ok(error_response(req, too_large_error()))
            } else if nul_in_path {
                let err = ApiError::validation("path", "The path must not contain the NUL character (%00).");
                Ok(error_response(req, err))
            } else {
                match AssertUnwindSafe(service.call(req)).catch_unwind().await {
                    Ok(Ok(res)) => Ok(res.map_into_boxed_body()),
                    Ok(Err(err)) => {
                        // An error that escaped the handlers. actix renders it after this future
                        // ends, outside the request-id scope, so the id travels with the error.
                        let api = err.as_error::<ApiError>().cloned().unwrap_or_else(|| {
                            tracing::error!(error = %err, "unhandled error");
                            ApiError::internal()
                        });
                        return Err(api.for_request(&id_for_scope).into());
                    }
                    Err(_) => {
                        tracing::error!("handler panicked");
                        return Err(ApiError::internal().for_request(&id_for_scope).into());
                    }
                }
            };
            result.map(|mut res| {
                let limited = res.request().extensions().get::<RateLimitHeaders>().cloned();
                let headers = res.headers_mut();
                if let Some(rl) = limited
                    && !headers.contains_key("ratelimit")
                    && let (Ok(r), Ok(p)) = (HeaderValue::from_str(&rl.ratelimit), HeaderValue::from_str(&rl.policy))
                {
                    headers.insert(HeaderName::from_static("ratelimit"), r);
                    headers.insert(HeaderName::from_static("ratelimit-policy"), p);
                }
                // A replayed idempotent response keeps the request id its body names.
                if !headers.contains_key(&X_REQUEST_ID)
                    && let Ok(value) = HeaderValue::from_str(&id_for_scope)
                {
                    headers.insert(X_REQUEST_ID.clone(), value);
                }
                let status = res.status().as_u16();
                tracing::Span::current().record("status", status);
                tracing::info!("served");
                record_request(route, method, status, started.elapsed());
                res
            })
        };
        Box::pin(REQUEST_ID.scope(request_id, fut.instrument(span)))
    }
}

fn declared_length(req: &ServiceRequest) -> Option<usize> {
    req.headers().get(CONTENT_LENGTH)?.to_str().ok()?.trim().parse().ok()
}

fn error_response(req: ServiceRequest, err: ApiError) -> ServiceResponse<BoxBody> {
    let res: HttpResponse = err.error_response();
    req.into_response(res)
}

/// Markers of a credential in a path segment (compared in lower case, after percent-decoding):
/// API keys (`sk_test_...`, `pk_live_...`), webhook signing secrets, and bearer tokens pasted
/// with their scheme.
const CREDENTIAL_MARKERS: [&str; 4] = ["sk_", "pk_", "whsec_", "bearer"];

/// The path as logged: the hosted invoice page's token is a credential, and so is any segment
/// shaped like a key, secret or token (a key pasted into a URL by mistake): each is replaced by
/// `[redacted]`.
fn loggable_path(path: &str) -> std::borrow::Cow<'_, str> {
    if path.starts_with("/i/") {
        return std::borrow::Cow::Borrowed("/i/[token]");
    }
    let credential = |segment: &str| {
        let decoded = percent_decoded(segment).to_ascii_lowercase();
        CREDENTIAL_MARKERS.iter().any(|m| decoded.contains(m))
    };
    if !path.split('/').any(credential) {
        return std::borrow::Cow::Borrowed(path);
    }
    let segments: Vec<&str> = path.split('/').map(|s| if credential(s) { "[redacted]" } else { s }).collect();
    std::borrow::Cow::Owned(segments.join("/"))
}

/// `segment` with its `%XX` escapes decoded (bytes that are no valid UTF-8 become U+FFFD).
fn percent_decoded(segment: &str) -> String {
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
        match (bytes[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The method as a label without allocating.
fn method_label(method: &actix_web::http::Method) -> &'static str {
    use actix_web::http::Method;
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PATCH => "PATCH",
        Method::DELETE => "DELETE",
        Method::PUT => "PUT",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        _ => "OTHER",
    }
}

/// The status as a label, without allocating for the usual ones.
fn status_label(status: u16) -> metrics::SharedString {
    let known = match status {
        200 => "200",
        201 => "201",
        202 => "202",
        204 => "204",
        400 => "400",
        401 => "401",
        403 => "403",
        404 => "404",
        405 => "405",
        408 => "408",
        409 => "409",
        413 => "413",
        422 => "422",
        429 => "429",
        500 => "500",
        503 => "503",
        _ => return metrics::SharedString::from(status.to_string()),
    };
    metrics::SharedString::const_str(known)
}

/// A request series' key (route, method, status) and its handles.
type SeriesMap = std::collections::HashMap<(&'static str, &'static str, u16), (metrics::Counter, metrics::Histogram)>;

thread_local! {
    /// Each HTTP worker's handles of the request series, by route, method and status: the
    /// registry is looked up once per combination, not per request.
    static SERIES: std::cell::RefCell<SeriesMap> = std::cell::RefCell::new(SeriesMap::new());
}

/// Counts a request and records its latency (the route is an OpenAPI template, never an id).
fn record_request(route: &'static str, method: &'static str, status: u16, took: std::time::Duration) {
    SERIES.with(|series| {
        let mut series = series.borrow_mut();
        let (counter, histogram) = series.entry((route, method, status)).or_insert_with(|| {
            (
                metrics::counter!("stablepay_http_requests_total", "route" => route, "method" => method, "status" => status_label(status)),
                metrics::histogram!("stablepay_http_request_duration_seconds", "route" => route, "method" => method),
            )
        });
        counter.increment(1);
        histogram.record(took.as_secs_f64());
    });
}

#[cfg(test)]
mod tests {
    use super::loggable_path;

    #[test]
    fn credentials_in_paths_are_masked_in_logs() {
        assert_eq!(loggable_path("/i/abcDEF123"), "/i/[token]");
        assert_eq!(loggable_path("/v1/invoices/inv_1"), "/v1/invoices/inv_1");
        assert_eq!(loggable_path("/checkout/cs_1"), "/checkout/cs_1");
        for (path, logged) in [
            ("/v1/invoices/sk_test_abcdefghijklmnopqrstuvwxyz012345", "/v1/invoices/[redacted]"),
            ("/v1/sk_live_abcdefghijklmnop/invoices", "/v1/[redacted]/invoices"),
            ("/v1/invoices/PK_TEST_abc", "/v1/invoices/[redacted]"),
            ("/v1/webhook-endpoints/whsec_abcdef", "/v1/webhook-endpoints/[redacted]"),
            ("/v1/invoices/Bearer%20sk_test_abc", "/v1/invoices/[redacted]"),
            ("/v1/invoices/%73k_test_abc", "/v1/invoices/[redacted]"),
            ("/v1/invoices/inv_1/sk%5Ftest%5Fabc", "/v1/invoices/inv_1/[redacted]"),
        ] {
            assert_eq!(loggable_path(path), logged, "{path}");
        }
    }
}
