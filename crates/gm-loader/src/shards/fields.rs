//! A sample's fields chosen by extension: the image, the video, and the label from `.cls`
//! (integer text), else `.txt`, else a key of `.json`.

use super::tar_index::{IndexedSample, Member};
use super::tar_stream::RawSample;
use crate::image::{IMAGE_EXTENSIONS, Label};
use crate::video::VIDEO_EXTENSIONS;

/// Why a label member gives no label.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum LabelError {
    /// A `.json` member that does not parse.
    #[error("{member}: not JSON: {reason}")]
    NotJson { member: String, reason: String },
    /// A `.json` member without an integer at the key.
    #[error("{member}: no integer at key {key:?}")]
    NoInteger { member: String, key: String },
    /// A `.cls`/`.txt` member that is not UTF-8.
    #[error("{member}: not text: {reason}")]
    NotText { member: String, reason: String },
    /// A `.cls`/`.txt` member whose text is not an integer.
    #[error("{member}: label {text:?}: {reason}")]
    NotInteger {
        member: String,
        text: String,
        reason: String,
    },
}

/// The label fields in order of preference.
const LABEL_ORDER: &[&str] = &["cls", "txt", "json"];

fn has_ext(ext: &str, set: &[&str]) -> bool {
    set.iter().any(|e| ext.eq_ignore_ascii_case(e))
}

/// The first image member.
pub(crate) fn image(sample: &IndexedSample) -> Option<&Member> {
    sample
        .members
        .iter()
        .find(|m| has_ext(&m.ext, IMAGE_EXTENSIONS))
}

/// The first video member.
pub(crate) fn video(sample: &IndexedSample) -> Option<&Member> {
    sample
        .members
        .iter()
        .find(|m| has_ext(&m.ext, VIDEO_EXTENSIONS))
}

/// The `.json` member.
pub(crate) fn json(sample: &IndexedSample) -> Option<&Member> {
    sample
        .members
        .iter()
        .find(|m| m.ext.eq_ignore_ascii_case("json"))
}

/// The member holding the label, by preference, with its position in the sample.
pub(crate) fn label_member(sample: &IndexedSample) -> Option<(usize, &Member)> {
    LABEL_ORDER.iter().find_map(|ext| {
        sample
            .members
            .iter()
            .enumerate()
            .find(|(_, m)| m.ext.eq_ignore_ascii_case(ext))
    })
}

/// The label in a label member's bytes: integer text, or the integer at `json_key`.
pub(crate) fn parse_label(
    member: &Member,
    bytes: &[u8],
    json_key: &str,
) -> Result<Label, LabelError> {
    parse_label_of(&member.name, &member.ext, bytes, json_key)
}

/// A streamed sample's image member, as its position among the members.
pub(crate) fn raw_image(sample: &RawSample) -> Option<usize> {
    sample
        .members
        .iter()
        .position(|(ext, _)| has_ext(ext, IMAGE_EXTENSIONS))
}

/// A streamed sample's label: `None` without a label member.
pub(crate) fn raw_label(sample: &RawSample, json_key: &str) -> Option<Result<Label, LabelError>> {
    LABEL_ORDER.iter().find_map(|want| {
        let (ext, bytes) = sample
            .members
            .iter()
            .find(|(ext, _)| ext.eq_ignore_ascii_case(want))?;
        let name = format!("{}.{ext}", sample.key);
        Some(parse_label_of(&name, ext, bytes, json_key))
    })
}

fn parse_label_of(
    what: &str,
    ext: &str,
    bytes: &[u8],
    json_key: &str,
) -> Result<Label, LabelError> {
    let member = || what.to_string();
    if ext.eq_ignore_ascii_case("json") {
        let value: serde_json::Value =
            serde_json::from_slice(bytes).map_err(|e| LabelError::NotJson {
                member: member(),
                reason: e.to_string(),
            })?;
        return value
            .get(json_key)
            .and_then(serde_json::Value::as_i64)
            .ok_or_else(|| LabelError::NoInteger {
                member: member(),
                key: json_key.to_string(),
            });
    }
    let text = std::str::from_utf8(bytes).map_err(|e| LabelError::NotText {
        member: member(),
        reason: e.to_string(),
    })?;
    text.trim().parse().map_err(|e| LabelError::NotInteger {
        member: member(),
        text: text.trim().to_string(),
        reason: format!("{e}"),
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn member(name: &str) -> Member {
        Member {
            ext: super::super::tar_index::split_name(name).1.to_string(),
            offset: 512,
            size: 1,
            name: name.to_string(),
        }
    }

    #[test]
    fn fields_are_chosen_by_extension_and_preference() {
        let s = IndexedSample {
            members: ["k.json", "k.txt", "k.JPG", "k.mp4", "k.cls"]
                .into_iter()
                .map(member)
                .collect(),
        };
        assert_eq!(image(&s).unwrap().name, "k.JPG");
        assert_eq!(video(&s).unwrap().name, "k.mp4");
        assert_eq!(label_member(&s).unwrap().1.name, "k.cls");
        let s = IndexedSample {
            members: vec![member("k.json"), member("k.txt")],
        };
        assert_eq!(label_member(&s).unwrap().1.name, "k.txt");
        assert!(image(&s).is_none());
    }

    #[test]
    fn labels_parse_from_text_and_json() {
        assert_eq!(parse_label(&member("a.cls"), b" 17\n", "label"), Ok(17));
        assert_eq!(
            parse_label(&member("a.json"), br#"{"label": 4, "x": 1}"#, "label"),
            Ok(4)
        );
        assert_eq!(parse_label(&member("a.json"), br#"{"y": 4}"#, "y"), Ok(4));
        let e = parse_label(&member("a.cls"), b"dog", "label")
            .unwrap_err()
            .to_string();
        assert!(e.contains("a.cls") && e.contains("dog"), "{e}");
        assert!(parse_label(&member("a.json"), br#"{"label": "x"}"#, "label").is_err());
    }
}
