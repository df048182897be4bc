//! The cell's seccomp filter: which syscalls sandboxed code may not make, and why.
//!
//! The filter is a blocklist: everything not named here is allowed, because the commands agents
//! run are arbitrary programs. Each group below says what it protects. Denied calls fail with
//! an errno (EPERM unless noted) rather than killing the process, so programs that probe for a
//! feature fall back instead of crashing.

mod bpf;

use burrow_policy::NetworkMode;
use libc::sock_filter;

pub(crate) use bpf::CompileError;
use bpf::{ArgTest, Rule};

/// Every namespace flag of clone(2)/unshare(2).
const CLONE_NAMESPACE_FLAGS: u32 = (libc::CLONE_NEWNS
    | libc::CLONE_NEWCGROUP
    | libc::CLONE_NEWUTS
    | libc::CLONE_NEWIPC
    | libc::CLONE_NEWUSER
    | libc::CLONE_NEWPID
    | libc::CLONE_NEWNET
    | 0x0000_0080) as u32; // CLONE_NEWTIME

const SETID_BITS: u32 = libc::S_ISUID | libc::S_ISGID;
const FILE_TYPE_MASK: u32 = libc::S_IFMT;
const TIOCSTI: u32 = 0x5412;
const TIOCLINUX: u32 = 0x541c;

fn deny_all(syscalls: &[i64]) -> impl Iterator<Item = Rule> + '_ {
    syscalls.iter().map(|&nr| Rule::deny(nr, libc::EPERM))
}

/// Who the filter is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Holder {
    /// The command of a `burrow run` cell.
    Command,
    /// A workspace's agent, which resolves paths with openat2(RESOLVE_BENEATH) and adds
    /// [`openat2_rule`] for each command it starts ([`CommandFilter`]).
    Agent,
}

