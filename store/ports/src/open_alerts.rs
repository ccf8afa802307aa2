//! Alerts kept as a series (their history, by opening time) whose open ones are also
//! documents of the series' `.open` collection, keyed by time and id: what is open now is then
//! read from that small collection, not from the whole history back to the retention.

use serde_json::json;

use super::{All, Documents, Filter, Pred, Record, StoreError, StoreResult, Stores};

/// The collection of the open alerts of `series`.
pub fn open_collection(series: &str) -> String {
    format!("{series}.open")
}

/// Whether an alert's body says it is open.
fn is_open(body: &serde_json::Value) -> bool {
    Filter::all()
        .and(Pred::Eq("status", json!("open")))
        .matches(body)
}

impl Stores {
    /// Appends alerts to `series`, and puts the open ones in its open collection.
    pub async fn append_alerts(
        &self,
        tenant: &str,
        series: &str,
        alerts: Vec<Record>,
    ) -> StoreResult<()> {
        let open = alerts
            .iter()
            .filter(|r| is_open(&r.body))
            .map(open_entry)
            .collect::<StoreResult<Vec<_>>>()?;
        self.docs
            .put(tenant, &open_collection(series), open)
            .await?;
        self.series_writes.append(tenant, series, alerts).await
    }

    /// Writes alerts of `series` that were open and are now resolved (same opening time and
    /// id): in the history, and over their entries in the open collection, which the read of
    /// the open alerts then skips.
    pub async fn resolve_alerts(
        &self,
        tenant: &str,
        series: &str,
        alerts: Vec<Record>,
    ) -> StoreResult<()> {
        let entries = alerts
            .iter()
            .map(open_entry)
            .collect::<StoreResult<Vec<_>>>()?;
        self.docs
            .put(tenant, &open_collection(series), entries)
            .await?;
        self.series_writes.append(tenant, series, alerts).await
    }
}

/// An alert's entry in the open collection: keyed by its opening time and id.
fn open_entry(r: &Record) -> StoreResult<(String, serde_json::Value)> {
    let body = serde_json::to_value(r).map_err(|e| StoreError::Data(e.to_string()))?;
    Ok((format!("{:015}|{}", r.ts.max(0), r.id), body))
}

impl dyn Documents {
    /// The open alerts of `series`, newest first, at most `limit`, and whether there were more.
    pub async fn open_alerts(
        &self,
        tenant: &str,
        series: &str,
        limit: usize,
    ) -> StoreResult<(Vec<Record>, bool)> {
        let collection = open_collection(series);
        let All { items, cut } = self.read_all(tenant, &collection, &Filter::all()).await?;
        let mut open = items
            .into_iter()
            .rev()
            .map(|d| serde_json::from_value::<Record>(d.body))
            .filter(|r| r.as_ref().map_or(true, |r| is_open(&r.body)))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| StoreError::Data(e.to_string()))?;
        let more = cut || open.len() > limit;
        open.truncate(limit);
        Ok((open, more))
    }
}
