//! The simulated phone's picture (part of [`Ui`], moved out of `ui.rs` to keep it under 1,000 lines): the screen
//! rendered as RGBA rows or as a PNG (a phone's encoder or a fast one), and the [`Canvas`] it is drawn on with the
//! sim's bitmap font. Every text of the tree is drawn at its element's bounds, so what the XML says, the picture
//! shows.

use std::time::Instant;

use image::codecs::png::{CompressionType, FilterType, PngEncoder};
use image::{ExtendedColorType, ImageEncoder};

use super::super::font;
use super::site::Block;
use super::{Layout, Node, Rect, Ui, DEMO_PACKAGE};

impl Ui {
    /// Renders the screen as tightly packed RGBA_8888 rows (what `screencap` without `-p` emits).
    /// Coloured blocks stand in for widgets and every text of the tree is drawn at its element's bounds in the
    /// sim's bitmap font; the counter is also a bar whose length grows with it, so pixels change on every tap.
    pub fn render_rgba(&self) -> Vec<u8> {
        let (w, h) = self.logical_size();
        let (w, h) = (w as usize, h as usize);
        let mut c = Canvas { w, h, px: vec![0u8; w * h * 4] };
        let full = Rect { left: 0, top: 0, right: w as i32, bottom: h as i32 };
        // A sleeping phone captures black, and so does a FLAG_SECURE window (SurfaceFlinger leaves it out of
        // screenshots); the keyguard itself is never secure.
        if !self.screen_on || (self.secure_window && !self.keyguard_showing) {
            c.fill(full, [0, 0, 0, 255]);
            return c.px;
        }
        if self.plain_screen && !self.keyguard_showing {
            c.fill(full, [255, 255, 255, 255]);
            return c.px;
        }
        let l = self.layout();
        if self.keyguard_showing {
            c.fill(full, [26, 35, 126, 255]);
            for n in self.nodes() {
                c.text(n.bounds, &n.text, WHITE, false, n.password);
                for k in &n.children {
                    c.text(k.bounds, &k.text, WHITE, true, false);
                }
            }
            return c.px;
        }
        let bg = if self.on_home() { [236, 239, 241, 255] } else { package_color(&self.foreground.package) };
        c.fill(full, bg);
        c.fill(l.status_bar, [33, 33, 33, 255]);
        if let Some((start, period)) = self.ticking {
            // The step number in the status bar (like a download's percentage): a new picture every period, never
            // the same one twice, whatever the capture rate.
            let step = start.elapsed().as_millis() / period.as_millis().max(1);
            let sb = l.status_bar;
            let area = Rect { left: sb.left + (sb.right - sb.left) / 2, ..sb };
            c.digits(area, u32::try_from(step).unwrap_or(u32::MAX), [255, 193, 7, 255]);
        }
        if !self.on_browser() {
            c.fill(l.title, TITLE_BAR);
        }
        if self.on_home() {
            c.fill(l.counter, [255, 255, 255, 255]);
            c.fill(l.button, BUTTON);
            c.fill(l.reset, [120, 144, 156, 255]);
            c.fill(l.text_field, if self.text_focused { [255, 248, 225, 255] } else { [255, 255, 255, 255] });
            c.fill(l.bar_area, [207, 216, 220, 255]);
            let step = ((l.bar_area.right - l.bar_area.left) / 50).max(1);
            let len = (self.counter.min(50) as i32) * step;
            c.fill(Rect { right: l.bar_area.left + len, ..l.bar_area }, [67, 160, 71, 255]);
            c.fill(l.demo_icon, package_color(DEMO_PACKAGE));
        } else if self.on_sign_in() {
            c.fill(l.password_field, if self.password_focused { [255, 248, 225, 255] } else { [255, 255, 255, 255] });
        } else if self.on_demo() {
            let d = self.demo_layout();
            c.fill(d.ok_left, BUTTON);
            c.fill(d.ok_right, BUTTON);
            c.fill(d.list, [255, 255, 255, 255]);
            c.rows(&self.visible_rows());
        } else if self.on_settings() {
            c.fill(self.settings_layout().list, [255, 255, 255, 255]);
            if self.settings_page().is_none() {
                c.rows(&self.visible_settings_rows());
            }
        } else if self.on_messages() {
            c.fill(self.settings_layout().list, [255, 255, 255, 255]);
        } else if self.on_browser() {
            let b = self.browser_layout();
            c.fill(Rect { top: l.status_bar.bottom, bottom: b.page.top, ..full }, [241, 243, 244, 255]);
            c.fill(b.url_bar, [255, 255, 255, 255]);
            c.fill(b.page, [255, 255, 255, 255]);
            for (block, s) in self.web_blocks() {
                match block {
                    // An input: a grey outline around a white (or, focused, cream) box.
                    Block::Input { id, .. } => {
                        let edge = ((s.bottom - s.top) / 20).max(1);
                        c.fill(s.intersect(b.page), [154, 160, 166, 255]);
                        let inner = Rect {
                            left: s.left + edge,
                            top: s.top + edge,
                            right: s.right - edge,
                            bottom: s.bottom - edge,
                        };
                        let focused = self.browser.focus.as_deref() == Some(id);
                        c.fill(
                            inner.intersect(b.page),
                            if focused { [255, 248, 225, 255] } else { [255, 255, 255, 255] },
                        );
                    }
                    Block::Button { .. } => c.fill(s.intersect(b.page), BUTTON),
                    _ => {}
                }
            }
        }
        self.draw_texts(&mut c, &self.nodes(), &l);
        self.draw_windows(&mut c);
        if let (Some((start, end)), Some(_)) = (self.animating, self.animation_left()) {
            c.slide_in(start, end, bg);
        }
        c.px
    }

