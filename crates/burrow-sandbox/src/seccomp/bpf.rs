//! A compiler from syscall rules to a classic-BPF seccomp program.
//!
//! Written here rather than taken from a crate because the filter is a blocklist, and a
//! blocklist is only sound if it also refuses the x32 ABI's aliases of every syscall (numbers
//! with bit 30 set, which share the x86-64 audit arch). seccompiler does not (rust-vmm/seccompiler
//! issue 74) and libseccomp is LGPL. The program is small: an arch check, an x32 check, then one
//! block per rule, so the compiler is too.
//!
//! Arguments are compared on their low 32 bits only. Every argument the rules inspect (flags,
//! modes, an ioctl request, a socket domain) is an `int` or `unsigned int` in the kernel, which
//! ignores the high half; comparing all 64 bits would let a caller dodge a rule by setting a
//! high bit (the flaw behind CVE-2019-10063 in another sandbox's TIOCSTI filter).

use libc::sock_filter;

/// What the filter does with a matching syscall.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Action {
    /// Fail with this errno.
    Errno(i32),
    /// Kill the whole process with SIGSYS.
    KillProcess,
}

/// A test on the low 32 bits of one argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ArgTest {
    /// `arg & mask != 0`
    AnyBits { arg: u8, mask: u32 },
    /// `arg & mask == value`
    MaskedEq { arg: u8, mask: u32, value: u32 },
    /// `arg != value`
    NotEq { arg: u8, value: u32 },
}

/// A syscall, the tests its arguments must all pass, and the action taken when they do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Rule {
    pub(crate) syscall: i64,
    pub(crate) tests: Vec<ArgTest>,
    pub(crate) action: Action,
}

impl Rule {
    pub(crate) fn deny(syscall: i64, errno: i32) -> Rule {
        Rule {
            syscall,
            tests: Vec::new(),
            action: Action::Errno(errno),
        }
    }

    pub(crate) fn deny_when(syscall: i64, tests: Vec<ArgTest>, errno: i32) -> Rule {
        Rule {
            syscall,
            tests,
            action: Action::Errno(errno),
        }
    }
}

const SECCOMP_RET_KILL_PROCESS: u32 = 0x8000_0000;
const SECCOMP_RET_ERRNO: u32 = 0x0005_0000;
const SECCOMP_RET_ALLOW: u32 = 0x7fff_0000;

const OFFSET_NR: u32 = 0;
const OFFSET_ARCH: u32 = 4;
const OFFSET_ARGS: u32 = 16;

#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH_NATIVE: u32 = 0xc000_003e;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH_NATIVE: u32 = 0xc000_00b7;
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
compile_error!("burrow's seccomp filter knows the syscall numbers of x86_64 and aarch64 only");

/// Syscall numbers at or above this are the x32 ABI's (x86-64 only).
#[cfg(target_arch = "x86_64")]
const X32_SYSCALL_BIT: u32 = 0x4000_0000;

// Classic BPF opcodes.
const BPF_LD_W_ABS: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
const BPF_ALU_AND_K: u16 = (libc::BPF_ALU | libc::BPF_AND | libc::BPF_K) as u16;
const BPF_JEQ_K: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
const BPF_JSET_K: u16 = (libc::BPF_JMP | libc::BPF_JSET | libc::BPF_K) as u16;
const BPF_JGE_K: u16 = (libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K) as u16;
const BPF_JA: u16 = (libc::BPF_JMP | libc::BPF_JA) as u16;
const BPF_RET_K: u16 = (libc::BPF_RET | libc::BPF_K) as u16;

fn stmt(code: u16, k: u32) -> sock_filter {
    sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    }
}

fn jump(code: u16, k: u32, jt: u8, jf: u8) -> sock_filter {
    sock_filter { code, jt, jf, k }
}

fn ret(action: Action) -> sock_filter {
    let k = match action {
        Action::Errno(errno) => SECCOMP_RET_ERRNO | (errno as u32 & 0xffff),
        Action::KillProcess => SECCOMP_RET_KILL_PROCESS,
    };
    stmt(BPF_RET_K, k)
}

fn low_half_of(arg: u8) -> u32 {
    OFFSET_ARGS + 8 * u32::from(arg)
}

/// Why a rule set could not be compiled.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum CompileError {
    #[error("a seccomp rule for syscall {0} is too long to jump over")]
    RuleTooLong(i64),
    #[error("syscall number {0} is out of range")]
    BadSyscall(i64),
}

