//! Firewall log parsers (docs/modules.md#firewall): two vendor formats (FortiGate key=value,
//! Palo Alto Networks PAN-OS CSV) and the generic CEF, LEEF (1.0 and 2.0) and key=value
//! formats, each optionally behind an RFC 3164 syslog header. Every parser maps the vendor's
//! own words onto the event categories and actions of docs/data.md#module-values. A line that
//! cannot be read gives a [`ParseError`], never a panic: collection counts and skips it.

use std::collections::HashMap;

use chrono::{DateTime, Datelike, NaiveDate, NaiveDateTime, TimeZone, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// Log format of a device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Format {
    /// Fortinet FortiGate, `key=value` with quoted values.
    Fortigate,
    /// Palo Alto Networks PAN-OS, comma-separated fields in a fixed order per log type.
    Paloalto,
    /// ArcSight Common Event Format.
    Cef,
    /// IBM QRadar Log Event Extended Format, 1.0 (tab) or 2.0 (chosen delimiter).
    Leef,
    /// Generic `key=value` pairs.
    Kv,
}

impl Format {
    pub const ALL: [Format; 5] = [
        Format::Fortigate,
        Format::Paloalto,
        Format::Cef,
        Format::Leef,
        Format::Kv,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Format::Fortigate => "fortigate",
            Format::Paloalto => "paloalto",
            Format::Cef => "cef",
            Format::Leef => "leef",
            Format::Kv => "kv",
        }
    }
}

/// Event category (spec 2.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    Auth,
    Vpn,
    Tunnel,
    Ids,
    Deny,
    Allow,
    Admin,
    System,
    Other,
}

impl Category {
    pub const ALL: [Category; 9] = [
        Category::Auth,
        Category::Vpn,
        Category::Tunnel,
        Category::Ids,
        Category::Deny,
        Category::Allow,
        Category::Admin,
        Category::System,
        Category::Other,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Category::Auth => "auth",
            Category::Vpn => "vpn",
            Category::Tunnel => "tunnel",
            Category::Ids => "ids",
            Category::Deny => "deny",
            Category::Allow => "allow",
            Category::Admin => "admin",
            Category::System => "system",
            Category::Other => "other",
        }
    }
}

/// Event action (spec 2.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[schema(as = FirewallAction)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    Success,
    Failure,
    Blocked,
    Allowed,
    Detected,
    Changed,
    Up,
    Down,
    Info,
}

impl Action {
    pub const ALL: [Action; 9] = [
        Action::Success,
        Action::Failure,
        Action::Blocked,
        Action::Allowed,
        Action::Detected,
        Action::Changed,
        Action::Up,
        Action::Down,
        Action::Info,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Action::Success => "success",
            Action::Failure => "failure",
            Action::Blocked => "blocked",
            Action::Allowed => "allowed",
            Action::Detected => "detected",
            Action::Changed => "changed",
            Action::Up => "up",
            Action::Down => "down",
            Action::Info => "info",
        }
    }
}

