//! The tool catalog: one tool per JSON read route of the route table (`Kind::Read`), named
//! by its operation id. Each tool's `inputSchema` comes from the route's path and query
//! parameters in the OpenAPI document (types, enums, bounds, defaults); the parameters every
//! route shares (paging, window) come from the route table itself with compact wording. A
//! route whose module has no OpenAPI operation yet still gets its tool, built from the table
//! alone, so the tool list always equals the table's read routes.

use std::sync::OnceLock;

use netops_shared::Scope;
use netops_shared::lang::Lang;
pub use netops_shared::routes::mcp_toolsets;
use netops_shared::routes::{Access, Function, Kind, ROUTES, Route};
use netops_shared::window::PERIODS;
use serde_json::{Map, Value, json};

use crate::english;

/// Budget of the whole tool list without its output schemas, in bytes: what an assistant
/// reads to choose a tool stays within 62 KiB (its annotations included), since it pays for
/// every token of it (the output schemas come with it, over several pages; a toolset holds a
/// part of it).
pub const LIST_BUDGET: usize = 62 * 1024;

/// Bytes of one `tools/list` page (the definitions it holds, output schemas included): the
/// whole catalog with its output schemas is larger, so it comes in pages, each ending with a
/// `nextCursor` while tools remain.
pub const PAGE_BUDGET: usize = 56 * 1024;

/// The tools of the page starting at `start` of `visible` (as many as fit in
/// [`PAGE_BUDGET`], at least one), and the first tool of the next page.
pub fn page<'a>(visible: &'a [&'a Tool], start: usize) -> (&'a [&'a Tool], Option<&'a Tool>) {
    let rest = visible.get(start..).unwrap_or_default();
    let mut size = 0;
    let mut end = 0;
    for tool in rest {
        size += tool.json.len() + 1;
        if end > 0 && size > PAGE_BUDGET {
            break;
        }
        end += 1;
    }
    (&rest[..end], rest.get(end).copied())
}

/// The modules whose tools a POST lists and calls: those its endpoint URL names in
/// `toolsets` (comma-separated, the parameter possibly repeated), every module without it.
#[derive(Debug, Default)]
pub struct Toolsets(Option<Vec<Function>>);

impl Toolsets {
    /// The toolsets of a query string, or the first name that is no toolset.
    pub fn from_query(query: Option<&str>) -> Result<Toolsets, String> {
        let names = mcp_toolsets();
        let mut chosen: Option<Vec<Function>> = None;
        let pairs = form_urlencoded::parse(query.unwrap_or_default().as_bytes());
        for (_, value) in pairs.filter(|(k, _)| k == "toolsets") {
            let chosen = chosen.get_or_insert_with(Vec::new);
            for name in value.split(',').map(str::trim).filter(|n| !n.is_empty()) {
                let function = Function::ALL
                    .iter()
                    .find(|f| f.name() == name && names.contains(&name))
                    .ok_or_else(|| name.to_owned())?;
                chosen.push(*function);
            }
        }
        Ok(Toolsets(chosen))
    }

    pub fn holds(&self, tool: &Tool) -> bool {
        self.0
            .as_ref()
            .is_none_or(|chosen| chosen.contains(&tool.route.function))
    }
}

/// Text lengths (characters) of a tool description and of a parameter description.
#[derive(Debug, Clone, Copy)]
struct Lengths {
    description: usize,
    param: usize,
}

/// From the most to the least detailed: the first that fits the budget is used.
const LEVELS: &[Lengths] = &[
    Lengths {
        description: 420,
        param: 160,
    },
    Lengths {
        description: 320,
        param: 120,
    },
    Lengths {
        description: 240,
        param: 90,
    },
    Lengths {
        description: 160,
        param: 60,
    },
    Lengths {
        description: 100,
        param: 0,
    },
];

/// Where an argument goes in the REST request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum In {
    Path,
    Query,
}

#[derive(Debug, Clone)]
pub struct Param {
    pub name: String,
    pub location: In,
    pub required: bool,
    /// The query parameter takes several values: comma-separated (what the shared query
    /// parser reads), or repeated `name=v` when the operation says `explode: true`.
    pub array: bool,
    pub explode: bool,
}