    /// Every element's text at its bounds: white on the title bar and buttons, link blue for web links, a dot per
    /// character for a password field (never the text), else near-black; a container shows its children's text.
    fn draw_texts(&self, c: &mut Canvas, nodes: &[Node], l: &Layout) {
        for n in nodes {
            if !n.children.is_empty() {
                self.draw_texts(c, &n.children, l);
                continue;
            }
            let button = n.class == "android.widget.Button";
            let ink = if button || n.bounds == l.title {
                WHITE
            } else if n.link {
                [26, 115, 232, 255]
            } else {
                [33, 33, 33, 255]
            };
            c.text(n.bounds, &n.text, ink, button, n.password);
        }
    }

    /// PNG of [`Ui::render_rgba`], what `screencap -p` emits. Fast compression: the sim runs in
    /// debug builds in tests and a 1080x2400 frame must encode in well under a second.
    pub fn render_png(&self) -> Vec<u8> {
        self.render_png_as(false)
    }

    /// [`Ui::render_png`], or with `phone_like` the PNG a phone writes: Skia's encoder (`SkPngEncoder` defaults:
    /// zlib level 6, every row filter tried), so the file — and the bytes `screencap -p` moves over the link — has
    /// a phone's size rather than the fast encoder's several megabytes. Used when the sim pays a phone's costs.
    pub fn render_png_as(&self, phone_like: bool) -> Vec<u8> {
        let rgba = self.render_rgba();
        let (lw, lh) = self.logical_size();
        let mut out = Vec::new();
        let (level, filter) = if phone_like {
            (CompressionType::Default, FilterType::Adaptive)
        } else {
            (CompressionType::Fast, FilterType::NoFilter)
        };
        let enc = PngEncoder::new_with_quality(&mut out, level, filter);
        if let Err(e) = enc.write_image(&rgba, lw, lh, ExtendedColorType::Rgba8) {
            tracing::warn!(error = %e, "sim: png encoding failed");
        }
        out
    }
}

const WHITE: [u8; 4] = [255, 255, 255, 255];
const TITLE_BAR: [u8; 4] = [96, 125, 139, 255];
const BUTTON: [u8; 4] = [25, 118, 210, 255];

fn package_color(pkg: &str) -> [u8; 4] {
    let h = pkg.bytes().fold(2166136261u32, |a, b| (a ^ b as u32).wrapping_mul(16777619));
    [(h & 0x7f) as u8 + 100, ((h >> 8) & 0x7f) as u8 + 100, ((h >> 16) & 0x7f) as u8 + 100, 255]
}

pub(super) struct Canvas {
    w: usize,
    h: usize,
    px: Vec<u8>,
}

impl Canvas {
    /// The new screen sliding up from below (an activity-open transition): it is drawn shifted down by the part of
    /// the animation still to run, so two captures taken at different moments differ.
    fn slide_in(&mut self, start: Instant, end: Instant, bg: [u8; 4]) {
        let total = end.saturating_duration_since(start).as_micros().max(1);
        let left = end.saturating_duration_since(Instant::now()).as_micros().min(total);
        let shift = ((self.h as u128 * left) / total) as usize;
        if shift == 0 {
            return;
        }
        let row = self.w * 4;
        self.px.copy_within(0..(self.h - shift) * row, shift * row);
        self.fill(Rect { left: 0, top: 0, right: self.w as i32, bottom: shift as i32 }, bg);
    }