/// What a parser reads from one line.
#[derive(Debug, Clone, PartialEq)]
pub struct Parsed {
    pub format: Format,
    pub at: DateTime<Utc>,
    /// Host name in the syslog header or the log itself.
    pub host: Option<String>,
    pub category: Category,
    pub action: Action,
    pub account: Option<String>,
    pub src_ip: Option<String>,
    pub src_port: Option<u16>,
    pub dst_ip: Option<String>,
    pub dst_port: Option<u16>,
    pub service: Option<String>,
    pub protocol: Option<String>,
    pub rule: Option<String>,
    pub message: String,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    #[error("empty line")]
    Empty,
    #[error("unknown format")]
    UnknownFormat,
    #[error("missing field {0}")]
    Missing(&'static str),
    #[error("bad value for {0}")]
    BadValue(&'static str),
    #[error("malformed {0} header")]
    Header(&'static str),
}

/// Parses one line, recognising its format.
pub fn parse_line(line: &str, received_at: DateTime<Utc>) -> Result<Parsed, ParseError> {
    let line = line.trim();
    if line.is_empty() {
        return Err(ParseError::Empty);
    }
    let format = detect(line).ok_or(ParseError::UnknownFormat)?;
    parse_as(format, line, received_at)
}

/// The format of a line, from its markers.
pub fn detect(line: &str) -> Option<Format> {
    if line.contains("CEF:") {
        return Some(Format::Cef);
    }
    if line.contains("LEEF:") {
        return Some(Format::Leef);
    }
    let (_, body) = syslog_header(line, Utc::now()).ok()?;
    if body.contains("logid=") && body.contains("devid=") {
        return Some(Format::Fortigate);
    }
    let fields: Vec<&str> = body.split(',').collect();
    if fields.len() > 6 && matches!(fields[3], "TRAFFIC" | "THREAT" | "SYSTEM" | "CONFIG") {
        return Some(Format::Paloalto);
    }
    if body.contains('=') {
        return Some(Format::Kv);
    }
    None
}

/// Parses one line in a known format.
pub fn parse_as(
    format: Format,
    line: &str,
    received_at: DateTime<Utc>,
) -> Result<Parsed, ParseError> {
    let line = line.trim();
    if line.is_empty() {
        return Err(ParseError::Empty);
    }
    let (header, body) = syslog_header(line, received_at)?;
    let mut parsed = match format {
        Format::Fortigate => fortigate(body)?,
        Format::Paloalto => paloalto(body)?,
        Format::Cef => cef(body)?,
        Format::Leef => leef(body)?,
        Format::Kv => generic_kv(body)?,
    };
    if parsed.host.is_none() {
        parsed.host = header.host;
    }
    if parsed.at == DateTime::<Utc>::MIN_UTC {
        parsed.at = header.at.ok_or(ParseError::Missing("time"))?;
    }
    Ok(parsed)
}

struct Header {
    at: Option<DateTime<Utc>>,
    host: Option<String>,
}

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// Strips `<PRI>` and an RFC 3164 `Mmm dd hh:mm:ss host` header when present. The year,
/// absent from RFC 3164, is the one that puts the time closest before `received_at`.
fn syslog_header(line: &str, received_at: DateTime<Utc>) -> Result<(Header, &str), ParseError> {
    let mut rest = line;
    if let Some(stripped) = rest.strip_prefix('<') {
        let end = stripped.find('>').ok_or(ParseError::Header("syslog"))?;
        let pri = &stripped[..end];
        if pri.is_empty() || pri.len() > 3 || !pri.bytes().all(|b| b.is_ascii_digit()) {
            return Err(ParseError::Header("syslog"));
        }
        rest = &stripped[end + 1..];
    }
    let mut header = Header {
        at: None,
        host: None,
    };
    let month = rest
        .get(..3)
        .and_then(|m| MONTHS.iter().position(|x| *x == m));
    if let Some(month) = month {
        // "Nov 22 09:15:42 host body" (day may be space-padded).
        let after = rest[3..].trim_start();
        let mut parts = after.splitn(4, ' ');
        let (Some(day), Some(time), Some(host), Some(body)) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(ParseError::Header("syslog"));
        };
        let day: u32 = day.parse().map_err(|_| ParseError::Header("syslog"))?;
        let t = chrono::NaiveTime::parse_from_str(time, "%H:%M:%S")
            .map_err(|_| ParseError::Header("syslog"))?;
        let mut year = received_at.year();
        let mut at = None;
        for _ in 0..2 {
            let date = NaiveDate::from_ymd_opt(year, month as u32 + 1, day)
                .ok_or(ParseError::Header("syslog"))?;
            let candidate = Utc.from_utc_datetime(&date.and_time(t));
            if candidate <= received_at + chrono::Duration::days(1) {
                at = Some(candidate);
                break;
            }
            year -= 1;
        }
        header.at = at;
        header.host = Some(host.to_owned());
        rest = body;
    }
    Ok((header, rest.trim()))
}

/// `key=value` pairs separated by spaces; values may be double-quoted (with `\"` escapes).
pub fn kv_pairs(body: &str) -> Result<HashMap<String, String>, ParseError> {
    let mut out = HashMap::new();
    let mut chars = body.char_indices().peekable();
    while let Some(&(start, c)) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
            continue;
        }
        let mut key_end = None;
        for (i, c) in chars.by_ref() {
            if c == '=' {
                key_end = Some(i);
                break;
            }
            if c.is_whitespace() {
                return Err(ParseError::BadValue("key=value pair"));
            }
        }
        let key_end = key_end.ok_or(ParseError::BadValue("key=value pair"))?;
        let key = &body[start..key_end];
        if key.is_empty() {
            return Err(ParseError::BadValue("key=value pair"));
        }
        let mut value = String::new();
        if chars.peek().is_some_and(|&(_, c)| c == '"') {
            chars.next();
            let mut closed = false;
            while let Some((_, c)) = chars.next() {
                match c {
                    '\\' => {
                        if let Some((_, n)) = chars.next() {
                            value.push(n);
                        }
                    }
                    '"' => {
                        closed = true;
                        break;
                    }
                    c => value.push(c),
                }
            }
            if !closed {
                return Err(ParseError::BadValue("unterminated quote"));
            }
        } else {
            while let Some(&(_, c)) = chars.peek() {
                if c.is_whitespace() {
                    break;
                }
                value.push(c);
                chars.next();
            }
        }
        out.insert(key.to_owned(), value);
    }
    if out.is_empty() {
        return Err(ParseError::Missing("key=value pairs"));
    }
    Ok(out)
}

fn port(v: Option<&String>, name: &'static str) -> Result<Option<u16>, ParseError> {
    match v.map(|s| s.trim()).filter(|s| !s.is_empty()) {
        None => Ok(None),
        Some(s) => s.parse().map(Some).map_err(|_| ParseError::BadValue(name)),
    }
}

fn ip(v: Option<&String>, name: &'static str) -> Result<Option<String>, ParseError> {
    match v
        .map(|s| s.trim())
        .filter(|s| !s.is_empty() && *s != "0.0.0.0")
    {
        None => Ok(None),
        Some(s) => s
            .parse::<std::net::IpAddr>()
            .map(|a| Some(a.to_string()))
            .map_err(|_| ParseError::BadValue(name)),
    }
}

fn nonempty(v: Option<&String>) -> Option<String> {
    v.map(|s| s.trim())
        .filter(|s| !s.is_empty() && *s != "N/A" && *s != "-")
        .map(str::to_owned)
}

/// Epoch seconds, milliseconds, microseconds or nanoseconds, told apart by their length.
fn epoch(raw: &str, name: &'static str) -> Result<DateTime<Utc>, ParseError> {
    let n: i64 = raw.trim().parse().map_err(|_| ParseError::BadValue(name))?;
    let ms = match raw.trim().len() {
        1..=10 => n.checked_mul(1000),
        11..=13 => Some(n),
        14..=16 => Some(n / 1000),
        _ => Some(n / 1_000_000),
    };
    ms.and_then(DateTime::from_timestamp_millis)
        .ok_or(ParseError::BadValue(name))
}

