//! Whether the store answers.

use async_trait::async_trait;

use crate::error::Error;

/// Readiness of the service's dependencies.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait Health: Send + Sync {
    /// `Ok` when the store answers. Errors: `Unavailable`.
    async fn ready(&self) -> Result<(), Error>;
}
