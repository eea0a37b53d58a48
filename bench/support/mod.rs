//! Helpers shared by the benches of several crates (included with `#[path]`): settings from
//! the environment and the host and device costs each JSON record carries.
#![allow(dead_code)] // each bench uses a different subset

/// `name` from the environment as a number, or `default`.
pub fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// `name` from the environment as a switch (0 is off, any other number on), or `default`.
pub fn env_flag(name: &str, default: bool) -> bool {
    env_usize(name, usize::from(default)) != 0
}

/// `name` from the environment as a comma-separated list, or `default`.
pub fn env_list(name: &str, default: &str) -> Vec<String> {
    std::env::var(name)
        .unwrap_or_else(|_| default.to_string())
        .split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// This process's user + system CPU seconds.
pub fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit(')').next().unwrap_or("");
    let f: Vec<&str> = after.split_whitespace().collect();
    let t = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (t(11) + t(12)) / 100.0
}

/// Host CPU seconds of this process's live threads, summed by thread name without its
/// trailing number (`gm-nvdec-3` counts as `gm-nvdec`): which pool the cores went to.
pub fn cpu_seconds_by_thread() -> std::collections::BTreeMap<String, f64> {
    let mut by = std::collections::BTreeMap::new();
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return by;
    };
    for task in tasks.flatten() {
        let stat = std::fs::read_to_string(task.path().join("stat")).unwrap_or_default();
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let name = stat[open + 1..close].trim_end_matches(|c: char| c.is_ascii_digit());
        let name = name.trim_end_matches('-').to_string();
        let f: Vec<&str> = stat[close + 1..].split_whitespace().collect();
        let t = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
        *by.entry(name).or_insert(0.0) += (t(11) + t(12)) / 100.0;
    }
    by
}

/// Cores each thread group kept busy between two [`cpu_seconds_by_thread`] snapshots
/// `wall` seconds apart (groups under a hundredth of a core left out).
pub fn cores_by_thread(
    before: &std::collections::BTreeMap<String, f64>,
    after: &std::collections::BTreeMap<String, f64>,
    wall: f64,
) -> std::collections::BTreeMap<String, f64> {
    after
        .iter()
        .map(|(k, v)| {
            let busy = (v - before.get(k).copied().unwrap_or(0.0)) / wall.max(1e-9);
            (k.clone(), (busy * 100.0).round() / 100.0)
        })
        .filter(|(_, c)| *c >= 0.01)
        .collect()
}

/// Resident memory, KiB.
pub fn rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// Median and (max - min) / median of `xs`.
pub fn median_spread(xs: &[f64]) -> (f64, f64) {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        return (0.0, 0.0);
    }
    let m = if v.len() % 2 == 1 {
        v[v.len() / 2]
    } else {
        (v[v.len() / 2 - 1] + v[v.len() / 2]) / 2.0
    };
    let spread = if m > 0.0 {
        (v[v.len() - 1] - v[0]) / m
    } else {
        0.0
    };
    (m, spread)
}
