//! PTX cut into one module per entry point.
//!
//! The driver compiles a PTX module when it is loaded, all of it, and caches the machine code
//! in `~/.nv/ComputeCache`. A large module of many kernels therefore costs its whole compile on
//! the first run on every fresh machine or container, whichever kernels the process launches.
//! gm's fused kernel has 88 entry points in 10.9 MB of PTX. On an H200 with an empty cache its
//! first load took 53 s, against 1.9 s for the whole run once the cache was warm. Loaded one
//! entry point at a time, only the kernels a process launches compile.
//!
//! An entry point's module is the file's prelude, then the functions the entry calls, then the
//! entry itself. The prelude is everything outside function and entry bodies: `.version`,
//! `.target`, `.address_size` and the global and shared declarations. The functions include
//! their own callees, and are matched by name. The cut is textual, over the layout NVVM emits,
//! with each body opening at a line of its own and closing at a `}` in column 0. A text it does
//! not understand leaves the entry unknown, and [`Device::entry_kernel`] then loads the whole
//! module instead.
//!
//! [`Device::entry_kernel`]: crate::Device::entry_kernel

use std::collections::HashMap;

/// A PTX text and its entry points, each loadable as a module of its own
/// ([`Device::entry_kernel`](crate::Device::entry_kernel)).
#[derive(Debug)]
pub struct EntryModules {
    name: &'static str,
    ptx: &'static str,
    /// Everything outside function and entry bodies, in order.
    prelude: String,
    /// `.func` pieces (declarations and definitions) in file order, with their names.
    funcs: Vec<(&'static str, &'static str)>,
    entries: HashMap<&'static str, &'static str>,
}

/// One top-level piece of the text.
enum Piece {
    Prelude(&'static str),
    Func(&'static str, &'static str),
    Entry(&'static str, &'static str),
}

impl EntryModules {
    /// Cuts `ptx` (the module `name`) at its entry points. Cheap next to compiling it: one pass
    /// over the text, which is borrowed, not copied.
    pub fn parse(name: &'static str, ptx: &'static str) -> EntryModules {
        let mut prelude = String::new();
        let mut funcs = Vec::new();
        let mut entries = HashMap::new();
        for piece in pieces(ptx) {
            match piece {
                Piece::Prelude(text) => prelude.push_str(text),
                Piece::Func(name, text) => funcs.push((name, text)),
                Piece::Entry(name, text) => {
                    entries.insert(name, text);
                }
            }
        }
        EntryModules {
            name,
            ptx,
            prelude,
            funcs,
            entries,
        }
    }

    /// The whole module's name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The whole PTX text.
    pub fn ptx(&self) -> &'static str {
        self.ptx
    }

    /// The entry points found, in no particular order.
    pub fn entry_names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.entries.keys().copied()
    }

    /// The name of entry point `entry` as the text spells it, with the text's lifetime.
    pub(crate) fn entry_name(&self, entry: &str) -> Option<&'static str> {
        self.entries.get_key_value(entry).map(|(k, _)| *k)
    }

    /// The PTX of a module holding only entry point `entry` and what it needs; `None` when
    /// the text has no such entry point (or one this cut does not recognise).
    pub fn module_text(&self, entry: &str) -> Option<String> {
        let body = *self.entries.get(entry)?;
        let wanted = self.callees(body);
        let mut text = String::with_capacity(self.prelude.len() + body.len() + 1024);
        text.push_str(&self.prelude);
        for (name, piece) in &self.funcs {
            if wanted.contains(name) {
                text.push_str(piece);
            }
        }
        text.push_str(body);
        Some(text)
    }

    /// The functions `body` names, and theirs in turn.
    fn callees(&self, body: &str) -> Vec<&'static str> {
        let mut wanted: Vec<&'static str> = Vec::new();
        let mut todo = vec![body];
        while let Some(text) = todo.pop() {
            for (name, piece) in &self.funcs {
                if !wanted.contains(name) && names(text, name) {
                    wanted.push(name);
                    todo.push(piece);
                }
            }
        }
        wanted
    }
}

/// Whether `text` names the symbol `name` (not merely a longer name that starts with it).
fn names(text: &str, name: &str) -> bool {
    let symbol = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '$';
    text.match_indices(name).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + name.len()..].chars().next();
        !before.is_some_and(symbol) && !after.is_some_and(symbol)
    })
}

