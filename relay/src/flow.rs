//! Flows in: NetFlow v5, v9 and IPFIX datagrams over UDP, decoded by `netflow_parser` with
//! templates kept per exporter address and observation domain (source id for v9). Each flow
//! record becomes one `gateway-flow` line; a data set that arrives before its template cannot
//! be cut into records, so it is counted (`no_template`, one per data set) and dropped, as
//! are undecodable datagrams (`malformed`) and records missing addresses or counts
//! (`incomplete`). One thread receives and decodes: the parser's state is its own.

use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use chrono::{DateTime, SecondsFormat, Utc};
use netflow_parser::static_versions::v5::V5;
use netflow_parser::variable_versions::ipfix::lookup::{IANAIPFixField, IPFixField};
use netflow_parser::variable_versions::ipfix::{FlowSetBody as IpfixBody, IPFix};
use netflow_parser::variable_versions::v9::{FlowSetBody as V9Body, V9};
use netflow_parser::{AutoScopedParser, FieldValue, NetflowPacket, V9FlowRecord};
use serde::Serialize;

use crate::batch::Batcher;
use crate::config::Config;
use crate::spool::Kind;
use crate::stats::{Loss, Stats};

/// One `gateway-flow` line.
#[derive(Debug, Serialize, PartialEq)]
pub struct FlowLine<'a> {
    pub start: String,
    pub end: String,
    pub exporter: IpAddr,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_if: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_if: Option<u32>,
    pub src_ip: IpAddr,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub src_port: Option<u16>,
    pub dst_ip: IpAddr,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dst_port: Option<u16>,
    pub protocol: u8,
    pub bytes: u64,
    pub packets: u64,
}

/// Receives on `socket` until `stop` is set (checked at least every 200 ms).
pub fn receive(
    socket: UdpSocket,
    config: Arc<Config>,
    stats: Arc<Stats>,
    batcher: Batcher,
    stop: Arc<AtomicBool>,
) {
    if let Err(e) = socket.set_read_timeout(Some(Duration::from_millis(200))) {
        tracing::error!(error = %e, "flow socket timeout");
        return;
    }
    let mut parser = AutoScopedParser::new();
    let mut buf = vec![0u8; 65_536];
    let mut line = Vec::with_capacity(512);
    while !stop.load(Ordering::Relaxed) {
        let (n, from) = match socket.recv_from(&mut buf) {
            Ok(r) => r,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                continue;
            }
            Err(e) => {
                tracing::warn!(error = %e, "flow UDP receive");
                continue;
            }
        };
        Stats::add(&stats.flow_datagrams, 1);
        let exporter = from.ip().to_canonical();
        let device = config.device(exporter);
        let mut emit = |flow: Result<FlowLine, Loss>| match flow {
            Ok(flow) => {
                Stats::add(&stats.flow_records, 1);
                line.clear();
                if serde_json::to_writer(&mut line, &flow).is_ok() {
                    batcher.push_blocking(Kind::GatewayFlow, &line);
                }
            }
            Err(why) => {
                if why != Loss::NoTemplate {
                    Stats::add(&stats.flow_records, 1);
                }
                stats.lose(why, 1);
            }
        };
        decode(&mut parser, from, &buf[..n], exporter, device, &mut emit);
    }
}

/// Decodes one datagram from `from`, handing each record (or why one is lost) to `emit`.
pub fn decode<'a>(
    parser: &mut AutoScopedParser,
    from: SocketAddr,
    data: &[u8],
    exporter: IpAddr,
    device: Option<&'a str>,
    emit: &mut dyn FnMut(Result<FlowLine<'a>, Loss>),
) {
    let result = parser.parse_from_source(from, data);
    let ctx = Ctx { exporter, device };
    if result.error.is_some() || result.packets.is_empty() {
        emit(Err(Loss::Malformed));
    }
    for packet in &result.packets {
        match packet {
            NetflowPacket::V5(v5) => ctx.v5(v5, emit),
            NetflowPacket::V9(v9) => ctx.v9(v9, emit),
            NetflowPacket::IPFix(ipfix) => ctx.ipfix(ipfix, emit),
            // v7 (Catalyst switches) is not asked for.
            _ => emit(Err(Loss::Malformed)),
        }
    }
}