fn protocol_name(raw: &str) -> String {
    match raw.trim() {
        "6" => "tcp".into(),
        "17" => "udp".into(),
        "1" => "icmp".into(),
        "50" => "esp".into(),
        other => other.to_lowercase(),
    }
}

/// Strips a `DOMAIN\` prefix and an `@realm` suffix from an account name.
fn account_name(raw: Option<String>) -> Option<String> {
    raw.map(|a| {
        let a = a.rsplit('\\').next().unwrap_or(&a).to_owned();
        a.split('@').next().unwrap_or(&a).to_lowercase()
    })
    .filter(|a| !a.is_empty())
}

fn fortigate(body: &str) -> Result<Parsed, ParseError> {
    let kv = kv_pairs(body)?;
    let get = |k: &str| kv.get(k);
    let kind = get("type").ok_or(ParseError::Missing("type"))?.as_str();
    let sub = get("subtype").map(String::as_str).unwrap_or("");
    let action = get("action").map(|s| s.to_lowercase()).unwrap_or_default();
    let status = get("status").map(|s| s.to_lowercase()).unwrap_or_default();
    let (category, act) = match (kind, sub) {
        ("traffic", _) => match action.as_str() {
            "deny" | "blocked" | "drop" | "reject" | "timeout" => (Category::Deny, Action::Blocked),
            "accept" | "close" | "client-rst" | "server-rst" | "start" => {
                (Category::Allow, Action::Allowed)
            }
            _ => (Category::Other, Action::Info),
        },
        ("utm", "ips") | ("utm", "anomaly") => match action.as_str() {
            "dropped" | "blocked" | "reset" | "clear_session" => (Category::Ids, Action::Blocked),
            _ => (Category::Ids, Action::Detected),
        },
        ("event", "vpn") => match action.as_str() {
            "tunnel-up" | "phase2-up" => (Category::Tunnel, Action::Up),
            "tunnel-down" | "phase2-down" => (Category::Tunnel, Action::Down),
            "ssl-login-fail" => (Category::Vpn, Action::Failure),
            "tunnel-stats" => (Category::Tunnel, Action::Info),
            _ if status == "failure" => (Category::Vpn, Action::Failure),
            "ssl-new-con" | "ssl-login" => (Category::Vpn, Action::Success),
            _ => (Category::Vpn, Action::Info),
        },
        ("event", "user") => match (action.as_str(), status.as_str()) {
            (_, "failure") | ("auth-logon-fail", _) => (Category::Auth, Action::Failure),
            _ => (Category::Auth, Action::Success),
        },
        ("event", "system") => match action.as_str() {
            "login" if status == "failed" => (Category::Auth, Action::Failure),
            "login" => (Category::Auth, Action::Success),
            "edit" | "add" | "delete" | "move" => (Category::Admin, Action::Changed),
            _ => (Category::System, Action::Info),
        },
        _ => (Category::Other, Action::Info),
    };
    let at = match get("eventtime") {
        Some(e) => epoch(e, "eventtime")?,
        None => match (get("date"), get("time")) {
            (Some(d), Some(t)) => {
                NaiveDateTime::parse_from_str(&format!("{d} {t}"), "%Y-%m-%d %H:%M:%S")
                    .map(|n| Utc.from_utc_datetime(&n))
                    .map_err(|_| ParseError::BadValue("date"))?
            }
            _ => return Err(ParseError::Missing("eventtime")),
        },
    };
    Ok(Parsed {
        format: Format::Fortigate,
        at,
        host: nonempty(get("devname")),
        category,
        action: act,
        account: account_name(nonempty(get("user")).or_else(|| nonempty(get("srcuser")))),
        src_ip: ip(get("srcip").or(get("remip")), "srcip")?,
        src_port: port(get("srcport"), "srcport")?,
        dst_ip: ip(get("dstip").or(get("locip")), "dstip")?,
        dst_port: port(get("dstport"), "dstport")?,
        service: nonempty(get("service")).map(|s| s.to_lowercase()),
        protocol: get("proto").map(|p| protocol_name(p)),
        rule: nonempty(get("policyid")).or_else(|| nonempty(get("vpntunnel"))),
        message: nonempty(get("msg"))
            .or_else(|| nonempty(get("logdesc")))
            .unwrap_or_default(),
    })
}

/// PAN-OS comma-separated values: quoted fields may hold commas.
fn csv_fields(body: &str) -> Result<Vec<String>, ParseError> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = body.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            '"' => quoted = !quoted,
            ',' if !quoted => out.push(std::mem::take(&mut cur)),
            c => cur.push(c),
        }
    }
    if quoted {
        return Err(ParseError::BadValue("unterminated quote"));
    }
    out.push(cur);
    Ok(out)
}

fn pan_time(raw: &str) -> Result<DateTime<Utc>, ParseError> {
    NaiveDateTime::parse_from_str(raw.trim(), "%Y/%m/%d %H:%M:%S")
        .map(|n| Utc.from_utc_datetime(&n))
        .map_err(|_| ParseError::BadValue("generated time"))
}

/// A `Label: value` item of a PAN-OS system description.
fn labelled(text: &str, label: &str) -> Option<String> {
    let start = text.find(label)? + label.len();
    let rest = text[start..].trim_start();
    let end = rest.find([',', ' ']).unwrap_or(rest.len());
    let v = rest[..end].trim().trim_end_matches('.');
    (!v.is_empty()).then(|| v.to_owned())
}

