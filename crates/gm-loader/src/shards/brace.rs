//! Brace patterns for shard names, as webdataset writes them: `train-{000000..000999}.tar`
//! (a zero-padded range), `{a,b}` (alternatives, which may nest), and several patterns joined
//! by `::`.

use super::ShardError;

/// What is wrong with a brace pattern.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BraceError {
    /// A `}` with no `{` before it.
    #[error("a `}}` without its `{{`")]
    UnopenedClose,
    /// A `{` with no `}` after it.
    #[error("a `{{` without its `}}`")]
    UnclosedOpen,
    /// The expansion would pass [`MAX_EXPANSION`] names.
    #[error("expands to more than {MAX_EXPANSION} names")]
    TooMany,
    /// A group that is neither `a,b` nor `m..n`.
    #[error("`{{{0}}}` is neither `a,b` nor `m..n`")]
    NotAGroup(String),
    /// A range whose bounds are not non-negative integers.
    #[error("`{{{0}}}`: bounds must be non-negative integers")]
    BadBounds(String),
}

/// Expansions past this many names are refused: a typo such as `{0..999999999}` should not
/// take the memory of the machine.
pub const MAX_EXPANSION: usize = 1_000_000;

/// Expands `pattern` into shard names, in order.
pub fn expand(pattern: &str) -> Result<Vec<String>, ShardError> {
    let mut out = Vec::new();
    for part in pattern.split("::").filter(|p| !p.is_empty()) {
        let names = expand_one(part).map_err(|reason| ShardError::Brace {
            pattern: pattern.to_string(),
            reason,
        })?;
        if out.len() + names.len() > MAX_EXPANSION {
            return Err(too_many(pattern));
        }
        out.extend(names);
    }
    Ok(out)
}

fn too_many(pattern: &str) -> ShardError {
    ShardError::Brace {
        pattern: pattern.to_string(),
        reason: BraceError::TooMany,
    }
}

/// One pattern without `::`.
fn expand_one(s: &str) -> Result<Vec<String>, BraceError> {
    let Some(open) = s.find('{') else {
        if s.contains('}') {
            return Err(BraceError::UnopenedClose);
        }
        return Ok(vec![s.to_string()]);
    };
    if s[..open].contains('}') {
        return Err(BraceError::UnopenedClose);
    }
    let close = matching(s, open).ok_or(BraceError::UnclosedOpen)?;
    let (prefix, body, suffix) = (&s[..open], &s[open + 1..close], &s[close + 1..]);
    let alternatives = group(body)?;
    let suffixes = expand_one(suffix)?;
    let total = alternatives.len().saturating_mul(suffixes.len());
    if total > MAX_EXPANSION {
        return Err(BraceError::TooMany);
    }
    let mut out = Vec::with_capacity(total);
    for alt in &alternatives {
        for suf in &suffixes {
            out.push(format!("{prefix}{alt}{suf}"));
        }
    }
    Ok(out)
}

