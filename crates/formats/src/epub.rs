//! An EPUB book (2 or 3) as the plain text `ingest` reads: the documents of its spine in
//! order, each heading a block of its own (so `CHAPTER I.` stays a chapter heading),
//! each paragraph a block, blocks apart by a blank line, italics marked `_so_` as
//! Gutenberg's plain text marks them. Left out: what is not part of
//! the reading order (`linear="no"`), footnotes and note marks, Project Gutenberg's
//! header and licence, images, scripts and styles.
//!
//! The zip is read by the `zip` crate and every XML file by `roxmltree`. Bounds, each
//! named in its refusal: the file's size, the entries the zip lists, and the
//! uncompressed bytes read in all (counted as they are inflated, whatever sizes the zip
//! declares, so a zip bomb stops at the bound). A name in the zip or an `href` of the
//! package that climbs out of the book (`..` past the root, an absolute path) is
//! refused before anything is read.

use std::io::{Cursor, Read};

use roxmltree::{Document, Node, ParsingOptions};

/// The bounds of one read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Bytes of the EPUB file.
    pub file_bytes: u64,
    /// Uncompressed bytes of every entry read, together.
    pub total_bytes: u64,
    /// Entries the zip may list.
    pub entries: usize,
}

impl Default for Limits {
    /// 64 MiB of EPUB, 64 MiB inflated (a long novel's XHTML is a few MiB), 10,000
    /// entries.
    fn default() -> Self {
        Self {
            file_bytes: 64 * 1024 * 1024,
            total_bytes: 64 * 1024 * 1024,
            entries: 10_000,
        }
    }
}

/// Why an EPUB was refused. Every message names the entry or file at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EpubError {
    #[error("not an EPUB: the file is not a zip archive ({0})")]
    NotZip(String),
    #[error("the file is {size} bytes; an EPUB is read up to {limit} bytes")]
    TooLarge { size: u64, limit: u64 },
    #[error("the zip lists {count} entries; an EPUB is read with at most {limit}")]
    TooManyEntries { count: usize, limit: usize },
    #[error("zip entry {name:?} climbs out of the book (an absolute path or `..`); refused")]
    Climbs { name: String },
    #[error(
        "refused as a zip bomb: inflating {name:?} passes the bound of {limit} uncompressed \
         bytes for the whole book"
    )]
    Bomb { name: String, limit: u64 },
    #[error("not an EPUB: it has no META-INF/container.xml")]
    NoContainer,
    #[error("META-INF/container.xml names no package (no rootfile with a full-path)")]
    NoRootfile,
    #[error("the package {path:?} that META-INF/container.xml names is not in the zip")]
    MissingPackage { path: String },
    #[error("{file}: not well-formed XML: {message}")]
    Xml { file: String, message: String },
    #[error("{file}: the spine names {idref:?}, which the manifest does not list")]
    UnknownItem { file: String, idref: String },
    #[error("spine item {idref:?} is {path:?}, which the zip does not hold")]
    MissingItem { idref: String, path: String },
    #[error("{file}: the spine lists no document to read")]
    EmptySpine { file: String },
    #[error("{name:?}: cannot be read: {message}")]
    Entry { name: String, message: String },
    #[error("the book holds no text")]
    NoText,
}