fn paloalto(body: &str) -> Result<Parsed, ParseError> {
    let f = csv_fields(body)?;
    let field = |i: usize| f.get(i).map(String::as_str).unwrap_or("");
    let kind = field(3);
    let sub = field(4);
    let at = pan_time(field(6))?;
    match kind {
        "TRAFFIC" | "THREAT" => {
            if f.len() < 31 {
                return Err(ParseError::Missing("traffic fields"));
            }
            let action = field(30);
            let (category, act) = if kind == "THREAT" {
                match action {
                    "alert" | "allow" => (Category::Ids, Action::Detected),
                    _ => (Category::Ids, Action::Blocked),
                }
            } else {
                match action {
                    "allow" => (Category::Allow, Action::Allowed),
                    "deny" | "drop" | "reset-client" | "reset-server" | "reset-both"
                    | "drop-icmp" => (Category::Deny, Action::Blocked),
                    _ => (Category::Other, Action::Info),
                }
            };
            let threat = (kind == "THREAT")
                .then(|| field(32).to_owned())
                .filter(|s| !s.is_empty());
            Ok(Parsed {
                format: Format::Paloalto,
                at,
                host: None,
                category,
                action: act,
                account: account_name(nonempty(f.get(12))),
                src_ip: ip(f.get(7), "source address")?,
                src_port: port(f.get(24), "source port")?,
                dst_ip: ip(f.get(8), "destination address")?,
                dst_port: port(f.get(25), "destination port")?,
                service: nonempty(f.get(14)),
                protocol: nonempty(f.get(29)),
                rule: nonempty(f.get(11)),
                message: threat.unwrap_or_else(|| format!("{sub} {action}")),
            })
        }
        "SYSTEM" => {
            // ..., Generated Time(6), Virtual System(7), Event ID(8), Object(9), _, _,
            // Module(12), Severity(13), Description(14)
            if f.len() < 15 {
                return Err(ParseError::Missing("system fields"));
            }
            let event = field(8);
            let desc = field(14);
            let failed = desc.contains("failed") || event.contains("fail");
            let (category, act) = match sub {
                "globalprotect" => (
                    Category::Vpn,
                    if failed {
                        Action::Failure
                    } else {
                        Action::Success
                    },
                ),
                "auth" => (
                    Category::Auth,
                    if failed {
                        Action::Failure
                    } else {
                        Action::Success
                    },
                ),
                "vpn" => match event {
                    "ike-nego-p2-succ" | "tunnel-up" => (Category::Tunnel, Action::Up),
                    "ike-nego-p2-delete" | "tunnel-down" => (Category::Tunnel, Action::Down),
                    _ => (Category::Tunnel, Action::Info),
                },
                "general" | "ha" | "hw" => (Category::System, Action::Info),
                _ => (Category::Other, Action::Info),
            };
            Ok(Parsed {
                format: Format::Paloalto,
                at,
                host: None,
                category,
                action: act,
                account: account_name(labelled(desc, "User name:")),
                src_ip: ip(labelled(desc, "Login from:").as_ref(), "login from")?,
                src_port: None,
                dst_ip: None,
                dst_port: None,
                service: (category == Category::Vpn).then(|| "globalprotect".to_owned()),
                protocol: None,
                rule: nonempty(f.get(9)),
                message: desc.to_owned(),
            })
        }
        "CONFIG" => {
            // ..., Generated Time(6), Host(7), Virtual System(8), Command(9), Admin(10),
            // Client(11), Result(12), Configuration Path(13)
            if f.len() < 14 {
                return Err(ParseError::Missing("config fields"));
            }
            Ok(Parsed {
                format: Format::Paloalto,
                at,
                host: None,
                category: Category::Admin,
                action: if field(12) == "Succeeded" {
                    Action::Changed
                } else {
                    Action::Info
                },
                account: account_name(nonempty(f.get(10))),
                src_ip: ip(f.get(7), "host")?,
                src_port: None,
                dst_ip: None,
                dst_port: None,
                service: nonempty(f.get(11)),
                protocol: None,
                rule: None,
                message: format!("{} {}", field(9), field(13)),
            })
        }
        _ => Err(ParseError::BadValue("log type")),
    }
}

/// Splits `CEF:0|a|b|c|d|e|f|ext` on unescaped pipes into 7 header fields and the extension.
fn cef_header(s: &str) -> Result<(Vec<String>, &str), ParseError> {
    let mut fields = Vec::new();
    let mut cur = String::new();
    let mut idx = 0;
    let bytes: Vec<(usize, char)> = s.char_indices().collect();
    while idx < bytes.len() {
        let (pos, c) = bytes[idx];
        match c {
            '\\' if idx + 1 < bytes.len() => {
                cur.push(bytes[idx + 1].1);
                idx += 2;
                continue;
            }
            '|' => {
                fields.push(std::mem::take(&mut cur));
                if fields.len() == 7 {
                    return Ok((fields, &s[pos + 1..]));
                }
            }
            c => cur.push(c),
        }
        idx += 1;
    }
    Err(ParseError::Header("CEF"))
}

