//! What the product derives from the network's observations, for the collection's writers and
//! the demo alike: a device's hourly metric point (and its record, what
//! `/network/devices/{id}/metrics` reads), a device's state from what its poller saw, and a
//! site's state from its devices'.

use chrono::{DateTime, Utc};
use netops_shared::store::Record;
use serde_json::Value;

use crate::model::{Interface, LinkStatus, MetricPoint, SiteStatus, WanLink, WanRole};

/// The record of device `device`'s metric point of the hour starting at `point.at`: one per
/// device and hour (its id is the hour), so that an hour derived again replaces itself.
pub fn metric_record(device: i64, point: &MetricPoint) -> Record {
    Record {
        partition: device.to_string(),
        ts: point.at.timestamp_millis(),
        id: format!("{device}-{}", point.at.timestamp()),
        body: serde_json::to_value(point).unwrap_or(Value::Null),
    }
}

/// The point of the hour starting at `hour` from the samples taken in it: the averages of the
/// CPU, memory, rates and latency, and the sum of the errors counted since each previous
/// sample; `None` without a sample.
pub fn hour_point(hour: DateTime<Utc>, samples: &[MetricPoint]) -> Option<MetricPoint> {
    if samples.is_empty() {
        return None;
    }
    let n = samples.len() as f64;
    let mean = |f: fn(&MetricPoint) -> f64| samples.iter().map(f).sum::<f64>() / n;
    let tenth = |v: f64| (v * 10.0).round() / 10.0;
    Some(MetricPoint {
        at: hour,
        cpu_pct: tenth(mean(|p| p.cpu_pct)),
        memory_pct: tenth(mean(|p| p.memory_pct)),
        in_bps: mean(|p| p.in_bps).round(),
        out_bps: mean(|p| p.out_bps).round(),
        latency_ms: tenth(mean(|p| p.latency_ms)),
        errors: samples.iter().map(|p| p.errors).sum::<f64>().round(),
    })
}

/// A device's state: `down` when its poller could not reach it, `degraded` when one of its
/// interfaces is degraded or one of its primary WAN links is not up, else `up` (an unused
/// port down, or a backup link down, leaves it up).
pub fn device_status(
    reachable: bool,
    interfaces: &[Interface],
    wan_links: &[WanLink],
) -> LinkStatus {
    if !reachable {
        LinkStatus::Down
    } else if interfaces.iter().any(|i| i.status == LinkStatus::Degraded)
        || wan_links
            .iter()
            .any(|l| l.role == WanRole::Primary && l.status != LinkStatus::Up)
    {
        LinkStatus::Degraded
    } else {
        LinkStatus::Up
    }
}

/// A site's state from its devices' states: `degraded` when one is degraded or down.
pub fn site_status(devices: impl IntoIterator<Item = LinkStatus>) -> SiteStatus {
    if devices.into_iter().any(|s| s != LinkStatus::Up) {
        SiteStatus::Degraded
    } else {
        SiteStatus::Up
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn sample(cpu: f64, errors: f64) -> MetricPoint {
        MetricPoint {
            at: Utc::now(),
            cpu_pct: cpu,
            memory_pct: 50.0,
            in_bps: 1000.0,
            out_bps: 501.0,
            latency_ms: 1.25,
            errors,
        }
    }

    #[test]
    fn an_hour_averages_its_samples_and_sums_their_errors() {
        let hour = Utc
            .with_ymd_and_hms(2026, 11, 22, 9, 0, 0)
            .single()
            .expect("hour");
        assert!(hour_point(hour, &[]).is_none());
        let p = hour_point(hour, &[sample(10.0, 2.0), sample(21.0, 3.0)]).expect("point");
        assert_eq!(p.at, hour);
        assert_eq!((p.cpu_pct, p.errors, p.out_bps), (15.5, 5.0, 501.0));
        assert_eq!(metric_record(7, &p).id, format!("7-{}", hour.timestamp()));
    }

    #[test]
    fn a_device_is_degraded_by_a_degraded_interface_or_primary_link_and_down_unreachable() {
        let interface = |status| Interface {
            name: "port1".into(),
            status,
            speed_mbps: 1000,
            vlan: None,
            description: String::new(),
            in_bps: 0,
            out_bps: 0,
            errors_24h: 0,
        };
        let link = |role, status| WanLink {
            name: "wan1".into(),
            provider: "p".into(),
            medium: netops_domain::network::WanMedium::Fiber,
            role,
            bandwidth_down_mbps: 1,
            bandwidth_up_mbps: 1,
            public_ip: "192.0.2.1".into(),
            status,
            latency_ms: None,
            loss_pct: None,
        };
        let (up, down, degraded) = (LinkStatus::Up, LinkStatus::Down, LinkStatus::Degraded);
        // An unused port down, a backup link down: up.
        let ok = device_status(true, &[interface(down)], &[link(WanRole::Backup, down)]);
        assert_eq!(ok, up);
        assert_eq!(device_status(true, &[interface(degraded)], &[]), degraded);
        assert_eq!(
            device_status(true, &[], &[link(WanRole::Primary, down)]),
            degraded
        );
        assert_eq!(device_status(false, &[interface(up)], &[]), down);
        assert_eq!(site_status([up, up]), SiteStatus::Up);
        assert_eq!(site_status([up, down]), SiteStatus::Degraded);
    }
}
