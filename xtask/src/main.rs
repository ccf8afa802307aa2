//! `cargo xtask routes [--check]`: writes (or, with `--check`, only compares) the route and
//! module lists of `Cargo.toml`, `api/`, `local/` and `infra/template.yaml` from the route
//! table, and the API Gateway event of each route that has none. See `xtask::routes` and
//! `xtask::events`.

use std::path::Path;
use std::process::ExitCode;

use xtask::{events, routes};

const USAGE: &str = "usage: cargo xtask routes [--check]

  routes          write the route and module lists of Cargo.toml, api/Cargo.toml,
                  local/Cargo.toml, api/src/modules.rs and infra/template.yaml from the
                  route table (routes/src/lib.rs), and events/<function>/<operation id>.json
                  for each route without an event
  routes --check  write nothing; exit 1 if a file differs from what `routes` writes";

fn main() -> ExitCode {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let check = match args.as_slice() {
        ["routes"] => false,
        ["routes", "--check"] => true,
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    let files = match routes::generate(&root) {
        Ok(files) => files,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut stale = false;
    for file in &files {
        let Some(difference) = file.difference() else {
            println!("{}: up to date", file.path);
            continue;
        };
        if check {
            stale = true;
            println!("{difference}");
        } else if let Err(e) = std::fs::write(root.join(file.path), &file.generated) {
            eprintln!("error: {}: {e}", file.path);
            return ExitCode::FAILURE;
        } else {
            println!("{}: written", file.path);
        }
    }
    // The API Gateway event of each route that has none (an event there is never rewritten).
    let events = match events::missing(&root) {
        Ok(events) => events,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    for event in &events {
        if check {
            stale = true;
            println!("{}: missing", event.path);
            continue;
        }
        let path = root.join(&event.path);
        let written = path
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::write(&path, &event.text));
        if let Err(e) = written {
            eprintln!("error: {}: {e}", event.path);
            return ExitCode::FAILURE;
        }
        println!(
            "{}: written (set its query, its body or a path parameter left as {{name}} as \
             you wish: it must answer 2xx, tests/api/events.rs)",
            event.path
        );
    }
    if stale {
        println!("run `{}` to write them", routes::COMMAND);
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
