//! The layering of the library, checked: no import cycle between top-level modules
//! of `src/`, and none between sibling files of one folder (ARCHITECTURE.md says
//! why). Imports are read as text: every `crate::a::b` path and `use crate::{..}`
//! group outside comments, and `super::`/`self::` paths
//! resolved against the file's own module.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// One source file: its folder (relative to src/), its module name and its code
/// with comments removed.
struct Source {
    folder: PathBuf,
    module: String,
    code: String,
}

impl Source {
    /// This file's module path under `crate` (a `mod.rs` is its folder's module).
    fn module_path(&self) -> Vec<String> {
        let mut p: Vec<String> = self
            .folder
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        if !matches!(self.module.as_str(), "mod" | "lib" | "main") {
            p.push(self.module.clone());
        }
        p
    }

    /// Every module path this file names, absolute: `crate::` paths as written,
    /// `super::` and `self::` paths resolved against the file's own module.
    fn named_paths(&self) -> Vec<Vec<String>> {
        let mut out = crate_paths(&self.code);
        let here = self.module_path();
        for (i, _) in self.code.match_indices("super::") {
            let prev = self.code[..i].chars().last().unwrap_or(' ');
            if prev.is_ascii_alphanumeric() || prev == '_' || prev == ':' {
                continue;
            }
            let mut rest = &self.code[i..];
            let mut base = here.clone();
            while let Some(r) = rest.strip_prefix("super::") {
                base.pop();
                rest = r;
            }
            base.extend(segments(rest));
            out.push(base);
        }
        for (i, _) in self.code.match_indices("self::") {
            let prev = self.code[..i].chars().last().unwrap_or(' ');
            if prev.is_ascii_alphanumeric() || prev == '_' || prev == ':' {
                continue;
            }
            let mut p = here.clone();
            p.extend(segments(&self.code[i + "self::".len()..]));
            out.push(p);
        }
        out.retain(|p| !p.is_empty());
        out
    }
}

fn sources() -> Vec<Source> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out = Vec::new();
    let mut stack = vec![src.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("read src/") {
            let path = entry.expect("dir entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path.strip_prefix(&src).unwrap().to_path_buf();
                let text = std::fs::read_to_string(&path).expect("read source");
                out.push(Source {
                    folder: rel.parent().unwrap().to_path_buf(),
                    module: rel.file_stem().unwrap().to_string_lossy().into_owned(),
                    code: strip_comments(&text),
                });
            }
        }
    }
    out
}

/// Drops `//` comments (doc comments included: they link to modules without
/// depending on them) and string literals' contents, so neither makes an edge.
fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let mut in_str = false;
        let mut prev = ' ';
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            if !in_str && c == '/' && chars.peek() == Some(&'/') {
                break;
            }
            if c == '"' && prev != '\\' {
                in_str = !in_str;
            }
            if !in_str {
                out.push(c);
            }
            prev = c;
        }
        out.push('\n');
    }
    out
}

