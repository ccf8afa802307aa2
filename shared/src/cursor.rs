//! Opaque cursors (docs/http-conventions.md#cursors): base64url of a small JSON payload and a
//! truncated HMAC-SHA256, bound to the tenant, the route and a fingerprint of the filters, and
//! stamped with the time they were made.
//!
//! The keys form a ring: the first signs, every one verifies. A cursor is valid for a stated
//! time ([`DEFAULT_VALID_HOURS`], `NETOPS_CURSOR_VALID_HOURS`), so a key retired from signing
//! and kept in the ring for that long breaks no cursor still valid: that is the rotation of
//! infra/README.md ("Rotating the cursor key"). A warm instance takes a new ring with
//! [`CursorCodec::replace_keys`] without restarting; a function that reads its ring at start
//! beside its first request makes its codec without keys, and pages wait for them
//! ([`CursorCodec::ready`]).

use std::sync::{Arc, RwLock};
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::{DateTime, Utc};
use hmac::{Hmac, Mac};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

const MAC_LEN: usize = 16;

/// How long a cursor is valid, unless configured otherwise.
pub const DEFAULT_VALID_HOURS: u32 = 24;

/// A cursor made later than now by more than this is refused (clocks of two instances differ
/// by far less).
const CLOCK_SKEW_SECS: i64 = 300;

pub struct CursorCodec {
    /// The keys, the signing one first.
    keys: RwLock<Arc<[Vec<u8>]>>,
    valid_secs: i64,
    /// Whether there are keys: false from [`CursorCodec::new`] without any (a ring still
    /// being read) until [`CursorCodec::replace_keys`] brings some.
    ready: tokio::sync::watch::Sender<bool>,
}

/// Why a cursor is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// Altered, signed by no key of the ring, or made for another route, tenant or filters.
    Invalid,
    /// Intact, but made longer ago than cursors stay valid.
    Expired,
}

#[derive(Serialize, Deserialize)]
struct Payload<S, P> {
    /// Route (operation id).
    r: S,
    /// Tenant.
    t: S,
    /// Filter fingerprint.
    f: S,
    /// Position.
    p: P,
    /// When it was made (seconds since the epoch). Cursors made before cursors carried it
    /// have none: they stay valid while a key of the ring verifies them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    i: Option<i64>,
}

/// Fingerprint of the filter values a cursor was made with.
pub fn fingerprint(filters: &impl Serialize) -> String {
    let bytes = serde_json::to_vec(filters).unwrap_or_default();
    let digest = Sha256::digest(&bytes);
    digest[..8].iter().map(|b| format!("{b:02x}")).collect()
}

fn mac(key: &[u8]) -> Hmac<Sha256> {
    // HMAC takes keys of any length.
    <Hmac<Sha256> as Mac>::new_from_slice(key).unwrap_or_else(|_| unreachable!())
}

impl CursorCodec {
    /// A ring of `keys` (the signing one first) whose cursors are valid for `valid_hours`.
    /// Without keys, a ring still being read: nothing may sign or verify before
    /// [`CursorCodec::ready`] says it is in.
    pub fn new(keys: Vec<Vec<u8>>, valid_hours: u32) -> Self {
        Self {
            ready: tokio::sync::watch::Sender::new(!keys.is_empty()),
            keys: RwLock::new(keys.into()),
            valid_secs: i64::from(valid_hours) * 3600,
        }
    }

    /// Hours a cursor stays valid.
    pub fn valid_hours(&self) -> i64 {
        self.valid_secs / 3600
    }

    /// Takes a new ring (the signing key first); an empty one is ignored.
    pub fn replace_keys(&self, keys: Vec<Vec<u8>>) {
        if keys.is_empty() {
            return;
        }
        *self.keys.write().unwrap_or_else(|e| e.into_inner()) = keys.into();
        self.ready.send_replace(true);
    }

    /// Whether the codec has its keys, waiting for them for at most `wait` when it has none
    /// yet (at once when it has).
    pub async fn ready(&self, wait: Duration) -> bool {
        if *self.ready.borrow() {
            return true;
        }
        let mut ready = self.ready.subscribe();
        matches!(
            tokio::time::timeout(wait, ready.wait_for(|ready| *ready)).await,
            Ok(Ok(_))
        )
    }

