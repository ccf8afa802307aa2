//! The PDF report of a machine (`get_netdiag_report` in the OpenAPI description): what a
//! network engineer hands to a manager. Title with machine and window, verdict distribution as
//! a bar chart and a timeline, main causes, latest measurement and notable events; in French or
//! English, times in the asked zone.

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use netops_shared::lookup::Lookup;
use netops_shared::{ApiError, AppState, Window};
use serde::Deserialize;
use serde_json::Value;

use crate::model::{
    AgentStatus, Alert, Event, LinkKind, Measurement, SAMPLE_MINUTES, Severity, State, Verdict,
};
use crate::pdf::{BLACK, Doc, Font, GREY, PAGE_H, PAGE_W, Rgb, WHITE, fit, width, wrap};
use crate::service::{self, Distribution};

/// Language and zone of the report.
pub struct Options {
    pub en: bool,
    pub tz: Tz,
}

impl Options {
    pub fn parse(lang: Option<&str>, tz: Option<&str>) -> Result<Options, ApiError> {
        let en = match lang {
            None | Some("fr") => false,
            Some("en") => true,
            Some(_) => {
                return Err(ApiError::invalid_parameter(
                    "lang",
                    "valeurs admises : fr, en",
                    "allowed values: fr, en",
                ));
            }
        };
        let tz = match tz {
            None => chrono_tz::Europe::Paris,
            Some(name) => name.parse::<Tz>().map_err(|_| {
                ApiError::invalid_parameter(
                    "tz",
                    "fuseau horaire IANA inconnu (par exemple Europe/Paris, America/New_York, UTC)",
                    "unknown IANA time zone (e.g. Europe/Paris, America/New_York, UTC)",
                )
            })?,
        };
        Ok(Options { en, tz })
    }

    fn t<'a>(&self, fr: &'a str, en: &'a str) -> &'a str {
        if self.en { en } else { fr }
    }

    fn time(&self, t: DateTime<Utc>) -> String {
        let local = t.with_timezone(&self.tz);
        if self.en {
            local.format("%Y-%m-%d %H:%M").to_string()
        } else {
            local.format("%d/%m/%Y %H:%M").to_string()
        }
    }

    fn num(&self, x: f64) -> String {
        let s = format!("{x:.1}");
        if self.en { s } else { s.replace('.', ",") }
    }

    fn pct(&self, x: f64) -> String {
        if self.en {
            format!("{}%", self.num(x))
        } else {
            format!("{} %", self.num(x))
        }
    }

    fn ms(&self, x: Option<f64>) -> String {
        match x {
            Some(v) => format!("{} ms", self.num(v)),
            None => self.t("sans réponse", "no answer").to_owned(),
        }
    }

    fn duration(&self, minutes: u64) -> String {
        let (h, m) = (minutes / 60, minutes % 60);
        match (h, self.en) {
            (0, _) => format!("{m} min"),
            (_, false) => format!("{h} h {m:02} min"),
            (_, true) => format!("{h}h {m:02}m"),
        }
    }

    fn severity(&self, s: Severity) -> String {
        if self.en {
            return s.as_str().to_owned();
        }
        match s {
            Severity::Critical => "critique",
            Severity::High => "élevée",
            Severity::Medium => "moyenne",
            Severity::Low => "faible",
            Severity::Info => "info",
        }
        .to_owned()
    }
}

fn color(v: Verdict) -> Rgb {
    match v {
        Verdict::OK => Rgb(0.20, 0.62, 0.36),
        Verdict::PC => Rgb(0.55, 0.36, 0.72),
        Verdict::LAN => Rgb(0.96, 0.62, 0.12),
        Verdict::INFRA => Rgb(0.65, 0.42, 0.22),
        Verdict::WAN => Rgb(0.86, 0.22, 0.22),
        Verdict::DNS => Rgb(0.20, 0.50, 0.86),
        Verdict::SERVICE => Rgb(0.85, 0.30, 0.60),
    }
}