/// The rules for a cell with the given network mode.
fn rules(network: NetworkMode, holder: Holder) -> Vec<Rule> {
    let mut rules = Vec::new();

    // Reading or writing another process's memory would bypass every other layer, and the
    // cell's init holds descriptors the command must not reach.
    rules.extend(deny_all(&[
        libc::SYS_ptrace,
        libc::SYS_process_vm_readv,
        libc::SYS_process_vm_writev,
        libc::SYS_process_madvise,
        libc::SYS_kcmp,
        libc::SYS_pidfd_getfd,
    ]));

    // The kernel itself: loading code into it, replacing or rebooting it, swap and accounting.
    rules.extend(deny_all(&[
        libc::SYS_kexec_load,
        libc::SYS_kexec_file_load,
        libc::SYS_init_module,
        libc::SYS_finit_module,
        libc::SYS_delete_module,
        libc::SYS_reboot,
        libc::SYS_swapon,
        libc::SYS_swapoff,
        libc::SYS_acct,
        libc::SYS_syslog,
        libc::SYS_quotactl,
    ]));
    #[cfg(target_arch = "x86_64")]
    rules.extend(deny_all(&[libc::SYS_iopl, libc::SYS_ioperm]));

    // Large kernel attack surfaces that ordinary programs do not need: eBPF, perf events,
    // userfaultfd (a classic exploitation aid) and io_uring (which also bypasses seccomp for the
    // operations it performs), and file handles, which open files by inode, around the mount tree.
    rules.extend(deny_all(&[
        libc::SYS_bpf,
        libc::SYS_perf_event_open,
        libc::SYS_userfaultfd,
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
        libc::SYS_open_by_handle_at,
        libc::SYS_name_to_handle_at,
    ]));

    // Keyrings are keyed by uid across user namespaces: a cell must not read or plant keys in
    // the caller's keyrings.
    rules.extend(deny_all(&[
        libc::SYS_keyctl,
        libc::SYS_add_key,
        libc::SYS_request_key,
    ]));

    // The cell's mount tree and namespaces are fixed once it is set up.
    rules.extend(deny_all(&[
        libc::SYS_mount,
        libc::SYS_umount2,
        libc::SYS_pivot_root,
        libc::SYS_chroot,
        libc::SYS_unshare,
        libc::SYS_setns,
        libc::SYS_mount_setattr,
        libc::SYS_move_mount,
        libc::SYS_open_tree,
        libc::SYS_fsopen,
        libc::SYS_fsconfig,
        libc::SYS_fsmount,
        libc::SYS_fspick,
    ]));
    rules.push(Rule::deny_when(
        libc::SYS_clone,
        vec![ArgTest::AnyBits {
            arg: 0,
            mask: CLONE_NAMESPACE_FLAGS,
        }],
        libc::EPERM,
    ));
    // clone3 passes its flags in memory, which a filter cannot read. ENOSYS makes libc fall
    // back to clone(2), whose flags the rule above checks.
    rules.push(Rule::deny(libc::SYS_clone3, libc::ENOSYS));

    // Typing into the terminal the command was started from (TIOCSTI), or the console's
    // selection and keyboard tricks (TIOCLINUX).
    for request in [TIOCSTI, TIOCLINUX] {
        rules.push(Rule::deny_when(
            libc::SYS_ioctl,
            vec![ArgTest::MaskedEq {
                arg: 1,
                mask: u32::MAX,
                value: request,
            }],
            libc::EPERM,
        ));
    }

    // A setuid or setgid file created in a writable root would run with the creator's
    // privileges on the host, for anyone who can reach it: when burrow runs as root, that is
    // root. Refuse the bits wherever a mode is set.
    rules.extend(setid_mode_rules());
    if holder == Holder::Command {
        rules.push(openat2_rule());
    }

    // Device nodes give raw access to hardware or kernel memory. (Without CAP_MKNOD the kernel
    // refuses them too; this keeps the rule independent of capabilities.) FIFOs, sockets and
    // regular files stay possible.
    rules.extend(device_node_rules());

    // Personalities that turn off address-space randomisation or make data executable. Only
    // the plain Linux personalities (and the query value) pass.
    rules.push(Rule::deny_when(
        libc::SYS_personality,
        [0u32, 0x0008, 0x0002_0000, 0x0002_0008, 0xffff_ffff]
            .into_iter()
            .map(|value| ArgTest::NotEq { arg: 0, value })
            .collect(),
        libc::EPERM,
    ));

    if network == NetworkMode::None {
        // No network: unix sockets only. The cell's own network namespace already has no
        // route out; this also closes netlink, packet and vsock sockets.
        for syscall in [libc::SYS_socket, libc::SYS_socketpair] {
            rules.push(Rule::deny_when(
                syscall,
                vec![ArgTest::NotEq {
                    arg: 0,
                    value: libc::AF_UNIX as u32,
                }],
                libc::EAFNOSUPPORT,
            ));
        }
    }
    rules
}

fn setid_mode_rules() -> Vec<Rule> {
    let setid = |arg| ArgTest::AnyBits {
        arg,
        mask: SETID_BITS,
    };
    let creating = |arg| ArgTest::AnyBits {
        arg,
        mask: (libc::O_CREAT | libc::O_TMPFILE) as u32,
    };
    let mut rules = vec![
        Rule::deny_when(libc::SYS_fchmod, vec![setid(1)], libc::EPERM),
        Rule::deny_when(libc::SYS_fchmodat, vec![setid(2)], libc::EPERM),
        Rule::deny_when(libc::SYS_fchmodat2, vec![setid(2)], libc::EPERM),
        Rule::deny_when(libc::SYS_openat, vec![creating(2), setid(3)], libc::EPERM),
    ];
    #[cfg(target_arch = "x86_64")]
    rules.extend([
        Rule::deny_when(libc::SYS_chmod, vec![setid(1)], libc::EPERM),
        Rule::deny_when(libc::SYS_open, vec![creating(1), setid(2)], libc::EPERM),
        Rule::deny_when(libc::SYS_creat, vec![setid(1)], libc::EPERM),
    ]);
    rules
}

/// openat2 passes its mode in memory, where a filter cannot check it for the setid bits;
/// ENOSYS makes callers fall back to openat.
fn openat2_rule() -> Rule {
    Rule::deny(libc::SYS_openat2, libc::ENOSYS)
}

