//! Tokens in DynamoDB: one item of the control table per token (by hash), a guard item per
//! active name, and the cache of this instance's lookups.

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use aws_sdk_dynamodb::types::{Put, TransactWriteItem, Update};

use super::DynamoStore;
use super::client::{backend, wrote};
use super::item::{Item, get_n, get_s, n, s};
use super::requests::{each_item, tx_put};
use netops_routes::scope::Scope;
use netops_store::{LAST_USED_EVERY_SECS, StoreError, StoreResult, TokenRecord, Tokens};

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

    pub(super) fn forget(&self, hash: &str) {
        if let Ok(mut entries) = self.entries.lock() {
            entries.remove(hash);
        }
    }
}

fn optional_n(item: &Item, k: &str) -> StoreResult<Option<i64>> {
    match item.get(k) {
        Some(_) => get_n(item, k).map(Some),
        None => Ok(None),
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
        revoked_at: optional_n(item, "revoked_at")?,
        last_used_at: optional_n(item, "lu")?,
    })
}

/// The token's item, by hash.
fn token_item(t: &TokenRecord) -> Item {
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
    token
}

/// The guard that makes (tenant, name) unique among active tokens, pointing at `t`.
fn guard_item(t: &TokenRecord) -> Item {
    HashMap::from([
        (
            "pk".to_owned(),
            s(format!("TOKNAME|{}|{}", t.tenant, t.name)),
        ),
        ("h".to_owned(), s(t.hash.clone())),
        ("expires_at".to_owned(), n(t.expires_at)),
    ])
}

impl DynamoStore {
    /// Revokes the tokens of a name rotated away from that are still in their overlap (the
    /// guard pointed at the newest only), as the embedded store revokes every token of the
    /// name: a revocation after a rotation ends the old secret too.
    async fn revoke_rotated(
        &self,
        tenant: &str,
        name: &str,
        newest: &str,
        at: i64,
    ) -> StoreResult<()> {
        for old in self.list(tenant).await? {
            if old.name != name
                || old.hash == newest
                || old.revoked_at.is_some()
                || old.expires_at <= at
            {
                continue;
            }
            let out = self
                .client
                .update_item()
                .table_name(self.control.as_ref())
                .key("pk", s(format!("TOKEN|{}", old.hash)))
                .update_expression("SET revoked_at = :at")
                .condition_expression("attribute_exists(pk) AND attribute_not_exists(revoked_at)")
                .expression_attribute_values(":at", n(at))
                .send()
                .await;
            wrote(out)?;
            self.cache.forget(&old.hash);
        }
        Ok(())
    }
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
        let (token, guard) = (token_item(t), guard_item(t));
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
        if done {
            self.revoke_rotated(tenant, name, &hash, at).await?;
        }
        Ok(done)
    }

    /// One transaction: the old token's expiry brought forward (while it is unrevoked and
    /// unexpired), the name's guard moved from the old hash to the new, the new token put.
    /// This instance forgets the old token at once; the others within their cache time.
    async fn rotate(
        &self,
        old: &TokenRecord,
        new: &TokenRecord,
        old_until: i64,
    ) -> StoreResult<bool> {
        let cut = Update::builder()
            .table_name(self.control.as_ref())
            .key("pk", s(format!("TOKEN|{}", old.hash)))
            .update_expression("SET expires_at = :until")
            .condition_expression(
                "attribute_exists(pk) AND attribute_not_exists(revoked_at) AND expires_at > :now",
            )
            .expression_attribute_values(":until", n(old_until.min(old.expires_at)))
            .expression_attribute_values(":now", n(new.created_at))
            .build()
            .map_err(|e| StoreError::Backend(e.to_string()))?;
        let guard = Put::builder()
            .table_name(self.control.as_ref())
            .set_item(Some(guard_item(new)))
            .condition_expression("h = :old")
            .expression_attribute_values(":old", s(old.hash.clone()))
            .build()
            .map_err(|e| StoreError::Backend(e.to_string()))?;
        let items = vec![
            TransactWriteItem::builder().update(cut).build(),
            TransactWriteItem::builder().put(guard).build(),
            tx_put(
                &self.control,
                token_item(new),
                Some("attribute_not_exists(pk)"),
            )?,
        ];
        let done = match self.tx_write(items).await {
            Ok(()) => true,
            Err(StoreError::ConditionFailed) => false,
            Err(e) => return Err(e),
        };
        self.cache.forget(&old.hash);
        Ok(done)
    }

    /// One conditional UpdateItem of the token's item, `SET lu` (its only attribute a request
    /// writes); a condition failed (used lately, or no such token) writes nothing.
    async fn touch(&self, hash: &str, at: i64) -> StoreResult<bool> {
        let out = self
            .client
            .update_item()
            .table_name(self.control.as_ref())
            .key("pk", s(format!("TOKEN|{hash}")))
            .update_expression("SET lu = :at")
            .condition_expression(
                "attribute_exists(pk) AND (attribute_not_exists(lu) OR lu <= :before)",
            )
            .expression_attribute_values(":at", n(at))
            .expression_attribute_values(":before", n(at - LAST_USED_EVERY_SECS))
            .send()
            .await;
        wrote(out)
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
