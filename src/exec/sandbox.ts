/**
 * The sandbox every untrusted process runs in on this machine: the agent, and the candidate's tests,
 * benchmarks and profiles. Built from Linux namespaces with util-linux alone (`unshare`, `mount`,
 * `pivot_root`, `setpriv`), which every Linux runner has; no daemon, no setuid helper.
 *
 * Inside, the process sees a new root: the system directories read-only (/usr, /bin, /lib*, /etc, /opt),
 * a fresh /proc of its own PID namespace, a minimal /dev, private empty /tmp and /var/tmp, and exactly the
 * paths the caller lists — read-only or writable — at their usual locations. Nothing else of the machine
 * is there: not HOME, not the runner's temp folder (where GitHub keeps GITHUB_OUTPUT and the file
 * commands), not the repository's state folder, not other worktrees. It has its own PID namespace (it
 * cannot see or signal the harness; `/proc/$PPID` is its own shell), its own IPC and hostname, no
 * capabilities, and no way to gain any (no_new_privs). Its network is one of three: none at all (the
 * default), the machine's, or a network namespace of its own whose only way out is one loopback port
 * forwarded to a UNIX socket outside (loopback-forward.ts). When its main process ends, the namespace's
 * init exits and the kernel kills every process it left behind. When the harness dies, even by SIGKILL,
 * so does the sandbox: `unshare` runs under `setpriv --pdeathsig KILL` (the kernel signals it when its
 * parent dies), and `--kill-child` passes that on to the namespace's init.
 *
 * What it does not do: limit CPU or memory (the caller's timeouts do), or filter system calls. Files
 * under the read-only system directories that the user running hillclimb can read stay readable.
 */
import { lstatSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { run } from './exec.js';
import { LOOPBACK_FORWARDER } from './loopback-forward.js';

export interface SandboxSpec {
  /** Working directory of the command; must lie inside one of the listed paths. */
  cwd: string;
  /** Paths visible read-only, at the same location. Missing paths are skipped. */
  readOnly: readonly string[];
  /** Paths visible and writable, at the same location. They must exist. */
  writable: readonly string[];
  /**
   * The network the command gets. Default: none at all. `'host'`: the machine's. A forward: a network of
   * its own where 127.0.0.1:`port` leads to the UNIX socket `socket` outside, and nothing else does.
   */
  network?: 'host' | LoopbackForward;
  /**
   * A file outside every listed path that the init writes `ready` to once the sandbox is built, before
   * the command starts: tells a sandbox that could not be built (exit 125) from a command exiting 125.
   */
  readyFile?: string;
}

export interface LoopbackForward {
  port: number;
  /** A UNIX socket outside the sandbox (the harness's key proxy). */
  socket: string;
}

/** System directories every sandbox sees read-only. */
const SYSTEM_DIRS = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32', '/etc', '/opt', '/nix'];

/** Files under /etc that hold credentials; masked even though /etc is visible. */
const MASKED_FILES = ['/etc/shadow', '/etc/gshadow', '/etc/shadow-', '/etc/gshadow-', '/etc/sudoers'];
const MASKED_DIRS = ['/etc/ssh', '/etc/sudoers.d'];

/**
 * The sandbox's init: runs as root of a fresh user namespace (all capabilities there, none outside), in
 * fresh mount, PID, IPC, UTS (and network) namespaces, as PID 1. Arguments: stage dir, cwd, then
 * `ro:<path>` / `rw:<path>` / `mask:<path>` items, `--`, the command. Exit 125 when the sandbox cannot be
 * built (never the command's own code).
 */
const INIT_SCRIPT = String.raw`set -eu
job_path=${'$'}{PATH-}
PATH=/usr/sbin:/usr/bin:/sbin:/bin; export PATH
die() { echo "hillclimb sandbox: $*" >&2; exit 125; }
stage=$1; cwd=$2; ready=$3; shift 3
# The ready mark: written through a descriptor opened now, after everything is built, and closed before
# the command starts, so only a sandbox that was built says so (exit 125 alone could be the command's).
if [ -n "$ready" ]; then exec 4>"$ready" || die "cannot write $ready"; fi
mount -t tmpfs -o mode=0755 hillclimb-sandbox "$stage" || die "cannot mount a tmpfs at $stage"
# The new root by its real path: mountinfo names mounts so, and a link on the way to the stage (a
# TMPDIR reached through one) would make ro_tree match nothing.
R=$(cd "$stage" && pwd -P) || die "cannot enter $stage"
ro_tree() {
  # The mount's real path, for the same reason (a listed path reached through a link); a read-only
  # mount that matches nothing would stay writable, so that is an error.
  if [ -d "$R$1" ]; then t=$(cd "$R$1" && pwd -P); else t=$(cd "$(dirname "$R$1")" && pwd -P)/$(basename "$1"); fi ||
    die "cannot resolve $R$1"
  mps=$(awk -v p="$t" '{ mp = $5; gsub(/\\040/, " ", mp); gsub(/\\011/, "\t", mp); gsub(/\\134/, "\\", mp);
    if (mp == p || index(mp, p "/") == 1) print $6 " " mp }' /proc/self/mountinfo)
  [ -n "$mps" ] || die "no mount at $t to make read-only (for $1)"
  printf '%s\n' "$mps" |
  while read -r opts mp; do
    o=$(printf '%s' "$opts" | sed -e 's/^rw,/ro,/' -e 's/,rw,/,ro,/' -e 's/,rw$/,ro/' -e 's/^rw$/ro/')
    mount -o "remount,bind,$o" "$mp" 2>/dev/null || mount -o remount,bind,ro "$mp" ||
      die "cannot make $mp read-only"
  done
}
expose() {
  kind=$1; p=$2
  if [ -d "$p" ]; then mkdir -p "$R$p"
  elif [ -e "$p" ]; then mkdir -p "$R$(dirname "$p")"; [ -e "$R$p" ] || : >"$R$p"
  else [ "$kind" = ro ] && return 0; die "$p does not exist"; fi
  mount --rbind "$p" "$R$p" || die "cannot expose $p"
  [ "$kind" = rw ] || ro_tree "$p"
}
# A new network namespace starts with its loopback down: bring it up for a forward (iproute2, or the
# SIOCSIFFLAGS ioctl from a Python on the job's PATH where the image has no ip).
loopback_up() {
  ip link set lo up 2>/dev/null && return 0
  py=$(PATH=$job_path command -v python3) || die "cannot bring up the loopback: neither ip nor python3 is here"
  "$py" -S -c 'import fcntl, socket, struct
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
flags = struct.unpack("16sH22x", fcntl.ioctl(s, 0x8913, struct.pack("16sH22x", b"lo", 0)))[1]
fcntl.ioctl(s, 0x8914, struct.pack("16sH22x", b"lo", flags | 1))' || die "cannot bring up the loopback"
}
mask() {
  p=$1
  if [ -d "$R$p" ]; then mount -t tmpfs -o ro,mode=0755 hillclimb-mask "$R$p"
  elif [ -e "$R$p" ]; then mount --bind /dev/null "$R$p"; fi
}
for d in ${SYSTEM_DIRS.join(' ')}; do
  if [ -L "$d" ]; then ln -s "$(readlink "$d")" "$R$d"; elif [ -d "$d" ]; then expose ro "$d"; fi
done
mkdir -p "$R/dev" "$R/proc" "$R/sys" "$R/tmp" "$R/var/tmp" "$R/run"
mount -t tmpfs -o mode=0755,nosuid hillclimb-dev "$R/dev"
for n in null zero full random urandom tty; do
  [ -e "/dev/$n" ] || continue; : >"$R/dev/$n"; mount --bind "/dev/$n" "$R/dev/$n"
done
# A local TPU: its device nodes (v4/v5p /dev/accel*, v5e/v6e /dev/vfio/*).
for n in /dev/accel* /dev/vfio/*; do
  [ -c "$n" ] || continue; mkdir -p "$R$(dirname "$n")"; : >"$R$n"; mount --bind "$n" "$R$n"
done
ln -s /proc/self/fd "$R/dev/fd"; ln -s /proc/self/fd/0 "$R/dev/stdin"
ln -s /proc/self/fd/1 "$R/dev/stdout"; ln -s /proc/self/fd/2 "$R/dev/stderr"
mkdir "$R/dev/shm"; mount -t tmpfs -o mode=1777,nosuid,nodev hillclimb-shm "$R/dev/shm"
# Read-only: a process that is root outside (hillclimb run as root) must not write /proc/sys
# (kernel.core_pattern runs a program as host root).
mount -t proc -o ro,nosuid,nodev,noexec proc "$R/proc" || die "cannot mount /proc"
expose ro /sys
mount -t tmpfs -o mode=1777,nosuid,nodev hillclimb-tmp "$R/tmp"
mount -t tmpfs -o mode=1777,nosuid,nodev hillclimb-tmp "$R/var/tmp"
while [ $# -gt 0 ] && [ "$1" != -- ]; do
  case $1 in
    ro:*) expose ro "${'$'}{1#ro:}" ;;
    rw:*) expose rw "${'$'}{1#rw:}" ;;
    mask:*) mask "${'$'}{1#mask:}" ;;
    net:loopback) loopback_up ;;
    *) die "unknown item $1" ;;
  esac
  shift
done
shift
cd "$R"; mkdir .old-root; pivot_root . .old-root || die "pivot_root failed"; cd /
umount -l /.old-root; rmdir /.old-root
mount -o remount,bind,ro / || die "cannot make / read-only"
cd "$cwd" || die "cannot enter $cwd"
setpriv=$(command -v setpriv) || die "setpriv is missing (util-linux)"
if [ -n "$ready" ]; then printf ready >&4; exec 4>&-; fi
PATH=$job_path; export PATH
# Descriptors the harness itself inherited (not close-on-exec) must not reach the command: a Python on
# the system closes every one above 2 before it execs it (dash cannot name a descriptor above 9).
closer=$(command -v python3 || true)
exec 3<&0
if [ -n "$closer" ]; then
  "$setpriv" --no-new-privs --inh-caps=-all --ambient-caps=-all --bounding-set=-all -- "$closer" -S -c \
    'import os, sys; os.closerange(3, os.sysconf("SC_OPEN_MAX")); os.execvp(sys.argv[1], sys.argv[1:])' "$@" <&3 &
else
  "$setpriv" --no-new-privs --inh-caps=-all --ambient-caps=-all --bounding-set=-all -- "$@" <&3 &
fi
child=$!
exec 3<&-
trap 'kill -TERM "$child" 2>/dev/null || :' TERM INT HUP
while :; do
  if wait "$child"; then exit 0; else status=$?; fi
  kill -0 "$child" 2>/dev/null || exit "$status"
done
`;

/** Exit code of the sandbox's init when it could not build the sandbox (the command never ran). */
export const SANDBOX_SETUP_FAILED = 125;

/** Whether the init wrote its ready mark into `readyFile` (the sandbox was built and the command started). */
export function sandboxWasReady(readyFile: string): boolean {
  try {
    return readFileSync(readyFile, 'utf8') === 'ready';
  } catch {
    return false;
  }
}

/** This process's own stage folder, where the user's shared one cannot be taken (made once). */
let ownStage: string | undefined;

/**
 * Where the init mounts the new root: one folder per user (`hillclimb-sandbox-<uid>` in the temp
 * folder), the same for every sandbox (each mounts in its own namespace; the folder itself stays
 * empty), kept for the next process rather than made one per process: a test worker its pool kills
 * never runs its exit handlers, and left one behind each time. Checked on every use (a temp cleaner
 * may remove it between two); where it cannot be taken, a fresh folder of this process's (mkdtemp),
 * removed when the process exits. The init resolves whatever it gets to its real path.
 */
function stageDir(): string {
  const shared = sharedStageDir(tmpdir());
  if (shared !== undefined) return shared;
  if (ownStage === undefined) {
    const dir = mkdtempSync(join(tmpdir(), 'hillclimb-sandbox-'));
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
    ownStage = dir;
  }
  return ownStage;
}

/**
 * The user's own stage folder under the real path of `tmp`, made if missing; undefined unless it is
 * safely ours: a folder (not a link) of this user's that nobody else can write, in a folder where
 * nobody else can replace it (this user's or root's, not writable by others, or sticky like /tmp).
 */
export function sharedStageDir(tmp: string): string | undefined {
  const uid = process.getuid?.();
  if (uid === undefined) return undefined;
  let parent: string;
  try {
    parent = realpathSync(tmp);
  } catch {
    return undefined;
  }
  const p = lstatSync(parent, { throwIfNoEntry: false });
  const othersMayReplace = p !== undefined && (p.mode & 0o022) !== 0 && (p.mode & 0o1000) === 0;
  if (!p?.isDirectory() || (p.uid !== uid && p.uid !== 0) || othersMayReplace) return undefined;
  const dir = join(parent, `hillclimb-sandbox-${uid}`);
  try {
    mkdirSync(dir, { mode: 0o700 });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') return undefined;
  }
  const st = lstatSync(dir, { throwIfNoEntry: false });
  return st?.isDirectory() && st.uid === uid && (st.mode & 0o022) === 0 ? dir : undefined;
}

/** Paths the init script can pass through mountinfo unambiguously. */
function checkPath(p: string): string {
  if (!isAbsolute(p)) throw new Error(`sandbox path must be absolute: ${p}`);
  if (/[\n\r]/.test(p)) throw new Error(`sandbox path must not contain a line break: ${JSON.stringify(p)}`);
  return resolve(p);
}

/** Parents before children, so a nested path is mounted over its parent's mount. */
function byDepth(a: { path: string }, b: { path: string }): number {
  return a.path.split('/').length - b.path.split('/').length || a.path.localeCompare(b.path);
}

/** The argument array that runs `command args` inside a sandbox built from `spec`. */
export function sandboxCommand(
  spec: SandboxSpec,
  command: string,
  args: readonly string[],
): { command: string; args: string[] } {
  const items = [
    ...spec.readOnly.map((p) => ({ kind: 'ro', path: checkPath(p) })),
    ...spec.writable.map((p) => ({ kind: 'rw', path: checkPath(p) })),
  ].sort(byDepth);
  const masks = [...MASKED_FILES, ...MASKED_DIRS].map((p) => `mask:${p}`);
  const forward = typeof spec.network === 'object' ? spec.network : undefined;
  // With the network shared, name resolution must work: /etc/resolv.conf often links into /run.
  if (spec.network === 'host') {
    for (const dir of resolverReadPaths()) items.push({ kind: 'ro', path: dir });
    items.sort(byDepth);
  }
  // A forward: the socket and the Node.js that runs the forwarder, which then starts the command.
  if (forward) {
    if (!Number.isInteger(forward.port) || forward.port < 1 || forward.port > 65535) {
      throw new Error(`sandbox forward port must be 1-65535: ${forward.port}`);
    }
    items.push({ kind: 'ro', path: checkPath(forward.socket) });
    for (const dir of nodeReadPaths()) items.push({ kind: 'ro', path: dir });
    items.sort(byDepth);
  }
  const inner = forward
    ? [
        process.execPath,
        '-e',
        LOOPBACK_FORWARDER,
        '--',
        String(forward.port),
        forward.socket,
        command,
        ...args,
      ]
    : [command, ...args];
  return {
    command: 'setpriv',
    args: [
      '--pdeathsig',
      'KILL',
      '--',
      'unshare',
      '--user',
      '--map-root-user',
      '--mount',
      '--pid',
      '--fork',
      '--kill-child',
      '--ipc',
      '--uts',
      ...(spec.network === 'host' ? [] : ['--net']),
      '--',
      '/bin/sh',
      '-c',
      INIT_SCRIPT,
      'hillclimb-sandbox',
      stageDir(),
      checkPath(spec.cwd),
      spec.readyFile ? checkPath(spec.readyFile) : '',
      ...items.map((i) => `${i.kind}:${i.path}`),
      ...masks,
      ...(forward ? ['net:loopback'] : []),
      '--',
      ...inner,
    ],
  };
}

/**
 * The folders a program needs visible to start: its own folder and, for a link, the folder it resolves
 * into — unless the system directories already show them.
 */
export function programReadPaths(program: string): string[] {
  const dirs = new Set<string>([dirname(program)]);
  try {
    const real = realpathSync(program);
    dirs.add(dirname(real));
    // An npm package's binary needs its sibling packages (native builds live in optional dependencies).
    const at = real.indexOf('/node_modules/');
    if (at !== -1) dirs.add(real.slice(0, at + '/node_modules'.length));
  } catch {
    // reported when the program fails to start
  }
  return outsideSystemDirs([...dirs]);
}

/** The installation of the Node.js running hillclimb, for programs that are Node scripts (`#!/usr/bin/env node`). */
export function nodeReadPaths(): string[] {
  try {
    return outsideSystemDirs([dirname(dirname(realpathSync(process.execPath)))]);
  } catch {
    return [];
  }
}

function outsideSystemDirs(dirs: readonly string[]): string[] {
  return dirs.filter((d) => d !== '/' && !SYSTEM_DIRS.some((s) => d === s || d.startsWith(`${s}/`)));
}

function resolverReadPaths(): string[] {
  try {
    return outsideSystemDirs([dirname(realpathSync('/etc/resolv.conf'))]);
  } catch {
    return [];
  }
}

export type SandboxAvailability = { available: true } | { available: false; reason: string };

let probed: Promise<SandboxAvailability> | undefined;

/**
 * Whether this machine can build the sandbox: one trivial sandboxed command, run once per process.
 * The reason names what failed (no unshare, user namespaces disabled or restricted).
 */
export function sandboxAvailability(): Promise<SandboxAvailability> {
  probed ??= probe();
  return probed;
}

/** Forget the probe's answer (tests that change the machine's answer). */
export function resetSandboxProbe(): void {
  probed = undefined;
}

async function probe(): Promise<SandboxAvailability> {
  if (process.platform !== 'linux') {
    return { available: false, reason: `the sandbox needs Linux namespaces; this is ${process.platform}` };
  }
  const { command, args } = sandboxCommand({ cwd: '/', readOnly: [], writable: [] }, 'true', []);
  try {
    const r = await run(command, args, { allowedExitCodes: 'any', timeoutMs: 30_000 });
    if (r.exitCode === 0) return { available: true };
    const why = (r.stderr.trim().split('\n').at(-1) ?? '').trim() || `exit code ${r.exitCode}`;
    return { available: false, reason: why };
  } catch (e) {
    return { available: false, reason: e instanceof Error ? e.message.split('\n')[0]! : String(e) };
  }
}

/** What to do when the sandbox is unavailable, for hints and docs. */
export const SANDBOX_HINT =
  'the sandbox needs unprivileged user namespaces and util-linux (unshare, setpriv): on Ubuntu 24.04 run ' +
  '`sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0`, on Debian ' +
  '`sudo sysctl -w kernel.unprivileged_userns_clone=1`; in a container, allow user namespaces ' +
  '(docs/security.md, "The sandbox")';
