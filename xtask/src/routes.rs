//! `cargo xtask routes`: the route and module lists that other files repeat, written from the
//! route table (`netops_routes::ROUTES`) and the list of functions (`netops_routes::Function`),
//! so that a new route or module is declared once.
//!
//! Each file marks what is written with a pair of comment lines (`#` in TOML and YAML, `//`
//! in Rust):
//!
//! ```text
//! # BEGIN generated: fleet events
//! ...
//! # END generated: fleet events
//! ```
//!
//! The lines between a pair are replaced (indented as the BEGIN line is); every other byte
//! of the file is kept. Written, in the table's order:
//!
//! - `Cargo.toml`, region `watch router`: the `cargo lambda watch` router, one key per path
//!   listing its methods with their function; region `function crates`: the workspace
//!   dependency of each function's crate (`netops-<function>`, under `functions/`);
//! - `api/Cargo.toml`, `demo/Cargo.toml` and `local/Cargo.toml` (its dev-dependencies), region
//!   `data modules`: the data modules' crates;
//! - `demo/src/seed.rs`, region `data modules`: each data module's seed in `SEEDERS`;
//! - `api/src/modules.rs`, region `data modules`: each data module's `MODULE` in `MODULES`;
//!   region `data module reads`: each data module's `reads` in `READS`;
//! - `infra/template.yaml`, for each function, region `<function> scopes` (`Metadata.Scopes`:
//!   what each route requires, `public`, `token` or its scope) and region `<function> events`
//!   (`Properties.Events`: one `HttpApi` event per route, named after its operation id in
//!   CamelCase, and for a `GET` route a second one for `HEAD`, named `<Name>Head`).
//!
//! `HEAD` is routed as the `GET` of its path (the gate's `routes::find`, axum's routers), but
//! API Gateway and the watch router match methods exactly: without its own route a `HEAD`
//! would reach the `$default` route's function (docs), which does not serve the path.

use std::fmt;
use std::path::Path;

use netops_routes::{Access, BASE_PATH, Function, ROUTES, Role, Route};

/// The command that writes the files, for messages.
pub const COMMAND: &str = "cargo xtask routes";
/// After the comment sign, the words opening a generated region, followed by its name.
pub const BEGIN: &str = "BEGIN generated: ";
/// After the comment sign, the words closing it, followed by the same name.
pub const END: &str = "END generated: ";

/// The lines of a region, unindented; `None`: the file has no region of that name.
type Rendered = Result<Option<Vec<String>>, Error>;

/// A file holding generated regions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    CargoToml,
    ApiCargoToml,
    DemoCargoToml,
    LocalCargoToml,
    DemoSeeders,
    ApiModules,
    Template,
}

impl Target {
    pub const ALL: &'static [Target] = &[
        Target::CargoToml,
        Target::ApiCargoToml,
        Target::DemoCargoToml,
        Target::LocalCargoToml,
        Target::DemoSeeders,
        Target::ApiModules,
        Target::Template,
    ];

    /// Relative to the workspace root.
    pub fn path(self) -> &'static str {
        match self {
            Target::CargoToml => "Cargo.toml",
            Target::ApiCargoToml => "api/Cargo.toml",
            Target::DemoCargoToml => "demo/Cargo.toml",
            Target::LocalCargoToml => "local/Cargo.toml",
            Target::DemoSeeders => "demo/src/seed.rs",
            Target::ApiModules => "api/src/modules.rs",
            Target::Template => "infra/template.yaml",
        }
    }

    /// What starts a comment line in the file.
    fn comment(self) -> &'static str {
        match self {
            Target::ApiModules | Target::DemoSeeders => "//",
            _ => "#",
        }
    }

    /// The regions the file must hold, each once.
    fn regions(self) -> Vec<String> {
        match self {
            Target::CargoToml => vec!["watch router".to_owned(), "function crates".to_owned()],
            Target::ApiCargoToml
            | Target::DemoCargoToml
            | Target::LocalCargoToml
            | Target::DemoSeeders => {
                vec!["data modules".to_owned()]
            }
            Target::ApiModules => vec!["data modules".to_owned(), "data module reads".to_owned()],
            Target::Template => Function::ALL
                .iter()
                .flat_map(|f| {
                    [
                        format!("{} scopes", f.name()),
                        format!("{} events", f.name()),
                    ]
                })
                .collect(),
        }
    }

    /// The lines of `region`.
    fn render(self, region: &str) -> Rendered {
        // `netops-<function>` for each function with this role (any: `None`).
        let crates = |role: Option<Role>, line: &dyn Fn(&str) -> String| -> Rendered {
            Ok(Some(
                Function::ALL
                    .iter()
                    .filter(|f| role.is_none_or(|r| f.role() == r))
                    .map(|f| line(f.name()))
                    .collect(),
            ))
        };
        match (self, region) {
            (Target::CargoToml, "watch router") => return watch_router().map(Some),
            (Target::CargoToml, "function crates") => {
                return crates(None, &|f| {
                    format!("netops-{f} = {{ path = \"functions/{f}\" }}")
                });
            }
            (
                Target::ApiCargoToml | Target::DemoCargoToml | Target::LocalCargoToml,
                "data modules",
            ) => {
                return crates(Some(Role::Data), &|f| {
                    format!("netops-{f}.workspace = true")
                });
            }
            (Target::DemoSeeders, "data modules") => {
                return crates(Some(Role::Data), &|f| {
                    format!("(Function::{}, crate::{f}::seed),", camel(f))
                });
            }
            (Target::ApiModules, "data modules") => {
                return crates(Some(Role::Data), &|f| format!("&netops_{f}::MODULE,"));
            }
            (Target::ApiModules, "data module reads") => {
                return crates(Some(Role::Data), &|f| format!("netops_{f}::reads,"));
            }
            (Target::Template, _) => {}
            _ => return Ok(None),
        }
        let Some((name, part)) = region.split_once(' ') else {
            return Ok(None);
        };
        let Some(function) = Function::ALL.iter().copied().find(|f| f.name() == name) else {
            return Ok(None);
        };
        let routes = ROUTES.iter().filter(|r| r.function == function);
        match part {
            "scopes" => Ok(Some(
                routes
                    .map(|r| format!("{}: {}", camel(r.op), requirement(r)))
                    .collect(),
            )),
            "events" => {
                let mut lines = Vec::new();
                for r in routes {
                    for (method, suffix) in methods(r) {
                        lines.extend([
                            format!("{}{suffix}:", camel(r.op)),
                            "  Type: HttpApi".to_owned(),
                            "  Properties:".to_owned(),
                            "    ApiId: !Ref HttpApi".to_owned(),
                            format!("    Method: {method}"),
                            format!("    Path: {}", full_path(r)?),
                        ]);
                    }
                }
                Ok(Some(lines))
            }
            _ => Ok(None),
        }
    }
}

