//! The geolocation of the local process (docs/geolocation.md): `netops geo refresh` installs
//! the pinned tables with npm (geo/data/package-lock.json, integrity checked) in a folder of
//! its own and compiles them into one file; `netops serve` loads that file, or the
//! checked-in sample when there is none.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use netops_geo::{Builder, GeoDb, NOTICE, Source};

/// Where `netops geo refresh` writes and `netops serve` looks when no file is named.
pub const DEFAULT_FILE: &str = "netops-geo.bin";

const PACKAGE_JSON: &str = include_str!("../../geo/data/package.json");
const PACKAGE_LOCK: &str = include_str!("../../geo/data/package-lock.json");

/// The tables compiled: package, CSV file, what it holds.
const TABLES: [(&str, &str, Source); 4] = [
    ("dbip-country", "dbip-country-ipv4.csv", Source::Country),
    ("dbip-country", "dbip-country-ipv6.csv", Source::Country),
    ("asn", "asn-ipv4.csv", Source::Operator),
    ("asn", "asn-ipv6.csv", Source::Operator),
];

/// The licence files the packages ship, copied into the notice.
const LICENCES: [(&str, &str); 4] = [
    ("dbip-country", "DBIP-LICENSE"),
    ("asn", "ROUTEVIEWS-LICENSE"),
    ("asn", "NRO_LICENSE"),
    ("asn", "DBIP-LICENSE"),
];

/// Which geolocation a process uses.
pub enum Origin {
    File(PathBuf),
    Sample,
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Origin::File(p) => write!(f, "{}", p.display()),
            Origin::Sample => write!(
                f,
                "the checked-in sample (run `netops geo refresh` for the whole tables)"
            ),
        }
    }
}

/// The file named (`--geo`, `NETOPS_GEO_FILE`), which must be readable; else
/// [`DEFAULT_FILE`] when it exists; else the sample.
pub fn load(named: Option<&Path>) -> Result<(GeoDb, Origin), String> {
    let path = match named {
        Some(p) => p.to_owned(),
        None if Path::new(DEFAULT_FILE).exists() => PathBuf::from(DEFAULT_FILE),
        None => return Ok((netops_geo::sample(), Origin::Sample)),
    };
    let db = GeoDb::open(&path).map_err(|e| format!("geolocation file {}: {e}", path.display()))?;
    Ok((db, Origin::File(path)))
}

/// What a refresh did.
pub struct Refreshed {
    pub versions: Vec<(String, String)>,
    pub rows: usize,
    pub bytes: usize,
    pub seconds: f64,
}

/// Installs the pinned packages (or, with `latest`, their newest versions) with npm into a
/// folder of its own, compiles their tables into `out` (written whole, then renamed over
/// the old file) and writes the notice beside it (`<out>.NOTICE`).
pub fn refresh(out: &Path, latest: bool) -> Result<Refreshed, String> {
    let started = Instant::now();
    let work = std::env::temp_dir().join(format!("netops-geo-{}", std::process::id()));
    std::fs::create_dir_all(&work).map_err(|e| format!("{}: {e}", work.display()))?;
    let result = install(&work, latest).and_then(|()| compile(&work.join("node_modules"), out));
    let _ = std::fs::remove_dir_all(&work);
    let (versions, rows, bytes) = result?;
    Ok(Refreshed {
        versions,
        rows,
        bytes,
        seconds: started.elapsed().as_secs_f64(),
    })
}

fn install(work: &Path, latest: bool) -> Result<(), String> {
    let write = |name: &str, text: &str| {
        std::fs::write(work.join(name), text).map_err(|e| format!("{name}: {e}"))
    };
    write("package.json", PACKAGE_JSON)?;
    let mut npm = Command::new("npm");
    npm.current_dir(work).args([
        "--no-audit",
        "--no-fund",
        "--loglevel=error",
        "--ignore-scripts",
    ]);
    if latest {
        npm.args([
            "install",
            "--no-save",
            "@ip-location-db/dbip-country@latest",
            "@ip-location-db/asn@latest",
        ]);
    } else {
        write("package-lock.json", PACKAGE_LOCK)?;
        npm.arg("ci");
    }
    let status = npm
        .status()
        .map_err(|e| format!("cannot run npm (Node.js's package manager is needed): {e}"))?;
    if !status.success() {
        return Err(format!("npm failed ({status})"));
    }
    Ok(())
}

type Compiled = (Vec<(String, String)>, usize, usize);

/// Compiles the tables of the packages installed under `modules` into `out`.
fn compile(modules: &Path, out: &Path) -> Result<Compiled, String> {
    let dir = |package: &str| modules.join("@ip-location-db").join(package);
    let read = |path: PathBuf| {
        std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))
    };
    let mut builder = Builder::new();
    let mut rows = 0;
    for (package, file, source) in TABLES {
        let text = read(dir(package).join(file))?;
        rows += builder
            .add_csv(source, file, &text)
            .map_err(|e| e.to_string())?;
    }
    let mut versions = Vec::new();
    let mut notice = format!("{NOTICE}\nSources compiled:\n");
    for package in ["dbip-country", "asn"] {
        let manifest = read(dir(package).join("package.json"))?;
        let version = serde_json::from_str::<serde_json::Value>(&manifest)
            .ok()
            .and_then(|m| m["version"].as_str().map(str::to_owned))
            .unwrap_or_default();
        notice.push_str(&format!("- @ip-location-db/{package} {version}\n"));
        versions.push((format!("@ip-location-db/{package}"), version));
    }
    for (package, file) in LICENCES {
        let text = read(dir(package).join(file))?;
        notice.push_str(&format!(
            "\n@ip-location-db/{package}, {file}:\n{}\n",
            text.trim()
        ));
    }
    builder.notice(&notice);
    let bytes = builder.finish();
    // Read back as a process will, before it replaces anything.
    GeoDb::from_bytes(bytes.clone()).map_err(|e| format!("compiled file refused: {e}"))?;
    let size = bytes.len();
    let partial = out.with_extension("partial");
    std::fs::write(&partial, &bytes)
        .and_then(|()| std::fs::rename(&partial, out))
        .map_err(|e| format!("{}: {e}", out.display()))?;
    let notice_path = PathBuf::from(format!("{}.NOTICE", out.display()));
    std::fs::write(&notice_path, notice).map_err(|e| format!("{}: {e}", notice_path.display()))?;
    Ok((versions, rows, size))
}
