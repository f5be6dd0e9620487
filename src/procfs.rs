//! What `/proc` says of processes: a process's state, parent and group from its `stat` line,
//! and the processes there are. Read by RUN's process-group handling and by the hard stop,
//! which kills what pai started; and this process's resident memory, by the stages that bound
//! theirs.

/// The fields of a `/proc/<pid>/stat` line pai uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    /// The state letter (`R`, `S`, `Z`, ...).
    pub state: char,
    /// The parent's process id.
    pub ppid: libc::pid_t,
    /// The process group.
    pub pgrp: libc::pid_t,
}

impl Stat {
    /// Whether the process has exited (a zombie or dead): it runs nothing.
    pub fn exited(&self) -> bool {
        matches!(self.state, 'Z' | 'X' | 'x')
    }
}

/// The fields of a `stat` line. The command name sits in parentheses and may itself contain
/// spaces and parentheses, so fields are read after the last `)`: ` state ppid pgrp ...`.
pub fn parse_stat(stat: &str) -> Option<Stat> {
    let rest = stat.get(stat.rfind(')')? + 1..)?;
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some(Stat { state, ppid, pgrp })
}

/// The `stat` of process `pid`; `None` when it is gone (or `/proc` cannot say).
pub fn stat(pid: libc::pid_t) -> Option<Stat> {
    parse_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// Every process `/proc` lists, with its `stat` (those that exit while it is read are left
/// out); `None` when there is no `/proc`.
pub fn processes() -> Option<Vec<(libc::pid_t, Stat)>> {
    let entries = std::fs::read_dir("/proc").ok()?;
    Some(
        entries
            .flatten()
            .filter_map(|entry| {
                let pid: libc::pid_t = entry.file_name().to_str()?.parse().ok()?;
                Some((pid, stat(pid)?))
            })
            .collect(),
    )
}

/// The children of process `parent` as `/proc` lists them, with their `stat`.
pub fn children_of(parent: libc::pid_t) -> Vec<(libc::pid_t, Stat)> {
    processes()
        .unwrap_or_default()
        .into_iter()
        .filter(|(_, s)| s.ppid == parent)
        .collect()
}

/// This process's resident memory in bytes (`VmRSS` of `/proc/self/status`), file-backed
/// mappings included; `None` when `/proc` cannot say.
pub fn resident_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resident_memory_counts_pages_this_process_touches() {
        let before = resident_bytes().unwrap();
        // 64 MB written page by page is resident until dropped (other tests allocate
        // meanwhile, so only the growth's lower bound is checked).
        let block = vec![1u8; 64 << 20];
        let during = resident_bytes().unwrap();
        assert!(block.iter().step_by(4096).all(|&b| b == 1));
        assert!(during >= before + (32 << 20), "{before} -> {during}");
    }

    #[test]
    fn stat_lines_with_awkward_command_names_are_read_after_the_last_parenthesis() {
        let s = parse_stat("4242 (sh (x) y) S 17 4242 4242 0 -1 4194560 100").unwrap();
        assert_eq!((s.state, s.ppid, s.pgrp), ('S', 17, 4242));
        let z = parse_stat("77 (a) b (c)) Z 5 70 70 0").unwrap();
        assert_eq!((z.state, z.pgrp), ('Z', 70));
        assert!(z.exited());
        assert_eq!(parse_stat("garbage"), None);
        assert_eq!(parse_stat("4242 (sh"), None);
        assert_eq!(parse_stat("1 (init) S x 1"), None);
    }

    #[test]
    fn this_process_is_its_parents_child() {
        let me = std::process::id() as libc::pid_t;
        let mine = stat(me).unwrap();
        assert!(children_of(mine.ppid).iter().any(|(pid, _)| *pid == me));
    }
}