/// The index of the `}` closing the `{` at `open`.
fn matching(s: &str, open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in s.char_indices().skip_while(|&(i, _)| i < open) {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// The names of one group's body: `a,b,...` (each expanded) or `m..n`.
fn group(body: &str) -> Result<Vec<String>, BraceError> {
    let parts = split_top_level(body);
    if parts.len() > 1 {
        let mut out = Vec::new();
        for part in parts {
            out.extend(expand_one(part)?);
            if out.len() > MAX_EXPANSION {
                return Err(BraceError::TooMany);
            }
        }
        return Ok(out);
    }
    let Some((lo, hi)) = body.split_once("..") else {
        return Err(BraceError::NotAGroup(body.to_string()));
    };
    range(lo, hi).ok_or_else(|| BraceError::BadBounds(body.to_string()))?
}

/// `m..n`, ascending or descending, zero-padded to the bounds' width when a bound has a
/// leading zero (`000..999`), as braceexpand does.
fn range(lo: &str, hi: &str) -> Option<Result<Vec<String>, BraceError>> {
    let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    if !digits(lo) || !digits(hi) {
        return None;
    }
    let (a, b): (u64, u64) = (lo.parse().ok()?, hi.parse().ok()?);
    let count = a.abs_diff(b).saturating_add(1);
    if count > MAX_EXPANSION as u64 {
        return Some(Err(BraceError::TooMany));
    }
    let padded = |t: &str| t.len() > 1 && t.starts_with('0');
    let width = if padded(lo) || padded(hi) {
        lo.len().max(hi.len())
    } else {
        0
    };
    let names = if a <= b {
        (a..=b).map(|v| format!("{v:0width$}")).collect()
    } else {
        (b..=a).rev().map(|v| format!("{v:0width$}")).collect()
    };
    Some(Ok(names))
}

/// Splits at commas outside nested braces.
fn split_top_level(body: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    for (i, c) in body.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&body[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&body[start..]);
    parts
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_forms_webdataset_writes() {
        assert_eq!(
            expand("s3://b/train-{000..003}.tar").unwrap(),
            [
                "s3://b/train-000.tar",
                "s3://b/train-001.tar",
                "s3://b/train-002.tar",
                "s3://b/train-003.tar"
            ]
        );
        assert_eq!(expand("{a,b{1..2}}-x").unwrap(), ["a-x", "b1-x", "b2-x"]);
        assert_eq!(
            expand("a.tar::{b,c}.tar").unwrap(),
            ["a.tar", "b.tar", "c.tar"]
        );
        assert_eq!(expand("{3..1}").unwrap(), ["3", "2", "1"]);
        assert_eq!(expand("{8..10}").unwrap(), ["8", "9", "10"]);
        assert_eq!(expand("{08..10}").unwrap(), ["08", "09", "10"]);
    }

    #[test]
    fn bad_patterns_are_errors_that_name_the_pattern() {
        for bad in ["a{1..2", "a}b", "{x}", "{1..b}", "{-1..2}", "{0..99999999}"] {
            let e = expand(bad).unwrap_err().to_string();
            assert!(e.contains(bad), "{e}");
        }
        let big = "{000..999}{000..999}{0..1}";
        assert!(expand(big).unwrap_err().to_string().contains("more than"));
        assert_eq!(expand("{000..999}{000..999}").unwrap().len(), MAX_EXPANSION);
    }

    proptest! {
        #[test]
        fn a_range_gives_every_number_once_in_order(lo in 0u64..5000, n in 0u64..300, w in 1usize..8) {
            let hi = lo + n;
            let pattern = format!("p{{{lo:0w$}..{hi:0w$}}}.tar");
            let names = expand(&pattern).unwrap();
            prop_assert_eq!(names.len() as u64, n + 1);
            let padded = w > 1 && (format!("{lo:0w$}").starts_with('0') || format!("{hi:0w$}").starts_with('0'));
            for (k, name) in names.iter().enumerate() {
                let digits = name.strip_prefix('p').unwrap().strip_suffix(".tar").unwrap();
                prop_assert_eq!(digits.parse::<u64>().unwrap(), lo + k as u64);
                if padded {
                    prop_assert_eq!(digits.len(), format!("{hi:0w$}").len().max(w));
                }
            }
        }

        #[test]
        fn groups_multiply_and_double_colons_concatenate(
            a in proptest::collection::vec("[a-z]{1,4}", 2..5),
            b in proptest::collection::vec("[a-z]{1,4}", 2..5),
        ) {
            let p = format!("x{{{}}}-{{{}}}", a.join(","), b.join(","));
            let names = expand(&p).unwrap();
            let want: Vec<String> = a.iter()
                .flat_map(|x| b.iter().map(move |y| format!("x{x}-{y}")))
                .collect();
            prop_assert_eq!(&names, &want);
            let q = format!("{p}::{p}");
            let twice = expand(&q).unwrap();
            prop_assert_eq!(twice, [names.clone(), names].concat());
        }

        #[test]
        fn text_without_braces_is_itself(s in "[a-zA-Z0-9_./:-]{0,30}") {
            let parts: Vec<String> = s.split("::").filter(|p| !p.is_empty()).map(String::from).collect();
            prop_assert_eq!(expand(&s).unwrap(), parts);
        }
    }
}
