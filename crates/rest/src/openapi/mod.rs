//! The OpenAPI document: the served document (`document`), the rules the derive cannot state
//! (`parameters`, `bodies`, `patterns`), where responses lead (`links`), each operation's error
//! codes (`errors`), and the API reference generated from it (`api_reference`,
//! `docs/api-reference.md`).

pub mod api_reference;
pub mod bodies;
pub mod document;
pub mod errors;
pub mod links;
pub mod parameters;
pub mod patterns;