/// The book in `bytes` as plain text (see the module's documentation).
pub fn read(bytes: &[u8], limits: &Limits) -> Result<String, EpubError> {
    let size = bytes.len() as u64;
    if size > limits.file_bytes {
        return Err(EpubError::TooLarge {
            size,
            limit: limits.file_bytes,
        });
    }
    let zip =
        zip::ZipArchive::new(Cursor::new(bytes)).map_err(|e| EpubError::NotZip(e.to_string()))?;
    if zip.len() > limits.entries {
        return Err(EpubError::TooManyEntries {
            count: zip.len(),
            limit: limits.entries,
        });
    }
    for name in zip.file_names_raw() {
        let name = String::from_utf8_lossy(name);
        if climbs(&name) {
            return Err(EpubError::Climbs {
                name: name.into_owned(),
            });
        }
    }
    let mut book = Book {
        zip,
        left: limits.total_bytes,
        limit: limits.total_bytes,
    };
    let container = book
        .entry("META-INF/container.xml")?
        .ok_or(EpubError::NoContainer)?;
    let package_path = rootfile(&container)?;
    let package = book
        .entry(&package_path)?
        .ok_or_else(|| EpubError::MissingPackage {
            path: package_path.clone(),
        })?;
    let mut out = String::new();
    for (idref, path) in spine(&package, &package_path)? {
        let document = book.entry(&path)?.ok_or_else(|| EpubError::MissingItem {
            idref,
            path: path.clone(),
        })?;
        render(&document, &path, &mut out)?;
    }
    if out.trim().is_empty() {
        return Err(EpubError::NoText);
    }
    Ok(out)
}

/// The zip and what is left of the inflation bound.
struct Book<'a> {
    zip: zip::ZipArchive<Cursor<&'a [u8]>>,
    left: u64,
    limit: u64,
}

impl Book<'_> {
    /// The entry `name` as UTF-8 text, or `None` when the zip has no such entry.
    fn entry(&mut self, name: &str) -> Result<Option<String>, EpubError> {
        let file = match self.zip.by_name(name) {
            Ok(file) => file,
            Err(zip::result::ZipError::FileNotFound) => return Ok(None),
            Err(e) => {
                return Err(EpubError::Entry {
                    name: name.to_owned(),
                    message: e.to_string(),
                });
            }
        };
        let bomb = || EpubError::Bomb {
            name: name.to_owned(),
            limit: self.limit,
        };
        if file.size() > self.left {
            return Err(bomb());
        }
        // The declared size may lie: count what inflates, one byte past the bound.
        let mut bytes = Vec::new();
        file.take(self.left + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| EpubError::Entry {
                name: name.to_owned(),
                message: e.to_string(),
            })?;
        let read = bytes.len() as u64;
        if read > self.left {
            return Err(bomb());
        }
        self.left -= read;
        let text = String::from_utf8(bytes).map_err(|e| EpubError::Entry {
            name: name.to_owned(),
            message: format!("not UTF-8 (at byte {})", e.utf8_error().valid_up_to()),
        })?;
        Ok(Some(text))
    }
}

/// Whether a path inside the book leaves it: absolute, or with `..` past its root.
fn climbs(name: &str) -> bool {
    absolute(name) || resolve("", name).is_none()
}

/// A path from the root of a file system rather than of the book.
fn absolute(name: &str) -> bool {
    name.starts_with(['/', '\\']) || name.as_bytes().get(1) == Some(&b':')
}

/// `href` resolved against the folder `base` (with its trailing `/`, or empty), its
/// fragment dropped; `None` when it climbs above the book's root.
fn resolve(base: &str, href: &str) -> Option<String> {
    let href = href.split('#').next().unwrap_or_default();
    let mut parts: Vec<&str> = Vec::new();
    for part in base.split(['/', '\\']).chain(href.split(['/', '\\'])) {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            part => parts.push(part),
        }
    }
    Some(parts.join("/"))
}

fn parse<'a>(text: &'a str, file: &str) -> Result<Document<'a>, EpubError> {
    let options = ParsingOptions {
        allow_dtd: true,
        ..ParsingOptions::default()
    };
    Document::parse_with_options(text, options).map_err(|e| EpubError::Xml {
        file: file.to_owned(),
        message: e.to_string(),
    })
}

