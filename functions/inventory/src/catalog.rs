//! The software titles the catalogue knows and the CVE records that affect them: collected
//! inventories are matched against it (a title's name and version), and the demo installs
//! its titles. CVE ids, CVSS base scores, descriptions and known-exploited flags are taken
//! from the public catalogues (NVD, CISA KEV); EPSS values are representative.

use serde_json::{Value, json};

use crate::model::{EolStatus, INSTALLED_ON, Software, software_id};

/// Where a title gets installed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// Laptops and workstations.
    Desktop,
    /// Windows servers.
    WinServer,
    /// Linux servers.
    Linux,
    /// Every Windows machine.
    Windows,
}

pub struct Title {
    pub name: &'static str,
    pub publisher: &'static str,
    pub version: &'static str,
    pub eol: EolStatus,
    /// End of support date when known.
    pub eol_date: Option<&'static str>,
    pub target: Target,
    /// Share of matching machines that have it.
    pub share: f64,
    pub cves: &'static [&'static str],
}

pub struct Cve {
    pub id: &'static str,
    pub cvss: f64,
    pub epss: f64,
    pub known_exploited: bool,
    pub published: &'static str,
    pub description: &'static str,
}

const MS: &str = "Microsoft Corporation";

pub const TITLES: &[Title] = &[
    Title {
        name: "Microsoft Edge",
        publisher: MS,
        version: "131.0.2903.70",
        eol: EolStatus::Unknown,
        eol_date: None,
        target: Target::Windows,
        share: 0.97,
        cves: &[],
    },
    Title {
        name: "Microsoft Visual C++ 2015-2022 Redistributable (x64)",
        publisher: MS,
        version: "14.40.33810.0",
        eol: EolStatus::Unknown,
        eol_date: None,
        target: Target::Windows,
        share: 0.9,
        cves: &[],
    },
    Title {
        name: "Google Chrome",
        publisher: "Google LLC",
        version: "131.0.6778.86",
        eol: EolStatus::Unknown,
        eol_date: None,
        target: Target::Desktop,
        share: 0.55,
        cves: &[],
    },
    Title {
        name: "Google Chrome",
        publisher: "Google LLC",
        version: "123.0.6312.122",
        eol: EolStatus::Unknown,
        eol_date: None,
        target: Target::Desktop,
        share: 0.12,
        cves: &["CVE-2024-4671", "CVE-2024-4761"],
    },
    Title {
        name: "Mozilla Firefox ESR",
        publisher: "Mozilla",
        version: "115.15.0",
        eol: EolStatus::Warning,
        eol_date: Some("2027-03-16"),
        target: Target::Desktop,
        share: 0.15,
        cves: &["CVE-2024-9680"],
    },
    Title {
        name: "7-Zip",
        publisher: "Igor Pavlov",
        version: "24.09",
        eol: EolStatus::Unknown,
        eol_date: None,
        target: Target::Windows,
        share: 0.45,
        cves: &[],
    },
    Title {
        name: "7-Zip",
        publisher: "Igor Pavlov",
        version: "19.00",
        eol: EolStatus::Unknown,
        eol_date: None,
        target: Target::Windows,
        share: 0.18,
        cves: &["CVE-2024-11477", "CVE-2025-0411"],
    },
    Title {
        name: "WinRAR",
        publisher: "win.rar GmbH",
        version: "6.22.0",
        eol: EolStatus::Unknown,
        eol_date: None,
        target: Target::Desktop,
        share: 0.08,
        cves: &["CVE-2023-38831"],
    },
    Title {
        name: "Microsoft 365 Apps for enterprise - fr-fr",
        publisher: MS,
        version: "16.0.18129.20158",
        eol: EolStatus::Unknown,
        eol_date: None,
        target: Target::Desktop,
        share: 0.62,
        cves: &[],
    },
    Title {
        name: "Microsoft Office Professional Plus 2016",
        publisher: MS,
        version: "16.0.4266.1001",
        eol: EolStatus::Eol,
        eol_date: Some("2025-10-14"),
        target: Target::Desktop,
        share: 0.22,
        cves: &["CVE-2023-21716", "CVE-2024-21413"],
    },
    Title {
        name: "Microsoft Office Professional Plus 2019",
        publisher: MS,
        version: "16.0.10337.20021",
        eol: EolStatus::Eol,
        eol_date: Some("2025-10-14"),
        target: Target::Desktop,
        share: 0.1,
        cves: &["CVE-2023-36884"],
    },
    Title {
        name: "Adobe Acrobat Reader",
        publisher: "Adobe",
        version: "24.004.20272",
        eol: EolStatus::Unknown,
        eol_date: None,
        target: Target::Desktop,
        share: 0.4,
        cves: &[],
    },
    Title {
        name: "Adobe Acrobat Reader DC",
        publisher: "Adobe",
        version: "23.003.20244",
        eol: EolStatus::Unknown,
        eol_date: None,
        target: Target::Desktop,
        share: 0.25,
        cves: &["CVE-2023-26369"],
    },
    Title {
        name: "Notepad++ (64-bit x64)",
        publisher: "Notepad++ Team",
        version: "8.7.1",
        eol: EolStatus::Unknown,
        eol_date: None,
        target: Target::Windows,
        share: 0.2,
        cves: &[],
    },
    Title {
        name: "Notepad++ (64-bit x64)",
        publisher: "Notepad++ Team",
        version: "8.5.4",
        eol: EolStatus::Unknown,
        eol_date: None,
        target: Target::Windows,
        share: 0.12,
        cves: &["CVE-2023-40031"],
    },
    Title {
        name: "VLC media player",
        publisher: "VideoLAN",
        version: "3.0.18",
        eol: EolStatus::Unknown,
        eol_date: None,
        target: Target::Desktop,
        share: 0.2,
        cves: &["CVE-2023-47359"],
    },
    Title {
        name: "Zoom Workplace (64-bit)",
        publisher: "Zoom Video Communications, Inc.",
        version: "6.2.11",
        eol: EolStatus::Unknown,
        eol_date: None,
        target: Target::Desktop,
        share: 0.35,
        cves: &[],
    },
    Title {
        name: "Zoom",
        publisher: "Zoom Video Communications, Inc.",
        version: "5.16.0",
        eol: EolStatus::Eol,
        eol_date: Some("2024-11-01"),
        target: Target::Desktop,
        share: 0.06,
        cves: &["CVE-2024-24691"],
    },
    Title {
        name: "Microsoft Teams",
        publisher: MS,
        version: "24295.605.3225.8804",
        eol: EolStatus::Unknown,
        eol_date: None,
        target: Target::Desktop,
        share: 0.85,
        cves: &[],
    },
    Title {
        name: "Java 8 Update 351 (64-bit)",
        publisher: "Oracle Corporation",
        version: "8.0.3510.10",
        eol: EolStatus::Unknown,
        eol_date: None,
        target: Target::Windows,
        share: 0.14,
        cves: &["CVE-2023-21930"],
    },
    Title {
        name: "Python 3.9.13 (64-bit)",
        publisher: "Python Software Foundation",
        version: "3.9.13",
        eol: EolStatus::Eol,
        eol_date: Some("2025-10-31"),
        target: Target::Windows,
        share: 0.08,
        cves: &["CVE-2023-24329"],
    },
    Title {
        name: "Python 3.11.9 (64-bit)",
        publisher: "Python Software Foundation",
        version: "3.11.9",
        eol: EolStatus::Warning,
        eol_date: Some("2027-10-31"),
        target: Target::Windows,
        share: 0.1,
        cves: &[],
    },
    Title {
        name: "Node.js",
        publisher: "Node.js Foundation",
        version: "18.20.4",
        eol: EolStatus::Eol,
        eol_date: Some("2025-04-30"),
        target: Target::Desktop,
        share: 0.05,
        cves: &[],
    },
    Title {
        name: "Node.js",
        publisher: "Node.js Foundation",
        version: "22.11.0",
        eol: EolStatus::Warning,
        eol_date: Some("2027-04-30"),
        target: Target::Desktop,
        share: 0.06,
        cves: &[],
    },
    Title {
        name: "Git",
        publisher: "The Git Development Community",
        version: "2.44.0",
        eol: EolStatus::Unknown,
        eol_date: None,
        target: Target::Desktop,
        share: 0.08,
        cves: &["CVE-2024-32002"],
    },
    Title {
        name: "PuTTY release 0.80 (64-bit)",
        publisher: "Simon Tatham",
        version: "0.80.0.0",
        eol: EolStatus::Unknown,
        eol_date: None,
        target: Target::Windows,
        share: 0.1,
        cves: &["CVE-2024-31497"],
    },
    Title {
        name: "TeamViewer",
        publisher: "TeamViewer",
        version: "15.57.5",
        eol: EolStatus::Unknown,
        eol_date: None,
        target: Target::Desktop,
        share: 0.07,
        cves: &["CVE-2024-7479"],
    },
    Title {
        name: "KeePass Password Safe 2.53",
        publisher: "Dominik Reichl",
        version: "2.53",
        eol: EolStatus::Unknown,
        eol_date: None,
        target: Target::Desktop,
        share: 0.05,
        cves: &["CVE-2023-32784"],
    },
    Title {
        name: "Microsoft .NET Runtime - 6.0.25 (x64)",
        publisher: MS,
        version: "6.0.25",
        eol: EolStatus::Eol,
        eol_date: Some("2024-11-12"),
        target: Target::Windows,
        share: 0.3,
        cves: &[],
    },
    Title {
        name: "Microsoft .NET Runtime - 10.0.0 (x64)",
        publisher: MS,
        version: "10.0.0",
        eol: EolStatus::Unknown,
        eol_date: Some("2028-11-14"),
        target: Target::Windows,
        share: 0.5,
        cves: &[],
    },
    Title {
        name: "Adobe Flash Player 32 NPAPI",
        publisher: "Adobe",
        version: "32.0.0.465",
        eol: EolStatus::Eol,
        eol_date: Some("2020-12-31"),
        target: Target::Desktop,
        share: 0.02,
        cves: &[],
    },
    Title {
        name: "Cisco Secure Client - AnyConnect VPN",
        publisher: "Cisco Systems, Inc.",
        version: "5.1.2.42",
        eol: EolStatus::Unknown,
        eol_date: None,
        target: Target::Desktop,
        share: 0.7,
        cves: &[],
    },
    Title {
        name: "Microsoft SQL Server 2016 (64-bit)",
        publisher: MS,
        version: "13.0.6300.2",
        eol: EolStatus::Eol,
        eol_date: Some("2026-07-14"),
        target: Target::WinServer,
        share: 0.3,
        cves: &["CVE-2023-21528"],
    },
    Title {
        name: "Microsoft SQL Server 2019 (64-bit)",
        publisher: MS,
        version: "15.0.4385.2",
        eol: EolStatus::Unknown,
        eol_date: Some("2030-01-08"),
        target: Target::WinServer,
        share: 0.45,
        cves: &[],
    },
    Title {
        name: "Microsoft SQL Server 2017 (64-bit)",
        publisher: MS,
        version: "14.0.3465.1",
        eol: EolStatus::Warning,
        eol_date: Some("2027-10-12"),
        target: Target::WinServer,
        share: 0.2,
        cves: &[],
    },
    Title {
        name: "SQL Server Management Studio",
        publisher: MS,
        version: "19.3.4.0",
        eol: EolStatus::Unknown,
        eol_date: None,
        target: Target::WinServer,
        share: 0.6,
        cves: &[],
    },
    Title {
        name: "Veeam Backup & Replication",
        publisher: "Veeam Software Group GmbH",
        version: "12.1.1.56",
        eol: EolStatus::Unknown,
        eol_date: None,
        target: Target::WinServer,
        share: 0.15,
        cves: &["CVE-2024-40711"],
    },
    Title {
        name: "Microsoft Exchange Server 2016 Cumulative Update 23",
        publisher: MS,
        version: "15.1.2507.6",
        eol: EolStatus::Eol,
        eol_date: Some("2025-10-14"),
        target: Target::WinServer,
        share: 0.05,
        cves: &["CVE-2024-21410"],
    },
    Title {
        name: "Apache Log4j",
        publisher: "Apache Software Foundation",
        version: "2.14.1",
        eol: EolStatus::Unknown,
        eol_date: None,
        target: Target::WinServer,
        share: 0.12,
        cves: &["CVE-2021-44228", "CVE-2021-45046"],
    },
    Title {
        name: "openssh-server",
        publisher: "Ubuntu Developers",
        version: "1:8.9p1-3ubuntu0.6",
        eol: EolStatus::Unknown,
        eol_date: None,
        target: Target::Linux,
        share: 1.0,
        cves: &["CVE-2024-6387"],
    },
    Title {
        name: "openssl",
        publisher: "Ubuntu Developers",
        version: "3.0.2-0ubuntu1.10",
        eol: EolStatus::Eol,
        eol_date: Some("2026-09-07"),
        target: Target::Linux,
        share: 1.0,
        cves: &["CVE-2023-0286"],
    },
    Title {
        name: "apache2",
        publisher: "Ubuntu Developers",
        version: "2.4.52-1ubuntu4.12",
        eol: EolStatus::Unknown,
        eol_date: None,
        target: Target::Linux,
        share: 0.5,
        cves: &[],
    },
    Title {
        name: "postgresql-14",
        publisher: "Ubuntu Developers",
        version: "14.15-0ubuntu0.22.04.1",
        eol: EolStatus::Warning,
        eol_date: Some("2026-11-12"),
        target: Target::Linux,
        share: 0.4,
        cves: &[],
    },
    Title {
        name: "python3.10",
        publisher: "Ubuntu Developers",
        version: "3.10.12-1~22.04.7",
        eol: EolStatus::Eol,
        eol_date: Some("2026-10-31"),
        target: Target::Linux,
        share: 1.0,
        cves: &[],
    },
];

