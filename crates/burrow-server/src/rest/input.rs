//! How a request becomes an operation's input: the URL's path parameters fill the fields of
//! the same name, and the rest comes from the JSON body, the query string, or the raw body.

use axum::body::Bytes;
use axum::extract::RawPathParams;
use axum::extract::rejection::BytesRejection;
use axum::http::StatusCode;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::api::{ApiError, ApiResult, ErrorCode};

/// Where an operation's fields come from, besides the path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Source {
    /// A JSON object in the body (an empty body is `{}`).
    Json,
    /// The query string.
    Query,
    /// The body as UTF-8 text, into the named field (a patch is sent as `text/plain`).
    Text(&'static str),
    /// The query string; the body is raw bytes the handler takes itself (a file's content).
    Upload,
}

/// The path parameters, percent-decoded, as owned pairs.
pub(super) fn path_pairs(params: &RawPathParams) -> Vec<(String, String)> {
    params
        .iter()
        .map(|(key, value)| (key.to_owned(), value.to_owned()))
        .collect()
}

/// Builds `T` from the path parameters and `source`.
pub(super) fn build<T: DeserializeOwned>(
    source: Source,
    path: &[(String, String)],
    query: Option<&str>,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult<T> {
    match source {
        Source::Query | Source::Upload => from_query(path, query.unwrap_or("")),
        Source::Json => {
            let body = body.map_err(|rejection| body_error(&rejection))?;
            let fields = if body.iter().all(u8::is_ascii_whitespace) {
                Map::new()
            } else {
                match serde_json::from_slice::<Value>(&body) {
                    Ok(Value::Object(fields)) => fields,
                    Ok(_) => return Err(ApiError::invalid("the body must be a JSON object")),
                    Err(error) => {
                        return Err(ApiError::invalid(format!(
                            "the body is not valid JSON: {error}"
                        )));
                    }
                }
            };
            from_fields(path, fields)
        }
        Source::Text(field) => {
            let body = body.map_err(|rejection| body_error(&rejection))?;
            let text = String::from_utf8(body.to_vec())
                .map_err(|_| ApiError::invalid("the body must be UTF-8 text"))?;
            from_fields(
                path,
                Map::from_iter([(field.to_owned(), Value::String(text))]),
            )
        }
    }
}

/// Deserializes `fields` with the path parameters added; a field given both ways is refused
/// rather than silently taking one of them.
fn from_fields<T: DeserializeOwned>(
    path: &[(String, String)],
    mut fields: Map<String, Value>,
) -> ApiResult<T> {
    for (key, value) in path {
        if fields.contains_key(key) {
            return Err(ApiError::invalid(format!(
                "`{key}` is given by the URL's path; leave it out of the body"
            )));
        }
        fields.insert(key.clone(), Value::String(value.clone()));
    }
    serde_json::from_value(Value::Object(fields))
        .map_err(|error| ApiError::invalid(format!("bad request body: {error}")))
}

/// Deserializes the query string with the path parameters appended (a duplicate is refused by
/// the deserializer as a duplicate field).
fn from_query<T: DeserializeOwned>(path: &[(String, String)], query: &str) -> ApiResult<T> {
    let mut all = String::from(query);
    let path = serde_urlencoded::to_string(path)
        .map_err(|error| ApiError::internal(format!("cannot encode path parameters: {error}")))?;
    if !path.is_empty() {
        if !all.is_empty() {
            all.push('&');
        }
        all.push_str(&path);
    }
    serde_urlencoded::from_str(&all)
        .map_err(|error| ApiError::invalid(format!("bad query string: {error}")))
}

/// What a body that could not be read is answered with.
pub(super) fn body_error(rejection: &BytesRejection) -> ApiError {
    if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
        ApiError::new(
            ErrorCode::TooLarge,
            "the request body is larger than this endpoint accepts (16 MiB; 32 MiB for file content)",
        )
    } else {
        ApiError::invalid(format!("cannot read the request body: {rejection}"))
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Probe {
        workspace: String,
        #[serde(default)]
        recursive: bool,
        #[serde(default)]
        tail: Option<u64>,
    }

    fn path() -> Vec<(String, String)> {
        vec![("workspace".to_owned(), "w 1".to_owned())]
    }

    #[test]
    fn a_json_body_gets_the_path_parameters() {
        let body = Ok(Bytes::from_static(br#"{"recursive": true}"#));
        let probe: Probe = build(Source::Json, &path(), None, body).unwrap();
        assert_eq!(
            probe,
            Probe {
                workspace: "w 1".into(),
                recursive: true,
                tail: None
            }
        );
        let empty: Probe = build(Source::Json, &path(), None, Ok(Bytes::new())).unwrap();
        assert_eq!(empty.workspace, "w 1");
    }

    #[test]
    fn a_field_in_both_the_path_and_the_body_is_refused() {
        let body = Ok(Bytes::from_static(br#"{"workspace": "other"}"#));
        let error = build::<Probe>(Source::Json, &path(), None, body).unwrap_err();
        assert_eq!(error.code, ErrorCode::Invalid);
        assert!(error.error.contains("path"), "{}", error.error);
    }

    #[test]
    fn bad_json_and_unknown_fields_are_invalid() {
        for body in [&b"{\"recursive\": }"[..], b"[1]", b"{\"nope\": 1}"] {
            let error =
                build::<Probe>(Source::Json, &path(), None, Ok(Bytes::from(body))).unwrap_err();
            assert_eq!(error.code, ErrorCode::Invalid, "{body:?}");
        }
    }

    #[test]
    fn query_strings_are_typed() {
        let probe: Probe = build(
            Source::Query,
            &path(),
            Some("recursive=true&tail=5"),
            Ok(Bytes::new()),
        )
        .unwrap();
        assert!(probe.recursive);
        assert_eq!(probe.tail, Some(5));
        let error = build::<Probe>(Source::Query, &path(), Some("tail=many"), Ok(Bytes::new()))
            .unwrap_err();
        assert_eq!(error.code, ErrorCode::Invalid);
        let error = build::<Probe>(
            Source::Query,
            &path(),
            Some("workspace=x"),
            Ok(Bytes::new()),
        )
        .unwrap_err();
        assert_eq!(error.code, ErrorCode::Invalid);
    }
}
