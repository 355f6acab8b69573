//! Rebuilds the crate when a migration is added or changed: `embed_migrations!` reads
//! `migrations/` at compile time, which cargo does not watch by itself.
fn main() {
    println!("cargo:rerun-if-changed=../../migrations");
}