    pub(super) fn fill(&mut self, r: Rect, c: [u8; 4]) {
        let x0 = r.left.clamp(0, self.w as i32) as usize;
        let x1 = r.right.clamp(0, self.w as i32) as usize;
        let y0 = r.top.clamp(0, self.h as i32) as usize;
        let y1 = r.bottom.clamp(0, self.h as i32) as usize;
        if x0 >= x1 {
            return;
        }
        for y in y0..y1 {
            let row = &mut self.px[(y * self.w + x0) * 4..(y * self.w + x1) * 4];
            for p in row.chunks_exact_mut(4) {
                p.copy_from_slice(&c);
            }
        }
    }

    /// Alternating row shades of a list.
    fn rows(&mut self, rows: &[(i32, Rect)]) {
        for (n, r) in rows {
            let shade = if n % 2 == 0 { 224 } else { 245 };
            self.fill(Rect { top: r.top + 1, bottom: r.bottom - 1, ..*r }, [shade, shade, shade, 255]);
        }
    }

    /// `s` in the bitmap font inside `area` (centred or from the left), vertically centred, as large as fits (font
    /// pixels of at least one screen pixel); characters past the area's right edge are cut off, as a TextView
    /// ellipsizes. `password`: one dot per character instead of the characters.
    pub(super) fn text(&mut self, area: Rect, s: &str, ink: [u8; 4], center: bool, password: bool) {
        let n = s.chars().count() as i32;
        let (w, h) = (area.right - area.left, area.bottom - area.top);
        if n == 0 || w <= 0 || h <= 0 {
            return;
        }
        let pad = (h / 5).max(1);
        let by_height = h * 6 / 10 / font::GLYPH_H;
        let by_width = (w - 2 * pad) / (n * font::ADVANCE);
        // One size for body text across a screen (about 20 sp on a 2400-pixel phone), whatever an element's height.
        let cap = (self.w.max(self.h) as i32 / 300).max(1);
        let scale = by_height.min(by_width).min(cap).max(1);
        let text_w = n * font::ADVANCE * scale - scale;
        let x0 = if center && text_w <= w - 2 * pad { area.left + (w - text_w) / 2 } else { area.left + pad };
        let y0 = area.top + (h - font::GLYPH_H * scale) / 2;
        for (i, ch) in s.chars().enumerate() {
            let x = x0 + i as i32 * font::ADVANCE * scale;
            if x + font::GLYPH_W * scale > area.right {
                break;
            }
            let g = if password { font::DOT } else { font::glyph(ch) };
            for row in 0..font::GLYPH_H {
                for col in 0..font::GLYPH_W {
                    if font::lit(&g, col, row) {
                        let (px, py) = (x + col * scale, y0 + row * scale);
                        let cell = Rect { left: px, top: py, right: px + scale, bottom: py + scale };
                        self.fill(cell.intersect(area), ink);
                    }
                }
            }
        }
    }

    /// Seven-segment digits, centred in `area`.
    fn digits(&mut self, area: Rect, n: u32, c: [u8; 4]) {
        // Segments: a b c d e f g as bits 0..6.
        const SEG: [u8; 10] = [0x3f, 0x06, 0x5b, 0x4f, 0x66, 0x6d, 0x7d, 0x07, 0x7f, 0x6f];
        let s = n.to_string();
        let dh = (area.bottom - area.top) * 8 / 10;
        let dw = dh / 2;
        let t = (dh / 10).max(2);
        let gap = t * 2;
        let total = s.len() as i32 * (dw + gap) - gap;
        let mut x = (area.left + area.right - total) / 2;
        let y = (area.top + area.bottom - dh) / 2;
        for ch in s.bytes() {
            let m = SEG[(ch - b'0') as usize];
            let half = y + dh / 2;
            let segs = [
                Rect { left: x, top: y, right: x + dw, bottom: y + t },
                Rect { left: x + dw - t, top: y, right: x + dw, bottom: half },
                Rect { left: x + dw - t, top: half, right: x + dw, bottom: y + dh },
                Rect { left: x, top: y + dh - t, right: x + dw, bottom: y + dh },
                Rect { left: x, top: half, right: x + t, bottom: y + dh },
                Rect { left: x, top: y, right: x + t, bottom: half },
                Rect { left: x, top: half - t / 2, right: x + dw, bottom: half + t - t / 2 },
            ];
            for (i, r) in segs.iter().enumerate() {
                if m & (1 << i) != 0 {
                    self.fill(*r, c);
                }
            }
            x += dw + gap;
        }
    }
}
