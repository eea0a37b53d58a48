//! `meta/info.json`: the frame rate, the cameras (features of dtype "video") and where
//! files live.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::error::LeRobotError;

/// What gm reads of a LeRobot v3 dataset's `meta/info.json`.
#[derive(Debug, Clone, PartialEq)]
pub struct LeRobotInfo {
    /// `codebase_version` ("v3.0").
    pub codebase_version: String,
    /// Frames per second of the data (and of every camera).
    pub fps: f64,
    /// The camera features (`dtype` "video"), in the order info.json lists them.
    pub video_keys: Vec<String>,
    /// `video_path` template (`videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4`).
    pub video_path: String,
    /// `data_path` template.
    pub data_path: String,
    /// `total_episodes`.
    pub total_episodes: usize,
    /// `total_frames`.
    pub total_frames: usize,
}

impl LeRobotInfo {
    /// Reads `root/meta/info.json`; datasets before v3.0 are refused with what to do.
    pub fn read(root: &Path) -> Result<LeRobotInfo, LeRobotError> {
        let path = root.join("meta/info.json");
        let text = std::fs::read_to_string(&path).map_err(|source| LeRobotError::Io {
            path: path.clone(),
            source,
        })?;
        let bad = |reason: String| LeRobotError::Info {
            path: path.clone(),
            reason,
        };
        let v: Value = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
        let text_of = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
        let version =
            text_of("codebase_version").ok_or_else(|| bad("no codebase_version".into()))?;
        if !version.starts_with("v3") {
            return Err(bad(format!(
                "codebase_version {version}: gm reads LeRobot v3 datasets (convert with \
                 `python -m lerobot.scripts.convert_dataset_v21_to_v30`)"
            )));
        }
        let fps = v
            .get("fps")
            .and_then(Value::as_f64)
            .filter(|f| *f > 0.0)
            .ok_or_else(|| bad("no positive fps".into()))?;
        let features = v
            .get("features")
            .and_then(Value::as_object)
            .ok_or_else(|| bad("no features".into()))?;
        let video_keys = features
            .iter()
            .filter(|(_, f)| f.get("dtype").and_then(Value::as_str) == Some("video"))
            .map(|(k, _)| k.clone())
            .collect();
        let count = |k: &str| v.get(k).and_then(Value::as_u64).unwrap_or(0) as usize;
        Ok(LeRobotInfo {
            codebase_version: version,
            fps,
            video_keys,
            video_path: text_of("video_path").unwrap_or_else(|| {
                "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4".into()
            }),
            data_path: text_of("data_path").unwrap_or_else(|| {
                "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet".into()
            }),
            total_episodes: count("total_episodes"),
            total_frames: count("total_frames"),
        })
    }

    /// A path template filled as Python's `str.format` fills LeRobot's (`{name}` and
    /// `{name:03d}`), relative to `root`.
    pub(crate) fn fill(
        root: &Path,
        template: &str,
        key: &str,
        chunk: usize,
        file: usize,
    ) -> Result<PathBuf, LeRobotError> {
        let mut out = String::new();
        let mut rest = template;
        while let Some(open) = rest.find('{') {
            out.push_str(&rest[..open]);
            let close = rest[open..]
                .find('}')
                .map(|c| open + c)
                .ok_or_else(|| LeRobotError::Inconsistent(format!("path template {template:?}")))?;
            let field = &rest[open + 1..close];
            let (name, spec) = field.split_once(':').unwrap_or((field, ""));
            let width: usize = spec
                .trim_end_matches('d')
                .trim_start_matches('0')
                .parse()
                .unwrap_or(0);
            match name {
                "video_key" => out.push_str(key),
                "chunk_index" => out.push_str(&format!("{chunk:0width$}")),
                "file_index" => out.push_str(&format!("{file:0width$}")),
                other => {
                    return Err(LeRobotError::Inconsistent(format!(
                        "path template {template:?}: unknown field {other:?}"
                    )));
                }
            }
            rest = &rest[close + 1..];
        }
        out.push_str(rest);
        Ok(root.join(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_fill_as_python_formats_them() {
        let p = LeRobotInfo::fill(
            Path::new("/d"),
            "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4",
            "observation.images.top",
            2,
            17,
        )
        .unwrap();
        assert_eq!(
            p,
            Path::new("/d/videos/observation.images.top/chunk-002/file-017.mp4")
        );
        let p = LeRobotInfo::fill(Path::new("r"), "x/{file_index}.p", "", 0, 1234).unwrap();
        assert_eq!(p, Path::new("r/x/1234.p"));
        assert!(LeRobotInfo::fill(Path::new("r"), "{episode_index}", "", 0, 0).is_err());
    }
}
