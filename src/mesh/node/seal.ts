/**
 * Issue 33 item 7: a `network: "none"` agent reaches nothing, local sockets included. A network namespace cuts every
 * IP route (the host's 127.0.0.1 too), but a unix socket is found through the file system (a database's
 * `/run/postgresql/.s.PGSQL.5432`, `/run/docker.sock`, D-Bus, another agent's socket), and an abstract one by name, and
 * neither is behind the namespace. This module closes both with a seccomp filter, installed by a tiny helper program
 * (`berth-seal`) that runs just before the privilege drop and the entry:
 *
 *   socket(domain)      allowed only for AF_INET, AF_INET6 (dead in the empty namespace) and AF_NETLINK (scoped to
 *                       it): AF_UNIX, AF_VSOCK (the hypervisor's host), Bluetooth … fail with EACCES;
 *   socketpair(type)    SOCK_STREAM only (a connected pair reaches nothing else; a datagram pair could `sendto` any
 *                       socket path);
 *   io_uring_setup      ENOSYS (its socket and connect operations would bypass the filter);
 *   pidfd_getfd         EPERM (no borrowing a socket from another process);
 *   another ABI         the process is killed (x32 or 32-bit calls would not be the numbers checked here).
 *
 * Why seccomp, not the others: a mount namespace can hide the directories berth knows of (/run, /var/run, /tmp), never
 * every socket a host has; Landlock restricts pathname unix `connect` only from ABI 9 (this project's build kernel,
 * 6.18, has ABI 7: v6 scopes *abstract* sockets only). Seccomp needs no kernel newer than 3.17 and covers both. Node
 * cannot call seccomp(2) itself (no native addon) and no tool Debian installs by default can filter a syscall by its
 * argument (setpriv ≤ 2.41 has no seccomp; bubblewrap takes a compiled filter but is rarely installed; systemd-run's
 * RestrictAddressFamilies= needs systemd as the service manager), so the daemon compiles the helper below with the
 * host's C compiler, once per source version, and checks it by running it. A node without a compiler cannot seal:
 * its facts say `local_sockets: "reachable"` and its gate is fed `lan` for a `none` package (containment.ts).
 */
