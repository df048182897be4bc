//! The OpenAPI 3.0 document served at `/openapi.json`, generated from the route table and the
//! input types' schemas (the same schemas the MCP tools publish).

use schemars::generate::SchemaSettings;
use serde_json::{Map, Value, json};

use super::input::Source;
use super::routes::Route;

/// The document for `routes`.
pub(super) fn document(routes: &[Route]) -> Value {
    let mut generator = SchemaSettings::openapi3().into_generator();
    let mut paths = Map::new();
    for route in routes {
        let input = Value::from((route.input)(&mut generator));
        let mut parameters: Vec<Value> = path_parameters(route.path)
            .map(|name| json!({"name": name, "in": "path", "required": true, "schema": {"type": "string"}}))
            .collect();
        let mut operation = json!({
            "summary": route.summary,
            "security": [{"bearer": []}],
            "responses": {
                route.success.as_str(): {"description": "done"},
                "default": {"$ref": "#/components/responses/Error"},
            },
        });
        match route.source {
            Source::Json => {
                operation["requestBody"] =
                    json!({"content": {"application/json": {"schema": input}}});
            }
            // The input's fields other than the path's, one query parameter each.
            Source::Query => parameters.push(json!({
                "name": "input", "in": "query", "style": "form", "explode": true, "schema": input,
            })),
            Source::Upload => {
                parameters.push(json!({
                    "name": "input", "in": "query", "style": "form", "explode": true, "schema": input,
                }));
                operation["requestBody"] = json!({"content": {"application/octet-stream": {
                    "schema": {"type": "string", "format": "binary"},
                }}});
            }
            Source::Text(field) => {
                operation["requestBody"] = json!({
                    "description": format!("the `{field}` field, as text"),
                    "content": {"text/plain": {"schema": {"type": "string"}}},
                });
            }
        }
        operation["parameters"] = Value::Array(parameters);
        let entry = paths
            .entry(route.path)
            .or_insert_with(|| Value::Object(Map::new()));
        entry[route.verb.name()] = operation;
    }
    paths.insert(
        "/healthz".into(),
        json!({"get": {"summary": "Whether the server is up (no token needed)", "responses": {"200": {"description": "up"}}}}),
    );
    paths.insert(
        "/mcp".into(),
        json!({"post": {"summary": "MCP over streamable HTTP (JSON-RPC); the `full` profile's tools", "security": [{"bearer": []}], "responses": {"200": {"description": "a JSON-RPC answer or an event stream"}}}}),
    );
    json!({
        "openapi": "3.0.3",
        "info": {
            "title": "burrow",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Sandboxed commands and persistent workspaces for AI agents. Every error is {\"error\", \"code\"}.",
        },
        "paths": paths,
        "components": {
            "schemas": generator.take_definitions(true),
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "responses": {"Error": {
                "description": "what went wrong, in one line, and a code",
                "content": {"application/json": {"schema": {
                    "type": "object",
                    "required": ["error", "code"],
                    "properties": {
                        "error": {"type": "string"},
                        "code": {"type": "string", "enum": ["unauthorized", "not_found", "invalid", "conflict", "too_large", "unavailable", "internal"]},
                    },
                }}},
            }},
        },
    })
}

/// The `{name}` parameters of a path.
fn path_parameters(path: &str) -> impl Iterator<Item = &str> {
    path.split('/')
        .filter_map(|segment| segment.strip_prefix('{')?.strip_suffix('}'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_route_is_documented_with_its_path_parameters() {
        let routes = super::super::routes::table();
        let document = document(&routes);
        for route in &routes {
            let operation = &document["paths"][route.path][route.verb.name()];
            assert!(
                operation.is_object(),
                "{} {}",
                route.verb.name(),
                route.path
            );
            let named: Vec<&str> = operation["parameters"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|p| p["in"] == "path")
                .map(|p| p["name"].as_str().unwrap())
                .collect();
            assert_eq!(named, path_parameters(route.path).collect::<Vec<_>>());
        }
        let schemas = document["components"]["schemas"].as_object().unwrap();
        assert!(schemas.contains_key("ExecInput"), "{:?}", schemas.keys());
    }
}
