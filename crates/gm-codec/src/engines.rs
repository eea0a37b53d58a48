//! How many hardware decode engines a GPU has. The driver API does not report them, so they
//! come from NVIDIA's published specifications, by product name.

/// Hardware decode engines of one GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EngineCounts {
    /// NVDEC video decode engines.
    pub nvdec: u32,
    /// NVJPG JPEG decode engines.
    pub nvjpg: u32,
}

/// (name fragment, NVDEC, NVJPG), most specific first.
const TABLE: &[(&str, u32, u32)] = &[
    ("GH200", 7, 7),
    ("H200", 7, 7),
    ("H100", 7, 7),
    ("H800", 7, 7),
    ("A100", 5, 1),
    ("A800", 5, 1),
    ("A30", 4, 1),
    ("L40S", 3, 3),
    ("L40", 3, 3),
    ("L4", 4, 4),
];

/// Engine counts for a device name such as `NVIDIA H100 80GB HBM3`, if the product is known.
pub fn engines_for(device_name: &str) -> Option<EngineCounts> {
    let upper = device_name.to_ascii_uppercase();
    TABLE.iter().find_map(|&(frag, nvdec, nvjpg)| {
        upper
            .split(|c: char| !c.is_ascii_alphanumeric())
            .any(|w| w == frag)
            .then_some(EngineCounts { nvdec, nvjpg })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_products_by_their_driver_names() {
        let h = EngineCounts { nvdec: 7, nvjpg: 7 };
        assert_eq!(engines_for("NVIDIA H100 80GB HBM3"), Some(h));
        assert_eq!(engines_for("NVIDIA H200"), Some(h));
        assert_eq!(engines_for("NVIDIA H100 PCIe"), Some(h));
        assert_eq!(
            engines_for("NVIDIA A100-SXM4-80GB"),
            Some(EngineCounts { nvdec: 5, nvjpg: 1 })
        );
        assert_eq!(
            engines_for("NVIDIA L40S"),
            Some(EngineCounts { nvdec: 3, nvjpg: 3 })
        );
        assert_eq!(
            engines_for("NVIDIA L4"),
            Some(EngineCounts { nvdec: 4, nvjpg: 4 })
        );
        assert_eq!(engines_for("NVIDIA GeForce RTX 4090"), None);
    }
}
