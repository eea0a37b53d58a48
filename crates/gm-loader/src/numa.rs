//! The host CPUs a loader's threads run on: those of its GPU's NUMA node.
//!
//! On a host of several sockets each GPU hangs off one of them. A loader whose threads and
//! pinned staging sit on the other socket sends every file it reads and every byte it uploads
//! across the link between the sockets, and competes there with the loaders of that socket's
//! GPUs. So where the GPU's node is known (Linux's sysfs: the PCI device's `numa_node`, the
//! node's `cpulist`) and holds only part of the CPUs this process may use, the loader pins its
//! threads to the node's CPUs and sets its GPU stages up (their pinned buffers, the decoder's
//! threads) from a thread pinned there, so that memory is first touched on the node. Where the
//! host has one node, or the process is already confined to fewer CPUs, nothing changes.
//!
//! Placement changes which core runs a thread, never what it computes: batches stay
//! bit-reproducible for fixed settings.

use std::path::Path;

use crate::error::LoaderError;

/// The CPUs of one NUMA node that this process may run on, and the GPUs hanging off it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeCpus {
    /// The node's number.
    pub node: u32,
    /// The node's CPUs this process is allowed on (sorted).
    pub cpus: Vec<usize>,
    /// NVIDIA GPUs on this node (at least 1: the loader's).
    pub node_gpus: usize,
    /// NVIDIA GPUs on the host.
    pub host_gpus: usize,
}

impl NodeCpus {
    /// The node of the GPU at `pci_bus_id` (`domain:bus:device`, as
    /// [`gm_cuda::DeviceInfo::pci_bus_id`] gives it), from this host's sysfs; `None` where the
    /// host has one node, sysfs does not say, or placing would change nothing.
    pub fn of_gpu(pci_bus_id: &str) -> Option<NodeCpus> {
        NodeCpus::find(Path::new("/sys"), pci_bus_id, &allowed_cpus()?)
    }

    /// [`NodeCpus::of_gpu`] under any sysfs root and set of allowed CPUs.
    pub fn find(sysfs: &Path, pci_bus_id: &str, allowed: &[usize]) -> Option<NodeCpus> {
        let node = device_node(sysfs, &pci_device(pci_bus_id))?;
        let list =
            std::fs::read_to_string(sysfs.join(format!("devices/system/node/node{node}/cpulist")))
                .ok()?;
        let cpus: Vec<usize> = parse_cpulist(&list)?
            .into_iter()
            .filter(|c| allowed.contains(c))
            .collect();
        // A node holding every allowed CPU (one socket, or a process already confined to
        // it) has nothing to place; one holding none of them is not this process's to use.
        if cpus.is_empty() || cpus.len() >= allowed.len() {
            return None;
        }
        let gpus = nvidia_gpus(sysfs);
        let node_gpus = gpus.iter().filter(|&&n| n == Some(node)).count().max(1);
        Some(NodeCpus {
            node,
            cpus,
            node_gpus,
            host_gpus: gpus.len().max(node_gpus),
        })
    }

    /// The cores one of `loaders` loader processes of the host takes from this node: the
    /// loaders spread over the host's GPUs as launchers start them (one per GPU, or as many
    /// per GPU), so this node's share of them splits its CPUs.
    pub fn budget(&self, loaders: usize) -> usize {
        let here = (loaders.max(1) * self.node_gpus).div_ceil(self.host_gpus.max(1));
        (self.cpus.len() / here.max(1)).max(1)
    }

    /// Pins the calling thread to this node's CPUs; false (and logged) when the system
    /// refused, in which case the thread runs where it ran before.
    pub fn pin_current_thread(&self) -> bool {
        let ok = set_affinity(&self.cpus);
        if !ok {
            tracing::warn!(
                node = self.node,
                "could not pin a loader thread to its GPU's NUMA node"
            );
        }
        ok
    }

    /// In words: "NUMA node 1 (CPUs 32-63)".
    pub fn describe(&self) -> String {
        format!(
            "NUMA node {} (CPUs {})",
            self.node,
            format_cpulist(&self.cpus)
        )
    }
}

/// sysfs' name of a PCI device: `0000:17:00.0` for `0000:17:00` (CUDA gives no function; a GPU
/// is function 0).
fn pci_device(pci_bus_id: &str) -> String {
    let id = pci_bus_id.trim().to_ascii_lowercase();
    if id.contains('.') {
        id
    } else {
        format!("{id}.0")
    }
}

/// The node sysfs gives a PCI device, `None` for none (-1) or no such device.
fn device_node(sysfs: &Path, device: &str) -> Option<u32> {
    let text =
        std::fs::read_to_string(sysfs.join("bus/pci/devices").join(device).join("numa_node"))
            .ok()?;
    text.trim().parse::<u32>().ok()
}