/// The package's path, from `META-INF/container.xml`.
fn rootfile(container: &str) -> Result<String, EpubError> {
    let file = "META-INF/container.xml";
    let document = parse(container, file)?;
    let path = document
        .descendants()
        .filter(|n| n.has_tag_name("rootfile"))
        .find_map(|n| n.attribute("full-path"))
        .filter(|p| !p.trim().is_empty())
        .ok_or(EpubError::NoRootfile)?;
    if climbs(path) {
        return Err(EpubError::Climbs {
            name: path.to_owned(),
        });
    }
    Ok(path.trim().to_owned())
}

/// The spine's documents in reading order, as (idref, path in the zip): items marked
/// `linear="no"` and items that are not (X)HTML left out.
fn spine(package: &str, file: &str) -> Result<Vec<(String, String)>, EpubError> {
    let document = parse(package, file)?;
    let base = file.rfind('/').map_or("", |at| &file[..=at]);
    let manifest: Vec<Node<'_, '_>> = document
        .descendants()
        .filter(|n| {
            n.has_tag_name("item") && n.parent().is_some_and(|p| p.has_tag_name("manifest"))
        })
        .collect();
    let mut out = Vec::new();
    for itemref in document.descendants().filter(|n| n.has_tag_name("itemref")) {
        let idref = itemref.attribute("idref").unwrap_or_default();
        if itemref.attribute("linear") == Some("no") {
            continue;
        }
        let item = manifest
            .iter()
            .find(|i| i.attribute("id") == Some(idref))
            .ok_or_else(|| EpubError::UnknownItem {
                file: file.to_owned(),
                idref: idref.to_owned(),
            })?;
        let media = item.attribute("media-type").unwrap_or_default();
        if !matches!(media, "application/xhtml+xml" | "text/html") {
            continue;
        }
        let href = item.attribute("href").unwrap_or_default();
        let path = Some(href)
            .filter(|href| !absolute(href))
            .and_then(|href| resolve(base, href))
            .ok_or_else(|| EpubError::Climbs {
                name: href.to_owned(),
            })?;
        out.push((idref.to_owned(), path));
    }
    if out.is_empty() {
        return Err(EpubError::EmptySpine {
            file: file.to_owned(),
        });
    }
    Ok(out)
}

/// An element whose text is not the book's: head matter, scripts, notes and their
/// marks, Project Gutenberg's header and licence.
fn left_out(node: Node<'_, '_>) -> bool {
    let name = node.tag_name().name();
    if matches!(name, "head" | "script" | "style" | "aside" | "nav") {
        return true;
    }
    // `epub:type`: a `type` in a namespace (HTML's own `type`, of a list or an input,
    // has none), matched by its local name so no namespace name is written here.
    let kind = node
        .attributes()
        .find(|a| a.name() == "type" && a.namespace().is_some())
        .map_or("", |a| a.value());
    if kind.split_whitespace().any(|t| {
        t.contains("footnote") || t.contains("endnote") || t == "noteref" || t == "rearnote"
    }) {
        return true;
    }
    let id = node.attribute("id").unwrap_or_default();
    let class = node.attribute("class").unwrap_or_default();
    id.starts_with("pg-header")
        || id.starts_with("pg-footer")
        || class.split_whitespace().any(|c| {
            matches!(
                c,
                "pg-boilerplate" | "footnote" | "footnotes" | "fnanchor" | "noteref"
            )
        })
}

/// Whether an element begins and ends a block of text.
fn is_block(name: &str) -> bool {
    matches!(
        name,
        "p" | "div"
            | "section"
            | "article"
            | "body"
            | "blockquote"
            | "li"
            | "ul"
            | "ol"
            | "dl"
            | "dt"
            | "dd"
            | "tr"
            | "table"
            | "pre"
            | "figure"
            | "figcaption"
            | "header"
            | "footer"
            | "hr"
            | "h1"
            | "h2"
            | "h3"
            | "h4"
            | "h5"
            | "h6"
    )
}

