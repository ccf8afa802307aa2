//! The real `netops` binary for the tests that drive it as a user does: `serve` on a free
//! loopback port (with the environment a test chooses), and the other commands on its file.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// A running `netops serve`, killed when dropped.
pub struct Served {
    pub child: Child,
    pub base: String,
    pub token: String,
    pub db: PathBuf,
    /// What the server wrote on stderr (its log), in a folder of its own: a test that fills
    /// the file's disk must not take the log's space.
    pub log: PathBuf,
    _log_dir: tempfile::TempDir,
    /// The folder of the file, removed when the last holder drops it.
    pub dir: std::sync::Arc<tempfile::TempDir>,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Served {
    /// `host:port` of the server.
    pub fn addr(&self) -> &str {
        self.base
            .trim_start_matches("http://")
            .trim_end_matches("/api/v1")
    }

    /// The process id, for signals.
    pub fn pid(&self) -> String {
        self.child.id().to_string()
    }

    /// Sends SIGTERM, as a supervisor stops the server, and waits for the exit.
    pub fn terminate(&mut self) -> std::process::ExitStatus {
        let sent = Command::new("kill")
            .args(["-TERM", &self.pid()])
            .status()
            .expect("kill");
        assert!(sent.success());
        self.child.wait().expect("wait")
    }

    /// The server's log so far.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

/// How to start `netops serve`.
#[derive(Default)]
pub struct Serve {
    env: Vec<(String, String)>,
    dir: Option<std::sync::Arc<tempfile::TempDir>>,
    /// File-descriptor limits (soft, hard) the server starts with, instead of the test's.
    fd_limit: Option<(u64, Option<u64>)>,
    log: Option<PathBuf>,
    /// Start from a copy of a file seeded once per test run, instead of seeding at start.
    copy_seeded: bool,
    /// `faketime` offset of the server's clock (`+2d`).
    clock: Option<String>,
}

/// A `netops serve` started, whose banner has not been read yet.
pub struct Launched {
    pub child: Child,
    stdout: std::process::ChildStdout,
    db: PathBuf,
    log: PathBuf,
    log_dir: tempfile::TempDir,
    dir: std::sync::Arc<tempfile::TempDir>,
}

impl Launched {
    /// The server's log so far.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Waits for the banner (base URL and token).
    pub fn ready(self) -> Served {
        let Launched {
            child,
            stdout,
            db,
            log,
            log_dir,
            dir,
        } = self;
        let mut base = None;
        let mut token = None;
        let mut lines = BufReader::new(stdout).lines();
        for line in lines.by_ref() {
            let line = line.expect("line");
            if let Some(b) = line.strip_prefix("base URL: ") {
                base = Some(b.to_owned());
            }
            if let Some(t) = line.strip_prefix("token: ") {
                token = Some(t.to_owned());
            }
            if base.is_some() && token.is_some() {
                break;
            }
        }
        // Keep reading what the server prints, as a terminal would.
        std::thread::spawn(move || lines.for_each(drop));
        Served {
            child,
            base: base.expect("base URL printed"),
            token: token.expect("token printed"),
            db,
            log,
            _log_dir: log_dir,
            dir,
        }
    }
}

impl Serve {
    /// A first start: the server seeds its empty file itself, as `cargo run` does.
    pub fn new() -> Self {
        Self::default()
    }

    /// A start on a copy of a file `netops seed` wrote once for this test run: the same demo
    /// data as a first start, without its seconds of seeding for every server a suite starts.
    pub fn seeded() -> Self {
        Self {
            copy_seeded: true,
            ..Self::default()
        }
    }

    /// Sets an environment variable of the server process.
    pub fn env(mut self, key: &str, value: impl ToString) -> Self {
        self.env.push((key.to_owned(), value.to_string()));
        self
    }

    /// Serves the file `netops.db` of `dir` (kept between starts) instead of a new folder.
    pub fn in_dir(mut self, dir: std::sync::Arc<tempfile::TempDir>) -> Self {
        self.dir = Some(dir);
        self
    }

    /// Starts the server with this soft file-descriptor limit (as a login shell often sets
    /// it) and, when given, this hard limit, as `ulimit` does.
    pub fn fd_limit(mut self, soft: u64, hard: Option<u64>) -> Self {
        self.fd_limit = Some((soft, hard));
        self
    }

    /// Runs the server with libfaketime: its clock `offset` (`+2d`) ahead.
    pub fn clock_ahead(mut self, offset: &str) -> Self {
        self.clock = Some(offset.to_owned());
        self
    }

    /// Sends the server's log to `path` (`/dev/full`: a log that cannot be written).
    pub fn log_to(mut self, path: impl Into<PathBuf>) -> Self {
        self.log = Some(path.into());
        self
    }

    /// Starts the server and waits for its banner (base URL and token).
    pub fn start(self) -> Served {
        self.launch().ready()
    }

    /// Starts the server.
    pub fn launch(self) -> Launched {
        let dir = self
            .dir
            .unwrap_or_else(|| std::sync::Arc::new(tempfile::tempdir().expect("tempdir")));
        let db = dir.path().join("netops.db");
        if self.copy_seeded && !db.exists() {
            std::fs::copy(seeded_file(), &db).expect("copy the seeded file");
        }
        let log_dir = tempfile::tempdir().expect("log dir");
        let log = self.log.unwrap_or_else(|| log_dir.path().join("serve.log"));
        let stderr = std::fs::File::options()
            .create(true)
            .append(true)
            .open(&log)
            .expect("server log");
        let binary = env!("CARGO_BIN_EXE_netops");
        let mut command = match (self.fd_limit, self.clock) {
            (None, None) => Command::new(binary),
            // libfaketime preloaded into the server itself, as the `faketime` command does
            // into a child of its own (which a kill of the command would leave running).
            (None, Some(offset)) => {
                let mut c = Command::new(binary);
                c.env("LD_PRELOAD", faketime_library())
                    .env("FAKETIME", offset);
                c
            }
            // The shell lowers the limits and then becomes the server (same process id).
            (Some((soft, hard)), _) => {
                // The soft limit first: a hard limit cannot go below it.
                let hard = hard
                    .map(|h| format!(" && ulimit -H -n {h}"))
                    .unwrap_or_default();
                let mut c = Command::new("sh");
                c.arg("-c")
                    .arg(format!("ulimit -S -n {soft}{hard} && exec \"$0\" \"$@\""))
                    .arg(binary);
                c
            }
        };
        let mut child = command
            .args(["serve", "--addr", "127.0.0.1:0", "--db"])
            .arg(&db)
            .env("RUST_LOG", "warn")
            // The demo's simulated agents are off unless a test turns them on: they enroll
            // the online demo machines and write as they run.
            .env("NETOPS_NO_AGENTS", "1")
            .envs(self.env)
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .expect("spawn netops serve");
        let stdout = child.stdout.take().expect("stdout");
        Launched {
            child,
            stdout,
            db,
            log,
            log_dir,
            dir,
        }
    }
}

/// The library of the Debian package faketime.
fn faketime_library() -> PathBuf {
    std::fs::read_dir("/usr/lib")
        .into_iter()
        .flatten()
        .flatten()
        .map(|dir| dir.path().join("faketime/libfaketime.so.1"))
        .find(|lib| lib.exists())
        .expect("libfaketime (Debian package faketime)")
}

/// The file `netops seed` writes once per test run (the demo tenants, dated from now).
fn seeded_file() -> &'static Path {
    static FILE: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    FILE.get_or_init(|| {
        // One name, written afresh by each run: the data is dated from the moment of seeding.
        let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join("seeded.db");
        for stale in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{stale}", path.display()));
        }
        let out = netops(&["seed"], &path);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        path
    })
}

