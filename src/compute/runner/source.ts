/**
 * The job runner: a small stdlib-only Python script shipped inside the working-tree package to remote
 * machines (Ray workers, TPU VMs). It fills the placeholders with paths that exist where the job runs
 * ({python} = its own interpreter, {root} = the unpacked tree, outputs in a fresh temp folder), runs
 * the command, then returns the outputs as a gzipped tarball: printed base64 between markers (Ray:
 * the job log is the only channel back) or written to a file (TPU VM: fetched with scp). Markers carry
 * a per-job nonce so job output cannot be mistaken for them.
 *
 * Kept as a string so the bundled CLI carries it; tests run it with a real interpreter.
 */

/** File name of the runner inside the shipped tree. */
export const RUNNER_FILE = '.hillclimb-runner.py';

export const RUNNER_SOURCE = String.raw`"""hillclimb job runner (generated; see src/compute/runner/source.ts)."""
import base64
import hashlib
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile

OUTPUT_NAMES = {"metrics": "metrics.json", "junit": "junit.xml", "trace": "trace", "programs": "programs"}
PLACEHOLDER = re.compile(r"\{(python|metrics|junit|trace|programs|root|cache)\}")
KILL_GRACE_S = 5


def marker(nonce, kind, payload=""):
    """One protocol line: @@hillclimb <nonce> <kind> <payload>@@ (the payload never holds '@' or a newline)."""
    clean = re.sub(r"[@\r\n]+", " ", str(payload)).strip()
    sys.stdout.write("\n@@hillclimb %s %s%s@@\n" % (nonce, kind, " " + clean if clean else ""))
    sys.stdout.flush()


def pack(out_dir, wanted):
    """Gzipped tar of the requested outputs that exist; regular files and folders only."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", format=tarfile.PAX_FORMAT) as tar:
        for name in wanted:
            path = os.path.join(out_dir, OUTPUT_NAMES[name])
            if os.path.isfile(path) and not os.path.islink(path):
                tar.add(path, arcname=OUTPUT_NAMES[name], recursive=False)
            elif os.path.isdir(path) and not os.path.islink(path):
                for folder, dirs, files in os.walk(path):
                    rel = os.path.relpath(folder, out_dir)
                    tar.add(folder, arcname=rel, recursive=False)
                    for f in sorted(files):
                        full = os.path.join(folder, f)
                        if os.path.isfile(full) and not os.path.islink(full):
                            tar.add(full, arcname=os.path.join(rel, f), recursive=False)
    return buf.getvalue()


UNSHARE = ["unshare", "--user", "--map-root-user", "--mount", "--pid", "--fork", "--kill-child", "--mount-proc", "--"]


def pid_namespace_works():
    """Whether unshare can give a job its own PID namespace here (user namespaces allowed)."""
    if shutil.which("unshare") is None:
        return False
    try:
        probe = UNSHARE + ["true"]
        return subprocess.run(probe, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def main():
    spec = json.loads(base64.b64decode(sys.argv[1]).decode("utf-8"))
    nonce = spec["nonce"]
    out_dir = tempfile.mkdtemp(prefix="hillclimb-out-")
    # {cache} persists across jobs on this machine: one folder per code under test (its tree hash), so a
    # candidate's job cannot plant compile-cache entries the champion's jobs load. The verifier gets a
    # fresh one per job: here no sandbox keeps candidate jobs, which run as the same user, out of a
    # folder in the home directory, and a planted entry under the oracle's key would be loaded.
    cache = os.path.join(os.path.expanduser("~"), ".cache", "hillclimb", "jobs")
    key = spec.get("cache_key")
    if key in ("verifier", "ephemeral"):  # a fresh folder of this job's own, removed after it
        cache = tempfile.mkdtemp(prefix="hillclimb-%s-cache-" % key)
    elif key and re.match(r"^[0-9a-f]{40,64}$", key):
        cache = os.path.join(cache, "by-code", key)
    else:
        cache = os.path.join(cache, "shared")
    os.makedirs(cache, exist_ok=True)
    values = {"python": sys.executable, "root": os.getcwd(), "cache": cache}
    for name in spec["outputs"]:
        values[name] = os.path.join(out_dir, OUTPUT_NAMES[name])

    def fill(arg):
        def one(m):
            if m.group(1) not in values:
                raise SystemExit("placeholder {%s} has no value" % m.group(1))
            return values[m.group(1)]

        return PLACEHOLDER.sub(one, arg)

    argv = [fill(a) for a in spec["command"]]
    env = dict(os.environ)
    env.update(spec.get("env") or {})
    env["PYTHONUNBUFFERED"] = "1"
    pgid_file = spec.get("pgid_file")
    # In a PID namespace of its own where the machine allows one: every process the job starts, even one
    # that left its session with setsid, dies with it, before the next job (the champion's) runs.
    isolation = "process-group"
    if shutil.which(argv[0]) is None:
        marker(nonce, "spawn-error", "%s: command not found" % argv[0])
        marker(nonce, "result", "exit=127")
        return 127
    if pid_namespace_works():
        # A shell is the namespace's init, so the job itself keeps ordinary signal handling (an init
        # ignores signals it has no handler for) and its exit status comes back as a shell reports it.
        argv = UNSHARE + ["/bin/sh", "-c", '"$@"; exit $?', "hillclimb-job"] + argv
        isolation = "pid-namespace"
    marker(nonce, "isolation", isolation)
    try:
        child = subprocess.Popen(argv, env=env, start_new_session=True)
    except OSError as e:
        marker(nonce, "spawn-error", "%s: %s" % (argv[0], e))
        marker(nonce, "result", "exit=127")
        return 127
    if pgid_file:
        with open(pgid_file, "w") as f:
            f.write(str(child.pid))

    def kill_group():
        try:
            os.killpg(child.pid, signal.SIGTERM)
            try:
                child.wait(KILL_GRACE_S)
            except subprocess.TimeoutExpired:
                os.killpg(child.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    stopped = {"by": None}

    def on_signal(signum, frame):
        stopped["by"] = "signal"
        kill_group()

    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(s, on_signal)
    try:
        code = child.wait(spec.get("timeout_s"))
    except subprocess.TimeoutExpired:
        stopped["by"] = "timeout"
        kill_group()
        code = child.wait()
    # Whatever the job left running in its process group dies with it: a candidate's leftover process
    # must not run on into the next job (the champion's runs share this machine).
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    if code < 0:
        code = 128 - code
    sys.stdout.flush()
    try:
        data = pack(out_dir, spec["outputs"])
        emit = spec.get("emit", "log")
        if emit == "log":
            limit = spec.get("max_bytes") or 0
            if limit and len(data) > limit:
                marker(nonce, "outputs-error", "%d bytes of outputs exceed the cap of %d bytes" % (len(data), limit))
            else:
                digest = hashlib.sha256(data).hexdigest()
                marker(nonce, "outputs-begin", "sha256=%s bytes=%d" % (digest, len(data)))
                text = base64.b64encode(data).decode("ascii")
                for i in range(0, len(text), 76):
                    sys.stdout.write(text[i : i + 76] + "\n")
                marker(nonce, "outputs-end")
        else:
            with open(emit, "wb") as f:
                f.write(data)
    except Exception as e:  # an output problem must not hide the job's exit code
        marker(nonce, "outputs-error", "could not pack outputs: %s" % e)
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)
        if key in ("verifier", "ephemeral"):
            shutil.rmtree(cache, ignore_errors=True)
        if pgid_file:
            try:
                os.unlink(pgid_file)
            except OSError:
                pass
    marker(nonce, "result", "killed=" + stopped["by"] if stopped["by"] else "exit=%d" % code)
    return code if 0 <= code < 256 else 1


if __name__ == "__main__":
    sys.exit(main())
`;
