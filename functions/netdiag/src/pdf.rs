//! A small PDF writer, enough for a report and free of dependencies: A4 pages, the standard
//! Helvetica fonts in WinAnsiEncoding (so accented French text is right without embedding a
//! font), text, filled rectangles and lines. Times and layout belong to the report.

use std::fmt::Write as _;

pub const PAGE_W: f32 = 595.0;
pub const PAGE_H: f32 = 842.0;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rgb(pub f32, pub f32, pub f32);

pub const BLACK: Rgb = Rgb(0.1, 0.1, 0.12);
pub const GREY: Rgb = Rgb(0.42, 0.44, 0.48);
pub const WHITE: Rgb = Rgb(1.0, 1.0, 1.0);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Font {
    Regular,
    Bold,
}

impl Font {
    fn name(self) -> &'static str {
        match self {
            Font::Regular => "F1",
            Font::Bold => "F2",
        }
    }
}

/// Helvetica advance widths (1/1000 em) of ASCII 32..=126, from the standard AFM.
const HELVETICA: [u16; 95] = [
    278, 278, 355, 556, 556, 889, 667, 191, 333, 333, 389, 584, 278, 333, 278,
    278, // ' '..'/'
    556, 556, 556, 556, 556, 556, 556, 556, 556, 556, // 0-9
    278, 278, 584, 584, 584, 556, 1015, // : ; < = > ? @
    667, 667, 722, 722, 667, 611, 778, 722, 278, 500, 667, 556, 833, 722, 778, 667, 778, 722, 667,
    611, 722, 667, 944, 667, 667, 611, // A-Z
    278, 278, 278, 469, 556, 333, // [ \ ] ^ _ `
    556, 556, 500, 556, 556, 278, 556, 556, 222, 222, 500, 222, 833, 556, 556, 556, 556, 333, 500,
    278, 556, 500, 722, 500, 500, 500, // a-z
    334, 260, 334, 584, // { | } ~
];

/// Helvetica-Bold advance widths of ASCII 32..=126.
const HELVETICA_BOLD: [u16; 95] = [
    278, 333, 474, 556, 556, 889, 722, 238, 333, 333, 389, 584, 278, 333, 278, 278, //
    556, 556, 556, 556, 556, 556, 556, 556, 556, 556, //
    333, 333, 584, 584, 584, 611, 975, //
    722, 722, 722, 722, 667, 611, 778, 722, 278, 556, 722, 611, 833, 722, 778, 667, 778, 722, 667,
    611, 722, 667, 944, 667, 667, 611, //
    333, 278, 333, 584, 556, 333, //
    556, 611, 556, 611, 556, 333, 611, 611, 278, 278, 556, 278, 889, 611, 611, 611, 611, 389, 556,
    333, 611, 556, 778, 556, 556, 500, //
    389, 280, 389, 584,
];

/// The WinAnsiEncoding byte of a character, if it has one.
fn win_ansi(c: char) -> Option<u8> {
    let u = c as u32;
    match u {
        0x20..=0x7E => Some(u as u8),
        0xA0..=0xFF => Some(u as u8),
        _ => Some(match c {
            '€' => 0x80,
            '‚' => 0x82,
            'ƒ' => 0x83,
            '„' => 0x84,
            '…' => 0x85,
            '†' => 0x86,
            '‡' => 0x87,
            'ˆ' => 0x88,
            '‰' => 0x89,
            'Š' => 0x8A,
            '‹' => 0x8B,
            'Œ' => 0x8C,
            'Ž' => 0x8E,
            '‘' => 0x91,
            '’' => 0x92,
            '“' => 0x93,
            '”' => 0x94,
            '•' => 0x95,
            '–' => 0x96,
            '—' => 0x97,
            '˜' => 0x98,
            '™' => 0x99,
            'š' => 0x9A,
            '›' => 0x9B,
            'œ' => 0x9C,
            'ž' => 0x9E,
            'Ÿ' => 0x9F,
            '\u{202F}' | '\u{2009}' => 0xA0,
            '→' => return None,
            _ => return None,
        }),
    }
}