/// CEF extension: `key=value` where values run until the next ` key=`; `\=` and `\\` escape.
fn cef_extension(ext: &str) -> Result<HashMap<String, String>, ParseError> {
    let mut out = HashMap::new();
    let mut key: Option<String> = None;
    let mut value = String::new();
    let mut chars = ext.chars().peekable();
    let mut token = String::new();
    // Walk words; a word `k=...` with an unescaped '=' and a plain key starts a new pair.
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some('n') => token.push('\n'),
                Some(n) => token.push(n),
                None => {}
            },
            '=' if key.is_none() || is_key(&token) => {
                if let Some(k) = key.take() {
                    out.insert(k, value.trim_end().to_owned());
                }
                key = Some(std::mem::take(&mut token));
                value.clear();
            }
            ' ' => {
                if key.is_none() && !token.is_empty() {
                    return Err(ParseError::BadValue("CEF extension"));
                }
                value.push_str(&token);
                value.push(' ');
                token.clear();
            }
            c => token.push(c),
        }
    }
    value.push_str(&token);
    match key {
        Some(k) => {
            out.insert(k, value.trim_end().to_owned());
        }
        None if !value.trim().is_empty() => return Err(ParseError::BadValue("CEF extension")),
        None => {}
    }
    Ok(out)
}

fn is_key(token: &str) -> bool {
    !token.is_empty()
        && token
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
}

fn cef(body: &str) -> Result<Parsed, ParseError> {
    let start = body.find("CEF:").ok_or(ParseError::Header("CEF"))?;
    let prefix_host = body[..start].trim();
    let (h, ext) = cef_header(&body[start + 4..])?;
    if h[0].trim() != "0" && h[0].trim() != "1" {
        return Err(ParseError::Header("CEF"));
    }
    let kv = cef_extension(ext)?;
    let get = |k: &str| kv.get(k);
    let name = h[5].as_str();
    let cat = get("cat").map(|s| s.to_lowercase()).unwrap_or_default();
    let act = get("act")
        .map(|s| s.to_lowercase())
        .unwrap_or_else(|| name.to_lowercase());
    let outcome = get("outcome").map(|s| s.to_lowercase()).unwrap_or_default();
    let failed = outcome.contains("fail") || act.contains("fail") || act.contains("reject");
    let (category, action) = match cat.as_str() {
        "vpn" | "remote access" | "mobile access" => (
            Category::Vpn,
            if failed {
                Action::Failure
            } else {
                Action::Success
            },
        ),
        "authentication" | "identity awareness" => (
            Category::Auth,
            if failed {
                Action::Failure
            } else {
                Action::Success
            },
        ),
        "site-to-site" | "ike" => match act.as_str() {
            "key install" | "tunnel up" => (Category::Tunnel, Action::Up),
            "tunnel down" | "key delete" => (Category::Tunnel, Action::Down),
            _ => (Category::Tunnel, Action::Info),
        },
        "ips" | "threat prevention" | "anti-bot" => match act.as_str() {
            "prevent" | "drop" | "block" => (Category::Ids, Action::Blocked),
            _ => (Category::Ids, Action::Detected),
        },
        "audit" | "policy installation" => (Category::Admin, Action::Changed),
        "system" => (Category::System, Action::Info),
        _ => match act.as_str() {
            "accept" | "allow" => (Category::Allow, Action::Allowed),
            "drop" | "reject" | "block" => (Category::Deny, Action::Blocked),
            _ => (Category::Other, Action::Info),
        },
    };
    let at = match get("rt") {
        Some(rt) => epoch(rt, "rt")?,
        None => DateTime::<Utc>::MIN_UTC,
    };
    Ok(Parsed {
        format: Format::Cef,
        at,
        host: nonempty(get("dvchost"))
            .or_else(|| (!prefix_host.is_empty()).then(|| prefix_host.to_owned())),
        category,
        action,
        account: account_name(nonempty(get("suser")).or_else(|| nonempty(get("duser")))),
        src_ip: ip(get("src"), "src")?,
        src_port: port(get("spt"), "spt")?,
        dst_ip: ip(get("dst"), "dst")?,
        dst_port: port(get("dpt"), "dpt")?,
        service: nonempty(get("app")).map(|s| s.to_lowercase()),
        protocol: get("proto").map(|p| protocol_name(p)),
        rule: nonempty(get("cs1")),
        message: nonempty(get("msg")).unwrap_or_else(|| name.to_owned()),
    })
}