const NAVY: Rgb = Rgb(0.10, 0.19, 0.35);
const LIGHT: Rgb = Rgb(0.92, 0.93, 0.95);
const LEFT: f32 = 50.0;
const RIGHT: f32 = PAGE_W - 50.0;
const BOTTOM: f32 = 64.0;

/// Everything the report shows.
pub struct Data {
    pub hostname: String,
    pub machine: Value,
    pub state: Option<State>,
    pub alert: Option<Alert>,
    pub dist: Distribution,
    pub latest: Option<Measurement>,
    pub events: Vec<Event>,
    pub generated_at: DateTime<Utc>,
}

pub async fn build(
    app: &AppState,
    tenant: &str,
    hostname: &str,
    w: &Window,
    opt: &Options,
) -> Result<Vec<u8>, ApiError> {
    let (machine, state, latest, events) = tokio::try_join!(
        app.stores.docs.machine(tenant, hostname),
        service::state(app, tenant, hostname),
        service::latest(app, tenant, hostname, w.to),
        service::notable_events(app, tenant, hostname, w, 14),
    )?;
    let (alert, dist) = tokio::try_join!(
        service::alert(
            app,
            tenant,
            state.as_ref().and_then(|s| s.open_alert.as_deref())
        ),
        service::distribution(app, tenant, hostname, state.as_ref(), w),
    )?;
    let data = Data {
        hostname: hostname.to_owned(),
        machine,
        alert,
        dist,
        latest,
        events,
        state,
        generated_at: Utc::now(),
    };
    Ok(render(&data, w, opt))
}

/// Lays the report out, flowing onto new pages as needed.
struct Writer<'a> {
    doc: Doc,
    y: f32,
    opt: &'a Options,
}

impl Writer<'_> {
    fn ensure(&mut self, space: f32) {
        if self.y - space < BOTTOM {
            self.doc.add_page();
            self.y = PAGE_H - 60.0;
        }
    }

    fn section(&mut self, title: &str, note: Option<&str>) {
        self.ensure(60.0);
        self.y -= 26.0;
        self.doc.text(LEFT, self.y, 13.0, Font::Bold, NAVY, title);
        if let Some(n) = note {
            self.doc
                .text_right(RIGHT, self.y, 8.5, Font::Regular, GREY, n);
        }
        self.y -= 6.0;
        self.doc.line(LEFT, self.y, RIGHT, self.y, 0.8, NAVY);
        self.y -= 16.0;
    }

    fn field(&mut self, x: f32, label: &str, value: &str, max: f32) {
        self.doc.text(x, self.y, 8.0, Font::Regular, GREY, label);
        self.doc.text(
            x,
            self.y - 12.0,
            10.0,
            Font::Bold,
            BLACK,
            &fit(value, 10.0, Font::Bold, max),
        );
    }

    fn kv(&mut self, key: &str, value: &str) {
        let lines = wrap(value, 9.5, Font::Regular, RIGHT - LEFT - 110.0);
        self.ensure(13.0 * lines.len() as f32 + 2.0);
        self.doc.text(LEFT, self.y, 9.5, Font::Bold, BLACK, key);
        for l in lines {
            self.doc
                .text(LEFT + 110.0, self.y, 9.5, Font::Regular, BLACK, &l);
            self.y -= 13.0;
        }
    }

    fn para(&mut self, text: &str, color: Rgb) {
        for l in wrap(text, 9.5, Font::Regular, RIGHT - LEFT) {
            self.ensure(13.0);
            self.doc.text(LEFT, self.y, 9.5, Font::Regular, color, &l);
            self.y -= 13.0;
        }
    }
}