pub const CVES: &[Cve] = &[
    Cve {
        id: "CVE-2024-4671",
        cvss: 9.6,
        epss: 0.0213,
        known_exploited: true,
        published: "2024-05-14",
        description: "Use after free in Visuals in Google Chrome prior to 124.0.6367.201 allowed a remote attacker who had compromised the renderer process to potentially perform a sandbox escape via a crafted HTML page.",
    },
    Cve {
        id: "CVE-2024-4761",
        cvss: 8.8,
        epss: 0.0148,
        known_exploited: true,
        published: "2024-05-14",
        description: "Out of bounds write in V8 in Google Chrome prior to 124.0.6367.207 allowed a remote attacker to perform out of bounds memory write via a crafted HTML page.",
    },
    Cve {
        id: "CVE-2024-9680",
        cvss: 9.8,
        epss: 0.0962,
        known_exploited: true,
        published: "2024-10-09",
        description: "An attacker was able to achieve code execution in the content process by exploiting a use-after-free in Animation timelines. We have had reports of this vulnerability being exploited in the wild. This vulnerability affects Firefox < 131.0.2, Firefox ESR < 128.3.1, Firefox ESR < 115.16.1, Thunderbird < 131.0.1, Thunderbird < 128.3.1, and Thunderbird < 115.16.0.",
    },
    Cve {
        id: "CVE-2024-11477",
        cvss: 7.8,
        epss: 0.0112,
        known_exploited: false,
        published: "2024-11-22",
        description: "7-Zip Zstandard Decompression Integer Underflow Remote Code Execution Vulnerability. This vulnerability allows remote attackers to execute arbitrary code on affected installations of 7-Zip. Interaction with this library is required to exploit this vulnerability but attack vectors may vary depending on the implementation.",
    },
    Cve {
        id: "CVE-2025-0411",
        cvss: 7.0,
        epss: 0.1855,
        known_exploited: true,
        published: "2025-01-25",
        description: "7-Zip Mark-of-the-Web Bypass Vulnerability. This vulnerability allows remote attackers to bypass the Mark-of-the-Web protection mechanism on affected installations of 7-Zip. User interaction is required to exploit this vulnerability in that the target must visit a malicious page or open a malicious file.",
    },
    Cve {
        id: "CVE-2023-38831",
        cvss: 7.8,
        epss: 0.9387,
        known_exploited: true,
        published: "2023-08-23",
        description: "RARLAB WinRAR before 6.23 allows attackers to execute arbitrary code when a user attempts to view a benign file within a ZIP archive. The issue occurs because a ZIP archive may include a benign file (such as an ordinary .JPG file) and also a folder that has the same name as the benign file, and the contents of the folder (which may include executable content) are processed during an attempt to access only the benign file.",
    },
    Cve {
        id: "CVE-2023-21716",
        cvss: 9.8,
        epss: 0.1936,
        known_exploited: false,
        published: "2023-02-14",
        description: "Microsoft Word Remote Code Execution Vulnerability",
    },
    Cve {
        id: "CVE-2024-21413",
        cvss: 9.8,
        epss: 0.9322,
        known_exploited: true,
        published: "2024-02-13",
        description: "Microsoft Outlook Remote Code Execution Vulnerability",
    },
    Cve {
        id: "CVE-2023-36884",
        cvss: 8.8,
        epss: 0.9115,
        known_exploited: true,
        published: "2023-07-11",
        description: "Office and Windows HTML Remote Code Execution Vulnerability",
    },
    Cve {
        id: "CVE-2023-26369",
        cvss: 7.8,
        epss: 0.0361,
        known_exploited: true,
        published: "2023-09-13",
        description: "Acrobat Reader versions 23.003.20284 (and earlier), 20.005.30516 (and earlier) and 20.005.30514 (and earlier) are affected by an out-of-bounds write vulnerability that could result in arbitrary code execution in the context of the current user. Exploitation of this issue requires user interaction in that a victim must open a malicious file.",
    },
    Cve {
        id: "CVE-2023-40031",
        cvss: 7.8,
        epss: 0.0018,
        known_exploited: false,
        published: "2023-08-25",
        description: "Notepad++ is a free and open-source source code editor. Versions 8.5.6 and prior are vulnerable to heap buffer write overflow in `Utf8_16_Read::convert`. This issue may lead to arbitrary code execution.",
    },
    Cve {
        id: "CVE-2023-47359",
        cvss: 9.8,
        epss: 0.0102,
        known_exploited: false,
        published: "2023-11-07",
        description: "Videolan VLC prior to version 3.0.20 contains an incorrect offset read that leads to a Heap-Based Buffer Overflow in function GetPacket() and results in a memory corruption.",
    },
    Cve {
        id: "CVE-2024-24691",
        cvss: 9.6,
        epss: 0.0091,
        known_exploited: false,
        published: "2024-02-14",
        description: "Improper input validation in Zoom Desktop Client for Windows, Zoom VDI Client for Windows, and Zoom Meeting SDK for Windows may allow an unauthenticated user to conduct an escalation of privilege via network access.",
    },
    Cve {
        id: "CVE-2023-21930",
        cvss: 7.4,
        epss: 0.0029,
        known_exploited: false,
        published: "2023-04-18",
        description: "Vulnerability in the Oracle Java SE, Oracle GraalVM Enterprise Edition product of Oracle Java SE (component: JSSE). Successful attacks of this vulnerability can result in unauthorized creation, deletion or modification access to critical data or all Oracle Java SE accessible data.",
    },
    Cve {
        id: "CVE-2023-24329",
        cvss: 7.5,
        epss: 0.0147,
        known_exploited: false,
        published: "2023-02-17",
        description: "An issue in the urllib.parse component of Python before 3.11.4 allows attackers to bypass blocklisting methods by supplying a URL that starts with blank characters.",
    },
    Cve {
        id: "CVE-2024-32002",
        cvss: 9.0,
        epss: 0.0521,
        known_exploited: false,
        published: "2024-05-14",
        description: "Git is a revision control system. Prior to versions 2.45.1, 2.44.1, 2.43.4, 2.42.2, 2.41.1, 2.40.2, and 2.39.4, repositories with submodules can be crafted in a way that exploits a bug in Git whereby it can be fooled into writing files not into the submodule's worktree but into a `.git/` directory. This allows writing a hook that will be executed while the clone operation is still running.",
    },
    Cve {
        id: "CVE-2024-31497",
        cvss: 5.9,
        epss: 0.0066,
        known_exploited: false,
        published: "2024-04-15",
        description: "In PuTTY 0.68 through 0.80 before 0.81, biased ECDSA nonce generation allows an attacker to recover a user's NIST P-521 secret key via a quick attack in approximately 60 signatures.",
    },
    Cve {
        id: "CVE-2024-7479",
        cvss: 8.8,
        epss: 0.0012,
        known_exploited: false,
        published: "2024-09-25",
        description: "Improper verification of cryptographic signature during installation of a VPN driver via the TeamViewer_service.exe component of TeamViewer Remote Clients prior version 15.58.4 for Windows allows an attacker with local unprivileged access on a Windows system to elevate their privileges and install drivers.",
    },
    Cve {
        id: "CVE-2023-32784",
        cvss: 7.5,
        epss: 0.0418,
        known_exploited: false,
        published: "2023-05-15",
        description: "In KeePass 2.x before 2.54, it is possible to recover the cleartext master password from a memory dump, even when a workspace is locked or no longer running.",
    },
    Cve {
        id: "CVE-2023-21528",
        cvss: 7.8,
        epss: 0.0087,
        known_exploited: false,
        published: "2023-02-14",
        description: "Microsoft SQL Server Remote Code Execution Vulnerability",
    },
    Cve {
        id: "CVE-2024-40711",
        cvss: 9.8,
        epss: 0.9461,
        known_exploited: true,
        published: "2024-09-07",
        description: "A deserialization of untrusted data vulnerability with a malicious payload can allow an unauthenticated remote code execution (RCE).",
    },
    Cve {
        id: "CVE-2024-21410",
        cvss: 9.8,
        epss: 0.8874,
        known_exploited: true,
        published: "2024-02-13",
        description: "Microsoft Exchange Server Elevation of Privilege Vulnerability",
    },
    Cve {
        id: "CVE-2021-44228",
        cvss: 10.0,
        epss: 0.9447,
        known_exploited: true,
        published: "2021-12-10",
        description: "Apache Log4j2 2.0-beta9 through 2.15.0 (excluding security releases 2.12.2, 2.12.3, and 2.3.1) JNDI features used in configuration, log messages, and parameters do not protect against attacker controlled LDAP and other JNDI related endpoints. An attacker who can control log messages or log message parameters can execute arbitrary code loaded from LDAP servers when message lookup substitution is enabled.",
    },
    Cve {
        id: "CVE-2021-45046",
        cvss: 9.0,
        epss: 0.9434,
        known_exploited: true,
        published: "2021-12-14",
        description: "It was found that the fix to address CVE-2021-44228 in Apache Log4j 2.15.0 was incomplete in certain non-default configurations. This could allow attackers with control over Thread Context Map (MDC) input data to craft malicious input data using a JNDI Lookup pattern resulting in an information leak and remote code execution in some environments and local code execution in all environments.",
    },
    Cve {
        id: "CVE-2024-6387",
        cvss: 8.1,
        epss: 0.3871,
        known_exploited: false,
        published: "2024-07-01",
        description: "A security regression (CVE-2006-5051) was discovered in OpenSSH's server (sshd). There is a race condition which can lead sshd to handle some signals in an unsafe manner. An unauthenticated, remote attacker may be able to trigger it by failing to authenticate within a set time period.",
    },
    Cve {
        id: "CVE-2023-0286",
        cvss: 7.4,
        epss: 0.0069,
        known_exploited: false,
        published: "2023-02-08",
        description: "There is a type confusion vulnerability relating to X.400 address processing inside an X.509 GeneralName. X.400 addresses were parsed as an ASN1_STRING but the public structure definition for GENERAL_NAME incorrectly specified the type of the x400Address field as ASN1_TYPE.",
    },
];

