//! Shapes the assembled document for client generators, which name a class after every
//! schema they meet: a copy of a named schema written inline becomes a numbered twin
//! (`Datum25` for `Machine`), an enum declared per operation becomes one class per
//! operation. So every inline copy of a named schema becomes a `$ref` to it, and a binary
//! answer is a string of its media type (OpenAPI 3.1), not an array of bytes.

use netops_shared::envelope::route_answers;
use netops_shared::routes::Route;
use serde_json::{Map, Value, json};

const SCHEMAS: &str = "#/components/schemas/";

/// Whether a named schema is worth a reference wherever a copy of it appears: an object with
/// properties, an enum or a union (a plain `{"type": "string"}` is no class).
fn named(schema: &Value) -> bool {
    ["properties", "enum", "oneOf", "anyOf", "allOf"]
        .iter()
        .any(|k| schema.get(k).is_some())
}

/// Replaces, under `node` (not `node` itself), every value equal to one of `named` by a
/// reference to it.
fn share(node: &mut Value, named: &[(String, Value)]) {
    let children: Vec<&mut Value> = match node {
        Value::Object(map) => map.values_mut().collect(),
        Value::Array(list) => list.iter_mut().collect(),
        _ => return,
    };
    for child in children {
        if child.is_object()
            && let Some((name, _)) = named.iter().find(|(_, s)| s == child)
        {
            *child = json!({"$ref": format!("{SCHEMAS}{name}")});
        } else {
            share(child, named);
        }
    }
}

/// Every inline copy of a named component schema, in the paths and in other components,
/// becomes a reference to it.
pub fn share_named_schemas(doc: &mut Value) {
    let named: Vec<(String, Value)> = doc["components"]["schemas"]
        .as_object()
        .map(|s| {
            s.iter()
                .filter(|(_, v)| named(v))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default();
    if let Some(paths) = doc.get_mut("paths") {
        share(paths, &named);
    }
    if let Some(schemas) = doc["components"]
        .get_mut("schemas")
        .and_then(Value::as_object_mut)
    {
        for (name, schema) in schemas.iter_mut() {
            let others: Vec<(String, Value)> =
                named.iter().filter(|(n, _)| n != name).cloned().collect();
            share(schema, &others);
        }
    }
}

/// A binary answer (neither JSON nor text) is a string of its media type: generators then
/// give its bytes, where an array of integers gave nothing usable.
pub fn binary_as_strings(doc: &mut Value) {
    let Some(paths) = doc.get_mut("paths").and_then(Value::as_object_mut) else {
        return;
    };
    for item in paths.values_mut() {
        let Some(item) = item.as_object_mut() else {
            continue;
        };
        for op in item.values_mut() {
            let Some(responses) = op.get_mut("responses").and_then(Value::as_object_mut) else {
                continue;
            };
            for res in responses.values_mut() {
                let Some(content) = res.get_mut("content").and_then(Value::as_object_mut) else {
                    continue;
                };
                for (media, body) in content.iter_mut() {
                    let textual = media.starts_with("text/")
                        || media.ends_with("json")
                        || media == "application/x-ndjson";
                    if !textual {
                        body["schema"] = json!({"type": "string", "contentMediaType": media});
                    }
                }
            }
        }
    }
}

/// Names of the component schemas no operation reaches, directly or through other schemas.
#[cfg(test)]
pub fn unreferenced_schemas(doc: &Value) -> Vec<String> {
    let mut reached: Vec<String> = Vec::new();
    let mut todo: Vec<&Value> = vec![&doc["paths"]];
    for section in ["responses", "parameters", "requestBodies", "headers"] {
        todo.push(&doc["components"][section]);
    }
    while let Some(node) = todo.pop() {
        match node {
            Value::Object(map) => {
                if let Some(name) = map
                    .get("$ref")
                    .and_then(Value::as_str)
                    .and_then(|r| r.strip_prefix(SCHEMAS))
                    && !reached.iter().any(|n| n == name)
                {
                    reached.push(name.to_owned());
                    todo.push(&doc["components"]["schemas"][name]);
                }
                todo.extend(map.values());
            }
            Value::Array(list) => todo.extend(list),
            _ => {}
        }
    }
    doc["components"]["schemas"]
        .as_object()
        .map(|s| s.keys().filter(|k| !reached.contains(k)).cloned().collect())
        .unwrap_or_default()
}

/// Every key of `meta`, typed and described: the fixed ones as the `Meta` derive (`base`)
/// gives them, the route-specific ones from [`META_KEYS`](netops_shared::envelope::META_KEYS)
/// in place of the untyped map the derive gives for them.
pub fn meta_properties(base: &Value) -> Map<String, Value> {
    let parts: Vec<&Value> = match base["allOf"].as_array() {
        Some(parts) => parts.iter().collect(),
        None => vec![base],
    };
    let mut properties: Map<String, Value> = parts
        .iter()
        .filter_map(|p| p["properties"].as_object())
        .flat_map(|p| p.iter().map(|(k, v)| (k.clone(), v.clone())))
        .collect();
    for key in netops_shared::envelope::META_KEYS {
        let mut s: Value = serde_json::from_str(key.schema).unwrap_or_else(|_| json!({}));
        s["description"] = json!(key.description);
        properties.insert(key.name.into(), s);
    }
    properties
}

/// A query parameter given with an empty value is refused with 400 (`?to=` is no date, and
/// reading it as absent would answer another question): a string parameter declares
/// `minLength: 1`, so that clients and testers know it (enums, formats and numbers already
/// exclude the empty string).
pub fn non_empty_query_strings(doc: &mut Value) {
    fn non_empty<'a>(params: impl Iterator<Item = &'a mut Value>) {
        for p in params.filter(|p| p["in"] == "query") {
            let schema = &mut p["schema"];
            let string = schema["type"] == "string"
                || schema["type"]
                    .as_array()
                    .is_some_and(|t| t.contains(&json!("string")));
            if string && schema.get("enum").is_none() && schema.get("minLength").is_none() {
                schema["minLength"] = json!(1);
            }
        }
    }
    if let Some(shared) = doc["components"]
        .get_mut("parameters")
        .and_then(Value::as_object_mut)
    {
        non_empty(shared.values_mut());
    }
    if let Some(paths) = doc.get_mut("paths").and_then(Value::as_object_mut) {
        non_empty(
            paths
                .values_mut()
                .filter_map(Value::as_object_mut)
                .flat_map(|item| item.values_mut())
                .filter_map(|op| op.get_mut("parameters").and_then(Value::as_array_mut))
                .flatten(),
        );
    }
}

/// Each route's own `meta`: the keys it answers ([`route_answers`]), typed and described as
/// in `all` (from [`meta_properties`]), as a component named after the operation
/// (`ListFlowsMeta`) that its envelope references. A schema of every key, which no answer
/// carries whole, is not part of the document.
pub fn route_metas(doc: &mut Value, all: &Map<String, Value>, routes: &[Route]) {
    for route in routes {
        let method = route.method.as_str().to_lowercase();
        // The envelope of its success, 200 or 202 (a started action).
        let Some(envelope) = doc["paths"][route.path][&method]["responses"]
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(status, _)| status.starts_with('2'))
            .find_map(|(_, res)| {
                res["content"]["application/json"]["schema"]["$ref"]
                    .as_str()
                    .and_then(|r| r.strip_prefix(SCHEMAS))
                    .filter(|name| name.starts_with("Envelope_"))
            })
            .map(str::to_owned)
        else {
            continue;
        };
        let properties: Map<String, Value> = all
            .iter()
            .filter(|(key, _)| route_answers(route, key))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let name = format!("{}Meta", pascal(route.op));
        let schemas = &mut doc["components"]["schemas"];
        schemas[&name] = json!({
            "type": "object",
            "description": format!("`meta` of `{}`: the keys it answers.", route.op),
            "properties": properties,
            "additionalProperties": false,
        });
        schemas[&envelope]["properties"]["meta"] = json!({"$ref": format!("{SCHEMAS}{name}")});
    }
}