pub fn render(d: &Data, w: &Window, opt: &Options) -> Vec<u8> {
    let title = format!(
        "{} — {}",
        opt.t("Rapport de diagnostic réseau", "Network diagnostic report"),
        d.hostname
    );
    let mut wr = Writer {
        doc: Doc::new(&title),
        y: PAGE_H,
        opt,
    };
    header(&mut wr, d, w);
    facts(&mut wr, d);
    chart(&mut wr, d, w);
    causes(&mut wr, d);
    latest(&mut wr, d);
    events(&mut wr, d);
    footers(&mut wr.doc, d, opt);
    wr.doc.finish()
}

fn header(wr: &mut Writer, d: &Data, w: &Window) {
    let opt = wr.opt;
    wr.doc.rect(0.0, PAGE_H - 96.0, PAGE_W, 96.0, NAVY);
    wr.doc.text(
        LEFT,
        PAGE_H - 30.0,
        9.5,
        Font::Bold,
        Rgb(0.72, 0.80, 0.93),
        opt.t(
            "RAPPORT DE DIAGNOSTIC RÉSEAU · NETDIAG",
            "NETWORK DIAGNOSTIC REPORT · NETDIAG",
        ),
    );
    wr.doc
        .text(LEFT, PAGE_H - 58.0, 22.0, Font::Bold, WHITE, &d.hostname);
    let window = if opt.en {
        format!(
            "From {} to {} ({})",
            opt.time(w.from),
            opt.time(w.to),
            opt.tz.name()
        )
    } else {
        format!(
            "Du {} au {} ({})",
            opt.time(w.from),
            opt.time(w.to),
            opt.tz.name()
        )
    };
    wr.doc
        .text(LEFT, PAGE_H - 80.0, 10.5, Font::Regular, WHITE, &window);
    let generated = format!(
        "{} {}",
        opt.t("Généré le", "Generated on"),
        opt.time(d.generated_at)
    );
    wr.doc.text_right(
        RIGHT,
        PAGE_H - 30.0,
        8.5,
        Font::Regular,
        Rgb(0.72, 0.80, 0.93),
        &generated,
    );
    wr.y = PAGE_H - 122.0;
}

fn facts(wr: &mut Writer, d: &Data) {
    let opt = wr.opt;
    let m = &d.machine;
    let s = |k: &str| m[k].as_str().unwrap_or("—").to_owned();
    let agent = match AgentStatus::deserialize(&m["status"]) {
        Ok(AgentStatus::Online) => opt.t("en ligne", "online").to_owned(),
        Ok(AgentStatus::Offline) => opt.t("hors ligne", "offline").to_owned(),
        Err(_) => m["status"].as_str().unwrap_or("—").to_owned(),
    };
    let cols = [LEFT, LEFT + 95.0, LEFT + 265.0, LEFT + 385.0, RIGHT];
    let width_of = |i: usize| cols[i + 1] - cols[i] - 8.0;
    wr.field(
        cols[0],
        opt.t("Adresse IP", "IP address"),
        &s("ip"),
        width_of(0),
    );
    wr.field(
        cols[1],
        opt.t("Système", "Operating system"),
        &s("os"),
        width_of(1),
    );
    wr.field(
        cols[2],
        opt.t("Agent", "Agent"),
        &format!("{agent} ({})", s("agent_version")),
        width_of(2),
    );
    let seen = m["last_seen_at"]
        .as_str()
        .and_then(|t| t.parse::<DateTime<Utc>>().ok())
        .map(|t| opt.time(t))
        .unwrap_or_else(|| "—".into());
    wr.field(
        cols[3],
        opt.t("Dernier contact", "Last seen"),
        &seen,
        width_of(3),
    );
    wr.y -= 34.0;
    let (verdict, since) = match &d.state {
        Some(st) => (
            match &st.cause {
                Some(c) => format!("{} — {}", st.verdict.as_str(), c),
                None => format!("{} — {}", st.verdict.as_str(), st.verdict.label(opt.en)),
            },
            opt.time(st.since),
        ),
        None => ("—".into(), "—".into()),
    };
    wr.field(
        cols[0],
        opt.t("Verdict actuel", "Current verdict"),
        &verdict,
        cols[3] - cols[0] - 8.0,
    );
    let alert = match &d.alert {
        Some(a) => format!("{} · {}", opt.severity(a.severity), a.id),
        None => opt.t("aucune", "none").to_owned(),
    };
    wr.field(
        cols[3],
        opt.t("Alerte en cours", "Open alert"),
        &alert,
        width_of(3),
    );
    wr.y -= 30.0;
    wr.doc.text(
        cols[0],
        wr.y,
        8.5,
        Font::Regular,
        GREY,
        &format!(
            "{} {since}",
            opt.t("Verdict en place depuis le", "Verdict in place since")
        ),
    );
    wr.y -= 20.0;
}

