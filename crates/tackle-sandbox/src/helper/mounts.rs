//! Mount operations of the namespace sandbox: bind mounts whose flags reach every submount
//! (a bind mount only applies its flags to the top mount), tmpfs, and the mount table.

use std::path::{Path, PathBuf};

use nix::mount::{MntFlags, MsFlags, mount, umount2};

use super::HelperError;

/// One line of `/proc/self/mountinfo`: where a mount is and its per-mount flags.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MountEntry {
    pub(crate) mount_point: PathBuf,
    pub(crate) flags: MsFlags,
}

/// Decodes the octal escapes (`\040` for a space) the kernel puts in mountinfo paths.
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\'
            && let Some(digits) = bytes.get(i + 1..i + 4)
            && digits.iter().all(|d| (b'0'..=b'7').contains(d))
        {
            let value = digits.iter().fold(0u32, |acc, d| acc * 8 + u32::from(d - b'0'));
            out.push(u8::try_from(value).unwrap_or(b'?'));
            i += 4;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The per-mount options (field 6) as flags a bind remount must keep.
fn option_flags(options: &str) -> MsFlags {
    let mut flags = MsFlags::empty();
    for option in options.split(',') {
        flags |= match option {
            "ro" => MsFlags::MS_RDONLY,
            "nosuid" => MsFlags::MS_NOSUID,
            "nodev" => MsFlags::MS_NODEV,
            "noexec" => MsFlags::MS_NOEXEC,
            "noatime" => MsFlags::MS_NOATIME,
            "nodiratime" => MsFlags::MS_NODIRATIME,
            "relatime" => MsFlags::MS_RELATIME,
            // MS_NOSYMFOLLOW (Linux 5.10), which nix does not name.
            "nosymfollow" => MsFlags::from_bits_retain(256),
            _ => MsFlags::empty(),
        };
    }
    flags
}

/// Parses mountinfo text.
pub(crate) fn parse_mountinfo(text: &str) -> Vec<MountEntry> {
    text.lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split(' ').collect();
            let mount_point = fields.get(4)?;
            let options = fields.get(5)?;
            Some(MountEntry {
                mount_point: PathBuf::from(unescape(mount_point)),
                flags: option_flags(options),
            })
        })
        .collect()
}

fn mount_table() -> Result<Vec<MountEntry>, HelperError> {
    let text = std::fs::read_to_string("/proc/self/mountinfo")
        .or_else(|_| std::fs::read_to_string("/oldroot/proc/self/mountinfo"))
        .map_err(|e| HelperError::new("cannot read the mount table", e))?;
    Ok(parse_mountinfo(&text))
}

/// Mounts at or below `target`, outermost first (the order of the mount table).
fn mounts_under(target: &Path) -> Result<Vec<MountEntry>, HelperError> {
    Ok(mount_table()?.into_iter().filter(|m| m.mount_point.starts_with(target)).collect())
}

fn err(what: &str, path: &Path, e: nix::Error) -> HelperError {
    HelperError::new(format!("cannot {what} {}", path.display()), e)
}

/// The flags a remount of a mount that has `current` flags gets: `add` on top of what it had
/// (locked flags such as `nosuid` or `ro` cannot be dropped inside a user namespace anyway).
fn remount_flags(current: MsFlags, add: MsFlags) -> MsFlags {
    current | add | MsFlags::MS_NOSUID
}

/// Remounts every mount at or below `target` with `add` (e.g. read-only, nodev). A mount that
/// cannot be remounted is detached instead, so nothing stays writable by accident.
pub(crate) fn remount_tree(target: &Path, add: MsFlags) -> Result<(), HelperError> {
    for entry in mounts_under(target)? {
        let flags = remount_flags(entry.flags, add);
        if flags == entry.flags {
            continue;
        }
        let remounted = mount(
            None::<&str>,
            &entry.mount_point,
            None::<&str>,
            MsFlags::MS_BIND | MsFlags::MS_REMOUNT | flags,
            None::<&str>,
        );
        if let Err(e) = remounted {
            // A mount we may not remount (EACCES: not even readable) goes away whole; the top
            // mount must succeed or the sandbox is not what it claims.
            if entry.mount_point == target || umount2(&entry.mount_point, MntFlags::MNT_DETACH).is_err() {
                return Err(err("remount", &entry.mount_point, e));
            }
        }
    }
    Ok(())
}