/// `list_flows` → `ListFlows`.
fn pascal(op: &str) -> String {
    op.split('_')
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|f| f.to_uppercase().chain(c).collect::<String>())
                .unwrap_or_default()
        })
        .collect()
}

/// A request body that may be absent is declared not required, with its plain schema: the
/// derive writes `required: true` and a union with `null` for an `Option` body.
pub fn optional_bodies(doc: &mut Value) {
    let Some(paths) = doc.get_mut("paths").and_then(Value::as_object_mut) else {
        return;
    };
    for op in paths
        .values_mut()
        .filter_map(Value::as_object_mut)
        .flat_map(|item| item.values_mut())
    {
        let Some(content) = op
            .get_mut("requestBody")
            .and_then(|b| b.get_mut("content"))
            .and_then(Value::as_object_mut)
        else {
            continue;
        };
        let mut optional = false;
        for media in content.values_mut() {
            let plain = media["schema"]["oneOf"]
                .as_array()
                .and_then(|v| match v.as_slice() {
                    [a, b] if a["type"] == "null" => Some(b.clone()),
                    [a, b] if b["type"] == "null" => Some(a.clone()),
                    _ => None,
                });
            if let Some(plain) = plain {
                media["schema"] = plain;
                optional = true;
            }
        }
        if optional {
            op["requestBody"]["required"] = json!(false);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_of_named_schemas_become_references() {
        let machine = json!({"type": "object", "properties": {"id": {"type": "string"}}});
        let mut doc = json!({
            "paths": {"/m": {"get": {"responses": {"200": {"content": {"application/json": {
                "schema": {"$ref": "#/components/schemas/Envelope"}}}}}}}},
            "components": {"schemas": {
                "Machine": machine,
                "Envelope": {"type": "object", "properties": {
                    "data": {"type": "array", "items": machine.clone()}}},
            }},
        });
        assert_eq!(unreferenced_schemas(&doc), vec!["Machine".to_owned()]);
        share_named_schemas(&mut doc);
        assert_eq!(
            doc["components"]["schemas"]["Envelope"]["properties"]["data"]["items"],
            json!({"$ref": "#/components/schemas/Machine"})
        );
        assert_eq!(doc["components"]["schemas"]["Machine"], machine);
        assert!(unreferenced_schemas(&doc).is_empty());
    }

    #[test]
    fn a_pdf_is_a_string_of_its_media_type() {
        let mut doc = json!({"paths": {"/r": {"get": {"responses": {"200": {"content": {
            "application/pdf": {"schema": {"type": "array", "items": {"type": "integer"}}}}}}}}}});
        binary_as_strings(&mut doc);
        assert_eq!(
            doc["paths"]["/r"]["get"]["responses"]["200"]["content"]["application/pdf"]["schema"],
            json!({"type": "string", "contentMediaType": "application/pdf"})
        );
    }
}