#[derive(Debug)]
pub struct Tool {
    pub route: &'static Route,
    pub params: Vec<Param>,
    /// The tool as `tools/list` shows it.
    pub def: Value,
    /// The same, serialized once.
    pub json: String,
    /// Bytes of `"outputSchema":…` in `json` (with its comma).
    pub output_len: usize,
}

impl Tool {
    pub fn name(&self) -> &'static str {
        self.route.op
    }

    pub fn param(&self, name: &str) -> Option<&Param> {
        self.params.iter().find(|p| p.name == name)
    }

    /// Whether a token with `scopes` may call the tool's route.
    pub fn covered_by(&self, scopes: &[Scope]) -> bool {
        match self.route.access {
            Access::Scoped(s) => scopes.contains(&s),
            Access::Token | Access::Public => true,
            Access::Collect | Access::Agent(_) => false,
        }
    }
}

/// The OpenAPI document as `netops_api::openapi` makes it, written when this crate is built
/// (`build.rs`): building it at start would link every operation's OpenAPI code.
static OPENAPI_JSON: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/openapi.json"));

/// Every tool, described in `lang`, built once per process from the route table and the
/// OpenAPI document.
pub fn catalog(lang: Lang) -> &'static [Tool] {
    static EN: OnceLock<Vec<Tool>> = OnceLock::new();
    static FR: OnceLock<Vec<Tool>> = OnceLock::new();
    let cell = match lang {
        Lang::En => &EN,
        Lang::Fr => &FR,
    };
    cell.get_or_init(|| {
        let doc = serde_json::from_slice(OPENAPI_JSON).unwrap_or_else(|e| {
            tracing::error!(error = %e, "the built-in OpenAPI document is unreadable: no tools");
            Value::Null
        });
        build(&doc, lang)
    })
}

/// The language of the tool descriptions for a request: English, or French when its
/// `Accept-Language` prefers French.
pub fn lang(headers: &http::HeaderMap) -> Lang {
    Lang::preferred(headers).unwrap_or(Lang::En)
}

/// A tool by name (its arguments are the same in both languages).
pub fn find(name: &str) -> Option<&'static Tool> {
    catalog(Lang::En).iter().find(|t| t.name() == name)
}

/// Builds the catalog from an OpenAPI document (a `serde_json::Value`), with the most
/// detailed descriptions that keep the whole list within [`LIST_BUDGET`].
pub fn build(doc: &Value, lang: Lang) -> Vec<Tool> {
    let mut tools = Vec::new();
    for lengths in LEVELS {
        tools = build_with(doc, *lengths, lang);
        if list_size(&tools) <= LIST_BUDGET {
            break;
        }
    }
    tools
}

/// Bytes of the tool definitions without their output schemas (the part of the list the
/// description lengths weigh on), serialized as `tools/list` shows them.
pub fn list_size(tools: &[Tool]) -> usize {
    tools.iter().map(|t| t.json.len() + 1 - t.output_len).sum()
}

fn build_with(doc: &Value, lengths: Lengths, lang: Lang) -> Vec<Tool> {
    ROUTES
        .iter()
        .filter(|r| r.kind == Kind::Read)
        .map(|route| {
            let method = route.method.as_str().to_ascii_lowercase();
            let op = doc["paths"]
                .get(route.path)
                .and_then(|p| p.get(&method))
                .filter(|op| op.is_object());
            tool(route, op, doc, lengths, lang)
        })
        .collect()
}

