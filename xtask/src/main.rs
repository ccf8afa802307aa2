//! `cargo xtask routes [--check]`: writes (or, with `--check`, only compares) the route lists
//! of `Cargo.toml` and `infra/template.yaml` from the route table. See `xtask::routes`.

use std::path::Path;
use std::process::ExitCode;

use xtask::routes;

const USAGE: &str = "usage: cargo xtask routes [--check]

  routes          write the route lists of Cargo.toml and infra/template.yaml from the
                  route table (routes/src/lib.rs)
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
    if stale {
        println!("run `{}` to write them", routes::COMMAND);
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
