//! Query-string parsing with precise errors: only known parameters, each validated.

use std::collections::HashMap;

use actix_web::HttpRequest;
use stablepay_domain::page::{DEFAULT_PAGE_LIMIT, MAX_CURSOR_CHARS, MAX_PAGE_LIMIT, PageRequest};
use stablepay_http::error::ApiError;

/// The parameters of a query string. Unknown names are refused.
pub struct QueryParams(HashMap<String, String>);

impl QueryParams {
    pub fn parse(req: &HttpRequest, allowed: &[&str]) -> Result<Self, ApiError> {
        let mut map = HashMap::new();
        for pair in req.query_string().split('&').filter(|p| !p.is_empty()) {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            let name = decode(name).ok_or_else(|| ApiError::validation("query", "Malformed query string."))?;
            let value = decode(value).ok_or_else(|| ApiError::validation(name.clone(), "Malformed query value."))?;
            if name.contains('\0') || value.contains('\0') {
                return Err(ApiError::validation(name, "Query parameters must not contain the NUL character."));
            }
            if !allowed.contains(&name.as_str()) {
                return Err(ApiError::validation(name.clone(), format!("Unknown query parameter {name}.")));
            }
            if map.insert(name.clone(), value).is_some() {
                return Err(ApiError::validation(name, "The parameter is given more than once."));
            }
        }
        Ok(Self(map))
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(String::as_str)
    }

    /// `limit` (1-100, default 25) and `startingAfter`.
    pub fn page(&self) -> Result<PageRequest, ApiError> {
        let limit = match self.get("limit") {
            None => DEFAULT_PAGE_LIMIT,
            Some(text) => text
                .parse::<u32>()
                .ok()
                .filter(|n| (1..=MAX_PAGE_LIMIT).contains(n))
                .ok_or_else(|| ApiError::validation("limit", "limit must be an integer from 1 to 100."))?,
        };
        let starting_after = match self.get("startingAfter") {
            None => None,
            Some("") => {
                return Err(ApiError::validation("startingAfter", "startingAfter must not be empty."));
            }
            Some(cursor) if cursor.chars().count() > MAX_CURSOR_CHARS => {
                return Err(ApiError::validation(
                    "startingAfter",
                    "startingAfter must be the nextCursor of a page of this list (with unchanged filters).",
                ));
            }
            Some(cursor) => Some(cursor.to_owned()),
        };
        Ok(PageRequest { limit, starting_after })
    }
}

fn decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).ok()
}