fn leef(body: &str) -> Result<Parsed, ParseError> {
    let start = body.find("LEEF:").ok_or(ParseError::Header("LEEF"))?;
    let s = &body[start + 5..];
    let mut parts: Vec<&str> = Vec::new();
    let mut rest = s;
    let version = s.split('|').next().unwrap_or("");
    let header_fields = match version {
        "1.0" => 5,
        "2.0" => 6,
        _ => return Err(ParseError::Header("LEEF")),
    };
    for _ in 0..header_fields {
        let end = rest.find('|').ok_or(ParseError::Header("LEEF"))?;
        parts.push(&rest[..end]);
        rest = &rest[end + 1..];
    }
    let delim = if version == "2.0" {
        let d = parts[5];
        match d {
            "" => '\t',
            d if d.len() == 1 => d.chars().next().unwrap_or('\t'),
            d if d.starts_with("0x") || d.starts_with('x') => {
                let hex = d.trim_start_matches("0x").trim_start_matches('x');
                u32::from_str_radix(hex, 16)
                    .ok()
                    .and_then(char::from_u32)
                    .ok_or(ParseError::Header("LEEF"))?
            }
            _ => return Err(ParseError::Header("LEEF")),
        }
    } else {
        '\t'
    };
    let mut kv = HashMap::new();
    for item in rest.split(delim).filter(|i| !i.trim().is_empty()) {
        let (k, v) = item
            .split_once('=')
            .ok_or(ParseError::BadValue("LEEF attribute"))?;
        kv.insert(k.trim().to_owned(), v.to_owned());
    }
    let get = |k: &str| kv.get(k);
    let event_id = parts[4].to_lowercase();
    let cat = get("cat").map(|s| s.to_lowercase()).unwrap_or_default();
    let action = get("action").map(|s| s.to_lowercase()).unwrap_or_default();
    let (category, act) = match cat.as_str() {
        "traffic" | "firewall" => match action.as_str() {
            "permit" | "accept" | "allow" => (Category::Allow, Action::Allowed),
            "deny" | "drop" | "reject" => (Category::Deny, Action::Blocked),
            _ => (Category::Other, Action::Info),
        },
        "auth" | "authentication" => (
            Category::Auth,
            if action.contains("fail") {
                Action::Failure
            } else {
                Action::Success
            },
        ),
        "vpn" | "remote-access" => (
            Category::Vpn,
            if action.contains("fail") {
                Action::Failure
            } else {
                Action::Success
            },
        ),
        "ipsec" | "tunnel" => match action.as_str() {
            "up" => (Category::Tunnel, Action::Up),
            "down" => (Category::Tunnel, Action::Down),
            _ => (Category::Tunnel, Action::Info),
        },
        "ids" | "idp" | "intrusion" => match action.as_str() {
            "drop" | "block" | "close" => (Category::Ids, Action::Blocked),
            _ => (Category::Ids, Action::Detected),
        },
        "config" | "admin" => (Category::Admin, Action::Changed),
        "system" => (Category::System, Action::Info),
        _ => (Category::Other, Action::Info),
    };
    let at = match get("devTime") {
        Some(t) if t.bytes().all(|b| b.is_ascii_digit()) => epoch(t, "devTime")?,
        Some(t) => NaiveDateTime::parse_from_str(t.trim(), "%b %d %Y %H:%M:%S")
            .map(|n| Utc.from_utc_datetime(&n))
            .map_err(|_| ParseError::BadValue("devTime"))?,
        None => DateTime::<Utc>::MIN_UTC,
    };
    Ok(Parsed {
        format: Format::Leef,
        at,
        host: nonempty(get("devName")),
        category,
        action: act,
        account: account_name(nonempty(get("usrName"))),
        src_ip: ip(get("src"), "src")?,
        src_port: port(get("srcPort"), "srcPort")?,
        dst_ip: ip(get("dst"), "dst")?,
        dst_port: port(get("dstPort"), "dstPort")?,
        service: nonempty(get("service")).map(|s| s.to_lowercase()),
        protocol: get("proto").map(|p| protocol_name(p)),
        rule: nonempty(get("policy")),
        message: nonempty(get("msg")).unwrap_or(event_id),
    })
}