/// Compiles rules into a program: allow anything no rule matches.
///
/// The syscall number is looked up in a binary search tree rather than compared against each
/// rule in turn. Besides being faster per syscall, this matters at install time: the kernel
/// pre-computes which syscalls a filter always allows by running the program once for every
/// syscall number, so a linear chain costs syscalls x rules there (a few hundred microseconds
/// for this filter on a slow machine) where a tree costs syscalls x depth.
pub(crate) fn compile(rules: &[Rule]) -> Result<Vec<sock_filter>, CompileError> {
    let mut program = vec![
        // A syscall made through another ABI (int 0x80 on x86-64, say) has different numbers:
        // no rule below would mean what it says, so the process dies.
        stmt(BPF_LD_W_ABS, OFFSET_ARCH),
        jump(BPF_JEQ_K, AUDIT_ARCH_NATIVE, 1, 0),
        ret(Action::KillProcess),
        stmt(BPF_LD_W_ABS, OFFSET_NR),
    ];
    #[cfg(target_arch = "x86_64")]
    program.extend([
        jump(BPF_JGE_K, X32_SYSCALL_BIT, 0, 1),
        ret(Action::Errno(libc::ENOSYS)),
    ]);

    // Rules grouped by syscall, in ascending syscall order.
    let mut by_syscall: std::collections::BTreeMap<u32, Vec<&Rule>> = Default::default();
    for rule in rules {
        let nr = u32::try_from(rule.syscall).map_err(|_| CompileError::BadSyscall(rule.syscall))?;
        by_syscall.entry(nr).or_default().push(rule);
    }
    let leaves: Vec<(u32, Vec<&Rule>)> = by_syscall.into_iter().collect();
    if leaves.is_empty() {
        program.push(stmt(BPF_RET_K, SECCOMP_RET_ALLOW));
    } else {
        program.extend(search_tree(&leaves)?);
    }
    Ok(program)
}

/// A subtree that dispatches on the syscall number (in the accumulator) to the leaves' rules.
fn search_tree(leaves: &[(u32, Vec<&Rule>)]) -> Result<Vec<sock_filter>, CompileError> {
    if let [(nr, rules)] = leaves {
        // The one syscall this subtree can still be: its rules, or allow.
        let mut code = vec![
            jump(BPF_JEQ_K, *nr, 1, 0),
            stmt(BPF_RET_K, SECCOMP_RET_ALLOW),
        ];
        for rule in rules {
            let body = rule_body(rule);
            u8::try_from(body.len()).map_err(|_| CompileError::RuleTooLong(rule.syscall))?;
            code.extend(body);
        }
        // Every rule's tests failed: the call is allowed. (Argument tests load arguments into
        // the accumulator, so nothing after this point may rely on it holding the number.)
        code.push(stmt(BPF_RET_K, SECCOMP_RET_ALLOW));
        return Ok(code);
    }
    let (low, high) = leaves.split_at(leaves.len() / 2);
    let pivot = high[0].0;
    let low_code = search_tree(low)?;
    let high_code = search_tree(high)?;
    // nr >= pivot: take the `ja` over the low subtree; otherwise skip it and fall into it.
    let mut code = vec![
        jump(BPF_JGE_K, pivot, 0, 1),
        stmt(BPF_JA, low_code.len() as u32),
    ];
    code.extend(low_code);
    code.extend(high_code);
    Ok(code)
}

/// The tests of one rule followed by its action; a failed test jumps past the action, to the
/// next rule of the same syscall (or to the final allow).
fn rule_body(rule: &Rule) -> Vec<sock_filter> {
    // Each test is a load, an optional mask, and a jump; build them back to front so each jump
    // knows how far the action is.
    let mut body = vec![ret(rule.action)];
    for test in rule.tests.iter().rev() {
        let to_end = body.len() as u8; // from after this test's jump to past the action
        let mut block = Vec::with_capacity(3);
        match *test {
            ArgTest::AnyBits { arg, mask } => {
                block.push(stmt(BPF_LD_W_ABS, low_half_of(arg)));
                block.push(jump(BPF_JSET_K, mask, 0, to_end));
            }
            ArgTest::MaskedEq { arg, mask, value } => {
                block.push(stmt(BPF_LD_W_ABS, low_half_of(arg)));
                block.push(stmt(BPF_ALU_AND_K, mask));
                block.push(jump(BPF_JEQ_K, value, 0, to_end));
            }
            ArgTest::NotEq { arg, value } => {
                block.push(stmt(BPF_LD_W_ABS, low_half_of(arg)));
                block.push(jump(BPF_JEQ_K, value, to_end, 0));
            }
        }
        block.extend(body);
        body = block;
    }
    body
}

#[cfg(test)]
pub(crate) mod interpreter {
    //! Just enough of a classic-BPF interpreter to run the compiled program in unit tests.
    use super::*;

    pub(crate) struct SeccompData {
        pub(crate) nr: u32,
        pub(crate) arch: u32,
        pub(crate) args: [u64; 6],
    }

    impl SeccompData {
        pub(crate) fn native(nr: i64, args: [u64; 6]) -> SeccompData {
            SeccompData {
                nr: nr as u32,
                arch: AUDIT_ARCH_NATIVE,
                args,
            }
        }

        fn load(&self, offset: u32) -> u32 {
            match offset {
                OFFSET_NR => self.nr,
                OFFSET_ARCH => self.arch,
                o if o >= OFFSET_ARGS => {
                    let index = ((o - OFFSET_ARGS) / 8) as usize;
                    let value = self.args[index];
                    if (o - OFFSET_ARGS).is_multiple_of(8) {
                        value as u32
                    } else {
                        (value >> 32) as u32
                    }
                }
                _ => panic!("unexpected load offset {offset}"),
            }
        }
    }