/// The node of every NVIDIA display or 3D controller on the host (vendor 0x10de, PCI class 03).
fn nvidia_gpus(sysfs: &Path) -> Vec<Option<u32>> {
    let Ok(entries) = std::fs::read_dir(sysfs.join("bus/pci/devices")) else {
        return Vec::new();
    };
    let read = |p: &Path, f: &str| std::fs::read_to_string(p.join(f)).unwrap_or_default();
    let mut nodes = Vec::new();
    for e in entries.flatten() {
        let p = e.path();
        if read(&p, "vendor").trim() == "0x10de" && read(&p, "class").trim().starts_with("0x03") {
            nodes.push(read(&p, "numa_node").trim().parse::<u32>().ok());
        }
    }
    nodes
}

/// A Linux CPU list ("0-31,64-95", "3", "") as CPU numbers; `None` when malformed.
pub fn parse_cpulist(text: &str) -> Option<Vec<usize>> {
    let mut cpus = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (
                    a.trim().parse::<usize>().ok()?,
                    b.trim().parse::<usize>().ok()?,
                );
                if b < a || b - a > 1 << 16 {
                    return None;
                }
                cpus.extend(a..=b);
            }
            None => cpus.push(part.trim().parse().ok()?),
        }
    }
    cpus.sort_unstable();
    cpus.dedup();
    Some(cpus)
}

/// `cpus` (sorted) as a CPU list: runs as `a-b`.
pub fn format_cpulist(cpus: &[usize]) -> String {
    let mut runs: Vec<(usize, usize)> = Vec::new();
    for &c in cpus {
        match runs.last_mut() {
            Some((_, end)) if *end + 1 == c => *end = c,
            _ => runs.push((c, c)),
        }
    }
    let run = |&(a, b): &(usize, usize)| {
        if a == b {
            a.to_string()
        } else {
            format!("{a}-{b}")
        }
    };
    runs.iter().map(run).collect::<Vec<_>>().join(",")
}

/// The CPUs the calling thread may run on, `None` where the system does not say.
pub fn allowed_cpus() -> Option<Vec<usize>> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; sched_getaffinity writes at most
    // size_of::<cpu_set_t>() bytes into it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return None;
        }
        let max = 8 * std::mem::size_of::<libc::cpu_set_t>();
        Some((0..max).filter(|&c| libc::CPU_ISSET(c, &set)).collect())
    }
}

/// Restricts the calling thread to `cpus`; false when the system refused or none fits the set.
fn set_affinity(cpus: &[usize]) -> bool {
    let max = 8 * std::mem::size_of::<libc::cpu_set_t>();
    if cpus.is_empty() || cpus.iter().any(|&c| c >= max) {
        return false;
    }
    // SAFETY: as in `allowed_cpus`; every CPU set is below the set's capacity.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in cpus {
            libc::CPU_SET(c, &mut set);
        }
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
    }
}