fn chart(wr: &mut Writer, d: &Data, w: &Window) {
    let opt = wr.opt;
    let note = if opt.en {
        format!(
            "{} measurements, one every {} minutes",
            d.dist.samples, SAMPLE_MINUTES
        )
    } else {
        format!(
            "{} mesures, une toutes les {} minutes",
            d.dist.samples, SAMPLE_MINUTES
        )
    };
    wr.section(
        opt.t("Répartition des verdicts", "Verdict distribution"),
        Some(&note),
    );
    if d.dist.samples == 0 {
        wr.para(
            opt.t(
                "Aucune mesure sur la période.",
                "No measurement in the period.",
            ),
            GREY,
        );
        return;
    }
    let bar_x = LEFT + 165.0;
    let bar_w = 230.0;
    for s in &d.dist.shares {
        wr.ensure(18.0);
        let y = wr.y;
        wr.doc.rect(LEFT, y - 2.0, 9.0, 9.0, color(s.verdict));
        wr.doc
            .text(LEFT + 14.0, y, 9.5, Font::Bold, BLACK, s.verdict.as_str());
        wr.doc.text(
            LEFT + 62.0,
            y,
            8.5,
            Font::Regular,
            GREY,
            &fit(s.verdict.label(opt.en), 8.5, Font::Regular, 98.0),
        );
        wr.doc.rect(bar_x, y - 3.0, bar_w, 11.0, LIGHT);
        let filled =
            (s.share_pct as f32 / 100.0 * bar_w).max(if s.samples > 0 { 1.5 } else { 0.0 });
        wr.doc.rect(bar_x, y - 3.0, filled, 11.0, color(s.verdict));
        wr.doc.text(
            bar_x + bar_w + 8.0,
            y,
            9.5,
            Font::Bold,
            BLACK,
            &opt.pct(s.share_pct),
        );
        wr.doc
            .text_right(RIGHT, y, 9.0, Font::Regular, GREY, &opt.duration(s.minutes));
        wr.y -= 17.0;
    }
    // Timeline: the dominant verdict of each slice of the window.
    wr.ensure(60.0);
    wr.y -= 8.0;
    wr.doc.text(
        LEFT,
        wr.y,
        9.5,
        Font::Bold,
        BLACK,
        opt.t("Chronologie", "Timeline"),
    );
    wr.y -= 20.0;
    let slices: i64 = 120;
    let slice = (w.to - w.from) / slices as i32;
    let cell_w = (RIGHT - LEFT) / slices as f32;
    for i in 0..slices {
        let from = w.from + slice * i as i32;
        let to = from + slice;
        let x = LEFT + i as f32 * cell_w;
        // The verdict that lasted longest in the slice shows; unmeasured time stays grey.
        let measured = d.dist.span.and_then(|s| {
            let (f, t) = (from.max(s.from), to.min(s.to));
            (f < t).then_some(service::Span { from: f, to: t })
        });
        let col = match measured {
            None => LIGHT,
            Some(s) => {
                let mut best: Option<(i64, Verdict)> = None;
                for p in &d.dist.periods {
                    let m = s.overlap(p);
                    if m > 0 && best.is_none_or(|(bm, _)| m > bm) {
                        best = Some((m, p.verdict));
                    }
                }
                color(best.map(|(_, v)| v).unwrap_or(Verdict::OK))
            }
        };
        wr.doc.rect(x, wr.y, cell_w + 0.2, 16.0, col);
    }
    wr.y -= 11.0;
    wr.doc
        .text(LEFT, wr.y, 8.0, Font::Regular, GREY, &opt.time(w.from));
    wr.doc
        .text_right(RIGHT, wr.y, 8.0, Font::Regular, GREY, &opt.time(w.to));
    wr.y -= 10.0;
}