/// The text's top-level pieces: a body runs from its header line (`.entry` or `.func`, with
/// any linkage before it) to the next `}` or `;` alone in column 0.
fn pieces(ptx: &'static str) -> Vec<Piece> {
    let mut out = Vec::new();
    let mut at = 0;
    let mut open: Option<(usize, bool, &'static str)> = None;
    for line in ptx.split_inclusive('\n') {
        let start = at;
        at += line.len();
        match open {
            None => match header(line) {
                Some((entry, name)) => open = Some((start, entry, name)),
                None => out.push(Piece::Prelude(line)),
            },
            Some((from, entry, name)) => {
                let closing = line.trim_end();
                if closing == "}" || closing == ";" {
                    let text = &ptx[from..at];
                    out.push(match entry {
                        true => Piece::Entry(name, text),
                        false => Piece::Func(name, text),
                    });
                    open = None;
                }
            }
        }
    }
    if let Some((from, _, _)) = open {
        // An unterminated body: keep it in the prelude, so that no entry loses text silently.
        out.push(Piece::Prelude(&ptx[from..]));
    }
    out
}

/// Whether `line` opens an entry point (true) or a function (false), and its name.
fn header(line: &'static str) -> Option<(bool, &'static str)> {
    if !line.starts_with('.') {
        return None;
    }
    let mut rest = line.trim_start();
    for linkage in [".visible", ".weak", ".extern"] {
        rest = rest.strip_prefix(linkage).map_or(rest, str::trim_start);
    }
    let (entry, rest) = if let Some(r) = rest.strip_prefix(".entry") {
        (true, r)
    } else if let Some(r) = rest.strip_prefix(".func") {
        (false, r)
    } else {
        return None;
    };
    let mut rest = rest.trim_start();
    // A function's return parameters come first, in parentheses.
    if !entry && rest.starts_with('(') {
        rest = rest[rest.find(')')? + 1..].trim_start();
    }
    let end = rest
        .find(|c: char| c == '(' || c.is_whitespace())
        .unwrap_or(rest.len());
    (end > 0).then_some((entry, &rest[..end]))
}

#[cfg(test)]
mod tests {
    use super::EntryModules;

    const PTX: &str = "//\n// Generated by NVIDIA NVVM Compiler\n.version 8.0\n.target sm_75\n\
.address_size 64\n\n.shared .align 4 .b8 shared_table[76];\n.global .align 4 .u32 counter;\n\n\
.func  (.param .b32 func_retval0) helper_inner(\n\t.param .b32 helper_inner_param_0\n)\n;\n\
.func  (.param .b32 func_retval0) helper(\n\t.param .b32 helper_param_0\n)\n{\n\
\t.reg .b32 %r<3>;\n\t{\n\tcall.uni (retval0), helper_inner, (param0);\n\t}\n\tret;\n}\n\
.func  (.param .b32 func_retval0) helper_inner(\n\t.param .b32 helper_inner_param_0\n)\n{\n\
\tret;\n}\n.func unused_helper()\n{\n\tret;\n}\n\n\
.visible .entry plain(\n\t.param .u64 plain_param_0\n)\n{\n\t.reg .b32 %r<2>;\n\t{\n\
\tst.global.u32 [counter], %r1;\n\t}\n\tret;\n}\n\n\
.visible .entry calls(\n\t.param .u64 calls_param_0\n)\n{\n\t{\n\
\tcall.uni (retval0), helper, (param0);\n\t}\n\tret;\n}\n\n\
.visible .entry calls_not_helper_x(\n)\n{\n\tmov.u32 %r1, helper_x;\n\tret;\n}\n";

    #[test]
    fn each_entry_gets_the_prelude_its_callees_and_itself() {
        let m = EntryModules::parse("test", PTX);
        let mut names: Vec<_> = m.entry_names().collect();
        names.sort_unstable();
        assert_eq!(names, ["calls", "calls_not_helper_x", "plain"]);

        let plain = m.module_text("plain").unwrap();
        for kept in [
            ".version 8.0",
            ".target sm_75",
            ".address_size 64",
            "shared_table[76]",
        ] {
            assert!(plain.contains(kept), "{kept} missing:\n{plain}");
        }
        assert_eq!(plain.matches(".entry").count(), 1, "{plain}");
        assert!(plain.contains(".visible .entry plain("));
        assert!(!plain.contains("helper"), "{plain}");

        // The entry's callee and the callee's own, declaration before definition, in file
        // order; the unused function left out.
        let calls = m.module_text("calls").unwrap();
        assert_eq!(calls.matches(".entry").count(), 1, "{calls}");
        let declared = calls.find(")\n;\n").unwrap();
        let helper = calls.find("helper(\n").unwrap();
        let inner = calls.rfind("helper_inner(\n").unwrap();
        assert!(declared < helper && helper < inner, "{calls}");
        assert!(!calls.contains("unused_helper"), "{calls}");
        assert!(calls.ends_with("\tret;\n}\n"), "{calls}");

        // A longer name that starts with a function's name is not a call of it.
        let not = m.module_text("calls_not_helper_x").unwrap();
        assert!(!not.contains(".func"), "{not}");

        assert!(m.module_text("absent").is_none());
        assert_eq!(m.entry_name("plain"), Some("plain"));
    }

    #[test]
    fn the_cut_loses_no_line() {
        // Every line of the text is in the prelude, a function or an entry, exactly once.
        let m = EntryModules::parse("test", PTX);
        let funcs: usize = m.funcs.iter().map(|(_, t)| t.len()).sum();
        let entries: usize = m.entries.values().map(|t| t.len()).sum();
        assert_eq!(m.prelude.len() + funcs + entries, PTX.len());
    }

    #[test]
    fn an_unterminated_body_stays_whole_in_the_prelude() {
        let ptx = ".version 8.0\n.visible .entry cut(\n)\n{\n\tret;\n";
        let m = EntryModules::parse("cut", ptx);
        assert_eq!(m.entry_names().count(), 0);
        assert!(m.module_text("cut").is_none());
        assert_eq!(m.prelude, ptx);
    }
}
