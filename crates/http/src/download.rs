//! Downloads shared by the API and the pages: an export's file (the API's `GET
//! /v1/exports/{id}/file` and a statement's link), a CSV attachment never cached, its bytes read
//! from the store one chunk at a time as the client takes them; and an invoice's PDF.

use actix_web::web::{Bytes, Data};
use actix_web::{HttpResponse, HttpResponseBuilder};
use futures_util::stream;
use stablepay_domain::Scope;
use stablepay_domain::export::Export;

use crate::error::ApiError;
use crate::state::AppState;

/// A `200` answer of a CSV file named `name`: `text/csv; charset=utf-8`, an attachment, never
/// stored by a cache.
pub fn csv_response(name: &str) -> HttpResponseBuilder {
    let mut res = HttpResponse::Ok();
    res.content_type("text/csv; charset=utf-8")
        .insert_header(("Content-Disposition", format!("attachment; filename=\"{name}\"")))
        .insert_header(("Cache-Control", "no-store"));
    res
}

/// The file of `export` (ready, in `scope`), with its size as `Content-Length`. The first chunk
/// is read before the answer starts (so a store that fails answers an error in the envelope);
/// each following one as the client takes the previous, and a read that fails then cuts the
/// response short (the client sees fewer bytes than `Content-Length`).
pub async fn export_file(state: Data<AppState>, scope: Scope, export: &Export) -> Result<HttpResponse, ApiError> {
    let id = export.id.clone();
    let first = state.use_cases.exports().chunk(&scope, &id, 0).await?;
    let mut res = csv_response(&export.file_name());
    if let Some(size) = export.byte_size {
        res.no_chunking(size);
    }
    let body = stream::unfold((Some(Ok(first)), 0u32, state), move |(next, seq, state)| {
        let (id, scope) = (id.clone(), scope.clone());
        async move {
            match next? {
                Ok(Some(bytes)) => {
                    let following = state.use_cases.exports().chunk(&scope, &id, seq + 1).await;
                    Some((Ok::<_, actix_web::Error>(Bytes::from(bytes)), (Some(following), seq + 1, state)))
                }
                Ok(None) => None,
                Err(e) => {
                    tracing::error!(export = %id, error = %e, "an export file could not be read to its end");
                    let cut = actix_web::error::ErrorInternalServerError("export file read failed");
                    Some((Err(cut), (None, seq, state)))
                }
            }
        }
    });
    Ok(res.streaming(body))
}

/// The rendered document as a download: `<invoice number>.pdf`, never cached.
pub async fn pdf_file(
    state: Data<AppState>,
    document: stablepay_domain::invoice::document::InvoiceDocument,
) -> Result<HttpResponse, ApiError> {
    let number = document.invoice.number.clone().unwrap_or_default();
    // Rendering is CPU work: off the async workers.
    let pdf = actix_web::web::block(move || state.use_cases.render_pdf(&document))
        .await
        .map_err(|_| ApiError::internal())??;
    // The number is the merchant's prefix and digits; anything else is replaced in the name.
    let file: String =
        number.chars().map(|ch| if ch.is_ascii_alphanumeric() || "-_.".contains(ch) { ch } else { '_' }).collect();
    Ok(HttpResponse::Ok()
        .content_type("application/pdf")
        .insert_header(("Content-Disposition", format!("attachment; filename=\"{file}.pdf\"")))
        .insert_header(("Cache-Control", "no-store"))
        .body(pdf))
}
