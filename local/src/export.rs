//! `netops tenant export`: every item of a tenant as NDJSON (docs/cli.md#tenant-export), to a
//! file that a stopped run goes on writing, or to standard output.
//!
//! The lines, in order: a header `{"netops_export":1,"tenant":..,"store":..,"started_at":..}`;
//! the items `{"table":..,"item":{..}}` as the store holds them; after each page of items a
//! checkpoint `{"next":".."}` (where the next page starts); and, once every item is written,
//! `{"end":true,"items":N}`. A file without the end line is a stopped export.

use std::fs::File;
use std::io::{BufRead, BufReader, Seek, SeekFrom, Write};
use std::path::Path;

use netops_shared::store::{Deployment, Pace};
use serde::{Deserialize, Serialize};

/// Items asked of the store per page (then a checkpoint).
const PAGE: usize = 500;

/// The export format's version, in the header.
const VERSION: u32 = 1;

#[derive(Serialize, Deserialize)]
struct Header {
    netops_export: u32,
    tenant: String,
    store: String,
    started_at: String,
}

#[derive(Serialize)]
struct ItemLine<'a> {
    table: &'a str,
    item: &'a serde_json::Value,
}

#[derive(Serialize, Deserialize)]
struct Checkpoint {
    next: String,
}

#[derive(Serialize, Deserialize)]
struct End {
    end: bool,
    items: u64,
}

/// What an export run did.
pub struct Outcome {
    /// Items in the export so far (this run and those before it).
    pub items: u64,
    /// Items written by this run.
    pub this_run: u64,
    /// True once the end line is written.
    pub complete: bool,
}

/// An export file read back: where a run goes on from.
struct Stopped {
    /// Bytes kept: up to the last checkpoint's line (or the header's).
    keep: u64,
    items: u64,
    next: Option<String>,
}

/// The end of an item line as written: its prefix tells it from the other lines.
const ITEM_PREFIX: &str = "{\"table\":";

/// Reads an export file of `tenant`: `Ok(Err(items))` when it is complete, `Ok(Ok(stopped))`
/// when a run stopped before its end.
fn read_back(path: &Path, tenant: &str) -> Result<Result<Stopped, u64>, String> {
    let file = File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut lines = BufReader::new(file);
    let mut line = String::new();
    let not_export = || format!("{} is not an export of tenant '{tenant}'", path.display());
    let mut offset = lines
        .read_line(&mut line)
        .map_err(|e| format!("{}: {e}", path.display()))? as u64;
    match serde_json::from_str::<Header>(&line) {
        Ok(h) if h.tenant == tenant && h.netops_export == VERSION && line.ends_with('\n') => {}
        _ => return Err(not_export()),
    }
    let mut stopped = Stopped {
        keep: offset,
        items: 0,
        next: None,
    };
    let mut items = 0u64;
    loop {
        line.clear();
        let n = lines
            .read_line(&mut line)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        // A last line cut by a stop is not counted: the run goes on from the checkpoint.
        if n == 0 || !line.ends_with('\n') {
            return Ok(Ok(stopped));
        }
        offset += n as u64;
        if line.starts_with(ITEM_PREFIX) {
            items += 1;
        } else if let Ok(c) = serde_json::from_str::<Checkpoint>(&line) {
            stopped = Stopped {
                keep: offset,
                items,
                next: Some(c.next),
            };
        } else if let Ok(end) = serde_json::from_str::<End>(&line) {
            return if end.end && end.items == items {
                Ok(Err(items))
            } else {
                Err(not_export())
            };
        } else {
            return Err(not_export());
        }
    }
}

/// The items of a complete export of `tenant` at `path`, or why it is not one.
pub fn verify(path: &Path, tenant: &str) -> Result<u64, String> {
    match read_back(path, tenant)? {
        Err(items) => Ok(items),
        Ok(_) => Err(format!(
            "{} is a stopped export: run netops tenant export again to finish it",
            path.display()
        )),
    }
}

/// Writes the export of `tenant` to `path` (going on from where a stopped run left it), or
/// to standard output when `path` is `None`, as `pace` allows.
pub async fn export(
    deployment: &dyn Deployment,
    store: &str,
    tenant: &str,
    path: Option<&Path>,
    pace: &Pace,
) -> Result<Outcome, String> {
    let header = Header {
        netops_export: VERSION,
        tenant: tenant.to_owned(),
        store: store.to_owned(),
        started_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
    };
    let fail = |e: std::io::Error| format!("cannot write the export: {e}");
    match path {
        None => {
            let mut out = std::io::stdout().lock();
            write_line(&mut out, &header).map_err(fail)?;
            let outcome = pages(deployment, tenant, None, 0, &mut out, pace).await;
            out.flush().map_err(fail)?;
            outcome
        }
        Some(path) => {
            let (mut file, next, items) = if path.exists() {
                let stopped = read_back(path, tenant)?.map_err(|items| {
                    format!(
                        "{} is already a complete export ({items} items): remove it to export again",
                        path.display()
                    )
                })?;
                let mut file = File::options()
                    .write(true)
                    .open(path)
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                file.set_len(stopped.keep).map_err(fail)?;
                file.seek(SeekFrom::End(0)).map_err(fail)?;
                (file, stopped.next, stopped.items)
            } else {
                let mut file = File::options()
                    .write(true)
                    .create_new(true)
                    .open(path)
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                write_line(&mut file, &header).map_err(fail)?;
                (file, None, 0)
            };
            let mut out = std::io::BufWriter::new(&mut file);
            let outcome = pages(deployment, tenant, next, items, &mut out, pace).await;
            out.flush().map_err(fail)?;
            drop(out);
            file.sync_data().map_err(fail)?;
            outcome
        }
    }
}

/// The pages from `next`, `items` already written, each followed by its checkpoint, then
/// the end line; stops early where `pace` does.
async fn pages(
    deployment: &dyn Deployment,
    tenant: &str,
    mut next: Option<String>,
    mut items: u64,
    out: &mut impl Write,
    pace: &Pace,
) -> Result<Outcome, String> {
    let before = items;
    let fail = |e: std::io::Error| format!("cannot write the export: {e}");
    loop {
        let limit = pace.allowance(PAGE);
        if limit == 0 {
            return Ok(Outcome {
                items,
                this_run: items - before,
                complete: false,
            });
        }
        let page = deployment
            .export_page(tenant, next.as_deref(), limit)
            .await
            .map_err(|e| format!("store error: {e}"))?;
        for (table, item) in &page.items {
            write_line(out, &ItemLine { table, item }).map_err(fail)?;
        }
        items += page.items.len() as u64;
        // Paced by what the store read: on DynamoDB the Scan reads other tenants' items too.
        pace.removed("items", page.read).await;
        match page.next {
            Some(n) => {
                write_line(out, &Checkpoint { next: n.clone() }).map_err(fail)?;
                // The checkpoint is on disk before the next page is asked for.
                out.flush().map_err(fail)?;
                next = Some(n);
            }
            None => {
                write_line(out, &End { end: true, items }).map_err(fail)?;
                return Ok(Outcome {
                    items,
                    this_run: items - before,
                    complete: true,
                });
            }
        }
    }
}

fn write_line(out: &mut impl Write, value: &impl Serialize) -> std::io::Result<()> {
    let mut line = serde_json::to_vec(value).map_err(std::io::Error::other)?;
    line.push(b'\n');
    out.write_all(&line)
}