/// Text as WinAnsi bytes; characters outside the encoding are replaced.
pub fn encode(s: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '→' => out.extend_from_slice(b"->"),
            '\t' | '\n' | '\r' => out.push(b' '),
            _ => out.push(win_ansi(c).unwrap_or(b'?')),
        }
    }
    out
}

/// Width of the text in points.
pub fn width(s: &str, size: f32, font: Font) -> f32 {
    let table = match font {
        Font::Regular => &HELVETICA,
        Font::Bold => &HELVETICA_BOLD,
    };
    let units: u32 = encode(s)
        .iter()
        .map(|&b| match b {
            32..=126 => u32::from(table[usize::from(b - 32)]),
            // Accented letters take the width of their base letter, near enough.
            0xC0..=0xDF => 700,
            _ => 556,
        })
        .sum();
    units as f32 * size / 1000.0
}

/// Splits the text into lines no wider than `max`.
pub fn wrap(s: &str, size: f32, font: Font, max: f32) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in s.split_whitespace() {
        let candidate = if line.is_empty() {
            word.to_owned()
        } else {
            format!("{line} {word}")
        };
        if width(&candidate, size, font) <= max || line.is_empty() {
            line = candidate;
        } else {
            lines.push(std::mem::take(&mut line));
            line = word.to_owned();
        }
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

/// Cuts the text to fit `max`, with an ellipsis.
pub fn fit(s: &str, size: f32, font: Font, max: f32) -> String {
    if width(s, size, font) <= max {
        return s.to_owned();
    }
    let mut out: String = s.to_owned();
    while !out.is_empty() && width(&format!("{out}…"), size, font) > max {
        out.pop();
    }
    format!("{}…", out.trim_end())
}

/// A document being drawn, page by page. Coordinates in points from the bottom left.
pub struct Doc {
    pages: Vec<Vec<u8>>,
    current: usize,
    title: String,
}

fn n(x: f32) -> String {
    let r = (x * 100.0).round() / 100.0;
    if r.fract() == 0.0 {
        format!("{}", r as i64)
    } else {
        format!("{r}")
    }
}

impl Doc {
    pub fn new(title: &str) -> Self {
        Doc {
            pages: vec![Vec::new()],
            current: 0,
            title: title.to_owned(),
        }
    }

    pub fn add_page(&mut self) {
        self.pages.push(Vec::new());
        self.current = self.pages.len() - 1;
    }

    pub fn page_count(&self) -> usize {
        self.pages.len()
    }

    /// Draws on page `i` (0-based) from now on.
    pub fn select(&mut self, i: usize) {
        self.current = i.min(self.pages.len() - 1);
    }

    fn out(&mut self) -> &mut Vec<u8> {
        &mut self.pages[self.current]
    }

    pub fn text(&mut self, x: f32, y: f32, size: f32, font: Font, color: Rgb, s: &str) {
        let mut bytes = format!(
            "BT /{} {} Tf {} {} {} rg {} {} Td (",
            font.name(),
            n(size),
            n(color.0),
            n(color.1),
            n(color.2),
            n(x),
            n(y)
        )
        .into_bytes();
        for b in encode(s) {
            if matches!(b, b'(' | b')' | b'\\') {
                bytes.push(b'\\');
            }
            bytes.push(b);
        }
        bytes.extend_from_slice(b") Tj ET\n");
        self.out().extend_from_slice(&bytes);
    }

    pub fn text_right(&mut self, right: f32, y: f32, size: f32, font: Font, color: Rgb, s: &str) {
        let w = width(s, size, font);
        self.text(right - w, y, size, font, color, s);
    }

    pub fn rect(&mut self, x: f32, y: f32, w: f32, h: f32, color: Rgb) {
        let s = format!(
            "{} {} {} rg {} {} {} {} re f\n",
            n(color.0),
            n(color.1),
            n(color.2),
            n(x),
            n(y),
            n(w),
            n(h)
        );
        self.out().extend_from_slice(s.as_bytes());
    }

    pub fn line(&mut self, x1: f32, y1: f32, x2: f32, y2: f32, width: f32, color: Rgb) {
        let s = format!(
            "{} {} {} RG {} w {} {} m {} {} l S\n",
            n(color.0),
            n(color.1),
            n(color.2),
            n(width),
            n(x1),
            n(y1),
            n(x2),
            n(y2)
        );
        self.out().extend_from_slice(s.as_bytes());
    }

    /// The PDF file.
    pub fn finish(self) -> Vec<u8> {
        let count = self.pages.len();
        // Objects: 1 catalog, 2 pages, 3 and 4 fonts, 5 info, then a page and its content.
        let mut objects: Vec<Vec<u8>> = Vec::new();
        objects.push(b"<< /Type /Catalog /Pages 2 0 R >>".to_vec());
        let kids: String = (0..count).map(|i| format!("{} 0 R ", 6 + 2 * i)).collect();
        objects.push(
            format!(
                "<< /Type /Pages /Kids [{}] /Count {count} >>",
                kids.trim_end()
            )
            .into_bytes(),
        );
        objects.push(
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"
                .to_vec(),
        );
        objects.push(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica-Bold /Encoding /WinAnsiEncoding >>".to_vec());
        let mut title = String::from("<FEFF");
        for unit in self.title.encode_utf16() {
            let _ = write!(title, "{unit:04X}");
        }
        title.push('>');
        objects.push(
            format!("<< /Title {title} /Producer (netops) /Creator (netops NetDiag) >>")
                .into_bytes(),
        );
        for (i, content) in self.pages.into_iter().enumerate() {
            objects.push(
                format!(
                    "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {} {}] /Resources << /Font << /F1 3 0 R /F2 4 0 R >> >> /Contents {} 0 R >>",
                    n(PAGE_W),
                    n(PAGE_H),
                    7 + 2 * i
                )
                .into_bytes(),
            );
            let mut stream = format!("<< /Length {} >>\nstream\n", content.len()).into_bytes();
            stream.extend_from_slice(&content);
            stream.extend_from_slice(b"\nendstream");
            objects.push(stream);
        }
        let mut out: Vec<u8> = b"%PDF-1.4\n%\xE2\xE3\xCF\xD3\n".to_vec();
        let mut offsets = Vec::with_capacity(objects.len());
        for (i, obj) in objects.iter().enumerate() {
            offsets.push(out.len());
            out.extend_from_slice(format!("{} 0 obj\n", i + 1).as_bytes());
            out.extend_from_slice(obj);
            out.extend_from_slice(b"\nendobj\n");
        }
        let xref = out.len();
        let mut tail = format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1);
        for o in offsets {
            let _ = writeln!(tail, "{o:010} 00000 n ");
        }
        let _ = write!(
            tail,
            "trailer\n<< /Size {} /Root 1 0 R /Info 5 0 R >>\nstartxref\n{xref}\n%%EOF\n",
            objects.len() + 1
        );
        out.extend_from_slice(tail.as_bytes());
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_french_text_in_win_ansi() {
        assert_eq!(
            encode("Été à Noël œuvre €"),
            b"\xC9t\xE9 \xE0 No\xEBl \x9Cuvre \x80".to_vec()
        );
        assert_eq!(encode("OK → LAN"), b"OK -> LAN".to_vec());
        assert_eq!(encode("日"), b"?".to_vec());
    }

    #[test]
    fn wraps_to_the_width() {
        let lines = wrap(
            "un deux trois quatre cinq six sept huit neuf dix",
            10.0,
            Font::Regular,
            60.0,
        );
        assert!(lines.len() > 2);
        assert!(lines.iter().all(|l| width(l, 10.0, Font::Regular) <= 60.0));
    }

    #[test]
    fn writes_a_well_formed_file() {
        let mut d = Doc::new("Rapport é");
        d.text(50.0, 800.0, 12.0, Font::Bold, BLACK, "Bonjour (test)");
        d.add_page();
        d.rect(10.0, 10.0, 20.0, 20.0, GREY);
        let pdf = d.finish();
        assert!(pdf.starts_with(b"%PDF-1.4"));
        assert!(pdf.ends_with(b"%%EOF\n"));
        let text = String::from_utf8_lossy(&pdf);
        assert!(text.contains("/Count 2"));
        assert!(text.contains("Bonjour \\(test\\)"));
    }
}