/// The methods a route is reached by, with the suffix of their event's name: its own, and
/// `HEAD` for a `GET`.
pub fn methods(route: &'static Route) -> Vec<(&'static str, &'static str)> {
    let mut out = vec![(route.method.as_str(), "")];
    if route.method.as_str() == "GET" {
        out.push(("HEAD", "Head"));
    }
    out
}

/// The `cargo lambda watch` router: a path served by several methods is one key.
fn watch_router() -> Result<Vec<String>, Error> {
    let mut paths: Vec<(String, Vec<&Route>)> = Vec::new();
    for route in ROUTES {
        let path = full_path(route)?;
        match paths.iter_mut().find(|(p, _)| *p == path) {
            Some((_, routes)) => routes.push(route),
            None => paths.push((path, vec![route])),
        }
    }
    Ok(paths
        .into_iter()
        .map(|(path, routes)| {
            let targets: Vec<String> = routes
                .iter()
                .flat_map(|r| {
                    methods(r).into_iter().map(|(method, _)| {
                        format!(
                            "{{ method = \"{method}\", function = \"{}\" }}",
                            r.function.name()
                        )
                    })
                })
                .collect();
            format!("\"{path}\" = [{}]", targets.join(", "))
        })
        .collect())
}

/// The route's path under the base, checked to need no quoting in YAML nor escaping in a
/// TOML string.
fn full_path(route: &Route) -> Result<String, Error> {
    let path = format!("{BASE_PATH}{}", route.path);
    let plain = |c: char| c.is_ascii_alphanumeric() || "/{}_-.".contains(c);
    if !path.starts_with('/') || !path.chars().all(plain) {
        return Err(Error(format!(
            "route {}: the path {path:?} has characters the generator does not write",
            route.op
        )));
    }
    Ok(path)
}

/// What a route requires, as the template's `Scopes` say it.
fn requirement(route: &Route) -> &'static str {
    match route.access {
        Access::Public => "public",
        Access::Token => "token",
        Access::Scoped(scope) => scope.as_str(),
        Access::Collect => "collect",
        Access::Agent(scope) => scope.as_str(),
    }
}

/// `list_machines` → `ListMachines`: the template's names of events and resources.
pub fn camel(op: &str) -> String {
    op.split('_')
        .map(|part| {
            let mut chars = part.chars();
            chars
                .next()
                .map(|first| first.to_ascii_uppercase().to_string() + chars.as_str())
                .unwrap_or_default()
        })
        .collect()
}

/// Why a file could not be written: a region missing, unknown, repeated or not closed.
#[derive(Debug)]
pub struct Error(pub(crate) String);

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