fn tool(
    route: &'static Route,
    op: Option<&Value>,
    doc: &Value,
    lengths: Lengths,
    lang: Lang,
) -> Tool {
    let mut properties = Map::new();
    let mut required = Vec::new();
    let mut params = Vec::new();
    let mut add = |name: &str,
                   location: In,
                   is_required: bool,
                   explode: bool,
                   schema: Value,
                   params: &mut Vec<Param>| {
        if properties.contains_key(name) {
            return;
        }
        let array = schema["type"] == "array";
        properties.insert(name.to_owned(), schema);
        if is_required {
            required.push(Value::from(name));
        }
        params.push(Param {
            name: name.to_owned(),
            location,
            required: is_required,
            array,
            explode,
        });
    };
    // Path parameters, in template order, always present and required.
    for name in path_params(route.path) {
        let declared = op.and_then(|op| declared_param(op, name, "path"));
        let mut schema = declared
            .map(|p| simplify(&p["schema"], doc, 0))
            .unwrap_or_else(|| json!({"type": "string"}));
        if schema.get("type").is_none() {
            schema["type"] = json!("string");
        }
        // The document's words are French: an English tool keeps only the typing.
        if let Some(d) = declared
            .and_then(|p| p["description"].as_str())
            .filter(|_| lang == Lang::Fr)
        {
            let d = compact(d, lengths.param);
            if !d.is_empty() {
                schema["description"] = json!(d);
            }
        }
        add(name, In::Path, true, false, schema, &mut params);
    }
    // The parameters the route table defines, worded compactly.
    for (name, schema) in common_params(route, lang) {
        add(name, In::Query, false, false, schema, &mut params);
    }
    // The route's own query parameters, as its module documents them.
    if let Some(list) = op.and_then(|op| op["parameters"].as_array()) {
        for p in list {
            let (Some(name), Some("query")) = (p["name"].as_str(), p["in"].as_str()) else {
                continue;
            };
            let mut schema = simplify(&p["schema"], doc, 0);
            if let Some(d) = p["description"].as_str().filter(|_| lang == Lang::Fr) {
                let d = compact(d, lengths.param);
                if !d.is_empty() {
                    schema["description"] = json!(d);
                }
            }
            let explode = p["explode"] == true;
            add(
                name,
                In::Query,
                p["required"] == true,
                explode,
                schema,
                &mut params,
            );
        }
    }
    let limits = limits(route, lang);
    let description = match (lang, op, english::answers(route.op)) {
        (Lang::En, _, Some(answers)) => format!("{answers} {limits}"),
        (Lang::Fr, Some(op), _) => {
            // The limits always; the document's text in the room left.
            let room = lengths.description.saturating_sub(limits.chars().count());
            let text = if room >= 60 {
                describe(op, room)
            } else {
                compact(op["summary"].as_str().unwrap_or(""), 60)
            };
            let sep = if text.ends_with(['.', '…']) {
                " "
            } else {
                ". "
            };
            format!("{text}{sep}{limits}")
        }
        _ => format!(
            "GET {}{}: {{data, meta}}. {limits}",
            netops_shared::routes::BASE_PATH,
            route.path
        ),
    };
    let mut input = Map::new();
    input.insert("type".into(), json!("object"));
    input.insert("properties".into(), Value::Object(properties));
    if !required.is_empty() {
        input.insert("required".into(), Value::Array(required));
    }
    input.insert("additionalProperties".into(), json!(false));
    let mut def = json!({
        "name": route.op,
        "description": description,
        "inputSchema": input,
        // Every tool reads the caller's own account: nothing changes, a call may be repeated,
        // and nothing outside the account is reached.
        "annotations": {
            "title": title(route, op, lang),
            "readOnlyHint": true,
            "idempotentHint": true,
            "openWorldHint": false,
        },
    });
    let mut output_len = 0;
    if let Some(output) = op.and_then(|op| output_schema(route, op, doc)) {
        output_len = r#","outputSchema":"#.len() + output.to_string().len();
        def["outputSchema"] = output;
    }
    Tool {
        route,
        params,
        json: def.to_string(),
        def,
        output_len,
    }
}

