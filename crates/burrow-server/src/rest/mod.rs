//! The HTTP API: JSON over `/v1/...` (see docs/api.md), with bearer tokens naming tenants.
//!
//! Every handler is the same few steps — authenticate, build the operation's input from the
//! path, query and body, run the operation on the blocking pool, answer JSON — so the routes
//! are a table (`routes::table`) rather than a function each.

mod input;
mod openapi;
mod routes;

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, get};
use axum::{Json, Router};
use serde::Serialize;

use crate::api::{ApiError, ErrorCode};
use crate::app::App;

/// Largest request body in general.
pub const MAX_BODY: usize = 16 << 20;
/// Largest file upload (`PUT .../files/content`).
pub const MAX_UPLOAD: usize = 32 << 20;

/// The whole HTTP surface: the API, `/healthz`, `/openapi.json`, and `mcp` (a service that
/// reads the caller from the request's extensions) behind the same authentication.
pub fn router(app: App, mcp: Router) -> Router {
    let table = routes::table();
    let document = Arc::new(openapi::document(&table));
    let mut by_path: BTreeMap<&'static str, MethodRouter<App>> = BTreeMap::new();
    for route in table {
        let handler = if route.source == input::Source::Upload {
            route.handler.layer(DefaultBodyLimit::max(MAX_UPLOAD))
        } else {
            route.handler
        };
        let merged = match by_path.remove(route.path) {
            Some(existing) => existing.merge(handler),
            None => handler,
        };
        by_path.insert(route.path, merged);
    }
    let mut api = Router::new();
    for (path, handler) in by_path {
        api = api.route(path, handler);
    }
    let authenticated = api
        .with_state(app.clone())
        .merge(mcp)
        .route_layer(middleware::from_fn_with_state(app, authenticate));
    Router::new()
        .route(
            "/healthz",
            get(|| async { Json(serde_json::json!({"ok": true})) }),
        )
        .route(
            "/openapi.json",
            get(move || {
                let document = Arc::clone(&document);
                async move { Json(document.as_ref().clone()) }
            }),
        )
        .merge(authenticated)
        .fallback(|| async {
            error_response(ApiError::not_found(
                "no such endpoint: see /openapi.json for the API",
            ))
        })
        .method_not_allowed_fallback(|| async {
            error_response(ApiError::new(
                ErrorCode::Invalid,
                "this endpoint does not take that method: see /openapi.json",
            ))
        })
        .layer(DefaultBodyLimit::max(MAX_BODY))
}

/// Checks the bearer token and puts its [`crate::api::Caller`] in the request's extensions.
async fn authenticate(State(app): State<App>, mut request: Request, next: Next) -> Response {
    let Some(token) = bearer(request.headers()) else {
        return error_response(ApiError::new(
            ErrorCode::Unauthorized,
            "no bearer token: send `Authorization: Bearer TOKEN` (make one with `burrow token create --tenant NAME`)",
        ));
    };
    match app.blocking(move |api| api.authenticate(&token)).await {
        Ok(Some(caller)) => {
            request.extensions_mut().insert(caller);
            next.run(request).await
        }
        Ok(None) => error_response(ApiError::new(
            ErrorCode::Unauthorized,
            "the bearer token is not valid (unknown or revoked)",
        )),
        Err(error) => error_response(error),
    }
}

/// The token of an `Authorization: Bearer TOKEN` header.
fn bearer(headers: &HeaderMap) -> Option<String> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then(|| token.to_owned())
}

/// A successful answer: `value` as JSON, or no body for `204`.
fn reply<R: Serialize>(status: StatusCode, value: &R) -> Response {
    if status == StatusCode::NO_CONTENT {
        return status.into_response();
    }
    (status, Json(value)).into_response()
}

/// A failed one: `{"error", "code"}` with the code's status.
fn error_response(error: ApiError) -> Response {
    let status =
        StatusCode::from_u16(error.code.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (status, Json(error)).into_response()
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    #[test]
    fn only_a_bearer_header_carries_a_token() {
        let with = |value: &'static str| {
            let mut headers = HeaderMap::new();
            headers.insert(header::AUTHORIZATION, HeaderValue::from_static(value));
            bearer(&headers)
        };
        assert_eq!(with("Bearer abc").as_deref(), Some("abc"));
        assert_eq!(with("bearer  abc ").as_deref(), Some("abc"));
        assert_eq!(with("Basic Zm9vOmJhcg=="), None);
        assert_eq!(with("Bearer "), None);
        assert_eq!(bearer(&HeaderMap::new()), None);
    }
}