fn causes(wr: &mut Writer, d: &Data) {
    let opt = wr.opt;
    wr.section(opt.t("Principales causes", "Main causes"), None);
    if d.dist.causes.is_empty() {
        wr.para(
            opt.t(
                "Aucun problème détecté sur la période.",
                "No problem detected in the period.",
            ),
            GREY,
        );
        return;
    }
    wr.doc.text(LEFT, wr.y, 8.0, Font::Bold, GREY, "VERDICT");
    wr.doc.text(
        LEFT + 70.0,
        wr.y,
        8.0,
        Font::Bold,
        GREY,
        opt.t("CAUSE", "CAUSE"),
    );
    wr.doc.text_right(
        RIGHT - 60.0,
        wr.y,
        8.0,
        Font::Bold,
        GREY,
        opt.t("DURÉE", "DURATION"),
    );
    wr.doc
        .text_right(RIGHT, wr.y, 8.0, Font::Bold, GREY, opt.t("PART", "SHARE"));
    wr.y -= 15.0;
    for c in d.dist.causes.iter().take(6) {
        wr.ensure(16.0);
        wr.doc.rect(LEFT, wr.y - 2.0, 8.0, 8.0, color(c.verdict));
        wr.doc.text(
            LEFT + 12.0,
            wr.y,
            9.0,
            Font::Bold,
            BLACK,
            c.verdict.as_str(),
        );
        wr.doc.text(
            LEFT + 70.0,
            wr.y,
            9.0,
            Font::Regular,
            BLACK,
            &fit(&c.cause, 9.0, Font::Regular, RIGHT - LEFT - 200.0),
        );
        wr.doc.text_right(
            RIGHT - 60.0,
            wr.y,
            9.0,
            Font::Regular,
            BLACK,
            &opt.duration(c.minutes),
        );
        wr.doc.text_right(
            RIGHT,
            wr.y,
            9.0,
            Font::Regular,
            BLACK,
            &opt.pct(c.share_pct),
        );
        wr.y -= 15.0;
    }
}

