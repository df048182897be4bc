//! Where this process's cgroups are: parsed from /proc/self/mountinfo and /proc/self/cgroup.
//!
//! The texts are parameters so that the parsing can be tested on other hosts' files.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One mounted hierarchy and this process's cgroup in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hierarchy {
    /// Where the hierarchy is mounted.
    pub mount_point: PathBuf,
    /// This process's cgroup, as a directory under the mount point.
    pub own_dir: PathBuf,
}

/// The cgroup hierarchies visible to this process.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CgroupLayout {
    /// The unified (v2) hierarchy, if mounted.
    pub v2: Option<Hierarchy>,
    /// v1 hierarchies, by controller name (`memory`, `pids`, `cpu`, ...).
    pub v1: BTreeMap<String, Hierarchy>,
}

impl CgroupLayout {
    /// Reads this process's layout.
    pub fn detect() -> std::io::Result<CgroupLayout> {
        let mountinfo = std::fs::read_to_string("/proc/self/mountinfo")?;
        let cgroup = std::fs::read_to_string("/proc/self/cgroup")?;
        Ok(CgroupLayout::parse(&mountinfo, &cgroup))
    }

    /// Builds the layout from the text of /proc/self/mountinfo and /proc/self/cgroup.
    pub fn parse(mountinfo: &str, cgroup: &str) -> CgroupLayout {
        // Membership: hierarchy id -> (controllers, path). v2 is the line with id 0 and no
        // controllers.
        let mut v2_path = None;
        let mut v1_paths: BTreeMap<String, String> = BTreeMap::new();
        for line in cgroup.lines() {
            let mut fields = line.splitn(3, ':');
            let (Some(id), Some(controllers), Some(path)) =
                (fields.next(), fields.next(), fields.next())
            else {
                continue;
            };
            if id == "0" && controllers.is_empty() {
                v2_path = Some(path.to_owned());
            } else {
                for controller in controllers.split(',').filter(|c| !c.is_empty()) {
                    v1_paths.insert(controller.to_owned(), path.to_owned());
                }
            }
        }

        let mut layout = CgroupLayout::default();
        for line in mountinfo.lines() {
            let Some(mount) = MountLine::parse(line) else {
                continue;
            };
            match mount.fstype {
                "cgroup2" => {
                    if let Some(path) = &v2_path
                        && layout.v2.is_none()
                    {
                        layout.v2 = mount.hierarchy(path);
                    }
                }
                "cgroup" => {
                    for option in mount.super_options.split(',') {
                        if let Some(path) = v1_paths.get(option)
                            && !layout.v1.contains_key(option)
                            && let Some(hierarchy) = mount.hierarchy(path)
                        {
                            layout.v1.insert(option.to_owned(), hierarchy);
                        }
                    }
                }
                _ => {}
            }
        }
        layout
    }
}

/// The fields of a mountinfo line that matter here.
struct MountLine<'a> {
    root: String,
    mount_point: String,
    fstype: &'a str,
    super_options: &'a str,
}

impl<'a> MountLine<'a> {
    fn parse(line: &'a str) -> Option<MountLine<'a>> {
        // id parent major:minor root mount-point options [optional...] - fstype source super
        let (before, after) = line.split_once(" - ")?;
        let mut left = before.split(' ');
        let root = unescape(left.nth(3)?);
        let mount_point = unescape(left.next()?);
        let mut right = after.split(' ');
        let fstype = right.next()?;
        let super_options = right.nth(1).unwrap_or("");
        Some(MountLine {
            root,
            mount_point,
            fstype,
            super_options,
        })
    }

    /// The directory of cgroup `path` in this mount, if the mount shows it.
    fn hierarchy(&self, path: &str) -> Option<Hierarchy> {
        let relative = if self.root == "/" {
            path
        } else {
            path.strip_prefix(self.root.as_str())?
        };
        let relative = relative.trim_start_matches('/');
        Some(Hierarchy {
            mount_point: PathBuf::from(&self.mount_point),
            own_dir: Path::new(&self.mount_point).join(relative),
        })
    }
}

/// mountinfo escapes space, tab, newline and backslash as `\ooo`.
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\'
            && i + 3 < bytes.len()
            && bytes[i + 1..i + 4]
                .iter()
                .all(|b| (b'0'..=b'7').contains(b))
        {
            let digit = |b: u8| u16::from(b - b'0');
            let value = digit(bytes[i + 1]) * 64 + digit(bytes[i + 2]) * 8 + digit(bytes[i + 3]);
            out.push(value as u8);
            i += 4;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This kind of machine: v1 controllers plus a v2 mount with no controllers of note.
    const MIXED_MOUNTINFO: &str = "\
25 1 0:23 / /sys rw,relatime - sysfs sysfs rw
30 25 0:26 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
31 30 0:27 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
34 30 0:30 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
38 30 0:34 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
40 30 0:36 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";
    const MIXED_CGROUP: &str = "\
8:pids:/
4:memory:/process_api/0c58
1:cpu:/
0::/
";

    #[test]
    fn finds_v1_controllers_and_own_cgroups() {
        let layout = CgroupLayout::parse(MIXED_MOUNTINFO, MIXED_CGROUP);
        assert_eq!(
            layout.v1["memory"].own_dir,
            PathBuf::from("/sys/fs/cgroup/memory/process_api/0c58")
        );
        assert_eq!(
            layout.v1["pids"].own_dir,
            PathBuf::from("/sys/fs/cgroup/pids")
        );
        assert_eq!(
            layout.v2.as_ref().map(|h| h.own_dir.clone()),
            Some(PathBuf::from("/sys/fs/cgroup/unified"))
        );
    }

    #[test]
    fn pure_v2_under_systemd() {
        let mountinfo = "35 24 0:30 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n";
        let cgroup = "0::/user.slice/user-1000.slice/user@1000.service/app.slice/term.scope\n";
        let layout = CgroupLayout::parse(mountinfo, cgroup);
        assert!(layout.v1.is_empty());
        assert_eq!(
            layout.v2.unwrap().own_dir,
            PathBuf::from(
                "/sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/app.slice/term.scope"
            )
        );
    }

    #[test]
    fn combined_controllers_and_container_roots() {
        // cpu and cpuacct share a hierarchy; the mount shows only the container's subtree.
        let mountinfo =
            "50 40 0:40 /docker/abc /sys/fs/cgroup/cpu,cpuacct ro - cgroup cgroup rw,cpu,cpuacct\n";
        let cgroup = "3:cpu,cpuacct:/docker/abc/inner\n";
        let layout = CgroupLayout::parse(mountinfo, cgroup);
        assert_eq!(
            layout.v1["cpu"].own_dir,
            PathBuf::from("/sys/fs/cgroup/cpu,cpuacct/inner")
        );
        assert_eq!(layout.v1["cpu"], layout.v1["cpuacct"]);
    }

    #[test]
    fn unescapes_mount_points() {
        assert_eq!(unescape("/a\\040b"), "/a b");
        assert_eq!(unescape("/plain"), "/plain");
        assert_eq!(unescape("/trailing\\04"), "/trailing\\04");
    }
}
