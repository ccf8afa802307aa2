//! Reference data of the demo generator: well-known Internet services with their
//! addresses, countries and operators (as the CC BY 4.0 geolocation data gives them), the
//! processes that talk to them, and the firewall rules.

use netops_flows::model::Protocol;

/// A remote service the machines use.
pub struct Service {
    pub host: &'static str,
    pub ip: &'static str,
    pub country: &'static str,
    pub operator: &'static str,
    pub port: u16,
    pub proto: Protocol,
    pub service: &'static str,
    pub processes: &'static [&'static str],
    /// Relative popularity.
    pub weight: f64,
    /// Typical bytes of one flow, in KiB (volumes are heavy-tailed around it).
    pub kib: f64,
    /// Servers only (backups, updates of server software).
    pub servers: bool,
}

use Protocol::{Tcp, Udp};

const BROWSERS: &[&str] = &["chrome.exe", "msedge.exe", "firefox.exe"];

macro_rules! svc {
    ($host:literal, $ip:literal, $c:literal, $o:literal, $port:literal, $proto:ident, $svc:literal, $procs:expr, $w:literal, $kib:literal) => {
        Service {
            host: $host,
            ip: $ip,
            country: $c,
            operator: $o,
            port: $port,
            proto: $proto,
            service: $svc,
            processes: $procs,
            weight: $w,
            kib: $kib,
            servers: false,
        }
    };
    ($host:literal, $ip:literal, $c:literal, $o:literal, $port:literal, $proto:ident, $svc:literal, $procs:expr, $w:literal, $kib:literal, servers) => {
        Service {
            host: $host,
            ip: $ip,
            country: $c,
            operator: $o,
            port: $port,
            proto: $proto,
            service: $svc,
            processes: $procs,
            weight: $w,
            kib: $kib,
            servers: true,
        }
    };
}