/// The store another `netops` command runs on: the embedded file, or DynamoDB tables of
/// their own (`prefix`) on a DynamoDB-protocol server, as an operator names them.
pub enum Store {
    File(PathBuf),
    Dynamodb { endpoint: String, prefix: String },
}

/// Runs another `netops` command on `store`.
pub fn netops_on(args: &[&str], store: &Store) -> std::process::Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_netops"));
    command.args(args);
    match store {
        Store::File(db) => command.arg("--db").arg(db),
        Store::Dynamodb { endpoint, prefix } => command
            .args(["--store", "dynamodb"])
            .env("NETOPS_DYNAMODB_ENDPOINT", endpoint)
            .env("NETOPS_DYNAMODB_TABLE_PREFIX", prefix),
    };
    command.output().expect("run netops")
}

/// Runs another `netops` command on the file `db`.
pub fn netops(args: &[&str], db: &Path) -> std::process::Output {
    netops_on(args, &Store::File(db.to_owned()))
}

/// The standard output of a `netops` command on `store` that must succeed.
pub fn netops_ok(args: &[&str], store: &Store) -> String {
    stdout_of(netops_on(args, store))
}

/// Creates a token of `tenant` with the CLI on `store` (`args`: `--name`, `--scopes` and any
/// other option of `token create`) and returns it.
pub fn create_token_on(store: &Store, tenant: &str, args: &[&str]) -> String {
    netops_ok(
        &[&["token", "create", "--tenant", tenant], args].concat(),
        store,
    )
    .trim()
    .to_owned()
}

/// The standard output of a command that must have succeeded (its standard error otherwise).
pub fn stdout_of(out: std::process::Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Creates a token of tenant acme with the CLI on the file `db` (`args`: `--name`, `--scopes`
/// and any other option of `token create`) and returns it.
pub fn create_token(db: &Path, args: &[&str]) -> String {
    create_token_on(&Store::File(db.to_owned()), "acme", args)
}