    fn ring(&self) -> Arc<[Vec<u8>]> {
        self.keys.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub fn encode<P: Serialize>(
        &self,
        route: &str,
        tenant: &str,
        filters: &str,
        position: &P,
    ) -> String {
        self.encode_at(route, tenant, filters, position, Utc::now())
    }

    fn encode_at<P: Serialize>(
        &self,
        route: &str,
        tenant: &str,
        filters: &str,
        position: &P,
        now: DateTime<Utc>,
    ) -> String {
        let payload = Payload {
            r: route,
            t: tenant,
            f: filters,
            p: position,
            i: Some(now.timestamp()),
        };
        let mut bytes = serde_json::to_vec(&payload).unwrap_or_default();
        let ring = self.ring();
        let mut mac = mac(ring.first().map(Vec::as_slice).unwrap_or_default());
        mac.update(&bytes);
        bytes.extend_from_slice(&mac.finalize().into_bytes()[..MAC_LEN]);
        URL_SAFE_NO_PAD.encode(bytes)
    }

    /// The position, if the cursor is intact, signed by a key of the ring, still valid, and
    /// made for this route, tenant and filters.
    pub fn decode<P: DeserializeOwned>(
        &self,
        cursor: &str,
        route: &str,
        tenant: &str,
        filters: &str,
    ) -> Result<P, Refused> {
        self.decode_at(cursor, route, tenant, filters, Utc::now())
    }

    fn decode_at<P: DeserializeOwned>(
        &self,
        cursor: &str,
        route: &str,
        tenant: &str,
        filters: &str,
        now: DateTime<Utc>,
    ) -> Result<P, Refused> {
        let bytes = URL_SAFE_NO_PAD
            .decode(cursor.trim())
            .map_err(|_| Refused::Invalid)?;
        if bytes.len() <= MAC_LEN {
            return Err(Refused::Invalid);
        }
        let (payload, tag) = bytes.split_at(bytes.len() - MAC_LEN);
        let signed = self.ring().iter().any(|key| {
            let mut mac = mac(key);
            mac.update(payload);
            mac.verify_truncated_left(tag).is_ok()
        });
        if !signed {
            return Err(Refused::Invalid);
        }
        let payload: Payload<String, P> =
            serde_json::from_slice(payload).map_err(|_| Refused::Invalid)?;
        if payload.r != route || payload.t != tenant || payload.f != filters {
            return Err(Refused::Invalid);
        }
        match payload.i {
            Some(i) if i > now.timestamp() + CLOCK_SKEW_SECS => Err(Refused::Invalid),
            Some(i) if now.timestamp() - i > self.valid_secs => Err(Refused::Expired),
            _ => Ok(payload.p),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Duration;

    type Pos = (String, i32);

    #[test]
    fn round_trips_and_rejects_tampering_and_mismatches() {
        let c = CursorCodec::new(vec![b"k".to_vec()], DEFAULT_VALID_HOURS);
        let s = c.encode("list_machines", "acme", "f1", &("PAR-LT-0003", 7));
        assert_eq!(
            c.decode::<Pos>(&s, "list_machines", "acme", "f1"),
            Ok(("PAR-LT-0003".into(), 7))
        );
        for (route, tenant, filters) in [
            ("list_machines", "globex", "f1"),
            ("list_flows", "acme", "f1"),
            ("list_machines", "acme", "f2"),
        ] {
            assert_eq!(
                c.decode::<Pos>(&s, route, tenant, filters),
                Err(Refused::Invalid)
            );
        }
        let mut bytes = URL_SAFE_NO_PAD.decode(&s).expect("b64");
        bytes[3] ^= 1;
        assert_eq!(
            c.decode::<Pos>(
                &URL_SAFE_NO_PAD.encode(bytes),
                "list_machines",
                "acme",
                "f1"
            ),
            Err(Refused::Invalid)
        );
        assert_eq!(
            CursorCodec::new(vec![b"other".to_vec()], DEFAULT_VALID_HOURS).decode::<Pos>(
                &s,
                "list_machines",
                "acme",
                "f1"
            ),
            Err(Refused::Invalid)
        );
        assert_eq!(
            c.decode::<Pos>("!!!", "list_machines", "acme", "f1"),
            Err(Refused::Invalid)
        );
    }

    #[test]
    fn a_cursor_is_valid_for_its_stated_hours_and_not_from_the_future() {
        let c = CursorCodec::new(vec![b"k".to_vec()], 24);
        let made = Utc::now() - Duration::days(3);
        let s = c.encode_at("list_flows", "acme", "f", &1, made);
        let at = |d: Duration| c.decode_at::<i32>(&s, "list_flows", "acme", "f", made + d);
        assert_eq!(at(Duration::hours(24)), Ok(1));
        assert_eq!(
            at(Duration::hours(24) + Duration::seconds(1)),
            Err(Refused::Expired)
        );
        assert_eq!(at(-Duration::minutes(4)), Ok(1), "within the clock skew");
        assert_eq!(at(-Duration::minutes(6)), Err(Refused::Invalid));
    }

    /// The rotation of infra/README.md: a new key joins the ring (verifying only), then signs,
    /// the old one verifying until the cursors it signed have expired.
    #[test]
    fn a_rotated_ring_breaks_no_cursor_still_valid() {
        let c = CursorCodec::new(vec![b"old".to_vec()], 24);
        let before = c.encode("list_alerts", "acme", "f", &"a");
        // Step 1: the new key verifies everywhere before anything signs with it.
        c.replace_keys(vec![b"old".to_vec(), b"new".to_vec()]);
        let during = c.encode("list_alerts", "acme", "f", &"b");
        // Step 2: the new key signs, the old one still verifies.
        c.replace_keys(vec![b"new".to_vec(), b"old".to_vec()]);
        let after = c.encode("list_alerts", "acme", "f", &"c");
        for (cursor, pos) in [(&before, "a"), (&during, "b"), (&after, "c")] {
            assert_eq!(
                c.decode::<String>(cursor, "list_alerts", "acme", "f"),
                Ok(pos.to_owned())
            );
        }
        // Step 3, once cursors of the old key have expired: it leaves the ring.
        c.replace_keys(vec![b"new".to_vec()]);
        assert_eq!(
            c.decode::<String>(&before, "list_alerts", "acme", "f"),
            Err(Refused::Invalid)
        );
        assert_eq!(
            c.decode::<String>(&after, "list_alerts", "acme", "f"),
            Ok("c".to_owned())
        );
        c.replace_keys(Vec::new());
        assert!(
            c.decode::<String>(&after, "list_alerts", "acme", "f")
                .is_ok()
        );
    }

    #[tokio::test]
    async fn a_codec_made_without_keys_is_ready_once_they_come_and_not_before() {
        let wait = std::time::Duration::from_millis(20);
        assert!(CursorCodec::new(vec![b"k".to_vec()], 24).ready(wait).await);
        let c = Arc::new(CursorCodec::new(Vec::new(), 24));
        assert!(!c.ready(wait).await, "no keys yet");
        c.replace_keys(Vec::new());
        assert!(!c.ready(wait).await, "an empty ring brings none");
        let waiting = tokio::spawn({
            let c = c.clone();
            async move { c.ready(std::time::Duration::from_secs(30)).await }
        });
        tokio::time::sleep(wait).await;
        c.replace_keys(vec![b"k".to_vec()]);
        assert!(
            waiting.await.unwrap_or(false),
            "a waiter is woken by the keys"
        );
        assert!(c.ready(std::time::Duration::ZERO).await);
    }

    #[test]
    fn cursors_made_before_they_carried_their_time_stay_valid_under_their_key() {
        let key = b"k".to_vec();
        let payload = br#"{"r":"list_machines","t":"acme","f":"f","p":3}"#.to_vec();
        let mut m = mac(&key);
        m.update(&payload);
        let mut bytes = payload;
        bytes.extend_from_slice(&m.finalize().into_bytes()[..MAC_LEN]);
        let legacy = URL_SAFE_NO_PAD.encode(bytes);
        let c = CursorCodec::new(vec![key], 24);
        assert_eq!(
            c.decode::<i32>(&legacy, "list_machines", "acme", "f"),
            Ok(3)
        );
    }
}