import { createHash } from "node:crypto";
import { chmodSync, existsSync, lstatSync, mkdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { spawnSync } from "node:child_process";

/** Exit code of `berth-seal --check` when the filter holds (socket(AF_UNIX) refused, socket(AF_INET) allowed). */
const CHECK_OK = 0;

export const SEAL_SOURCE = String.raw`/* berth-seal: see src/mesh/node/seal.ts (issue 33 item 7). */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#if defined(__x86_64__)
#define SEAL_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define SEAL_ARCH AUDIT_ARCH_AARCH64
#elif defined(__arm__)
#define SEAL_ARCH AUDIT_ARCH_ARM
#elif defined(__i386__)
#define SEAL_ARCH AUDIT_ARCH_I386
#elif defined(__riscv) && __riscv_xlen == 64
#define SEAL_ARCH AUDIT_ARCH_RISCV64
#else
#error "berth-seal: unknown architecture"
#endif

#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define ARG_LO(n) (offsetof(struct seccomp_data, args) + 8 * (n))
#else
#define ARG_LO(n) (offsetof(struct seccomp_data, args) + 8 * (n) + 4)
#endif

#define RET(v) BPF_STMT(BPF_RET | BPF_K, (v))
#define DENY(e) RET(SECCOMP_RET_ERRNO | ((e) & SECCOMP_RET_DATA))
#define LOAD(off) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, (off))
#define IS(k, t, f) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (k), (t), (f))

static struct sock_filter filter[] = {
  LOAD(offsetof(struct seccomp_data, arch)),
  IS(SEAL_ARCH, 1, 0),
  RET(SECCOMP_RET_KILL_PROCESS),
  LOAD(offsetof(struct seccomp_data, nr)),
#if defined(__x86_64__)
  BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000, 0, 1), /* x32 */
  RET(SECCOMP_RET_KILL_PROCESS),
#endif
#ifdef __NR_socketcall
  IS(__NR_socketcall, 0, 1),
  DENY(ENOSYS),
#endif
  IS(__NR_io_uring_setup, 0, 1),
  DENY(ENOSYS),
#ifdef __NR_pidfd_getfd
  IS(__NR_pidfd_getfd, 0, 1),
  DENY(EPERM),
#endif
  /* 0 */ IS(__NR_socketpair, 0, 3),
  /* 1 */ LOAD(ARG_LO(1)),
  /* 2 */ BPF_STMT(BPF_ALU | BPF_AND | BPF_K, 0xf), /* the type without SOCK_NONBLOCK, SOCK_CLOEXEC */
  /* 3 */ IS(SOCK_STREAM, 5, 6),
  /* 4 */ IS(__NR_socket, 0, 4),
  /* 5 */ LOAD(ARG_LO(0)),
  /* 6 */ IS(AF_INET, 2, 0),
  /* 7 */ IS(AF_INET6, 1, 0),
  /* 8 */ IS(AF_NETLINK, 0, 1),
  /* 9 */ RET(SECCOMP_RET_ALLOW),
  /* 10 */ DENY(EACCES),
};

static int seal(void) {
  struct sock_fprog prog = { (unsigned short)(sizeof(filter) / sizeof(filter[0])), filter };
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return -1;
  return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0);
}

int main(int argc, char **argv) {
  if (argc < 2) { fputs("usage: berth-seal --check | PROGRAM [ARG...]\n", stderr); return 125; }
  if (seal() != 0) { fprintf(stderr, "berth: could not seal local sockets: %s\n", strerror(errno)); return 125; }
  if (strcmp(argv[1], "--check") == 0) {
    int d[2], s[2];
    int u = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int ue = errno;
    int v = socket(AF_VSOCK, SOCK_STREAM, 0);
    int p = socketpair(AF_UNIX, SOCK_DGRAM, 0, d);
    int q = socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, s);
    int i = socket(AF_INET, SOCK_STREAM, 0);
    return (u < 0 && ue == EACCES && v < 0 && p < 0 && q == 0 && i >= 0) ? 0 : 1;
  }
  execvp(argv[1], argv + 1);
  fprintf(stderr, "berth: could not run %s: %s\n", argv[1], strerror(errno));
  return 127;
}
`;

/** The helper's file name: the source's digest, so a changed source is built anew and an old binary never used. */
export function sealName(): string {
  return `berth-seal-${createHash("sha256").update(SEAL_SOURCE).update(process.arch).digest("hex").slice(0, 16)}`;
}

/**
 * A directory the daemon may keep an executable in: its own, written by nobody else (a root daemon runs what is in
 * it before dropping privileges). Created 0700 when missing.
 */
function ownedDir(dir: string, uid: number): boolean {
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const st = lstatSync(dir);
    return st.isDirectory() && st.uid === uid && (st.mode & 0o022) === 0;
  } catch {
    return false;
  }
}

function passesCheck(path: string, uid: number): boolean {
  try {
    const st = lstatSync(path);
    if (!st.isFile() || st.uid !== uid || (st.mode & 0o022) !== 0) return false;
  } catch {
    return false;
  }
  return spawnSync(path, ["--check"], { stdio: "ignore", timeout: 5000 }).status === CHECK_OK;
}

/** Builds the helper in `dir` with the host's `cc`; the binary appears under its final name only once it links. */
function build(dir: string, name: string): boolean {
  const tmp = join(dir, `.${name}.${process.pid}.${Date.now()}`);
  try {
    writeFileSync(`${tmp}.c`, SEAL_SOURCE, { mode: 0o600 });
    const r = spawnSync("cc", ["-O2", "-o", tmp, `${tmp}.c`], { stdio: "ignore", timeout: 60_000 });
    if (r.status !== 0) return false;
    chmodSync(tmp, 0o700);
    renameSync(tmp, join(dir, name));
    return true;
  } catch {
    return false;
  } finally {
    rmSync(`${tmp}.c`, { force: true });
    rmSync(tmp, { force: true });
  }
}

/**
 * The path of a working seal helper for this daemon, or null when none can be had (no C compiler, a kernel without
 * seccomp filters, an unsafe directory). Looked for, then built, in the user's cache (`~/.cache/berth/seal`, shared by
 * the daemons of one user) and in the node's own data directory (for a daemon whose home is read-only, as under the
 * systemd unit's ProtectHome=).
 */
export function probeSeal(dataDir: string, uid: number): string | null {
  if (process.platform !== "linux") return null;
  const dirs = [join(homedir(), ".cache", "berth", "seal"), join(dataDir, "bin")];
  const name = sealName();
  for (const dir of dirs) if (existsSync(join(dir, name)) && passesCheck(join(dir, name), uid)) return join(dir, name);
  for (const dir of dirs) {
    if (!ownedDir(dir, uid)) continue;
    if (build(dir, name) && passesCheck(join(dir, name), uid)) return join(dir, name);
  }
  return null;
}