pub const SERVICES: &[Service] = &[
    svc!(
        "outlook.office365.com",
        "52.97.146.2",
        "IE",
        "Microsoft Corporation",
        443,
        Tcp,
        "https",
        &["outlook.exe"],
        12.0,
        180.0
    ),
    svc!(
        "teams.microsoft.com",
        "52.113.194.132",
        "NL",
        "Microsoft Corporation",
        443,
        Tcp,
        "https",
        &["ms-teams.exe"],
        10.0,
        400.0
    ),
    svc!(
        "worldaz.relay.teams.microsoft.com",
        "52.115.223.12",
        "NL",
        "Microsoft Corporation",
        3478,
        Udp,
        "stun",
        &["ms-teams.exe"],
        5.0,
        9000.0
    ),
    svc!(
        "acme-my.sharepoint.com",
        "13.107.136.9",
        "FR",
        "Microsoft Corporation",
        443,
        Tcp,
        "https",
        &["onedrive.exe", "msedge.exe"],
        8.0,
        1500.0
    ),
    svc!(
        "login.microsoftonline.com",
        "20.190.160.20",
        "NL",
        "Microsoft Corporation",
        443,
        Tcp,
        "https",
        &["svchost.exe", "outlook.exe", "ms-teams.exe"],
        7.0,
        12.0
    ),
    svc!(
        "dl.delivery.mp.microsoft.com",
        "8.247.210.126",
        "US",
        "Level 3 Parent, LLC",
        80,
        Tcp,
        "http",
        &["svchost.exe"],
        3.0,
        25000.0
    ),
    svc!(
        "time.windows.com",
        "168.61.215.74",
        "US",
        "Microsoft Corporation",
        123,
        Udp,
        "ntp",
        &["svchost.exe"],
        2.0,
        0.2
    ),
    svc!(
        "www.google.com",
        "142.250.179.100",
        "US",
        "Google LLC",
        443,
        Tcp,
        "https",
        BROWSERS,
        9.0,
        90.0
    ),
    svc!(
        "www.youtube.com",
        "142.250.201.14",
        "US",
        "Google LLC",
        443,
        Tcp,
        "https",
        BROWSERS,
        4.0,
        30000.0
    ),
    svc!(
        "dns.google",
        "8.8.8.8",
        "US",
        "Google LLC",
        53,
        Udp,
        "dns",
        &["svchost.exe"],
        4.0,
        0.3
    ),
    svc!(
        "one.one.one.one",
        "1.1.1.1",
        "AU",
        "Cloudflare, Inc.",
        443,
        Tcp,
        "https",
        &["firefox.exe"],
        2.0,
        2.0
    ),
    svc!(
        "cdnjs.cloudflare.com",
        "104.17.24.14",
        "US",
        "Cloudflare, Inc.",
        443,
        Tcp,
        "https",
        BROWSERS,
        5.0,
        150.0
    ),
    svc!(
        "github.com",
        "140.82.121.4",
        "US",
        "GitHub, Inc.",
        443,
        Tcp,
        "https",
        &["git.exe", "code.exe"],
        3.0,
        600.0
    ),
    svc!(
        "github.com",
        "140.82.121.3",
        "US",
        "GitHub, Inc.",
        22,
        Tcp,
        "ssh",
        &["ssh.exe"],
        1.0,
        400.0
    ),
    svc!(
        "zoom.us",
        "170.114.52.2",
        "US",
        "Zoom Video Communications, Inc.",
        443,
        Tcp,
        "https",
        &["zoom.exe"],
        2.0,
        300.0
    ),
    svc!(
        "zoom.us",
        "144.195.10.220",
        "US",
        "Zoom Video Communications, Inc.",
        8801,
        Udp,
        "zoom-media",
        &["zoom.exe"],
        1.5,
        12000.0
    ),
    svc!(
        "app.slack.com",
        "3.66.186.19",
        "DE",
        "Amazon.com, Inc.",
        443,
        Tcp,
        "https",
        &["slack.exe"],
        3.0,
        120.0
    ),
    svc!(
        "s3.eu-west-3.amazonaws.com",
        "52.95.154.32",
        "FR",
        "Amazon.com, Inc.",
        443,
        Tcp,
        "https",
        &["veeamagent.exe", "rclone.exe"],
        3.0,
        200000.0,
        servers
    ),
    svc!(
        "backup.ovh.net",
        "51.210.83.28",
        "FR",
        "OVH SAS",
        443,
        Tcp,
        "https",
        &["veeamagent.exe"],
        2.0,
        150000.0,
        servers
    ),
    svc!(
        "packages.microsoft.com",
        "13.80.99.124",
        "NL",
        "Microsoft Corporation",
        443,
        Tcp,
        "https",
        &["apt", "svchost.exe"],
        1.0,
        8000.0,
        servers
    ),
    svc!(
        "archive.ubuntu.com",
        "91.189.91.82",
        "GB",
        "Canonical Group Limited",
        80,
        Tcp,
        "http",
        &["apt"],
        1.0,
        9000.0,
        servers
    ),
    svc!(
        "smtp.office365.com",
        "52.98.174.18",
        "IE",
        "Microsoft Corporation",
        587,
        Tcp,
        "smtp",
        &["sqlservr.exe", "erp-server.exe"],
        1.0,
        60.0,
        servers
    ),
    svc!(
        "www.orange.fr",
        "193.252.117.152",
        "FR",
        "Orange S.A.",
        443,
        Tcp,
        "https",
        BROWSERS,
        1.5,
        400.0
    ),
    svc!(
        "www.lemonde.fr",
        "151.101.122.217",
        "US",
        "Fastly, Inc.",
        443,
        Tcp,
        "https",
        BROWSERS,
        2.0,
        700.0
    ),
    svc!(
        "www.linkedin.com",
        "13.107.42.14",
        "US",
        "LinkedIn Corporation",
        443,
        Tcp,
        "https",
        BROWSERS,
        2.0,
        500.0
    ),
    svc!(
        "open.spotify.com",
        "35.186.224.25",
        "BE",
        "Google LLC",
        443,
        Tcp,
        "https",
        &["spotify.exe"],
        1.5,
        5000.0
    ),
    svc!(
        "acme.my.salesforce.com",
        "13.108.238.140",
        "US",
        "Salesforce.com, Inc.",
        443,
        Tcp,
        "https",
        BROWSERS,
        2.0,
        250.0
    ),
    svc!(
        "ocsp.digicert.com",
        "93.184.220.29",
        "US",
        "Edgecast Inc.",
        80,
        Tcp,
        "http",
        &["svchost.exe", "chrome.exe"],
        2.0,
        2.0
    ),
    svc!(
        "api.stripe.com",
        "54.187.174.169",
        "US",
        "Amazon.com, Inc.",
        443,
        Tcp,
        "https",
        &["erp-server.exe"],
        0.8,
        20.0,
        servers
    ),
    svc!(
        "mail.proton.me",
        "185.70.42.37",
        "CH",
        "Proton AG",
        443,
        Tcp,
        "https",
        BROWSERS,
        0.5,
        80.0
    ),
    svc!(
        "cdn.jsdelivr.net",
        "151.101.1.229",
        "US",
        "Fastly, Inc.",
        443,
        Tcp,
        "https",
        BROWSERS,
        1.5,
        100.0
    ),
    svc!(
        "partner-vpn.tokai-seiki.co.jp",
        "61.206.112.5",
        "JP",
        "NTT Communications Corporation",
        443,
        Tcp,
        "https",
        &["openvpn.exe"],
        0.4,
        3000.0
    ),
    svc!(
        "telemetry.vendor-soft.de",
        "88.198.17.35",
        "DE",
        "Hetzner Online GmbH",
        443,
        Tcp,
        "https",
        &["vendorupdate.exe"],
        0.8,
        40.0
    ),
    svc!(
        "files.scw.cloud",
        "51.159.62.10",
        "FR",
        "Scaleway S.a.s.",
        443,
        Tcp,
        "https",
        &["rclone.exe"],
        0.5,
        50000.0,
        servers
    ),
    svc!(
        "www.telefonica.es",
        "195.235.113.3",
        "ES",
        "Telefonica de Espana S.A.U.",
        443,
        Tcp,
        "https",
        BROWSERS,
        0.3,
        200.0
    ),
    svc!(
        "www.telekom.de",
        "46.29.100.76",
        "DE",
        "Deutsche Telekom AG",
        443,
        Tcp,
        "https",
        BROWSERS,
        0.3,
        200.0
    ),
    svc!(
        "yandex.ru",
        "77.88.55.88",
        "RU",
        "YANDEX LLC",
        443,
        Tcp,
        "https",
        BROWSERS,
        0.15,
        90.0
    ),
    svc!(
        "www.baidu.com",
        "110.242.68.66",
        "CN",
        "China Unicom",
        443,
        Tcp,
        "https",
        BROWSERS,
        0.1,
        60.0
    ),
    svc!(
        "www.naver.com",
        "223.130.195.95",
        "KR",
        "NAVER Cloud Corp.",
        443,
        Tcp,
        "https",
        BROWSERS,
        0.1,
        80.0
    ),
    svc!(
        "www.globo.com",
        "186.192.83.12",
        "BR",
        "Globo Comunicacao e Participacoes S.A.",
        443,
        Tcp,
        "https",
        BROWSERS,
        0.1,
        300.0
    ),
    svc!(
        "www.ovhcloud.com",
        "198.27.92.1",
        "CA",
        "OVH SAS",
        443,
        Tcp,
        "https",
        BROWSERS,
        0.3,
        150.0
    ),
    svc!(
        "www.flipkart.com",
        "163.53.78.128",
        "IN",
        "Flipkart Internet Pvt Ltd",
        443,
        Tcp,
        "https",
        BROWSERS,
        0.1,
        200.0
    ),
    svc!(
        "www.bbc.co.uk",
        "151.101.0.81",
        "GB",
        "Fastly, Inc.",
        443,
        Tcp,
        "https",
        BROWSERS,
        0.5,
        600.0
    ),
    svc!(
        "www.swisscom.ch",
        "193.222.73.10",
        "CH",
        "Swisscom (Schweiz) AG",
        443,
        Tcp,
        "https",
        BROWSERS,
        0.1,
        100.0
    ),
    svc!(
        "www.mercadolibre.com.ar",
        "200.42.93.10",
        "AR",
        "Telecom Argentina S.A.",
        443,
        Tcp,
        "https",
        BROWSERS,
        0.05,
        100.0
    ),
    svc!(
        "www.ziggo.nl",
        "84.116.197.5",
        "NL",
        "Liberty Global B.V.",
        443,
        Tcp,
        "https",
        BROWSERS,
        0.1,
        100.0
    ),
    svc!(
        "www.canada.ca",
        "205.193.215.159",
        "CA",
        "Shared Services Canada",
        443,
        Tcp,
        "https",
        BROWSERS,
        0.05,
        100.0
    ),
    svc!(
        "www.mtn.co.za",
        "196.11.240.215",
        "ZA",
        "MTN SA",
        443,
        Tcp,
        "https",
        BROWSERS,
        0.05,
        100.0
    ),
    svc!(
        "www.singtel.com",
        "203.116.186.50",
        "SG",
        "Singapore Telecommunications Ltd",
        443,
        Tcp,
        "https",
        BROWSERS,
        0.05,
        100.0
    ),
    svc!(
        "www.iinet.net.au",
        "203.0.178.191",
        "AU",
        "TPG Telecom Limited",
        443,
        Tcp,
        "https",
        BROWSERS,
        0.05,
        100.0
    ),
];