fn device_node_rules() -> Vec<Rule> {
    let mut rules = Vec::new();
    // (syscall, index of its mode argument)
    let mut calls = vec![(libc::SYS_mknodat, 2u8)];
    #[cfg(target_arch = "x86_64")]
    calls.push((libc::SYS_mknod, 1u8));
    for (syscall, mode) in calls {
        for kind in [libc::S_IFCHR, libc::S_IFBLK] {
            rules.push(Rule::deny_when(
                syscall,
                vec![ArgTest::MaskedEq {
                    arg: mode,
                    mask: FILE_TYPE_MASK,
                    value: kind,
                }],
                libc::EPERM,
            ));
        }
        rules.push(Rule::deny_when(
            syscall,
            vec![ArgTest::AnyBits {
                arg: mode,
                mask: SETID_BITS,
            }],
            libc::EPERM,
        ));
    }
    rules
}

/// A compiled filter, ready to install.
pub(crate) struct SeccompProgram(Vec<sock_filter>);

impl SeccompProgram {
    /// Compiles the filter for a network mode (done before the cell is cloned).
    pub(crate) fn for_network(network: NetworkMode) -> Result<SeccompProgram, CompileError> {
        bpf::compile(&rules(network, Holder::Command)).map(SeccompProgram)
    }

    /// The filter of a workspace's agent: the same, but with openat2, which the agent needs
    /// and takes away from every command it starts.
    pub(crate) fn for_agent(network: NetworkMode) -> Result<SeccompProgram, CompileError> {
        bpf::compile(&rules(network, Holder::Agent)).map(SeccompProgram)
    }

    /// Installs the filter on the calling thread; no_new_privs must be set.
    pub(crate) fn install(&self) -> std::io::Result<()> {
        crate::sys::install_seccomp_filter(&self.0)
    }
}

/// What a workspace's agent adds to its own filter for each command it starts, so that the
/// commands run under exactly the filter of a `burrow run` cell. Filters stack, and a process
/// can only add to its own, so nothing started by a command gets openat2 back.
pub struct CommandFilter(SeccompProgram);

impl std::fmt::Debug for CommandFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("CommandFilter")
            .field(&self.0.0.len())
            .finish()
    }
}

impl CommandFilter {
    /// Compiles the filter (before any fork: installing it must not allocate).
    pub fn new() -> Result<CommandFilter, crate::SandboxError> {
        bpf::compile(&[openat2_rule()])
            .map(|program| CommandFilter(SeccompProgram(program)))
            .map_err(|error| crate::SandboxError::Seccomp(error.to_string()))
    }

    /// Installs it on the calling thread (in the command's child process, before exec). Only a
    /// system call: safe between fork and exec. no_new_privs is already set in a cell.
    pub fn install(&self) -> std::io::Result<()> {
        self.0.install()
    }
}

#[cfg(test)]
mod kernel_tests {
    use burrow_policy::NetworkMode;

    use super::SeccompProgram;
    use crate::testing::in_child;

    fn syscall_errno(nr: i64, args: [u64; 3]) -> i32 {
        // SAFETY: the probed syscalls take integer arguments only (or a pointer the kernel
        // validates); a failure is reported through errno.
        let ret = unsafe { libc::syscall(nr, args[0], args[1], args[2]) };
        if ret < 0 {
            std::io::Error::last_os_error().raw_os_error().unwrap_or(-1)
        } else {
            0
        }
    }