/// A tool's display name: its operation's summary in French, its name in words in English.
fn title(route: &Route, op: Option<&Value>, lang: Lang) -> String {
    if lang == Lang::Fr
        && let Some(summary) = op.and_then(|op| op["summary"].as_str())
    {
        return compact(summary, 60);
    }
    let words: Vec<&str> = route
        .op
        .split('_')
        .map(|word| match word {
            "me" => "calling token",
            "netdiag" => "NetDiag",
            "dns" => "DNS",
            "cves" => "CVEs",
            other => other,
        })
        .collect();
    let text = words.join(" ");
    let mut chars = text.chars();
    chars
        .next()
        .map(|first| first.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

const SCHEMAS: &str = "#/components/schemas/";

/// The tool's `outputSchema` (MCP 2025-06-18): the schema of its route's 200 JSON answer,
/// the `structuredContent` of a successful call, self-contained: every component it
/// references is copied under `$defs`. Descriptions and examples are left out: the document
/// carries them, and every byte of the tool list costs an assistant tokens.
fn output_schema(route: &Route, op: &Value, doc: &Value) -> Option<Value> {
    let root = &op["responses"]["200"]["content"]["application/json"]["schema"];
    let name = root["$ref"].as_str()?.strip_prefix(SCHEMAS)?;
    let schemas = &doc["components"]["schemas"];
    let meta = schemas[name]["properties"]["meta"]["$ref"]
        .as_str()
        .and_then(|r| r.strip_prefix(SCHEMAS));
    let mut defs = Map::new();
    let mut todo = vec![name.to_owned()];
    while let Some(name) = todo.pop() {
        if defs.contains_key(&name) {
            continue;
        }
        let schema = if meta == Some(name.as_str()) {
            bare(&own_meta(&schemas[&name], route), &mut todo)
        } else {
            bare(&schemas[&name], &mut todo)
        };
        defs.insert(name, schema);
    }
    let mut out = defs.remove(name)?;
    if out.get("type").is_none() {
        out["type"] = json!("object");
    }
    if !defs.is_empty() {
        out["$defs"] = Value::Object(defs);
    }
    Some(out)
}

/// The keys of `meta` the instructions and the tool's description already explain, left out
/// of its output schema unless the route answers them as keys of its own: the paging and
/// window helpers' (the cursor stays: a client follows it).
const EXPLAINED_META: &[&str] = &["limit", "truncated", "window", "window_capped"];

/// A route's `meta` schema without the [`EXPLAINED_META`] keys of its paging and window
/// rules, open to them (no `additionalProperties: false`).
fn own_meta(schema: &Value, route: &Route) -> Value {
    let mut out = schema.clone();
    let explained = |k: &str| EXPLAINED_META.contains(&k) && !route.meta.contains(&k);
    if let Some(obj) = out.as_object_mut() {
        obj.remove("additionalProperties");
        if let Some(props) = obj.get_mut("properties").and_then(Value::as_object_mut) {
            props.retain(|k, _| !explained(k));
        }
        if let Some(required) = obj.get_mut("required").and_then(Value::as_array_mut) {
            required.retain(|k| !k.as_str().is_some_and(explained));
        }
    }
    out
}

/// A schema without its words (descriptions, examples, titles, integer formats), its
/// component references pointing under `$defs` and their names added to `todo`.
fn bare(schema: &Value, todo: &mut Vec<String>) -> Value {
    match schema {
        Value::Object(map) => {
            let mut out = Map::new();
            for (k, v) in map {
                match k.as_str() {
                    "description" | "example" | "examples" | "title" => {}
                    "format"
                        if v.as_str().is_some_and(|f| {
                            f.starts_with("int")
                                || f.starts_with("uint")
                                || f == "float"
                                || f == "double"
                        }) => {}
                    "$ref" => {
                        let name = v
                            .as_str()
                            .and_then(|r| r.strip_prefix(SCHEMAS))
                            .unwrap_or("");
                        todo.push(name.to_owned());
                        out.insert(k.clone(), json!(format!("#/$defs/{name}")));
                    }
                    // Property names are no keywords: only their schemas are stripped.
                    "properties" => {
                        let props = v
                            .as_object()
                            .map(|p| p.iter().map(|(n, s)| (n.clone(), bare(s, todo))).collect())
                            .unwrap_or_default();
                        out.insert(k.clone(), Value::Object(props));
                    }
                    _ => {
                        out.insert(k.clone(), bare(v, todo));
                    }
                }
            }
            Value::Object(out)
        }
        Value::Array(list) => Value::Array(list.iter().map(|v| bare(v, todo)).collect()),
        other => other.clone(),
    }
}

/// `{hostname}`, `{id}`... in template order.
pub fn path_params(template: &str) -> impl Iterator<Item = &str> {
    template
        .split('/')
        .filter_map(|s| s.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
}

fn declared_param<'a>(op: &'a Value, name: &str, location: &str) -> Option<&'a Value> {
    op["parameters"]
        .as_array()?
        .iter()
        .find(|p| p["name"] == name && p["in"] == location)
}

fn duration(secs: i64, lang: Lang) -> String {
    let (day, days) = match lang {
        Lang::En => ("day", "days"),
        Lang::Fr => ("jour", "jours"),
    };
    if secs % 86_400 == 0 {
        let d = secs / 86_400;
        format!("{d} {}", if d > 1 { days } else { day })
    } else {
        format!("{} h", secs / 3600)
    }
}

/// What a tool's answers are bound by, from its route table entry: paging and window (the
/// scope goes without saying: a token sees only the tools its scopes cover).
fn limits(route: &Route, lang: Lang) -> String {
    let mut out = Vec::new();
    match (route.paging, lang) {
        (Some(p), Lang::En) if p.cursor => out.push(format!(
            "Paged: {} items by default, at most {}; next page: cursor = meta.next_cursor.",
            p.default, p.max
        )),
        (Some(p), Lang::Fr) if p.cursor => out.push(format!(
            "Paginé : {} éléments par défaut, {} au plus ; page suivante : cursor = meta.next_cursor.",
            p.default, p.max
        )),
        (Some(p), Lang::En) => out.push(format!(
            "At most {} items ({} by default); meta.truncated if more matched.",
            p.max, p.default
        )),
        (Some(p), Lang::Fr) => out.push(format!(
            "{} éléments au plus ({} par défaut) ; meta.truncated si d'autres correspondaient.",
            p.max, p.default
        )),
        (None, _) => {}
    }
    if let Some(w) = route.window {
        let default = duration(w.default_secs, lang);
        let cap = w.max_secs.map(|m| duration(m, lang));
        out.push(match (lang, cap) {
            (Lang::En, Some(cap)) => {
                format!("Window: period (default {default}, at most {cap}) or from/to.")
            }
            (Lang::En, None) => format!("Window: period (default {default}) or from/to."),
            (Lang::Fr, Some(cap)) => {
                format!("Fenêtre : period (défaut {default}, {cap} au plus) ou from/to.")
            }
            (Lang::Fr, None) => format!("Fenêtre : period (défaut {default}) ou from/to."),
        });
    }
    out.join(" ")
}

/// Paging and window parameters from the route table.
fn common_params(route: &Route, lang: Lang) -> Vec<(&'static str, Value)> {
    let mut out = Vec::new();
    // What limit and period do is said once, in the instructions, and each tool's bounds in
    // its description: their schemas hold only the bounds.
    if let Some(p) = route.paging {
        out.push((
            "limit",
            json!({"type": "integer", "minimum": 1, "maximum": p.max, "default": p.default}),
        ));
        if p.cursor {
            let cursor = match lang {
                Lang::En => "meta.next_cursor of the previous page, same filters.",
                Lang::Fr => "meta.next_cursor de la page précédente, mêmes filtres.",
            };
            out.push(("cursor", json!({"type": "string", "description": cursor})));
        }
    }
    if route.window.is_some() {
        out.extend(window_params());
    }
    out
}

fn window_params() -> Vec<(&'static str, Value)> {
    let periods: Vec<&str> = PERIODS.iter().map(|(p, _)| *p).collect();
    vec![
        ("period", json!({"type": "string", "enum": periods})),
        ("from", json!({"type": "string", "format": "date-time"})),
        ("to", json!({"type": "string", "format": "date-time"})),
    ]
}

/// Summary and description of an operation, on one line, cut at a sentence end.
fn describe(op: &Value, max: usize) -> String {
    let summary = op["summary"].as_str().unwrap_or("").trim();
    let description = op["description"].as_str().unwrap_or("").trim();
    let text = match (summary.is_empty(), description.is_empty()) {
        (false, false) => format!("{}. {description}", summary.trim_end_matches('.')),
        (false, true) => summary.to_owned(),
        (true, _) => description.to_owned(),
    };
    compact(&text, max)
}

/// Whitespace collapsed; cut at the last sentence end that fits in `max` characters (or at
/// a word boundary, with an ellipsis, when no sentence ends early enough).
pub fn compact(text: &str, max: usize) -> String {
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if text.chars().count() <= max {
        return text;
    }
    let cut: String = text.chars().take(max).collect();
    if let Some(end) = cut.rfind(". ").filter(|&i| i > max / 3) {
        return cut[..=end].to_owned();
    }
    match cut.rfind(' ') {
        Some(i) => format!("{}…", &cut[..i]),
        None => cut,
    }
}

/// A JSON schema reduced to what an assistant needs: references resolved, nullable unions
/// collapsed, only typing and bounds kept.
fn simplify(schema: &Value, doc: &Value, depth: u8) -> Value {
    if depth > 6 {
        return json!({});
    }
    if let Some(r) = schema["$ref"].as_str() {
        let target = r
            .strip_prefix("#/")
            .map(|p| p.split('/').fold(doc, |v, k| &v[k]))
            .unwrap_or(&Value::Null);
        return simplify(target, doc, depth + 1);
    }
    for key in ["oneOf", "anyOf", "allOf"] {
        if let Some(list) = schema[key].as_array() {
            let variants: Vec<&Value> = list.iter().filter(|v| v["type"] != "null").collect();
            if let [one] = variants.as_slice() {
                return simplify(one, doc, depth + 1);
            }
            // Unions of plain enums (a common shape for enum types): merge the values.
            let values: Vec<Value> = variants
                .iter()
                .flat_map(|v| {
                    simplify(v, doc, depth + 1)["enum"]
                        .as_array()
                        .cloned()
                        .unwrap_or_default()
                })
                .collect();
            if !values.is_empty() {
                return json!({"type": "string", "enum": values});
            }
            return json!({});
        }
    }
    let Some(obj) = schema.as_object() else {
        return json!({});
    };
    let mut out = Map::new();
    if let Some(t) = obj.get("type") {
        let t = match t {
            Value::Array(types) => {
                let kept: Vec<&Value> = types.iter().filter(|t| *t != "null").collect();
                match kept.as_slice() {
                    [one] => (*one).clone(),
                    _ => Value::Array(kept.into_iter().cloned().collect()),
                }
            }
            other => other.clone(),
        };
        out.insert("type".into(), t);
    }
    if let Some(Value::Array(values)) = obj.get("enum") {
        let values: Vec<Value> = values.iter().filter(|v| !v.is_null()).cloned().collect();
        out.insert("enum".into(), Value::Array(values));
    }
    for key in [
        "default",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "minLength",
        "maxLength",
        "pattern",
        "minItems",
        "maxItems",
    ] {
        if let Some(v) = obj.get(key).filter(|v| !v.is_null()) {
            out.insert(key.into(), v.clone());
        }
    }
    if let Some(f) = obj.get("format").and_then(Value::as_str)
        && !matches!(
            f,
            "int8"
                | "int16"
                | "int32"
                | "int64"
                | "uint8"
                | "uint16"
                | "uint32"
                | "uint64"
                | "float"
                | "double"
        )
    {
        out.insert("format".into(), json!(f));
    }
    if let Some(items) = obj.get("items") {
        out.insert("items".into(), simplify(items, doc, depth + 1));
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_read_route_is_a_tool_even_without_an_openapi_operation() {
        let tools = build(&json!({"paths": {}}), Lang::En);
        let names: Vec<&str> = tools.iter().map(Tool::name).collect();
        let reads: Vec<&str> = ROUTES
            .iter()
            .filter(|r| r.kind == Kind::Read)
            .map(|r| r.op)
            .collect();
        assert_eq!(names, reads);
        let events = tools
            .iter()
            .find(|t| t.name() == "list_netdiag_events")
            .expect("tool");
        let def = &events.def;
        let props = &def["inputSchema"]["properties"];
        assert_eq!(def["inputSchema"]["required"], json!(["hostname"]));
        assert_eq!(props["limit"]["maximum"], 1000);
        assert_eq!(props["limit"]["default"], 200);
        assert!(props["cursor"].is_object());
        assert!(
            props["period"]["enum"]
                .as_array()
                .is_some_and(|e| e.contains(&json!("24h")))
        );
        assert_eq!(def["annotations"]["readOnlyHint"], true);
    }

    /// English by default: every tool says what it answers in English, and its limits; the
    /// French catalog takes the document's words.
    #[test]
    fn every_tool_is_described_in_english_and_in_french() {
        let doc = netops_api::openapi(Default::default());
        let en = build(&doc, Lang::En);
        let fr = build(&doc, Lang::Fr);
        for (e, f) in en.iter().zip(&fr) {
            let name = e.name();
            assert!(
                english::answers(name).is_some(),
                "{name} has no English text"
            );
            let d = e.def["description"].as_str().unwrap_or("");
            if let Some(p) = e.route.paging {
                assert!(
                    d.to_lowercase().contains(&format!("at most {}", p.max)),
                    "{name}: {d}"
                );
            }
            if e.route.window.is_some() {
                assert!(d.contains("Window: period"), "{name}: {d}");
            }
            assert_ne!(e.def["description"], f.def["description"], "{name}");
            assert_eq!(e.def["outputSchema"], f.def["outputSchema"], "{name}");
            // No word of the French document in an English tool.
            let text = e.json.to_lowercase();
            for word in [" le ", " la ", " les ", " des ", " une ", "é"] {
                assert!(!text.contains(word), "{name}: {word:?} in {}", e.json);
            }
        }
    }

    #[test]
    fn verbose_modules_still_fit_the_list_budget() {
        let long = "Une phrase de documentation assez longue pour peser dans la liste. ".repeat(15);
        let mut paths = Map::new();
        for r in ROUTES.iter().filter(|r| r.kind == Kind::Read) {
            let mut params: Vec<Value> = path_params(r.path)
                .map(|n| json!({"name": n, "in": "path", "required": true, "description": long, "schema": {"type": "string"}}))
                .collect();
            for i in 0..5 {
                params.push(json!({"name": format!("filter_{i}"), "in": "query", "description": long,
                    "schema": {"type": "string", "enum": ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"]}}));
            }
            paths.insert(r.path.into(), json!({"get": {"summary": "Un résumé de route", "description": long, "parameters": params}}));
        }
        let tools = build(&json!({"paths": paths}), Lang::Fr);
        assert!(
            list_size(&tools) <= LIST_BUDGET,
            "{} bytes",
            list_size(&tools)
        );
        assert!(tools.iter().all(|t| t.params.len() >= 5));
    }

    #[test]
    fn schemas_lose_references_and_null_unions() {
        let doc =
            json!({"components": {"schemas": {"Kind": {"type": "string", "enum": ["a", "b"]}}}});
        let s = simplify(
            &json!({"oneOf": [{"type": "null"}, {"$ref": "#/components/schemas/Kind"}]}),
            &doc,
            0,
        );
        assert_eq!(s, json!({"type": "string", "enum": ["a", "b"]}));
        let s = simplify(
            &json!({"type": ["integer", "null"], "format": "int64", "minimum": 0}),
            &doc,
            0,
        );
        assert_eq!(s, json!({"type": "integer", "minimum": 0}));
    }

    #[test]
    fn long_text_is_cut_at_a_sentence_end() {
        let text = "Une phrase courte. ".repeat(40);
        let out = compact(&text, 100);
        assert!(out.len() <= 100 && out.ends_with('.'), "{out}");
        assert_eq!(compact("a\n  b", 10), "a b");
    }
}