/// Identifier characters: what may follow `crate::` in a path segment.
fn ident(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

/// The paths a file names under `crate::`, as their segment lists; a group
/// `crate::{a::x, b}` gives one path per member (one level of nesting is enough
/// for what the code base writes).
fn crate_paths(code: &str) -> Vec<Vec<String>> {
    crate_paths_at(code).into_iter().map(|(_, p)| p).collect()
}

/// [`crate_paths`] with the byte offset of each path's `crate::`.
fn crate_paths_at(code: &str) -> Vec<(usize, Vec<String>)> {
    let mut out = Vec::new();
    for (i, _) in code.match_indices("crate::") {
        if i > 0 {
            let before = code[..i].chars().last().unwrap();
            if before.is_ascii_alphanumeric() || before == '_' || before == '$' {
                continue;
            }
        }
        let rest = &code[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for member in group[..end].split(',') {
                out.push((i, segments(member.trim())));
            }
        } else {
            out.push((i, segments(rest)));
        }
    }
    out.retain(|(_, p)| !p.is_empty());
    out
}

fn segments(mut s: &str) -> Vec<String> {
    let mut out = Vec::new();
    loop {
        let id = ident(s);
        if id.is_empty() {
            break;
        }
        out.push(id.to_string());
        s = &s[id.len()..];
        match s.strip_prefix("::") {
            Some(r) => s = r,
            None => break,
        }
    }
    out
}

/// Strongly connected components with more than one member (Tarjan).
fn cycles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct St<'a> {
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<String, usize>,
        low: BTreeMap<String, usize>,
        stack: Vec<String>,
        on: BTreeSet<String>,
        next: usize,
        out: Vec<Vec<String>>,
    }
    fn visit(st: &mut St, v: &str) {
        st.index.insert(v.into(), st.next);
        st.low.insert(v.into(), st.next);
        st.next += 1;
        st.stack.push(v.into());
        st.on.insert(v.into());
        let succ: Vec<String> = st
            .edges
            .get(v)
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default();
        for w in succ {
            if !st.index.contains_key(&w) {
                visit(st, &w);
                let lw = st.low[&w];
                let lv = st.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if st.on.contains(&w) {
                let iw = st.index[&w];
                let lv = st.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if st.low[v] == st.index[v] {
            let mut comp = Vec::new();
            loop {
                let w = st.stack.pop().unwrap();
                st.on.remove(&w);
                let done = w == v;
                comp.push(w);
                if done {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                st.out.push(comp);
            }
        }
    }
    let mut st = St {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        next: 0,
        out: Vec::new(),
    };
    let nodes: Vec<String> = edges.keys().cloned().collect();
    for v in nodes {
        if !st.index.contains_key(&v) {
            visit(&mut st, &v);
        }
    }
    st.out
}

/// Which edge of a cycle to look at first: every `a -> b` inside it.
fn describe(comp: &[String], edges: &BTreeMap<String, BTreeSet<String>>) -> String {
    let mut parts = Vec::new();
    for a in comp {
        for b in edges.get(a).into_iter().flatten() {
            if comp.contains(b) {
                parts.push(format!("{a} -> {b}"));
            }
        }
    }
    parts.join(", ")
}

#[test]
fn no_cycle_between_top_level_modules() {
    let srcs = sources();
    let tops: BTreeSet<String> = srcs
        .iter()
        .map(|s| match s.folder.components().next() {
            Some(c) => c.as_os_str().to_string_lossy().into_owned(),
            None => s.module.clone(),
        })
        .collect();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for s in &srcs {
        let from = match s.folder.components().next() {
            Some(c) => c.as_os_str().to_string_lossy().into_owned(),
            None => s.module.clone(),
        };
        if from == "lib" || from == "main" {
            continue;
        }
        for p in s.named_paths() {
            if p[0] != from && tops.contains(&p[0]) {
                edges.entry(from.clone()).or_default().insert(p[0].clone());
            }
        }
    }
    assert!(
        edges.len() >= 5,
        "the import reader found almost no edges ({edges:?}): it is broken"
    );
    let found = cycles(&edges);
    assert!(
        found.is_empty(),
        "import cycles between top-level modules (see ARCHITECTURE.md, \"Layers\"): {}",
        found
            .iter()
            .map(|c| format!("[{}]", describe(c, &edges)))
            .collect::<Vec<_>>()
            .join("; ")
    );
}

#[test]
fn no_cycle_between_files_of_a_folder() {
    let srcs = sources();
    // Siblings per folder: files (but mod.rs) and subfolders, by module name.
    let mut siblings: BTreeMap<PathBuf, BTreeSet<String>> = BTreeMap::new();
    for s in &srcs {
        if s.module != "mod" && s.module != "lib" && s.module != "main" {
            siblings
                .entry(s.folder.clone())
                .or_default()
                .insert(s.module.clone());
        }
        // A subfolder is a sibling in its parent folder.
        if let (Some(parent), Some(name)) = (s.folder.parent(), s.folder.file_name()) {
            siblings
                .entry(parent.to_path_buf())
                .or_default()
                .insert(name.to_string_lossy().into_owned());
        }
    }
    let mut found_edges = 0;
    let mut problems = Vec::new();
    for (folder, names) in &siblings {
        let prefix: Vec<String> = folder
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        // Files directly in this folder, and files of its subfolders (which count
        // as their subfolder's node).
        for s in &srcs {
            let comps: Vec<String> = s
                .folder
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if !comps.starts_with(&prefix) {
                continue;
            }
            let node = if comps.len() == prefix.len() {
                if s.module == "mod" || s.module == "lib" || s.module == "main" {
                    continue;
                }
                s.module.clone()
            } else {
                comps[prefix.len()].clone()
            };
            let targets: Vec<String> = s
                .named_paths()
                .into_iter()
                .filter(|p| p.len() > prefix.len() && p[..prefix.len()] == prefix[..])
                .map(|p| p[prefix.len()].clone())
                .collect();
            for t in targets {
                if t != node && names.contains(&t) {
                    edges.entry(node.clone()).or_default().insert(t);
                }
            }
        }
        found_edges += edges.values().map(BTreeSet::len).sum::<usize>();
        for c in cycles(&edges) {
            problems.push(format!(
                "src/{}: [{}]",
                folder.display(),
                describe(&c, &edges)
            ));
        }
    }
    assert!(
        found_edges >= 5,
        "the import reader found almost no edges between sibling files: it is broken"
    );
    assert!(
        problems.is_empty(),
        "import cycles between files of a folder:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_reader_sees_paths_and_groups() {
    let code = strip_comments(
        "use crate::a::b;\nuse crate::{c::d, e};\n// crate::zzz\nlet s = \"crate::q\"; $crate::w; f(crate::g::h)\n",
    );
    let firsts: Vec<String> = crate_paths(&code)
        .into_iter()
        .map(|p| p[0].clone())
        .collect();
    assert_eq!(firsts, ["a", "c", "e", "g"]);
    let mut e: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    e.entry("x".into()).or_default().insert("y".into());
    e.entry("y".into()).or_default().insert("x".into());
    e.entry("z".into()).or_default().insert("x".into());
    assert_eq!(cycles(&e), vec![vec!["x".to_string(), "y".to_string()]]);
}

/// The "Layers" table of ARCHITECTURE.md: each top-level module's row,
/// bottom (0) first. Read from the document itself so the check and the
/// document cannot drift apart.
fn layers() -> BTreeMap<String, (usize, String)> {
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("ARCHITECTURE.md"))
            .expect("read ARCHITECTURE.md");
    let section = doc
        .split("\n## Layers")
        .nth(1)
        .expect("ARCHITECTURE.md has a \"Layers\" section");
    let section = section.split("\n## ").next().unwrap_or(section);
    let mut out = BTreeMap::new();
    let rows = section
        .lines()
        .filter(|l| l.starts_with('|'))
        .skip(2) // the header and its rule
        .enumerate();
    for (row, line) in rows {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let (name, modules) = (cells[1], cells[2]);
        for m in modules.split(',') {
            let m = m.trim().trim_matches('`').trim_end_matches('/');
            assert!(
                !m.is_empty(),
                "ARCHITECTURE.md, Layers: an empty module in {line:?}"
            );
            let before = out.insert(m.to_string(), (row, name.to_string()));
            assert!(
                before.is_none(),
                "ARCHITECTURE.md, Layers: `{m}` is on two rows"
            );
        }
    }
    out
}

#[test]
fn imports_follow_the_layers_of_architecture_md() {
    let layers = layers();
    assert!(
        layers.len() >= 10,
        "the Layers table of ARCHITECTURE.md read as {layers:?}: the reader is broken"
    );
    let srcs = sources();
    let top = |s: &Source| match s.folder.components().next() {
        Some(c) => c.as_os_str().to_string_lossy().into_owned(),
        None => s.module.clone(),
    };
    let mut problems = Vec::new();
    let mut checked = 0;
    for s in &srcs {
        let from = top(s);
        if from == "lib" || from == "main" {
            continue;
        }
        let Some((from_row, from_layer)) = layers.get(&from) else {
            problems.push(format!(
                "src/{}: module `{from}` has no row in ARCHITECTURE.md's Layers table",
                s.folder.join(format!("{}.rs", s.module)).display()
            ));
            continue;
        };
        for (i, p) in crate_paths_at(&s.code) {
            let line = s.code[..i].matches('\n').count() + 1;
            let to = &p[0];
            let Some((to_row, to_layer)) = layers.get(to) else {
                continue; // not a top-level module: an item of lib.rs
            };
            checked += 1;
            if to_row > from_row {
                problems.push(format!(
                    "src/{}:{line}: `{from}` ({from_layer}) uses `crate::{}`, a higher layer ({to_layer})",
                    s.folder.join(format!("{}.rs", s.module)).display(),
                    p.join("::")
                ));
            }
        }
    }
    assert!(
        checked >= 50,
        "the layer check found almost no imports: it is broken"
    );
    assert!(
        problems.is_empty(),
        "imports against the layer order of ARCHITECTURE.md (a module may use its own row or below):\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_layers_table_is_read_from_architecture_md() {
    let l = layers();
    assert_eq!(l["request"].0, 0);
    assert!(l["measure"].0 < l["completion"].0);
    assert!(l["completion"].0 < l["engine"].0);
    assert_eq!(l["lab"].0, l["probe"].0);
}

/// The names a backend is called by in identifiers: its fio name, and the
/// name without fio's `io_` prefix (`uring`).
fn backend_words() -> Vec<String> {
    let mut out = Vec::new();
    for e in iolab::Engine::ALL {
        let name = e.fio_name();
        out.push(name.to_string());
        if let Some(short) = name.strip_prefix("io_") {
            out.push(short.to_string());
        }
    }
    out
}

/// Whether an identifier is named after a backend: one of its `_`-separated
/// words, or a run of them, is a backend's name.
fn names_a_backend(ident: &str, words: &[String]) -> Option<String> {
    let padded = format!("_{}_", ident.to_ascii_lowercase());
    words
        .iter()
        .find(|w| padded.contains(&format!("_{w}_")))
        .cloned()
}

/// The text between `start` (a line that begins the item) and its closing
/// brace at the item's own indentation.
fn item_body<'a>(text: &'a str, start: &str) -> &'a str {
    let at = text
        .find(start)
        .unwrap_or_else(|| panic!("src/device/mod.rs has no `{start}`"));
    let rest = &text[at..];
    let end = rest.find("\n}\n").expect("the item's closing brace");
    &rest[..end]
}

/// The shared backend contract — the `Queue` trait's methods and the fields of
/// `Caps` and `BackendStats` (src/device/mod.rs) — names no backend: what one
/// backend alone does lives in its room, behind a name that says what it is
/// (`device_time`, not the emulated device's name). `Caps::sync` is the one
/// exception: "sync" is also the completion model's word for a backend whose
/// call performs the I/O, which is what the flag means.
#[test]
fn the_backend_contract_names_no_backend() {
    const ALLOWED: &[(&str, &str)] = &[("Caps", "sync")];
    let text =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/src/device/mod.rs")).unwrap();
    let text = strip_comments(&text);
    let words = backend_words();
    let mut found = Vec::new();
    let mut scanned = 0;
    for (item, start, key) in [
        ("Queue", "pub trait Queue", "fn "),
        ("Caps", "pub struct Caps", "pub "),
        ("BackendStats", "pub struct BackendStats", "pub "),
    ] {
        let body = item_body(&text, start);
        for line in body.lines().skip(1) {
            let Some(rest) = line.trim_start().strip_prefix(key) else {
                continue;
            };
            let name = ident(rest);
            if name.is_empty() {
                continue;
            }
            scanned += 1;
            if ALLOWED.contains(&(item, name)) {
                continue;
            }
            if let Some(w) = names_a_backend(name, &words) {
                found.push(format!("{item}::{name} (names {w})"));
            }
        }
    }
    // The scan must have read the contract, or it proves nothing.
    assert!(scanned >= 20, "read only {scanned} names of the contract");
    assert!(
        found.is_empty(),
        "the shared backend contract names a backend: {found:?}; name what the part does \
         and keep the backend's own part in its room (ARCHITECTURE.md, Adding a backend)"
    );
}

/// Every string literal of a Rust source, with the line it starts on:
/// comments, char literals and lifetimes are skipped, escapes are kept as
/// written, raw strings (`r"..."`, `r#"..."#`) are read to their end.
fn string_literals(text: &str) -> Vec<(usize, String)> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut line = 1;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\n' => line += 1,
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let end = text[i + 2..].find("*/").map_or(b.len(), |e| i + 2 + e + 2);
                line += text[i..end].matches('\n').count();
                i = end;
                continue;
            }
            b'\'' => {
                // A char literal ('x', '\n', '"'), or a lifetime ('a).
                if b.get(i + 1) == Some(&b'\\') {
                    let end = text[i + 3..].find('\'').map_or(b.len(), |e| i + 3 + e + 1);
                    i = end;
                    continue;
                }
                let ch = text[i + 1..].chars().next().map_or(1, char::len_utf8);
                if b.get(i + 1 + ch) == Some(&b'\'') {
                    i += ch + 2;
                    continue;
                }
            }
            b'r' if (b.get(i + 1) == Some(&b'"') || b.get(i + 1) == Some(&b'#'))
                && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_')) =>
            {
                let hashes = b[i + 1..].iter().take_while(|&&c| c == b'#').count();
                if b.get(i + 1 + hashes) == Some(&b'"') {
                    let open = i + 2 + hashes;
                    let close = format!("\"{}", "#".repeat(hashes));
                    let end = text[open..].find(&close).map_or(b.len(), |e| open + e);
                    out.push((line, text[open..end].to_string()));
                    line += text[open..end].matches('\n').count();
                    i = end + close.len();
                    continue;
                }
            }
            b'"' => {
                let open = i + 1;
                let mut j = open;
                while j < b.len() && b[j] != b'"' {
                    j += if b[j] == b'\\' { 2 } else { 1 };
                }
                let end = j.min(b.len());
                out.push((line, text[open..end].to_string()));
                line += text[open..end].matches('\n').count();
                i = end + 1;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// An engine's name is written in one place, the engine list
/// (src/device/engine.rs), from which parsing, fio names, refusals, messages
/// and help are derived; elsewhere code says `Engine::X.fio_name()`. What is
/// scanned: every string literal in src/ that equals an engine's fio name.
/// Exempt: the list's file, and the backends' rooms — a file or folder of
/// src/device/ that implements `Queue` or `Perform` (a room may serve
/// several engines: psync.rs is psync and pvsync2). Not scanned: the names
/// that are also other words of the option language and the system —
/// `null` (verify=null), `sync` (completion=sync, an iolog action), `mmap`
/// (mem=mmap, a system call), `ftruncate` (a system call) — a literal cannot
/// say which meaning it has.
#[test]
fn an_engine_name_is_written_only_in_the_engine_list() {
    const OTHER_WORDS: &[&str] = &["null", "sync", "mmap", "ftruncate"];
    let names: Vec<&str> = iolab::Engine::ALL
        .iter()
        .map(|e| e.fio_name())
        .filter(|n| !OTHER_WORDS.contains(n))
        .collect();
    assert!(names.len() >= 10, "the engine list gave only {names:?}");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let device = src.join("device");
    let implements_backend = |text: &str| {
        text.lines().any(|l| {
            let l = l.trim_start();
            l.starts_with("impl") && (l.contains("Queue for ") || l.contains("Perform for "))
        })
    };
    // Rooms: a backend file of device/, or a folder whose mod.rs is one.
    let mut rooms: Vec<PathBuf> = Vec::new();
    for entry in std::fs::read_dir(&device).unwrap() {
        let path = entry.unwrap().path();
        let file = if path.is_dir() {
            path.join("mod.rs")
        } else {
            path.clone()
        };
        if path
            .file_name()
            .is_some_and(|n| n == "perform.rs" || n == "mod.rs")
        {
            continue;
        }
        if std::fs::read_to_string(&file).is_ok_and(|t| implements_backend(&t)) {
            rooms.push(path);
        }
    }
    assert!(
        rooms.len() >= 8,
        "found only these backend rooms: {rooms:?}"
    );
    let mut found = Vec::new();
    let mut stack = vec![src.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs")
                || path == device.join("engine.rs")
                || rooms.iter().any(|r| path.starts_with(r))
            {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            for (line, lit) in string_literals(&text) {
                if names.contains(&lit.as_str()) {
                    let rel = path.strip_prefix(&src).unwrap().display().to_string();
                    found.push(format!("src/{rel}:{line}: \"{lit}\""));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "an engine's name is written outside the engine list (src/device/engine.rs) \
         and the backends' rooms; use Engine::X.fio_name():\n{}",
        found.join("\n")
    );
}

/// The literal reader finds what the engine-name check relies on.
#[test]
fn string_literals_are_read_past_comments_chars_and_raw_strings() {
    let code = "let a = '\"'; // \"io_uring\"\n/* \"libaio\" */ fn f<'a>(x: &'a str) {}\n\
                let b = r#\"psync \"q\"\"#; let c = \"x\\\"y\";\nlet d = \"cpuio\";";
    let lits: Vec<(usize, String)> = string_literals(code);
    assert_eq!(
        lits,
        vec![
            (3, "psync \"q\"".to_string()),
            (3, "x\\\"y".to_string()),
            (4, "cpuio".to_string()),
        ]
    );
}