/// Appends the text of one XHTML document's body to `out`, block by block.
fn render(document: &str, file: &str, out: &mut String) -> Result<(), EpubError> {
    let document = parse(document, file)?;
    let Some(body) = document.descendants().find(|n| n.has_tag_name("body")) else {
        return Ok(());
    };
    let mut text = Blocks {
        out,
        block: String::new(),
        space: false,
    };
    // Open elements being left out, counted so their whole subtree is skipped.
    let mut skipping = 0usize;
    for edge in edges(body) {
        match edge {
            Edge::Open(node) if node.is_element() => {
                if skipping > 0 || left_out(node) {
                    skipping += 1;
                    continue;
                }
                let name = node.tag_name().name();
                if name == "br" {
                    text.line_break();
                } else if matches!(name, "i" | "em") {
                    text.emphasis(true);
                } else if is_block(name) {
                    text.end_block();
                }
            }
            Edge::Open(node) if node.is_text() && skipping == 0 => {
                text.push(node.text().unwrap_or_default());
            }
            Edge::Open(_) => {}
            Edge::Close(node) if node.is_element() => {
                if skipping > 0 {
                    skipping -= 1;
                    continue;
                }
                let name = node.tag_name().name();
                if is_block(name) {
                    text.end_block();
                } else if matches!(name, "i" | "em") {
                    text.emphasis(false);
                } else if matches!(name, "td" | "th") {
                    text.space = true;
                }
            }
            Edge::Close(_) => {}
        }
    }
    text.end_block();
    Ok(())
}

/// Entering or leaving a node, in document order.
enum Edge<'a, 'input> {
    Open(Node<'a, 'input>),
    Close(Node<'a, 'input>),
}

/// Every node under `root`, opened and closed in document order, walked without
/// recursion (a hostile document may nest as deep as it likes).
fn edges<'a, 'input>(root: Node<'a, 'input>) -> impl Iterator<Item = Edge<'a, 'input>> {
    let mut next = root.first_child().map(Edge::Open);
    std::iter::from_fn(move || {
        let edge = next.take()?;
        next = match &edge {
            Edge::Open(node) => Some(node.first_child().map_or(Edge::Close(*node), Edge::Open)),
            Edge::Close(node) => match node.next_sibling() {
                Some(sibling) => Some(Edge::Open(sibling)),
                None => node
                    .parent()
                    .filter(|parent| *parent != root)
                    .map(Edge::Close),
            },
        };
        Some(edge)
    })
}

/// The book's text as it is written: the block under way, its words apart by one
/// space, its lines apart where the document breaks them.
struct Blocks<'a> {
    out: &'a mut String,
    block: String,
    /// A space is due before the next word.
    space: bool,
}

impl Blocks<'_> {
    fn push(&mut self, text: &str) {
        for c in text.chars() {
            if c.is_whitespace() {
                self.space = true;
                continue;
            }
            if self.space && !self.block.is_empty() && !self.block.ends_with('\n') {
                self.block.push(' ');
            }
            self.space = false;
            self.block.push(c);
        }
    }

    /// A `<br/>`: a new line; a second in a row is a blank line, which ends the block
    /// as it does in plain text (an asterism of three lines is three scene breaks).
    fn line_break(&mut self) {
        if self.block.ends_with('\n') {
            self.end_block();
        } else if !self.block.is_empty() {
            self.block.push('\n');
        }
        self.space = false;
    }

    /// An italic run's edge, marked as Gutenberg's plain text marks it (`_word_`).
    fn emphasis(&mut self, opening: bool) {
        if opening && self.space && !self.block.is_empty() && !self.block.ends_with('\n') {
            self.block.push(' ');
        }
        if opening {
            self.space = false;
        }
        self.block.push('_');
    }

    fn end_block(&mut self) {
        let block = self.block.trim();
        if !block.is_empty() {
            self.out.push_str(block);
            self.out.push_str("\n\n");
        }
        self.block.clear();
        self.space = false;
    }
}

#[cfg(test)]
mod tests;