fn generic_kv(body: &str) -> Result<Parsed, ParseError> {
    let kv = kv_pairs(body)?;
    let first = |keys: &[&str]| keys.iter().find_map(|k| kv.get(*k));
    let event = first(&["category", "event", "log_type", "type"])
        .ok_or(ParseError::Missing("category"))?
        .to_lowercase();
    let result = first(&["action", "result", "status", "outcome"])
        .map(|s| s.to_lowercase())
        .unwrap_or_default();
    let category = match event.as_str() {
        "auth" | "login" | "authentication" => Category::Auth,
        "vpn" | "sslvpn" | "remote-access" => Category::Vpn,
        "tunnel" | "ipsec" => Category::Tunnel,
        "ids" | "ips" | "idp" | "attack" => Category::Ids,
        "admin" | "config" | "configuration" => Category::Admin,
        "system" => Category::System,
        "firewall" | "traffic" => match result.as_str() {
            "allow" | "accept" | "permit" | "allowed" => Category::Allow,
            "deny" | "drop" | "reject" | "blocked" => Category::Deny,
            _ => Category::Other,
        },
        _ => Category::Other,
    };
    let action = match (category, result.as_str()) {
        (_, "success" | "ok" | "succeeded") => Action::Success,
        (_, "failure" | "fail" | "failed") => Action::Failure,
        (_, "up") => Action::Up,
        (_, "down") => Action::Down,
        (Category::Ids, "drop" | "block" | "blocked") => Action::Blocked,
        (Category::Ids, _) => Action::Detected,
        (Category::Deny, _) => Action::Blocked,
        (Category::Allow, _) => Action::Allowed,
        (Category::Admin, _) => Action::Changed,
        _ => Action::Info,
    };
    let at = match first(&["time", "timestamp"]) {
        Some(t) if t.bytes().all(|b| b.is_ascii_digit()) => epoch(t, "time")?,
        Some(t) => DateTime::parse_from_rfc3339(t)
            .map(|d| d.with_timezone(&Utc))
            .map_err(|_| ParseError::BadValue("time"))?,
        None => DateTime::<Utc>::MIN_UTC,
    };
    Ok(Parsed {
        format: Format::Kv,
        at,
        host: nonempty(first(&["host", "device", "hostname"])),
        category,
        action,
        account: account_name(nonempty(first(&["user", "account", "username"]))),
        src_ip: ip(first(&["src", "srcip", "src_ip"]), "src")?,
        src_port: port(first(&["sport", "srcport", "src_port"]), "sport")?,
        dst_ip: ip(first(&["dst", "dstip", "dst_ip"]), "dst")?,
        dst_port: port(first(&["dport", "dstport", "dst_port"]), "dport")?,
        service: nonempty(first(&["service", "app"])).map(|s| s.to_lowercase()),
        protocol: first(&["proto", "protocol"]).map(|p| protocol_name(p)),
        rule: nonempty(first(&["rule", "policy"])),
        message: nonempty(first(&["msg", "message"])).unwrap_or(event),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> DateTime<Utc> {
        "2026-11-22T12:00:00Z".parse().expect("date")
    }

    #[test]
    fn fortigate_traffic_deny_and_vpn_login_failure() {
        let line = r#"<189>date=2026-11-22 time=09:15:42 devname="PAR-FW-01" devid="FG100FTK20001234" eventtime=1795338942000000000 logid="0000000013" type="traffic" subtype="forward" level="notice" srcip=10.10.30.14 srcport=51234 dstip=203.0.113.50 dstport=445 action="deny" service="SMB" proto=6 policyid=12 msg="Denied by policy""#;
        let p = parse_line(line, now()).expect("parsed");
        assert_eq!(p.format, Format::Fortigate);
        assert_eq!((p.category, p.action), (Category::Deny, Action::Blocked));
        assert_eq!(p.host.as_deref(), Some("PAR-FW-01"));
        assert_eq!(p.src_ip.as_deref(), Some("10.10.30.14"));
        assert_eq!(p.dst_port, Some(445));
        assert_eq!(p.protocol.as_deref(), Some("tcp"));
        assert_eq!(p.at.timestamp(), 1_795_338_942);
        let vpn = r#"date=2026-11-22 time=09:15:42 devname="PAR-FW-01" devid="FG1" logid="0101039426" type="event" subtype="vpn" action="ssl-login-fail" remip=198.51.100.7 user="julie.martin" status="failure" reason="sslvpn_login_permission_denied""#;
        let p = parse_line(vpn, now()).expect("parsed");
        assert_eq!((p.category, p.action), (Category::Vpn, Action::Failure));
        assert_eq!(p.account.as_deref(), Some("julie.martin"));
        assert_eq!(p.src_ip.as_deref(), Some("198.51.100.7"));
        assert_eq!(
            p.at,
            "2026-11-22T09:15:42Z".parse::<DateTime<Utc>>().expect("d")
        );
    }

    #[test]
    fn paloalto_traffic_threat_system_and_config() {
        let traffic = "<14>Nov 22 09:15:42 LYO-FW-01 1,2026/11/22 09:15:42,012801234567,TRAFFIC,end,2561,2026/11/22 09:15:41,10.20.30.14,93.184.216.34,0.0.0.0,0.0.0.0,allow-web,acme\\thomas.bernard,,ssl,vsys1,trust,untrust,ethernet1/2,ethernet1/1,Forwarding,2026/11/22 09:15:42,12345,1,51234,443,0,0,0x0,tcp,allow,5120,1024,4096";
        let p = parse_line(traffic, now()).expect("parsed");
        assert_eq!(p.format, Format::Paloalto);
        assert_eq!((p.category, p.action), (Category::Allow, Action::Allowed));
        assert_eq!(p.account.as_deref(), Some("thomas.bernard"));
        assert_eq!(p.host.as_deref(), Some("LYO-FW-01"));
        assert_eq!(
            p.at,
            "2026-11-22T09:15:41Z".parse::<DateTime<Utc>>().expect("d")
        );
        assert_eq!(p.rule.as_deref(), Some("allow-web"));
        let threat = traffic
            .replace(",TRAFFIC,end,", ",THREAT,vulnerability,")
            .replace(
                ",allow,5120,1024,4096",
                ",reset-both,,\"ET EXPLOIT Possible SMB, MS17-010\",vulnerability,critical",
            );
        let p = parse_line(&threat, now()).expect("parsed");
        assert_eq!((p.category, p.action), (Category::Ids, Action::Blocked));
        assert_eq!(p.message, "ET EXPLOIT Possible SMB, MS17-010");
        let system = "1,2026/11/22 09:15:42,012801234567,SYSTEM,globalprotect,0,2026/11/22 09:15:42,vsys1,globalprotectgateway-auth-fail,GP-GW,0,0,general,medium,\"GlobalProtect gateway user authentication failed. Login from: 198.51.100.9, User name: admin, Reason: Authentication failed.\"";
        let p = parse_line(system, now()).expect("parsed");
        assert_eq!((p.category, p.action), (Category::Vpn, Action::Failure));
        assert_eq!(p.account.as_deref(), Some("admin"));
        assert_eq!(p.src_ip.as_deref(), Some("198.51.100.9"));
        let config = "1,2026/11/22 09:15:42,012801234567,CONFIG,0,0,2026/11/22 09:15:42,10.20.10.10,vsys1,edit,admin,Web,Succeeded,vsys vsys1 rulebase security rules allow-web";
        let p = parse_line(config, now()).expect("parsed");
        assert_eq!((p.category, p.action), (Category::Admin, Action::Changed));
        assert_eq!(p.account.as_deref(), Some("admin"));
    }

    #[test]
    fn cef_with_escapes_and_spaces_in_values() {
        let line = r"<134>Nov 22 09:15:42 NTE-FW-01 CEF:0|Check Point|VPN-1 & FireWall-1|R81.20|ips|IPS \| Protection|8|act=Prevent cat=IPS src=198.51.100.23 dst=10.30.10.10 spt=40000 dpt=3389 proto=6 rt=1795338942000 msg=Brute force attempt on RDP a\=b cs1Label=Rule cs1=IPS default";
        let p = parse_line(line, now()).expect("parsed");
        assert_eq!(p.format, Format::Cef);
        assert_eq!((p.category, p.action), (Category::Ids, Action::Blocked));
        assert_eq!(p.message, "Brute force attempt on RDP a=b");
        assert_eq!(p.rule.as_deref(), Some("IPS default"));
        assert_eq!(p.dst_port, Some(3389));
        assert_eq!(p.host.as_deref(), Some("NTE-FW-01"));
        let vpn = "CEF:0|Check Point|Mobile Access|R81.20|auth|Failed Log In|5|cat=VPN outcome=Failure suser=ACME\\\\Camille.Dubois src=198.51.100.4 rt=1795338942000";
        let p = parse_line(vpn, now()).expect("parsed");
        assert_eq!((p.category, p.action), (Category::Vpn, Action::Failure));
        assert_eq!(p.account.as_deref(), Some("camille.dubois"));
    }

    #[test]
    fn leef_one_and_two_with_custom_delimiter() {
        let v1 = "<134>Nov 22 09:15:42 BDX-RTR-01 LEEF:1.0|Juniper|SRX|23.4|RT_FLOW_SESSION_DENY|cat=traffic\taction=deny\tsrc=10.40.30.11\tdst=203.0.113.9\tsrcPort=50000\tdstPort=23\tproto=6\tdevTime=1795338942000\tpolicy=deny-telnet";
        let p = parse_line(v1, now()).expect("parsed");
        assert_eq!(p.format, Format::Leef);
        assert_eq!((p.category, p.action), (Category::Deny, Action::Blocked));
        assert_eq!(p.rule.as_deref(), Some("deny-telnet"));
        assert_eq!(p.at.timestamp(), 1_795_338_942);
        let v2 = "LEEF:2.0|Juniper|SRX|23.4|KMD_VPN_UP_ALERT|^|cat=ipsec^action=up^devName=LYO-RTR-01^devTime=Nov 22 2026 09:15:42^msg=VPN PAR-LYO is up";
        let p = parse_line(v2, now()).expect("parsed");
        assert_eq!((p.category, p.action), (Category::Tunnel, Action::Up));
        assert_eq!(p.host.as_deref(), Some("LYO-RTR-01"));
        let hex = v2.replace("|^|", "|x5E|");
        assert_eq!(
            parse_line(&hex, now()).expect("hex delimiter").action,
            Action::Up
        );
    }

    #[test]
    fn generic_key_value_with_quotes() {
        let line = r#"<30>Nov 22 09:15:42 PAR-RTR-01 category=auth result=failure user=root src=203.0.113.7 dst=10.10.0.2 service=ssh dport=22 time=2026-11-22T09:15:40Z msg="login failure for user root from 203.0.113.7 via ssh""#;
        let p = parse_line(line, now()).expect("parsed");
        assert_eq!(p.format, Format::Kv);
        assert_eq!((p.category, p.action), (Category::Auth, Action::Failure));
        assert_eq!(
            p.message,
            "login failure for user root from 203.0.113.7 via ssh"
        );
        assert_eq!(
            p.at,
            "2026-11-22T09:15:40Z".parse::<DateTime<Utc>>().expect("d")
        );
    }

    #[test]
    fn rfc3164_time_takes_the_year_before_reception() {
        let jan: DateTime<Utc> = "2027-01-01T00:00:10Z".parse().expect("d");
        let p =
            parse_line("<30>Dec 31 23:59:59 gw category=system msg=reboot", jan).expect("parsed");
        assert_eq!(p.at.year(), 2026);
        assert_eq!((p.category, p.action), (Category::System, Action::Info));
    }

    #[test]
    fn malformed_lines_are_errors_not_panics() {
        let bad = [
            "",
            "   ",
            "<999999>Nov 22 09:15:42 host category=auth",
            "<13",
            "Nov 99 09:15:42 host category=auth",
            "Nov 22 25:61:00 host category=auth",
            "just some words without structure",
            r#"date=2026-11-22 time=09:15:42 devid="FG1" logid="1" type="traffic" action="deny" srcip=10.0.0.999"#,
            r#"date=2026-11-22 time=09:15:42 devid="FG1" logid="1" type="traffic" action="deny" msg="unterminated"#,
            r#"devid="FG1" logid="1" type="traffic" action="deny""#,
            "1,2026/11/22 09:15:42,0128,TRAFFIC,end,2561,2026/11/22 09:15:41,10.20.30.14",
            "1,2026/11/22 09:15:42,0128,TRAFFIC,end,2561,not a date,a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p,q,r,s,t,u,v,w,x,y",
            "1,2026/11/22 09:15:42,0128,SYSTEM,auth,0,2026/11/22 09:15:42,vsys1",
            "CEF:0|Check Point|only|three",
            "CEF:9|a|b|c|d|e|f|act=drop",
            "CEF:0|a|b|c|d|e|f|src=10.0.0.1 dst=not-an-ip rt=1795338942000",
            "CEF:0|a|b|c|d|e|f|dangling words rt=1795338942000",
            "LEEF:3.0|a|b|c|d|cat=x",
            "LEEF:1.0|a|b|c",
            "LEEF:2.0|a|b|c|d|xZZ|cat=x",
            "LEEF:1.0|a|b|c|d|cat=traffic\tnovalue\tdevTime=1795338942000",
            "LEEF:1.0|a|b|c|d|cat=traffic\tsrcPort=99999\tdevTime=1795338942000",
            "category=auth result=failure",
            "category=auth time=yesterday",
            "=value category=auth time=2026-11-22T09:15:40Z",
            "category=auth dport=http time=2026-11-22T09:15:40Z",
        ];
        for line in bad {
            assert!(parse_line(line, now()).is_err(), "accepted: {line:?}");
        }
        for f in Format::ALL {
            assert!(
                parse_as(f, "\u{0}\u{1}garbage|||===", now()).is_err(),
                "{f:?}"
            );
        }
    }
}
