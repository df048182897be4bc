//! What a running server shares between its requests: the operations and a bound on how many
//! run at once.

use std::sync::Arc;

use tokio::sync::Semaphore;

use crate::api::{Api, ApiError, ApiResult, ErrorCode};

/// The state of `burrow serve` and `burrow mcp`, cheap to clone into each request.
#[derive(Debug, Clone)]
pub struct App {
    api: Arc<Api>,
    in_flight: Arc<Semaphore>,
}

impl App {
    /// Serves `api`, running at most `max_in_flight` operations at once (others wait).
    pub fn new(api: Api, max_in_flight: usize) -> App {
        App {
            api: Arc::new(api),
            in_flight: Arc::new(Semaphore::new(max_in_flight.max(1))),
        }
    }

    /// Runs a blocking operation on tokio's blocking pool once a slot is free. The bound keeps
    /// a burst of requests from becoming a burst of threads, SQLite connections and sockets.
    pub async fn blocking<R: Send + 'static>(
        &self,
        work: impl FnOnce(&Api) -> ApiResult<R> + Send + 'static,
    ) -> ApiResult<R> {
        let permit = self.in_flight.clone().acquire_owned().await.map_err(|_| {
            ApiError::new(ErrorCode::Unavailable, "the server is shutting down; retry")
        })?;
        let api = Arc::clone(&self.api);
        let done = tokio::task::spawn_blocking(move || {
            let _permit = permit;
            work(&api)
        })
        .await;
        done.map_err(|error| ApiError::internal(format!("an operation failed: {error}")))?
    }
}