/// One file as committed and as the generator writes it.
#[derive(Debug)]
pub struct File {
    pub path: &'static str,
    pub committed: String,
    pub generated: String,
}

impl File {
    /// `None` if the file is as the generator writes it; else where it first differs.
    pub fn difference(&self) -> Option<String> {
        if self.committed == self.generated {
            return None;
        }
        let (mut committed, mut generated) = (self.committed.lines(), self.generated.lines());
        let mut line = 1;
        loop {
            match (committed.next(), generated.next()) {
                (a, b) if a == b && a.is_some() => line += 1,
                (a, b) => {
                    let show = |l: Option<&str>| {
                        l.map_or("(end of file)".to_owned(), |l| format!("{l:?}"))
                    };
                    return Some(format!(
                        "{}:{line} differs from what `{COMMAND}` writes\n  file:      {}\n  generator: {}",
                        self.path,
                        show(a),
                        show(b)
                    ));
                }
            }
        }
    }
}

/// Every file with generated regions, read from the workspace at `root`, with what the
/// generator writes in its place.
pub fn generate(root: &Path) -> Result<Vec<File>, Error> {
    Target::ALL
        .iter()
        .map(|&target| {
            let path = target.path();
            let committed = std::fs::read_to_string(root.join(path))
                .map_err(|e| Error(format!("{path}: {e}")))?;
            let generated = rewrite(
                path,
                target.comment(),
                &committed,
                &target.regions(),
                &|region| target.render(region),
            )?;
            Ok(File {
                path,
                committed,
                generated,
            })
        })
        .collect()
}

