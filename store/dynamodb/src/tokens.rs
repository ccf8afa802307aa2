//! Tokens in DynamoDB: one item of the control table per token (by hash), a guard item per
//! active name, and the cache of this instance's lookups.

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use aws_sdk_dynamodb::types::{Put, TransactWriteItem, Update};

use super::DynamoStore;
use super::client::backend;
use super::item::{Item, get_n, get_s, n, s};
use super::requests::{each_item, tx_put};
use netops_routes::scope::Scope;
use netops_store::{StoreError, StoreResult, TokenRecord, Tokens};

/// Entries past which the cache drops its expired ones, on the next insert.
const CACHE_SWEPT_AT: usize = 10_000;

/// Token records read lately, each kept for `ttl`.
pub(super) struct TokenCache {
    ttl: Duration,
    entries: Mutex<HashMap<String, (Instant, TokenRecord)>>,
}

impl TokenCache {
    pub(super) fn new(ttl: Duration) -> Self {
        TokenCache {
            ttl,
            entries: Mutex::new(HashMap::new()),
        }
    }

    fn get(&self, hash: &str) -> Option<TokenRecord> {
        if self.ttl.is_zero() {
            return None;
        }
        let entries = self.entries.lock().ok()?;
        entries
            .get(hash)
            .filter(|(at, _)| at.elapsed() < self.ttl)
            .map(|(_, r)| r.clone())
    }

    fn put(&self, record: &TokenRecord) {
        if self.ttl.is_zero() {
            return;
        }
        if let Ok(mut entries) = self.entries.lock() {
            if entries.len() > CACHE_SWEPT_AT {
                entries.retain(|_, (at, _)| at.elapsed() < self.ttl);
            }
            entries.insert(record.hash.clone(), (Instant::now(), record.clone()));
        }
    }

    fn forget(&self, hash: &str) {
        if let Ok(mut entries) = self.entries.lock() {
            entries.remove(hash);
        }
    }
}

fn token_of(item: &Item) -> StoreResult<TokenRecord> {
    Ok(TokenRecord {
        hash: get_s(item, "h")?.to_owned(),
        tenant: get_s(item, "tenant")?.to_owned(),
        name: get_s(item, "name")?.to_owned(),
        scopes: get_s(item, "scopes")?
            .split(',')
            .filter_map(Scope::parse)
            .collect(),
        created_at: get_n(item, "created_at")?,
        expires_at: get_n(item, "expires_at")?,
        revoked_at: match item.get("revoked_at") {
            Some(_) => Some(get_n(item, "revoked_at")?),
            None => None,
        },
    })
}

#[async_trait]
impl Tokens for DynamoStore {
    async fn by_hash(&self, hash: &str) -> StoreResult<Option<TokenRecord>> {
        if let Some(hit) = self.cache.get(hash) {
            return Ok(Some(hit));
        }
        let out = self
            .client
            .get_item()
            .table_name(self.control.as_ref())
            .key("pk", s(format!("TOKEN|{hash}")))
            .consistent_read(true)
            .send()
            .await
            .map_err(backend)?;
        let record = out.item.as_ref().map(token_of).transpose()?;
        if let Some(r) = &record {
            self.cache.put(r);
        }
        Ok(record)
    }

    async fn insert(&self, t: &TokenRecord) -> StoreResult<()> {
        let scopes: Vec<&str> = t.scopes.iter().map(|s| s.as_str()).collect();
        let mut token: Item = HashMap::from([
            ("pk".to_owned(), s(format!("TOKEN|{}", t.hash))),
            ("h".to_owned(), s(t.hash.clone())),
            ("tenant".to_owned(), s(t.tenant.clone())),
            ("name".to_owned(), s(t.name.clone())),
            ("scopes".to_owned(), s(scopes.join(","))),
            ("created_at".to_owned(), n(t.created_at)),
            ("expires_at".to_owned(), n(t.expires_at)),
            ("gt".to_owned(), s(t.tenant.clone())),
            (
                "gs".to_owned(),
                s(format!("{:012}|{}|{}", t.created_at.max(0), t.name, t.hash)),
            ),
        ]);
        if let Some(r) = t.revoked_at {
            token.insert("revoked_at".into(), n(r));
        }
        // The guard makes (tenant, name) unique among active tokens.
        let guard: Item = HashMap::from([
            (
                "pk".to_owned(),
                s(format!("TOKNAME|{}|{}", t.tenant, t.name)),
            ),
            ("h".to_owned(), s(t.hash.clone())),
            ("expires_at".to_owned(), n(t.expires_at)),
        ]);
        let guard_put = Put::builder()
            .table_name(self.control.as_ref())
            .set_item(Some(guard))
            .condition_expression("attribute_not_exists(pk) OR expires_at <= :now")
            .expression_attribute_values(":now", n(t.created_at))
            .build()
            .map_err(|e| StoreError::Backend(e.to_string()))?;
        let items = vec![
            TransactWriteItem::builder().put(guard_put).build(),
            tx_put(&self.control, token, Some("attribute_not_exists(pk)"))?,
        ];
        match self.tx_write(items).await {
            Err(StoreError::ConditionFailed) => Err(StoreError::Exists),
            other => other,
        }
    }

    async fn revoke(&self, tenant: &str, name: &str, at: i64) -> StoreResult<bool> {
        let guard_pk = format!("TOKNAME|{tenant}|{name}");
        let guard = self
            .client
            .get_item()
            .table_name(self.control.as_ref())
            .key("pk", s(guard_pk.clone()))
            .consistent_read(true)
            .send()
            .await
            .map_err(backend)?;
        let Some(guard) = guard.item else {
            return Ok(false);
        };
        let hash = get_s(&guard, "h")?.to_owned();
        let update = Update::builder()
            .table_name(self.control.as_ref())
            .key("pk", s(format!("TOKEN|{hash}")))
            .update_expression("SET revoked_at = :at")
            .condition_expression("attribute_exists(pk) AND attribute_not_exists(revoked_at)")
            .expression_attribute_values(":at", n(at))
            .build()
            .map_err(|e| StoreError::Backend(e.to_string()))?;
        let delete = aws_sdk_dynamodb::types::Delete::builder()
            .table_name(self.control.as_ref())
            .key("pk", s(guard_pk))
            .condition_expression("h = :h")
            .expression_attribute_values(":h", s(hash.clone()))
            .build()
            .map_err(|e| StoreError::Backend(e.to_string()))?;
        let items = vec![
            TransactWriteItem::builder().update(update).build(),
            TransactWriteItem::builder().delete(delete).build(),
        ];
        let done = match self.tx_write(items).await {
            Ok(()) => true,
            Err(StoreError::ConditionFailed) => false,
            Err(e) => return Err(e),
        };
        self.cache.forget(&hash);
        Ok(done)
    }

    async fn list(&self, tenant: &str) -> StoreResult<Vec<TokenRecord>> {
        let query = self
            .client
            .query()
            .table_name(self.control.as_ref())
            .index_name("by_tenant")
            .key_condition_expression("gt = :t")
            .expression_attribute_values(":t", s(tenant));
        let mut out = Vec::new();
        each_item(query, |item| {
            out.push(token_of(&item)?);
            Ok(ControlFlow::Continue(()))
        })
        .await?;
        out.sort_by(|a, b| (a.created_at, &a.name).cmp(&(b.created_at, &b.name)));
        Ok(out)
    }
}