pub fn cve(id: &str) -> Option<&'static Cve> {
    CVES.iter().find(|c| c.id == id)
}

/// The catalogue's title of this name and version (compared without case or surrounding
/// spaces), if it knows one: how a collected title gets its end of life and its CVEs.
pub fn title(name: &str, version: &str) -> Option<&'static Title> {
    TITLES.iter().find(|t| {
        t.name.eq_ignore_ascii_case(name.trim()) && t.version.eq_ignore_ascii_case(version.trim())
    })
}

/// The software document of a title installed on the assets `on` (their ids, sorted): its
/// end of life and its CVEs are the catalogue's when it knows the title, else `unknown` and
/// none.
pub fn software_doc(name: &str, publisher: &str, version: &str, on: &[i64]) -> Value {
    let known = title(name, version);
    let cves: Vec<&Cve> = known
        .map(|t| t.cves.iter().filter_map(|c| cve(c)).collect())
        .unwrap_or_default();
    let software = Software {
        id: software_id(name, publisher, version),
        name: name.to_owned(),
        publisher: publisher.to_owned(),
        version: version.to_owned(),
        install_count: on.len() as u32,
        eol_status: known.map_or(EolStatus::Unknown, |t| t.eol),
        eol_date: known.and_then(|t| t.eol_date).map(str::to_owned),
        cve_count: cves.len() as u32,
        max_cvss: cves.iter().map(|c| c.cvss).reduce(f64::max),
    };
    let mut body = serde_json::to_value(software).unwrap_or_default();
    body[INSTALLED_ON] = json!(on);
    body
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_cve_of_a_title_is_in_the_catalogue() {
        for t in TITLES {
            for c in t.cves {
                assert!(cve(c).is_some(), "{c}");
            }
        }
        // Each title is the one its name and version find, whatever their case and spaces.
        for t in TITLES {
            let found = title(&t.name.to_uppercase(), &format!(" {} ", t.version));
            assert!(
                found.is_some_and(|f| (f.name, f.publisher, f.version, f.cves)
                    == (t.name, t.publisher, t.version, t.cves)),
                "{}",
                t.name
            );
        }
        for s in [EolStatus::Eol, EolStatus::Warning, EolStatus::Unknown] {
            assert!(TITLES.iter().any(|t| t.eol == s), "{s:?}");
        }
    }
}