/// `text` with the lines of each region replaced by what `render` gives for its name
/// (`None`: no such region); `required` are the regions that must be there, and `comment`
/// what starts a comment line.
fn rewrite(
    path: &str,
    comment: &str,
    text: &str,
    required: &[String],
    render: &dyn Fn(&str) -> Rendered,
) -> Result<String, Error> {
    let fail = |n: usize, what: String| Err(Error(format!("{path}:{n}: {what}")));
    let (opening, closing) = (format!("{comment} {BEGIN}"), format!("{comment} {END}"));
    let (opening, closing) = (opening.as_str(), closing.as_str());
    let mut out = String::with_capacity(text.len());
    // The region being replaced and the line of its BEGIN.
    let mut open: Option<(&str, usize)> = None;
    let mut seen: Vec<&str> = Vec::new();
    for (i, line) in text.split_inclusive('\n').enumerate() {
        let n = i + 1;
        let content = line.trim_end_matches(['\n', '\r']);
        let trimmed = content.trim_start();
        if let Some((name, start)) = open {
            if let Some(end) = trimmed.strip_prefix(closing) {
                if end.trim_end() != name {
                    return fail(
                        n,
                        format!("`{closing}{end}` ends `{opening}{name}` of line {start}"),
                    );
                }
                out.push_str(line);
                open = None;
            } else if trimmed.starts_with(opening) {
                return fail(n, format!("a region begins inside `{name}` (line {start})"));
            }
            // Any other line of an open region is the previous output: replaced.
            continue;
        }
        if let Some(name) = trimmed.strip_prefix(opening) {
            let name = name.trim_end();
            if seen.contains(&name) {
                return fail(n, format!("the region `{name}` is there twice"));
            }
            let Some(lines) = render(name)? else {
                return fail(
                    n,
                    format!(
                        "no region `{name}` here; this file's are: {}",
                        required.join(", ")
                    ),
                );
            };
            let indent = &content[..content.len() - trimmed.len()];
            out.push_str(line);
            if !line.ends_with('\n') {
                out.push('\n');
            }
            for l in lines {
                out.push_str(indent);
                out.push_str(&l);
                out.push('\n');
            }
            seen.push(name);
            open = Some((name, n));
            continue;
        }
        if trimmed.starts_with(closing) {
            return fail(n, format!("`{}` ends no region", trimmed.trim_end()));
        }
        out.push_str(line);
    }
    if let Some((name, start)) = open {
        return fail(start, format!("`{opening}{name}` has no `{closing}{name}`"));
    }
    let missing: Vec<&str> = required
        .iter()
        .map(String::as_str)
        .filter(|r| !seen.contains(r))
        .collect();
    if !missing.is_empty() {
        return Err(Error(format!(
            "{path} lacks the regions {}: put a `{opening}<region>` and an `{closing}<region>` line \
             where each belongs (as the other functions have them)",
            missing.join(", ")
        )));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fruit(region: &str) -> Rendered {
        Ok((region == "fruit").then(|| vec!["apple: 1".to_owned(), "pear: 2".to_owned()]))
    }

    fn rewritten(text: &str) -> Result<String, Error> {
        rewrite("f", "#", text, &["fruit".to_owned()], &fruit)
    }

    #[test]
    fn only_the_lines_between_the_markers_change_indented_as_the_begin_line() {
        let text =
            "a: 'kept'  \n\n  # BEGIN generated: fruit\n  old\n  # END generated: fruit\nz\n";
        let once = rewritten(text).expect("rewrites");
        assert_eq!(
            once,
            "a: 'kept'  \n\n  # BEGIN generated: fruit\n  apple: 1\n  pear: 2\n  # END generated: fruit\nz\n"
        );
        assert_eq!(
            rewritten(&once).expect("again"),
            once,
            "a second run changes nothing"
        );
    }

    #[test]
    fn a_missing_unknown_repeated_or_unclosed_region_is_an_error_naming_its_line() {
        let cases = [
            ("x\n", "lacks the regions fruit"),
            (
                "# BEGIN generated: nut\n# END generated: nut\n",
                "f:1: no region `nut`",
            ),
            (
                "# BEGIN generated: fruit\n",
                "f:1: `# BEGIN generated: fruit` has no",
            ),
            (
                "# END generated: fruit\n",
                "f:1: `# END generated: fruit` ends no region",
            ),
            (
                "# BEGIN generated: fruit\n# END generated: fruit\n# BEGIN generated: fruit\n",
                "f:3: the region `fruit` is there twice",
            ),
            (
                "# BEGIN generated: fruit\n# BEGIN generated: nut\n",
                "f:2: a region begins inside `fruit`",
            ),
        ];
        for (text, message) in cases {
            let error = rewritten(text).expect_err(text).to_string();
            assert!(error.contains(message), "{text:?}: {error}");
        }
    }

    #[test]
    fn each_route_is_an_httpapi_event_a_scope_and_a_router_entry() {
        let events = Target::Template
            .render("fleet events")
            .expect("renders")
            .expect("a region");
        assert_eq!(
            events[..12],
            [
                "GetMe:",
                "  Type: HttpApi",
                "  Properties:",
                "    ApiId: !Ref HttpApi",
                "    Method: GET",
                "    Path: /api/v1/me",
                "GetMeHead:",
                "  Type: HttpApi",
                "  Properties:",
                "    ApiId: !Ref HttpApi",
                "    Method: HEAD",
                "    Path: /api/v1/me",
            ]
        );
        let mcp = Target::Template
            .render("mcp events")
            .expect("renders")
            .expect("a region");
        assert_eq!(mcp.len(), 6, "a POST route has no HEAD event: {mcp:?}");
        let scopes = Target::Template
            .render("fleet scopes")
            .expect("renders")
            .expect("a region");
        assert_eq!(scopes[..2], ["GetMe: token", "ListMachines: read:machines"]);
        let router = watch_router().expect("renders");
        assert_eq!(
            router[0],
            r#""/api/v1/me" = [{ method = "GET", function = "fleet" }, { method = "HEAD", function = "fleet" }]"#
        );
        let mut paths: Vec<&str> = ROUTES.iter().map(|r| r.path).collect();
        paths.sort_unstable();
        paths.dedup();
        assert_eq!(router.len(), paths.len(), "one entry per path");
        assert!(
            Target::Template
                .render("fleet policies")
                .expect("renders")
                .is_none()
        );
    }

    #[test]
    fn each_module_is_a_crate_and_each_data_module_a_dependency_and_a_module_of_the_api() {
        let lines = |target: Target, region: &str| {
            target.render(region).expect("renders").expect("a region")
        };
        let crates = lines(Target::CargoToml, "function crates");
        assert_eq!(crates.len(), Function::ALL.len());
        assert_eq!(crates[0], r#"netops-fleet = { path = "functions/fleet" }"#);
        let data = Function::ALL
            .iter()
            .filter(|f| f.role() == Role::Data)
            .count();
        let api = lines(Target::ApiCargoToml, "data modules");
        assert_eq!(
            (api.len(), api[0].as_str()),
            (data, "netops-fleet.workspace = true")
        );
        for target in [Target::DemoCargoToml, Target::LocalCargoToml] {
            assert_eq!(lines(target, "data modules"), api);
        }
        let seeders = lines(Target::DemoSeeders, "data modules");
        assert_eq!(seeders[0], "(Function::Fleet, crate::fleet::seed),");
        let modules = lines(Target::ApiModules, "data modules");
        assert_eq!(modules[0], "&netops_fleet::MODULE,");
        assert!(
            !modules
                .iter()
                .any(|m| m.contains("mcp") || m.contains("docs"))
        );
        // A Rust file's markers are `//` comments.
        let rust = "    // BEGIN generated: fruit\n    // END generated: fruit\n";
        assert_eq!(
            rewrite("f.rs", "//", rust, &["fruit".to_owned()], &fruit).expect("rewrites"),
            "    // BEGIN generated: fruit\n    apple: 1\n    pear: 2\n    // END generated: fruit\n"
        );
    }
}