fn latest(wr: &mut Writer, d: &Data) {
    let opt = wr.opt;
    let Some(m) = &d.latest else {
        wr.section(opt.t("Dernière mesure", "Latest measurement"), None);
        wr.para(opt.t("Aucune mesure.", "No measurement."), GREY);
        return;
    };
    let note = opt.time(m.at);
    wr.section(opt.t("Dernière mesure", "Latest measurement"), Some(&note));
    let verdict = match &m.cause {
        Some(c) => format!("{} — {c}", m.verdict.as_str()),
        None => format!("{} — {}", m.verdict.as_str(), m.verdict.label(opt.en)),
    };
    wr.kv(opt.t("Verdict", "Verdict"), &verdict);
    let link = if !m.link.connected {
        format!(
            "{} ({})",
            opt.t("déconnecté", "disconnected"),
            m.link.adapter
        )
    } else {
        let kind = if m.link.kind == LinkKind::Wifi {
            "Wi-Fi"
        } else {
            "Ethernet"
        };
        format!("{kind}, {} Mbit/s ({})", m.link.speed_mbps, m.link.adapter)
    };
    wr.kv(opt.t("Lien", "Link"), &link);
    if let Some(wl) = &m.wireless {
        let text = if opt.en {
            format!(
                "SSID {}, signal {} dBm, {} channel {}, access point {} ({})",
                wl.ssid, wl.signal_dbm, wl.band, wl.channel, wl.access_point, wl.bssid
            )
        } else {
            format!(
                "SSID {}, signal {} dBm, {} canal {}, point d'accès {} ({})",
                wl.ssid, wl.signal_dbm, wl.band, wl.channel, wl.access_point, wl.bssid
            )
        };
        wr.kv("Wi-Fi", &text);
    }
    let lat = format!(
        "{} {} · DNS {} · Internet {}",
        opt.t("passerelle", "gateway"),
        opt.ms(m.latency_ms.gateway),
        opt.ms(m.latency_ms.dns),
        opt.ms(m.latency_ms.internet)
    );
    wr.kv(opt.t("Latences", "Latencies"), &lat);
    let loss = format!(
        "{} {} · Internet {}",
        opt.t("passerelle", "gateway"),
        opt.pct(m.loss_pct.gateway),
        opt.pct(m.loss_pct.internet)
    );
    wr.kv(opt.t("Pertes de paquets", "Packet loss"), &loss);
    for (i, p) in m.probes.iter().enumerate() {
        let result = if p.ok {
            format!("OK, {}", opt.ms(p.ms))
        } else {
            format!(
                "{} ({})",
                opt.t("échec", "failed"),
                p.error.as_deref().unwrap_or("?")
            )
        };
        let key = if i == 0 {
            opt.t("Sondes", "Probes")
        } else {
            ""
        };
        wr.kv(
            key,
            &format!("{} [{}] : {result}", p.target, p.kind.as_str()),
        );
    }
}

fn events(wr: &mut Writer, d: &Data) {
    let opt = wr.opt;
    wr.section(
        opt.t("Évènements notables", "Notable events"),
        Some(opt.t(
            "gravité moyenne ou plus, les plus récents d'abord",
            "medium severity or worse, newest first",
        )),
    );
    if d.events.is_empty() {
        wr.para(
            opt.t(
                "Aucun évènement notable sur la période.",
                "No notable event in the period.",
            ),
            GREY,
        );
        return;
    }
    let msg_x = LEFT + 172.0;
    for e in &d.events {
        let lines = wrap(&e.message, 9.0, Font::Regular, RIGHT - msg_x);
        wr.ensure(12.0 * lines.len() as f32 + 6.0);
        let sev_color = match e.severity {
            Severity::Critical => Rgb(0.75, 0.1, 0.1),
            Severity::High => Rgb(0.86, 0.3, 0.15),
            Severity::Medium => Rgb(0.85, 0.55, 0.05),
            Severity::Low | Severity::Info => GREY,
        };
        wr.doc
            .text(LEFT, wr.y, 8.5, Font::Regular, BLACK, &opt.time(e.at));
        wr.doc.text(
            LEFT + 78.0,
            wr.y,
            8.5,
            Font::Bold,
            sev_color,
            &opt.severity(e.severity),
        );
        wr.doc
            .text(LEFT + 118.0, wr.y, 8.5, Font::Regular, GREY, &e.source);
        for l in lines {
            wr.doc.text(msg_x, wr.y, 9.0, Font::Regular, BLACK, &l);
            wr.y -= 12.0;
        }
        wr.y -= 3.0;
    }
}

fn footers(doc: &mut Doc, d: &Data, opt: &Options) {
    let n = doc.page_count();
    for i in 0..n {
        doc.select(i);
        doc.line(LEFT, 44.0, RIGHT, 44.0, 0.5, LIGHT);
        let left = format!("netops · NetDiag — {}", d.hostname);
        doc.text(LEFT, 32.0, 8.0, Font::Regular, GREY, &left);
        let page = format!("{} {} / {n}", opt.t("Page", "Page"), i + 1);
        let w = width(&page, 8.0, Font::Regular);
        doc.text(RIGHT - w, 32.0, 8.0, Font::Regular, GREY, &page);
    }
}
