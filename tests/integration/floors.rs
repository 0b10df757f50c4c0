//! The floors of `docs/design.md`: no import in `src/` runs up a floor, the modules' imports
//! form no circle, and every module of `src/lib.rs` has a floor.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Each top-level module's floor, read from the table of `docs/design.md`.
fn floors() -> BTreeMap<String, u32> {
    let map = std::fs::read_to_string(root().join("docs/design.md")).expect("docs/design.md");
    let mut floors = BTreeMap::new();
    for line in map.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let Some(floor) = cells.get(1).and_then(|cell| cell.parse::<u32>().ok()) else {
            continue;
        };
        for module in cells[2].split(',') {
            floors.insert(module.trim().trim_matches('`').to_owned(), floor);
        }
    }
    floors
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The top-level modules `src/lib.rs` declares.
fn modules() -> BTreeSet<String> {
    let lib = std::fs::read_to_string(root().join("src/lib.rs")).expect("src/lib.rs");
    lib.lines()
        .filter_map(|line| line.strip_prefix("pub mod "))
        .map(|rest| rest.trim_end_matches(';').to_owned())
        .collect()
}

/// Every `.rs` file under `dir` but test files (`tests.rs`, `fixtures.rs` and files in a
/// `tests` folder).
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("readable") {
        let path = entry.expect("entry").path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if path.is_dir() {
            if name != "tests" {
                sources(&path, out);
            }
        } else if name.ends_with(".rs") && name != "tests.rs" && name != "fixtures.rs" {
            out.push(path);
        }
    }
}

/// The code of `text` that is compiled outside tests: comments and the items after a
/// `#[cfg(test)]` (one line ending in `;`, or a braced block) are left out.
fn non_test_code(text: &str) -> String {
    let mut code = String::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("//") {
            continue;
        }
        if trimmed.starts_with("#[cfg(test)]") {
            skip_item(&mut lines);
            continue;
        }
        code.push_str(line);
        code.push('\n');
    }
    code
}

/// Skips the item that starts at the next line: until its braces balance, or its `;`.
fn skip_item<'a>(lines: &mut impl Iterator<Item = &'a str>) {
    let mut depth = 0i32;
    for line in lines.by_ref() {
        depth += line.matches('{').count() as i32 - line.matches('}').count() as i32;
        if depth == 0 && (line.trim_end().ends_with(';') || line.trim_end().ends_with('}')) {
            return;
        }
    }
}

/// The top-level modules that `code` names through `crate::`.
fn imported(code: &str) -> BTreeSet<String> {
    code.match_indices("crate::")
        .map(|(at, _)| {
            code[at + "crate::".len()..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect::<String>()
        })
        .filter(|name| !name.is_empty())
        .collect()
}

/// Each top-level module's imports of the other top-level modules, with the file of each.
fn imports() -> BTreeMap<String, BTreeMap<String, PathBuf>> {
    let src = root().join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut imports: BTreeMap<String, BTreeMap<String, PathBuf>> = BTreeMap::new();
    for file in files {
        let relative = file.strip_prefix(&src).expect("under src");
        let first = relative.components().next().expect("a component");
        let module = first
            .as_os_str()
            .to_string_lossy()
            .trim_end_matches(".rs")
            .to_owned();
        if module == "lib" || module == "main" {
            continue;
        }
        let text = std::fs::read_to_string(&file).expect("readable");
        for target in imported(&non_test_code(&text)) {
            if target != module {
                imports
                    .entry(module.clone())
                    .or_default()
                    .entry(target)
                    .or_insert_with(|| relative.to_path_buf());
            }
        }
    }
    imports
}

#[test]
fn every_module_has_a_floor_and_no_import_runs_up() {
    let floors = floors();
    let modules = modules();
    let unplaced: Vec<&String> = modules
        .iter()
        .filter(|m| !floors.contains_key(*m))
        .collect();
    assert!(
        unplaced.is_empty(),
        "modules without a floor in docs/design.md: {unplaced:?}"
    );
    let unknown: Vec<&String> = floors.keys().filter(|m| !modules.contains(*m)).collect();
    assert!(
        unknown.is_empty(),
        "docs/design.md places modules lib.rs lacks: {unknown:?}"
    );
    let mut upward = Vec::new();
    for (module, targets) in imports() {
        for (target, file) in targets {
            let (from, to) = (floors[&module], floors[&target]);
            if to > from {
                upward.push(format!(
                    "{} imports {target} (floor {to}) from floor {from}",
                    file.display()
                ));
            }
        }
    }
    assert!(
        upward.is_empty(),
        "imports that run up:\n{}",
        upward.join("\n")
    );
}

#[test]
fn the_modules_imports_form_no_circle() {
    let imports = imports();
    // Kahn's algorithm: take modules that import nothing left until none remain.
    let mut left: BTreeMap<&String, BTreeSet<&String>> = imports
        .iter()
        .map(|(module, targets)| (module, targets.keys().collect()))
        .collect();
    loop {
        let done: Vec<&String> = left
            .iter()
            .filter(|(_, targets)| targets.iter().all(|t| !left.contains_key(t)))
            .map(|(module, _)| *module)
            .collect();
        if done.is_empty() {
            break;
        }
        for module in done {
            left.remove(module);
        }
    }
    assert!(
        left.is_empty(),
        "modules in a circle of imports: {:?}",
        left.keys()
    );
}

#[test]
fn the_reader_sees_imports_and_skips_tests_and_comments() {
    let text = "use crate::model::Policy;\n// crate::report in a comment\n\
                #[cfg(test)]\nmod tests {\n    use crate::report::x;\n}\n\
                #[cfg(test)]\npub(crate) mod fixtures;\nfn f() { crate::stats::g(); }\n";
    let seen = imported(&non_test_code(text));
    assert_eq!(
        seen,
        BTreeSet::from(["model".to_owned(), "stats".to_owned()])
    );
}