    pub(crate) fn run(program: &[sock_filter], data: &SeccompData) -> u32 {
        let mut acc = 0u32;
        let mut pc = 0usize;
        loop {
            let insn = program[pc];
            pc += 1;
            match insn.code {
                BPF_LD_W_ABS => acc = data.load(insn.k),
                BPF_ALU_AND_K => acc &= insn.k,
                BPF_JEQ_K => pc += usize::from(if acc == insn.k { insn.jt } else { insn.jf }),
                BPF_JSET_K => pc += usize::from(if acc & insn.k != 0 { insn.jt } else { insn.jf }),
                BPF_JGE_K => pc += usize::from(if acc >= insn.k { insn.jt } else { insn.jf }),
                BPF_JA => pc += insn.k as usize,
                BPF_RET_K => return insn.k,
                other => panic!("unexpected opcode {other:#x}"),
            }
        }
    }

    pub(crate) fn verdict(program: &[sock_filter], nr: i64, args: [u64; 6]) -> Option<i32> {
        match run(program, &SeccompData::native(nr, args)) {
            SECCOMP_RET_ALLOW => None,
            SECCOMP_RET_KILL_PROCESS => Some(-1),
            k => Some((k & 0xffff) as i32),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::interpreter::{SeccompData, run, verdict};
    use super::*;

    fn program() -> Vec<sock_filter> {
        compile(&[
            Rule::deny(libc::SYS_ptrace, libc::EPERM),
            Rule::deny_when(
                libc::SYS_ioctl,
                vec![ArgTest::MaskedEq {
                    arg: 1,
                    mask: u32::MAX,
                    value: 0x5412,
                }],
                libc::EPERM,
            ),
            Rule::deny_when(
                libc::SYS_socket,
                vec![ArgTest::NotEq {
                    arg: 0,
                    value: libc::AF_UNIX as u32,
                }],
                libc::EAFNOSUPPORT,
            ),
            Rule::deny_when(
                libc::SYS_openat,
                vec![
                    ArgTest::AnyBits {
                        arg: 2,
                        mask: libc::O_CREAT as u32,
                    },
                    ArgTest::AnyBits {
                        arg: 3,
                        mask: 0o6000,
                    },
                ],
                libc::EPERM,
            ),
        ])
        .unwrap()
    }

    #[test]
    fn unconditional_rules_deny_and_others_pass() {
        let p = program();
        assert_eq!(verdict(&p, libc::SYS_ptrace, [0; 6]), Some(libc::EPERM));
        assert_eq!(verdict(&p, libc::SYS_getpid, [0; 6]), None);
    }

    #[test]
    fn argument_tests_use_only_the_low_half() {
        let p = program();
        assert_eq!(
            verdict(&p, libc::SYS_ioctl, [1, 0x5412, 0, 0, 0, 0]),
            Some(libc::EPERM)
        );
        // The kernel truncates the request to 32 bits, so a high bit must not dodge the rule.
        assert_eq!(
            verdict(&p, libc::SYS_ioctl, [1, 0x1_0000_5412, 0, 0, 0, 0]),
            Some(libc::EPERM)
        );
        assert_eq!(verdict(&p, libc::SYS_ioctl, [1, 0x5413, 0, 0, 0, 0]), None);
    }

    #[test]
    fn not_equal_tests_allow_only_the_named_value() {
        let p = program();
        assert_eq!(
            verdict(&p, libc::SYS_socket, [libc::AF_UNIX as u64, 1, 0, 0, 0, 0]),
            None
        );
        assert_eq!(
            verdict(&p, libc::SYS_socket, [libc::AF_INET as u64, 1, 0, 0, 0, 0]),
            Some(libc::EAFNOSUPPORT)
        );
    }

    #[test]
    fn all_tests_of_a_rule_must_pass() {
        let p = program();
        let creat = libc::O_CREAT as u64;
        assert_eq!(
            verdict(&p, libc::SYS_openat, [0, 0, creat, 0o4755, 0, 0]),
            Some(libc::EPERM)
        );
        assert_eq!(
            verdict(&p, libc::SYS_openat, [0, 0, creat, 0o755, 0, 0]),
            None
        );
        assert_eq!(verdict(&p, libc::SYS_openat, [0, 0, 0, 0o4755, 0, 0]), None);
    }

    #[test]
    fn a_foreign_architecture_is_killed() {
        let p = program();
        let data = SeccompData {
            nr: libc::SYS_getpid as u32,
            arch: 0x4000_0003, // AUDIT_ARCH_I386
            args: [0; 6],
        };
        assert_eq!(run(&p, &data), SECCOMP_RET_KILL_PROCESS);
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn x32_aliases_are_refused() {
        let p = program();
        let alias = i64::from(X32_SYSCALL_BIT) + libc::SYS_getpid;
        assert_eq!(verdict(&p, alias, [0; 6]), Some(libc::ENOSYS));
    }
}