/// `f` on a thread pinned to `node` (so that the pinned buffers and decoder threads it
/// creates belong to the node), or here without one.
pub(crate) fn on_node<T: Send>(
    node: Option<&NodeCpus>,
    f: impl FnOnce() -> Result<T, LoaderError> + Send,
) -> Result<T, LoaderError> {
    let Some(node) = node else { return f() };
    crate::sched::on_setup_thread(|| node.pin_current_thread(), |_| f())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// The stages' setup runs on a thread pinned to the node (so what it allocates and starts
    /// belongs there), its result and errors come back, and the caller's thread keeps its CPUs.
    #[test]
    fn the_setup_runs_on_the_nodes_cpus() {
        let allowed = crate::allowed_cpus().unwrap();
        let node = NodeCpus {
            node: 1,
            cpus: vec![allowed[0]],
            node_gpus: 1,
            host_gpus: 2,
        };
        let seen = on_node(Some(&node), || Ok(crate::allowed_cpus())).unwrap();
        assert_eq!(seen.unwrap(), vec![allowed[0]]);
        assert_eq!(crate::allowed_cpus().unwrap(), allowed);
        let err = on_node(Some(&node), || -> Result<(), LoaderError> {
            Err(LoaderError::Config("no device".into()))
        });
        assert!(matches!(err, Err(LoaderError::Config(m)) if m == "no device"));
        assert_eq!(on_node(None, || Ok(7)).unwrap(), 7);
    }

    /// A sysfs tree of two nodes (CPUs 0-7 and 8-15), with `gpus` as (PCI id, node).
    fn sysfs(gpus: &[(&str, i32)]) -> std::path::PathBuf {
        let root = std::env::temp_dir().join(format!(
            "gm-numa-{}-{}",
            std::process::id(),
            gpus.iter()
                .map(|g| g.0)
                .collect::<String>()
                .replace(':', "")
        ));
        let _ = std::fs::remove_dir_all(&root);
        for (n, list) in [(0, "0-7\n"), (1, "8-15\n")] {
            let d = root.join(format!("devices/system/node/node{n}"));
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("cpulist"), list).unwrap();
        }
        for (id, node) in gpus {
            let d = root.join("bus/pci/devices").join(id);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("vendor"), "0x10de\n").unwrap();
            std::fs::write(d.join("class"), "0x030200\n").unwrap();
            std::fs::write(d.join("numa_node"), format!("{node}\n")).unwrap();
        }
        // A NIC on node 1, which is no GPU.
        let nic = root.join("bus/pci/devices/0000:99:00.0");
        std::fs::create_dir_all(&nic).unwrap();
        std::fs::write(nic.join("vendor"), "0x15b3\n").unwrap();
        std::fs::write(nic.join("class"), "0x020000\n").unwrap();
        std::fs::write(nic.join("numa_node"), "1\n").unwrap();
        root
    }

    #[test]
    fn cpu_lists_parse_and_print_as_linux_writes_them() {
        assert_eq!(
            parse_cpulist("0-3,8,10-11\n").unwrap(),
            vec![0, 1, 2, 3, 8, 10, 11]
        );
        assert_eq!(parse_cpulist("").unwrap(), Vec::<usize>::new());
        assert_eq!(parse_cpulist("5-2"), None);
        assert_eq!(parse_cpulist("a-3"), None);
        assert_eq!(format_cpulist(&[0, 1, 2, 3, 8, 10, 11]), "0-3,8,10-11");
    }

    #[test]
    fn a_gpu_is_placed_on_its_node_and_shares_it_with_that_nodes_loaders() {
        let gpus = [
            ("0000:17:00.0", 0),
            ("0000:3a:00.0", 0),
            ("0000:9a:00.0", 1),
            ("0000:ba:00.0", 1),
            ("0000:db:00.0", 1),
        ];
        let root = sysfs(&gpus);
        let all: Vec<usize> = (0..16).collect();
        let n = NodeCpus::find(&root, "0000:9A:00", &all).unwrap();
        assert_eq!((n.node, n.node_gpus, n.host_gpus), (1, 3, 5));
        assert_eq!(n.cpus, (8..16).collect::<Vec<_>>());
        assert_eq!(n.describe(), "NUMA node 1 (CPUs 8-15)");
        // Five loaders, one per GPU: three on node 1 share its 8 CPUs.
        assert_eq!(n.budget(5), 2);
        // Ten, two per GPU: six here.
        assert_eq!(n.budget(10), 1);
        assert_eq!(n.budget(1), 8);
        let m = NodeCpus::find(&root, "0000:17:00", &all).unwrap();
        assert_eq!((m.node, m.node_gpus, m.budget(5)), (0, 2, 4));
        std::fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn nothing_is_placed_where_placing_changes_nothing() {
        let root = sysfs(&[("0000:17:00.0", 0), ("0000:9a:00.0", -1)]);
        let all: Vec<usize> = (0..16).collect();
        // No node for the device (a one-node host says -1), or no such device.
        assert_eq!(NodeCpus::find(&root, "0000:9a:00", &all), None);
        assert_eq!(NodeCpus::find(&root, "0000:42:00", &all), None);
        // A process already confined to node 0's CPUs, or to CPUs of the other node.
        let node0: Vec<usize> = (0..8).collect();
        assert_eq!(NodeCpus::find(&root, "0000:17:00", &node0), None);
        let node1: Vec<usize> = (8..16).collect();
        assert_eq!(NodeCpus::find(&root, "0000:17:00", &node1), None);
        // Confined to part of both nodes: the part on the GPU's node.
        let some = [2, 3, 9];
        let n = NodeCpus::find(&root, "0000:17:00", &some).unwrap();
        assert_eq!(n.cpus, vec![2, 3]);
        std::fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn a_pinned_thread_runs_only_on_its_nodes_cpus() {
        let allowed = allowed_cpus().unwrap();
        assert!(!allowed.is_empty());
        let one = NodeCpus {
            node: 0,
            cpus: vec![allowed[allowed.len() - 1]],
            node_gpus: 1,
            host_gpus: 1,
        };
        let seen = std::thread::spawn(move || {
            let ok = one.pin_current_thread();
            (ok, allowed_cpus().unwrap(), one.cpus)
        })
        .join()
        .unwrap();
        assert!(seen.0);
        assert_eq!(seen.1, seen.2);
        // The test's own thread kept its CPUs.
        assert_eq!(allowed_cpus().unwrap(), allowed);
        // A CPU beyond the set's capacity is refused, not truncated.
        let far = NodeCpus {
            node: 0,
            cpus: vec![1 << 20],
            node_gpus: 1,
            host_gpus: 1,
        };
        assert!(
            !std::thread::spawn(move || set_affinity(&far.cpus))
                .join()
                .unwrap()
        );
    }
}