struct Ctx<'a> {
    exporter: IpAddr,
    device: Option<&'a str>,
}

/// How a record's times are read: absolute, or milliseconds of the exporter's uptime.
#[derive(Clone, Copy)]
struct Clock {
    /// Unix milliseconds of the export.
    export_ms: i64,
    /// The exporter's uptime at the export, when the header gives it.
    uptime_ms: Option<i64>,
}

impl Clock {
    fn at_uptime(&self, t: i64) -> i64 {
        match self.uptime_ms {
            Some(up) => self.export_ms - (up - t),
            None => self.export_ms,
        }
    }
}

fn rfc3339(ms: i64) -> Option<String> {
    DateTime::<Utc>::from_timestamp_millis(ms)
        .map(|t| t.to_rfc3339_opts(SecondsFormat::Millis, true))
}

impl<'a> Ctx<'a> {
    fn v5(&self, v5: &V5, emit: &mut dyn FnMut(Result<FlowLine<'a>, Loss>)) {
        let h = &v5.header;
        let clock = Clock {
            export_ms: i64::from(h.unix_secs) * 1000 + i64::from(h.unix_nsecs / 1_000_000),
            uptime_ms: Some(i64::from(h.sys_up_time)),
        };
        for r in &v5.flowsets {
            let line = (|| {
                Some(FlowLine {
                    start: rfc3339(clock.at_uptime(i64::from(r.first)))?,
                    end: rfc3339(clock.at_uptime(i64::from(r.last)))?,
                    exporter: self.exporter,
                    device: self.device,
                    input_if: Some(u32::from(r.input)),
                    output_if: Some(u32::from(r.output)),
                    src_ip: IpAddr::V4(r.src_addr),
                    src_port: Some(r.src_port),
                    dst_ip: IpAddr::V4(r.dst_addr),
                    dst_port: Some(r.dst_port),
                    protocol: r.protocol_number,
                    bytes: u64::from(r.d_octets),
                    packets: u64::from(r.d_pkts),
                })
            })();
            emit(line.ok_or(Loss::Incomplete));
        }
    }

    fn v9(&self, v9: &V9, emit: &mut dyn FnMut(Result<FlowLine<'a>, Loss>)) {
        let clock = Clock {
            export_ms: i64::from(v9.header.unix_secs) * 1000,
            uptime_ms: Some(i64::from(v9.header.sys_up_time)),
        };
        for set in &v9.flowsets {
            match &set.body {
                V9Body::Data(data) => self.v9_records(&data.fields, &clock, emit),
                V9Body::NoTemplate(_) => emit(Err(Loss::NoTemplate)),
                _ => {}
            }
        }
    }

    fn ipfix(&self, ipfix: &IPFix, emit: &mut dyn FnMut(Result<FlowLine<'a>, Loss>)) {
        let export = Clock {
            export_ms: i64::from(ipfix.header.export_time) * 1000,
            uptime_ms: None,
        };
        for set in &ipfix.flowsets {
            match &set.body {
                IpfixBody::Data(data) => {
                    for record in &data.fields {
                        let get = |id: u16| {
                            record
                                .iter()
                                .find(|(f, _)| iana_id(f) == Some(id))
                                .map(|(_, v)| v)
                        };
                        // flowStart/EndSysUpTime count from systemInitTimeMilliseconds.
                        let clock = match get(160).and_then(millis) {
                            Some(init) => Clock {
                                export_ms: init,
                                uptime_ms: Some(0),
                            },
                            None => Clock { ..export },
                        };
                        emit(self.record(&get, &clock).ok_or(Loss::Incomplete));
                    }
                }
                // v9-style sets inside IPFIX: no uptime in an IPFIX header.
                IpfixBody::V9Data(data) => self.v9_records(&data.fields, &export, emit),
                IpfixBody::NoTemplate(_) => emit(Err(Loss::NoTemplate)),
                _ => {}
            }
        }
    }

    fn v9_records(
        &self,
        records: &[V9FlowRecord],
        clock: &Clock,
        emit: &mut dyn FnMut(Result<FlowLine<'a>, Loss>),
    ) {
        for record in records {
            let get = |id: u16| {
                record
                    .iter()
                    .find(|(f, _)| u16::from(*f) == id)
                    .map(|(_, v)| v)
            };
            emit(self.record(&get, clock).ok_or(Loss::Incomplete));
        }
    }

    /// A record of v9 or IPFIX, whose information elements share their numbers for what a
    /// flow line holds (RFC 3954 and the IANA IPFIX registry).
    fn record<'r>(
        &self,
        get: &dyn Fn(u16) -> Option<&'r FieldValue>,
        clock: &Clock,
    ) -> Option<FlowLine<'a>> {
        let ip = |v4: u16, v6: u16| get(v4).or_else(|| get(v6)).and_then(ip);
        let time = |abs_ms: u16, abs_s: u16, rel: u16| {
            get(abs_ms)
                .and_then(millis)
                .or_else(|| get(abs_s).and_then(millis))
                .or_else(|| get(rel).and_then(millis).map(|t| clock.at_uptime(t)))
                .unwrap_or(clock.export_ms)
        };
        let start = time(152, 150, 22);
        let end = time(153, 151, 21);
        Some(FlowLine {
            start: rfc3339(start)?,
            end: rfc3339(end.max(start))?,
            exporter: self.exporter,
            device: self.device,
            input_if: get(10).and_then(number).and_then(|n| u32::try_from(n).ok()),
            output_if: get(14).and_then(number).and_then(|n| u32::try_from(n).ok()),
            src_ip: ip(8, 27)?,
            src_port: get(7).and_then(number).and_then(|n| u16::try_from(n).ok()),
            dst_ip: ip(12, 28)?,
            dst_port: get(11).and_then(number).and_then(|n| u16::try_from(n).ok()),
            protocol: get(4).and_then(protocol).unwrap_or(0),
            bytes: get(1).or_else(|| get(85)).and_then(number)?,
            packets: get(2).or_else(|| get(86)).and_then(number)?,
        })
    }
}

/// The IANA number of the IPFIX elements a flow line reads.
fn iana_id(field: &IPFixField) -> Option<u16> {
    use IANAIPFixField as F;
    let IPFixField::IANA(f) = field else {
        return None;
    };
    Some(match f {
        F::OctetDeltaCount => 1,
        F::PacketDeltaCount => 2,
        F::ProtocolIdentifier => 4,
        F::SourceTransportPort => 7,
        F::SourceIpv4address => 8,
        F::IngressInterface => 10,
        F::DestinationTransportPort => 11,
        F::DestinationIpv4address => 12,
        F::EgressInterface => 14,
        F::FlowEndSysUpTime => 21,
        F::FlowStartSysUpTime => 22,
        F::SourceIpv6address => 27,
        F::DestinationIpv6address => 28,
        F::OctetTotalCount => 85,
        F::PacketTotalCount => 86,
        F::FlowStartSeconds => 150,
        F::FlowEndSeconds => 151,
        F::FlowStartMilliseconds => 152,
        F::FlowEndMilliseconds => 153,
        F::SystemInitTimeMilliseconds => 160,
        _ => return None,
    })
}

fn number(v: &FieldValue) -> Option<u64> {
    match v {
        FieldValue::DataNumber(n) => n.as_u64(),
        _ => None,
    }
}

fn millis(v: &FieldValue) -> Option<i64> {
    match v {
        FieldValue::Duration(d) => i64::try_from(d.as_duration().as_millis()).ok(),
        FieldValue::DataNumber(n) => n.as_u64().and_then(|n| i64::try_from(n).ok()),
        _ => None,
    }
}

fn ip(v: &FieldValue) -> Option<IpAddr> {
    match v {
        FieldValue::Ip4Addr(a) => Some(IpAddr::V4(*a)),
        FieldValue::Ip6Addr(a) => Some(IpAddr::V6(*a)),
        _ => None,
    }
}

fn protocol(v: &FieldValue) -> Option<u8> {
    match v {
        FieldValue::ProtocolType(p) => Some(u8::from(*p)),
        FieldValue::DataNumber(n) => n.as_u8(),
        _ => None,
    }
}
