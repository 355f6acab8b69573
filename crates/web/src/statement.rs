//! A monthly statement's download links (`/s/{token}/invoices.csv` and `/payments.csv`), mailed
//! to the merchant's billing email: the unguessable token is the capability, as for a hosted
//! invoice. A link answers the export's CSV file as the API does, or a page saying why not.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, get, web};
use maud::html;
use stablepay_domain::Error;
use stablepay_domain::ratelimit::PUBLIC_READ;
use stablepay_http::download;
use stablepay_http::error::{ApiError, ErrorCode};
use stablepay_http::ratelimit::enforce;
use stablepay_http::state::AppState;

use crate::page::page;

fn unknown() -> HttpResponse {
    crate::page::missing("This statement link does not exist. Check that the whole link was copied from the email.")
}

fn expired() -> HttpResponse {
    page(
        StatusCode::GONE,
        "Link expired",
        None,
        html! {
            h1 { "This link has expired" }
            p {
                "A statement's files are deleted after the days its email gave. "
                "The same records can be exported again at any time with the API (POST /v1/exports)."
            }
        },
    )
}

/// A file of a statement: the CSV (gzip-encoded when the client accepts it), 404 for a link
/// that names nothing, 410 once the file was deleted.
#[get("/s/{token}/{file}", wrap = "actix_web::middleware::Compress::default()")]
pub async fn statement_file(
    req: HttpRequest,
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    enforce(&req, &state, &PUBLIC_READ, &["statement"], ErrorCode::RATE_LIMITED).await?;
    let (token, file) = path.into_inner();
    let Some(file) = file.strip_suffix(".csv") else { return Ok(unknown()) };
    let (scope, id) = match state.use_cases.statements().file(&token, file).await {
        Ok(found) => found,
        Err(Error::NotFound(_)) => return Ok(unknown()),
        Err(e) => return Err(e.into()),
    };
    match state.use_cases.exports().downloadable(&scope, &id).await {
        Ok(export) => download::export_file(state.clone(), scope, &export).await,
        Err(Error::ExportExpired) => Ok(expired()),
        Err(e) => Err(e.into()),
    }
}