    /// The filter on its own, on the real kernel: calls it refuses fail with its errno, and
    /// the same calls behave differently without it.
    #[test]
    fn the_installed_filter_refuses_on_the_real_kernel() {
        let probes: [(i64, [u64; 3], i32); 3] = [
            // unprivileged processes may create user namespaces: only the filter refuses
            (
                libc::SYS_unshare,
                [libc::CLONE_NEWUSER as u64, 0, 0],
                libc::EPERM,
            ),
            (
                libc::SYS_socket,
                [libc::AF_INET as u64, libc::SOCK_STREAM as u64, 0],
                libc::EAFNOSUPPORT,
            ),
            // TIOCSTI on a non-terminal: ENOTTY without the filter, EPERM with it
            (libc::SYS_ioctl, [0, 0x5412, 0], libc::EPERM),
        ];
        for (nr, args, expected) in probes {
            let without = in_child(|| syscall_errno(nr, args));
            assert_ne!(
                without, expected,
                "syscall {nr} fails the same way without the filter"
            );
            let with = in_child(|| {
                let program = SeccompProgram::for_network(NetworkMode::None).unwrap();
                rustix::thread::set_no_new_privs(true).unwrap();
                program.install().unwrap();
                syscall_errno(nr, args)
            });
            assert_eq!(with, expected, "syscall {nr}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::bpf::interpreter::verdict;
    use super::*;

    fn filter(network: NetworkMode) -> Vec<sock_filter> {
        SeccompProgram::for_network(network).unwrap().0
    }

    #[test]
    fn denies_what_the_cell_must_never_do() {
        let p = filter(NetworkMode::Host);
        for nr in [
            libc::SYS_ptrace,
            libc::SYS_process_vm_readv,
            libc::SYS_kexec_load,
            libc::SYS_init_module,
            libc::SYS_bpf,
            libc::SYS_perf_event_open,
            libc::SYS_keyctl,
            libc::SYS_io_uring_setup,
            libc::SYS_mount,
            libc::SYS_unshare,
            libc::SYS_setns,
            libc::SYS_pivot_root,
        ] {
            assert_eq!(verdict(&p, nr, [0; 6]), Some(libc::EPERM), "syscall {nr}");
        }
        assert_eq!(verdict(&p, libc::SYS_clone3, [0; 6]), Some(libc::ENOSYS));
    }

    #[test]
    fn clone_is_allowed_without_namespace_flags() {
        let p = filter(NetworkMode::None);
        let fork_flags =
            (libc::CLONE_CHILD_SETTID | libc::CLONE_CHILD_CLEARTID | libc::SIGCHLD) as u64;
        assert_eq!(
            verdict(&p, libc::SYS_clone, [fork_flags, 0, 0, 0, 0, 0]),
            None
        );
        let userns = fork_flags | libc::CLONE_NEWUSER as u64;
        assert_eq!(
            verdict(&p, libc::SYS_clone, [userns, 0, 0, 0, 0, 0]),
            Some(libc::EPERM)
        );
    }

    #[test]
    fn sockets_depend_on_the_network_mode() {
        let inet = [libc::AF_INET as u64, libc::SOCK_STREAM as u64, 0, 0, 0, 0];
        let unix = [libc::AF_UNIX as u64, libc::SOCK_STREAM as u64, 0, 0, 0, 0];
        let none = filter(NetworkMode::None);
        assert_eq!(
            verdict(&none, libc::SYS_socket, inet),
            Some(libc::EAFNOSUPPORT)
        );
        assert_eq!(verdict(&none, libc::SYS_socket, unix), None);
        for mode in [NetworkMode::Loopback, NetworkMode::Host] {
            assert_eq!(verdict(&filter(mode), libc::SYS_socket, inet), None);
        }
    }

    #[test]
    fn setid_bits_are_refused_everywhere_a_mode_is_set() {
        let p = filter(NetworkMode::None);
        assert_eq!(
            verdict(&p, libc::SYS_fchmodat, [0, 0, 0o4755, 0, 0, 0]),
            Some(libc::EPERM)
        );
        assert_eq!(
            verdict(&p, libc::SYS_fchmodat, [0, 0, 0o2755, 0, 0, 0]),
            Some(libc::EPERM)
        );
        assert_eq!(
            verdict(&p, libc::SYS_fchmodat, [0, 0, 0o755, 0, 0, 0]),
            None
        );
        assert_eq!(
            verdict(&p, libc::SYS_fchmod, [3, 0o4711, 0, 0, 0, 0]),
            Some(libc::EPERM)
        );
        let create = (libc::O_CREAT | libc::O_WRONLY) as u64;
        assert_eq!(
            verdict(&p, libc::SYS_openat, [0, 0, create, 0o6755, 0, 0]),
            Some(libc::EPERM)
        );
        assert_eq!(
            verdict(&p, libc::SYS_openat, [0, 0, create, 0o644, 0, 0]),
            None
        );
    }

    #[test]
    fn device_nodes_are_refused_but_fifos_are_not() {
        let p = filter(NetworkMode::None);
        let chr = (libc::S_IFCHR | 0o600) as u64;
        let blk = (libc::S_IFBLK | 0o600) as u64;
        let fifo = (libc::S_IFIFO | 0o600) as u64;
        assert_eq!(
            verdict(&p, libc::SYS_mknodat, [0, 0, chr, 0x103, 0, 0]),
            Some(libc::EPERM)
        );
        assert_eq!(
            verdict(&p, libc::SYS_mknodat, [0, 0, blk, 0x800, 0, 0]),
            Some(libc::EPERM)
        );
        assert_eq!(verdict(&p, libc::SYS_mknodat, [0, 0, fifo, 0, 0, 0]), None);
    }

    #[test]
    fn terminal_injection_is_refused() {
        let p = filter(NetworkMode::Host);
        assert_eq!(
            verdict(&p, libc::SYS_ioctl, [0, u64::from(TIOCSTI), 0, 0, 0, 0]),
            Some(libc::EPERM)
        );
        assert_eq!(verdict(&p, libc::SYS_ioctl, [0, 0x5401, 0, 0, 0, 0]), None); // TCGETS
    }

    /// What the rules mean, evaluated directly: the first rule of the syscall whose tests all
    /// pass decides; none passing means allowed.
    fn reference(rules: &[Rule], nr: i64, args: [u64; 6]) -> Option<i32> {
        let low = |arg: u8| args[usize::from(arg)] as u32;
        rules
            .iter()
            .filter(|rule| rule.syscall == nr)
            .find(|rule| {
                rule.tests.iter().all(|test| match *test {
                    ArgTest::AnyBits { arg, mask } => low(arg) & mask != 0,
                    ArgTest::MaskedEq { arg, mask, value } => low(arg) & mask == value,
                    ArgTest::NotEq { arg, value } => low(arg) != value,
                })
            })
            .map(|rule| match rule.action {
                bpf::Action::Errno(errno) => errno,
                bpf::Action::KillProcess => -1,
            })
    }

    #[test]
    fn the_compiled_tree_means_what_the_rules_say() {
        let interesting: Vec<u64> = vec![
            0,
            1,
            2,
            0o4755,
            0o2755,
            0o755,
            libc::O_CREAT as u64 | 0o4000,
            libc::AF_INET as u64,
            libc::AF_UNIX as u64,
            u64::from(TIOCSTI),
            0x1_0000_0000 | u64::from(TIOCSTI),
            (libc::S_IFCHR | 0o600) as u64,
            (libc::S_IFIFO | 0o600) as u64,
            libc::CLONE_NEWUSER as u64,
            0xffff_ffff,
            0x0004_0000,
        ];
        for network in [NetworkMode::None, NetworkMode::Loopback, NetworkMode::Host] {
            let rules = rules(network, Holder::Command);
            let program = filter(network);
            for nr in 0..600i64 {
                for (i, &a) in interesting.iter().enumerate() {
                    let b = interesting[(i * 7 + 3) % interesting.len()];
                    for args in [[a, b, a, b, 0, 0], [b, a, b, a, 0, 0], [a, a, a, a, a, a]] {
                        assert_eq!(
                            verdict(&program, nr, args),
                            reference(&rules, nr, args),
                            "syscall {nr} args {args:x?} network {network:?}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn personality_allows_only_plain_linux() {
        let p = filter(NetworkMode::Host);
        assert_eq!(
            verdict(&p, libc::SYS_personality, [0xffff_ffff, 0, 0, 0, 0, 0]),
            None
        );
        assert_eq!(verdict(&p, libc::SYS_personality, [0, 0, 0, 0, 0, 0]), None);
        // ADDR_NO_RANDOMIZE
        assert_eq!(
            verdict(&p, libc::SYS_personality, [0x0004_0000, 0, 0, 0, 0, 0]),
            Some(libc::EPERM)
        );
    }
}
