//! Opaque cursors (docs/http-conventions.md#cursors): base64url of a small JSON payload and a
//! truncated HMAC-SHA256, bound to the tenant, the route and a fingerprint of the filters.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

const MAC_LEN: usize = 16;

#[derive(Clone)]
pub struct CursorCodec {
    key: Vec<u8>,
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
}

/// Fingerprint of the filter values a cursor was made with.
pub fn fingerprint(filters: &impl Serialize) -> String {
    let bytes = serde_json::to_vec(filters).unwrap_or_default();
    let digest = Sha256::digest(&bytes);
    digest[..8].iter().map(|b| format!("{b:02x}")).collect()
}

impl CursorCodec {
    pub fn new(key: Vec<u8>) -> Self {
        Self { key }
    }

    fn mac(&self) -> Hmac<Sha256> {
        // HMAC takes keys of any length.
        <Hmac<Sha256> as Mac>::new_from_slice(&self.key).unwrap_or_else(|_| unreachable!())
    }

    pub fn encode<P: Serialize>(
        &self,
        route: &str,
        tenant: &str,
        filters: &str,
        position: &P,
    ) -> String {
        let payload = Payload {
            r: route,
            t: tenant,
            f: filters,
            p: position,
        };
        let mut bytes = serde_json::to_vec(&payload).unwrap_or_default();
        let mut mac = self.mac();
        mac.update(&bytes);
        bytes.extend_from_slice(&mac.finalize().into_bytes()[..MAC_LEN]);
        URL_SAFE_NO_PAD.encode(bytes)
    }

    /// The position, if the cursor is intact and was made for this route, tenant and filters.
    pub fn decode<P: DeserializeOwned>(
        &self,
        cursor: &str,
        route: &str,
        tenant: &str,
        filters: &str,
    ) -> Option<P> {
        let bytes = URL_SAFE_NO_PAD.decode(cursor.trim()).ok()?;
        if bytes.len() <= MAC_LEN {
            return None;
        }
        let (payload, tag) = bytes.split_at(bytes.len() - MAC_LEN);
        let mut mac = self.mac();
        mac.update(payload);
        mac.verify_truncated_left(tag).ok()?;
        let payload: Payload<String, P> = serde_json::from_slice(payload).ok()?;
        (payload.r == route && payload.t == tenant && payload.f == filters).then_some(payload.p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_rejects_tampering_and_mismatches() {
        let c = CursorCodec::new(b"k".to_vec());
        let s = c.encode("list_machines", "acme", "f1", &("PAR-LT-0003", 7));
        assert_eq!(
            c.decode::<(String, i32)>(&s, "list_machines", "acme", "f1"),
            Some(("PAR-LT-0003".into(), 7))
        );
        assert!(
            c.decode::<(String, i32)>(&s, "list_machines", "globex", "f1")
                .is_none()
        );
        assert!(
            c.decode::<(String, i32)>(&s, "list_flows", "acme", "f1")
                .is_none()
        );
        assert!(
            c.decode::<(String, i32)>(&s, "list_machines", "acme", "f2")
                .is_none()
        );
        let mut bytes = URL_SAFE_NO_PAD.decode(&s).expect("b64");
        bytes[3] ^= 1;
        assert!(
            c.decode::<(String, i32)>(
                &URL_SAFE_NO_PAD.encode(bytes),
                "list_machines",
                "acme",
                "f1"
            )
            .is_none()
        );
        assert!(
            CursorCodec::new(b"other".to_vec())
                .decode::<(String, i32)>(&s, "list_machines", "acme", "f1")
                .is_none()
        );
        assert!(
            c.decode::<(String, i32)>("!!!", "list_machines", "acme", "f1")
                .is_none()
        );
    }
}