/// Binds `source` on `target` with everything below it, then remounts the whole tree with `add`.
pub(crate) fn bind_tree(source: &Path, target: &Path, add: MsFlags) -> Result<(), HelperError> {
    mount(Some(source), target, None::<&str>, MsFlags::MS_BIND | MsFlags::MS_REC, None::<&str>)
        .map_err(|e| err("bind-mount onto", target, e))?;
    remount_tree(target, add)
}

/// Binds one file or directory (no submounts) on `target` with `add`.
pub(crate) fn bind_one(source: &Path, target: &Path, add: MsFlags) -> Result<(), HelperError> {
    mount(Some(source), target, None::<&str>, MsFlags::MS_BIND, None::<&str>)
        .map_err(|e| err("bind-mount onto", target, e))?;
    mount(
        None::<&str>,
        target,
        None::<&str>,
        MsFlags::MS_BIND | MsFlags::MS_REMOUNT | MsFlags::MS_NOSUID | add,
        None::<&str>,
    )
    .map_err(|e| err("remount", target, e))
}

/// Mounts a fresh tmpfs on `target` with `mode` (e.g. `0755`).
pub(crate) fn tmpfs(target: &Path, mode: u32, flags: MsFlags) -> Result<(), HelperError> {
    let data = format!("mode={mode:o}");
    mount(
        Some("tmpfs"),
        target,
        Some("tmpfs"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV | flags,
        Some(data.as_str()),
    )
    .map_err(|e| err("mount a tmpfs on", target, e))
}

/// Makes the tmpfs (or bind) at `target` read-only.
pub(crate) fn make_readonly(target: &Path) -> Result<(), HelperError> {
    let current = mounts_under(target)?
        .into_iter()
        .find(|m| m.mount_point == target)
        .map(|m| m.flags)
        .unwrap_or(MsFlags::MS_NOSUID | MsFlags::MS_NODEV);
    mount(
        None::<&str>,
        target,
        None::<&str>,
        MsFlags::MS_BIND | MsFlags::MS_REMOUNT | current | MsFlags::MS_RDONLY,
        None::<&str>,
    )
    .map_err(|e| err("make read-only", target, e))
}

/// Mounts the proc filesystem of the current PID namespace on `target`.
pub(crate) fn proc(target: &Path) -> Result<(), HelperError> {
    mount(
        Some("proc"),
        target,
        Some("proc"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
        None::<&str>,
    )
    .map_err(|e| err("mount a fresh /proc on", target, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mountinfo_lines_give_paths_and_flags() {
        let text = "22 27 0:21 / /proc rw,relatime - proc proc rw\n\
                    27 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n\
                    28 27 0:25 / /mnt/with\\040space ro,nosuid,nodev,noexec - tmpfs t ro\n";
        let table = parse_mountinfo(text);
        assert_eq!(table.len(), 3);
        assert_eq!(table[0].mount_point, Path::new("/proc"));
        assert_eq!(table[0].flags, MsFlags::MS_RELATIME);
        assert_eq!(table[2].mount_point, Path::new("/mnt/with space"));
        assert_eq!(
            table[2].flags,
            MsFlags::MS_RDONLY | MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC
        );
    }

    #[test]
    fn remounts_keep_locked_flags_and_add_nosuid() {
        let current = MsFlags::MS_NODEV | MsFlags::MS_NOEXEC | MsFlags::MS_RELATIME;
        let flags = remount_flags(current, MsFlags::MS_RDONLY);
        assert!(flags.contains(current | MsFlags::MS_RDONLY | MsFlags::MS_NOSUID));
    }

    #[test]
    fn escapes_that_are_not_octal_stay() {
        assert_eq!(unescape("a\\040b"), "a b");
        assert_eq!(unescape("a\\9b"), "a\\9b");
        assert_eq!(unescape("end\\"), "end\\");
    }
}