/// Internal services offered by the tenant's servers: port, protocol, service, server
/// process, client processes.
pub const INTERNAL: &[(u16, Protocol, &str, &str, &[&str])] = &[
    (445, Tcp, "smb", "System", &["explorer.exe", "System"]),
    (53, Udp, "dns", "dns.exe", &["svchost.exe"]),
    (389, Tcp, "ldap", "lsass.exe", &["lsass.exe", "svchost.exe"]),
    (88, Tcp, "kerberos", "lsass.exe", &["lsass.exe"]),
    (3389, Tcp, "rdp", "svchost.exe", &["mstsc.exe"]),
    (
        1433,
        Tcp,
        "mssql",
        "sqlservr.exe",
        &["erp-client.exe", "ssms.exe"],
    ),
];

/// Country and operator of private addresses, and the gateway of traffic that stays on the
/// LAN: the writers' own.
pub use netops_flows::derive::{NO_GATEWAY, PRIVATE_COUNTRY, PRIVATE_OPERATOR};

/// Agentless devices seen only by the gateways: (kind, share of the site's devices).
pub const DEVICES: &[&str] = &["imprimante", "telephone-ip", "camera", "byod", "borne-wifi"];

/// Countries and operators of the long tail of small destinations.
pub const TAIL: &[(&str, &str)] = &[
    ("US", "Amazon.com, Inc."),
    ("US", "Akamai International B.V."),
    ("DE", "Hetzner Online GmbH"),
    ("FR", "OVH SAS"),
    ("FR", "Free SAS"),
    ("FR", "Bouygues Telecom SA"),
    ("FR", "SFR SA"),
    ("NL", "DigitalOcean, LLC"),
    ("GB", "Vodafone Limited"),
    ("IT", "Telecom Italia S.p.A."),
    ("ES", "Telefonica de Espana S.A.U."),
    ("PL", "Orange Polska Spolka Akcyjna"),
    ("SE", "Telia Company AB"),
    ("JP", "NTT Communications Corporation"),
    ("SG", "Amazon.com, Inc."),
    ("IN", "Bharti Airtel Limited"),
    ("BR", "Claro NXT Telecomunicacoes Ltda"),
    ("RU", "PJSC Rostelecom"),
    ("CN", "China Telecom"),
    ("UA", "Kyivstar PJSC"),
];

/// Firewall rules: (rule, category, action, relative weight).
pub const FIREWALL_RULES: &[(&str, &str, &str, f64)] = &[
    ("LAN-vers-Internet-web", "allow", "allowed", 60.0),
    ("LAN-vers-Internet-dns", "allow", "allowed", 15.0),
    ("Serveurs-sauvegarde", "allow", "allowed", 5.0),
    ("Blocage-pays-a-risque", "deny", "blocked", 3.0),
    ("Blocage-Tor", "deny", "blocked", 0.5),
    ("Refus-par-defaut", "deny", "blocked", 6.0),
    ("IPS-signatures", "ids", "detected", 1.0),
    ("VPN-nomades", "vpn", "success", 2.0),
    ("VPN-nomades", "vpn", "failure", 0.3),
    ("Tunnel-site-a-site", "tunnel", "up", 1.0),
    ("Tunnel-site-a-site", "tunnel", "down", 0.05),
    ("Admin-console", "admin", "success", 0.2),
    ("Authentification-portail", "auth", "failure", 0.4),
];
