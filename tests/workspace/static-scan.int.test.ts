// The static scan on real diffs: every case is a file in a real git repo, edited in one commit, and the
// scan reads `git diff` of that commit. Each rule has hack lines that must be caught and innocent look-alikes
// that must not be.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Git } from '../../src/workspace/git.js';
import { LINE_RULES, OBSERVES_RULE_PREFIX, PATH_RULES } from '../../src/workspace/scan-rules.js';
import {
  formatFinding,
  type ScanResult,
  scanCommits,
  stripPythonComment,
} from '../../src/workspace/static-scan.js';
import { commitFiles, git, makeRepo, type TestRepo, writeFiles } from './repo.js';

const EDITABLE = ['kernels/gdn/**'];
const PROTECTED = ['kernels/harness/**', 'kernels/gdn/naive.py'];
const BASE_KERNEL = 'import jax\nimport jax.numpy as jnp\n\n\ndef kernel(x):\n    return x\n';

/** rule id → lines that must trip it, and innocent look-alikes that must trip nothing. */
const CASES: Record<string, { hack: string[]; ok: string[] }> = {
  'import-harness': {
    hack: [
      'from kernels.harness import tolerances',
      'import kernels.harness.bench as bench',
      'from ..harness.spec import ATOL',
      'from kernels import harness',
      'from kernels.matmul_harness import oracle',
      'from kernels import matmul_harness',
      'import hillclimb_bench._bench as _b',
      'from hillclimb_bench import timing',
      "importlib.import_module('hillclimb_bench.checks')",
    ],
    ok: [
      'from kernels.gdn import chunk',
      'from kernels.matmul import tiles',
      'harness_free = True  # unlike the harness, we stay pure',
      '# from kernels.harness import x',
    ],
  },
  'import-tests': {
    hack: [
      'import conftest',
      'from tests.helpers import make_inputs',
      'from kernels.harness.tests import test_gdn',
    ],
    ok: ['attests = 1', 'from kernels.gdn import testing_utils'],
  },
  'import-test-runner': {
    hack: ['import pytest', 'from unittest import mock', 'from _pytest.outcomes import skip'],
    ok: ['unittest_like = 0', 'import pytestify_helpers'],
  },
  'protected-path': {
    hack: [
      "SPEC = 'kernels/harness/spec.json'",
      "path = Path(__file__).parent.parent / 'harness'",
      "data = np.load('../tests/data.npz')",
      "tol = json.loads(Path('tolerances.json').read_text())",
      'shapes = yaml.safe_load(open("shapes.yaml"))',
    ],
    ok: ['"""The harness measures this kernel; see the docs."""', "name = 'gdn_chunk_fwd'", "mode = 'test'"],
  },
  'timer-patch': {
    hack: [
      'time.perf_counter = lambda: 0.0',
      'jax.block_until_ready = lambda x: x',
      "setattr(time, 'perf_counter', fake)",
      "with mock.patch('time.perf_counter', return_value=0):",
    ],
    ok: [
      '    t0 = time.perf_counter()',
      '    if time.time() == deadline:',
      '    out = jax.block_until_ready(out)',
    ],
  },
  'identity-cache': {
    hack: [
      '_CACHE[id(q)] = out',
      '    hit = _seen.get(id(k))',
      '    key = q.tobytes()',
      '_memo = weakref.WeakKeyDictionary()',
    ],
    ok: ['    i = pl.program_id(0)', '    row_id = ids[0]', '    h = head_id(x)', '    def id(self) -> str:'],
  },
  'native-pointer': {
    hack: [
      '    ptr = q.unsafe_buffer_pointer()',
      "    addr = x.__array_interface__['data'][0]",
      'import ctypes',
    ],
    ok: ['pointer_like = 1', '    ctype = jnp.float32'],
  },
  memoize: {
    hack: ['@functools.lru_cache(maxsize=None)', '@cache', 'fast = functools.cache(kernel)'],
    ok: ['cache_dir = None', '    cached = x'],
  },
  'module-state': {
    hack: ['_RESULTS = {}', '_SEEN: dict = dict()', '    global _LAST'],
    ok: ['    scratch = {}', 'BLOCK_SIZES = {(64, 64): 128}', "__all__ = ['chunk']"],
  },
  'env-write': {
    hack: [
      "os.environ['GDN_MODE'] = 'fast'",
      'os.environ.update(GDN_MODE="fast")',
      "os.putenv('A', 'b')",
      "del os.environ['GDN_MODE']",
    ],
    ok: ["debug = os.environ.get('GDN_DEBUG') == '1'", "if os.environ['HOME'] == '/x':"],
  },
  'jax-config': {
    hack: [
      "jax.config.update('jax_default_matmul_precision', 'bfloat16')",
      'jax.config.jax_enable_x64 = True',
      'config.update("jax_enable_x64", True)',
      '    with jax.disable_jit():',
    ],
    ok: [
      '    y = jnp.dot(a, b, precision=jax.lax.Precision.HIGHEST)',
      "    with jax.default_matmul_precision('float32'):",
      '    config.update(block=64)',
    ],
  },
  'runtime-flags': {
    hack: [
      "flags = os.environ.get('XLA_FLAGS', '')",
      "LIBTPU = 'LIBTPU_INIT_ARGS'",
      "opts = '--xla_tpu_enable_async=true'",
    ],
    ok: ["backend = 'xla'", "name = 'jax_chunk'", 'JAX_BLOCK = 128'],
  },
  subprocess: {
    hack: [
      'import subprocess',
      "os.system('nvidia-smi')",
      "    out = subprocess.run(['ls'])",
      '    pid = os.fork()',
    ],
    ok: ['    path = os.path.join(a, b)', 'system_size = 3'],
  },
  threads: {
    hack: [
      'import threading',
      'from concurrent.futures import ThreadPoolExecutor',
      '    t = threading.Thread(target=warm)',
      'import multiprocessing as mp',
    ],
    ok: ['n_threads = 4', '    for thread in range(2):'],
  },
  network: {
    hack: ['import requests', 'from urllib.request import urlopen', '    s = socket.socket()'],
    ok: ['"""See https://arxiv.org/abs/2412.06464 for the derivation."""', 'sockets = 2'],
  },
  'file-write': {
    hack: [
      "    open('/tmp/out.npy', 'wb').write(data)",
      "    with open(path, mode='w') as f:",
      "    Path('x.txt').write_text('1')",
      "    np.save('cache.npy', out)",
      '    shutil.copy(a, b)',
      '    os.remove(p)',
    ],
    ok: [
      '    with open(path) as f:',
      "    with open(path, 'rb') as f:",
      "    s = name.replace('a', 'b')",
      '    x = json.dumps(meta)',
    ],
  },
  'profiler-control': {
    hack: ["    jax.profiler.start_trace('/tmp/t')", '    jax.profiler.stop_trace()'],
    ok: ["    with jax.profiler.TraceAnnotation('gdn_fwd'):", "    with jax.named_scope('gdn_chunk_fwd'):"],
  },
  'import-machinery': {
    hack: [
      "sys.modules['kernels.gdn.naive'] = fake",
      "sys.path.insert(0, '/tmp')",
      'importlib.reload(chunk)',
      'builtins.print = noop',
      "__builtins__['open'] = fake",
    ],
    ok: ['mods = modules_list', '    argv = sys.argv'],
  },
  'caller-introspection': {
    hack: [
      '    frame = sys._getframe(1)',
      "    if 'pytest' in str(inspect.stack()):",
      '    objs = gc.get_objects()',
    ],
    ok: ['    stack = jnp.stack([a, b])', 'frame_size = 8'],
  },
  sleep: {
    hack: ['    time.sleep(0.01)', 'from time import sleep, perf_counter'],
    ok: ['sleepy = False', '    t = time.time()'],
  },
  'dynamic-code': {
    hack: [
      '    eval(src)',
      '    exec(code, globals())',
      "m = __import__('kernels.gdn.naive')",
      '    mod = importlib.import_module(name)',
    ],
    ok: ['    evaluate(x)', '    compiled = jax.jit(f).lower(x).compile()', 'executor = None'],
  },
  // Signals (warnings the PR comment lists): code that can tell how it is run.
  'observes-argv': {
    hack: ['    if "export" in sys.argv:', 'import argparse'],
    ok: ['argv_like = 3', '    args = parse(x)'],
  },
  'observes-paths': {
    hack: ['HERE = __file__', '    root = os.getcwd()', "    maps = '/proc/self/mountinfo'"],
    ok: ['file_count = 2', "    path = 'kernels/x'"],
  },
  'observes-environment': {
    hack: ["    if os.getenv('CI'):", "    debug = os.environ.get('X')"],
    ok: ['environment = None', "    env_name = 'x'"],
  },
  'observes-jax-config': {
    hack: [
      '    if jax.config.jax_enable_x64:',
      "    flag = getattr(jax.config, 'x', 0)",
      "    n = 'jax_traceback_in_locations_limit'",
    ],
    ok: ['    config = BlockSizes()', '    dtype = jax.numpy.float32', '    jax_array = x'],
  },
  'observes-caller': {
    hack: ['    frames = inspect.getouterframes(x)', '    b = vars(len.__self__)', '    g = globals()'],
    ok: ['    inspected = True', '    self_ = 1'],
  },
  'observes-clock': {
    hack: ['    if time.time() > DEADLINE:', '    today = datetime.now()'],
    ok: ['    timed = 1', "    name = 'time'"],
  },
};

const PATH_CASES = {
  hack: {
    'kernels/gdn/conftest.py': ['startup-file', 'def pytest_runtest_setup(item):\n    pass\n'],
    'kernels/gdn/zz.pth': ['startup-file', 'import os\n'],
    'kernels/gdn/sitecustomize.py': ['startup-file', 'x = 1\n'],
    'kernels/gdn/chunk.cpython-311-x86_64-linux-gnu.so': ['native-or-binary', '\u0000ELF\u0000\u0001'],
    'kernels/gdn/table.bin': ['native-or-binary', '\u0000\u0001\u0002\u0000'],
    'kernels/gdn/.gitattributes': ['git-attributes', '*.py filter=sneaky\n'],
  },
  ok: {
    'kernels/gdn/config.py': 'BLOCK = 64\n',
    'kernels/gdn/table.json': '{"64": 128}\n',
    'kernels/gdn/README.md': 'How the chunked kernel works.\n',
  },
} as const;

let repo: TestRepo;
let result: ScanResult;
let configured: ScanResult;
const caseFile = (rule: string, kind: string, i: number) => `kernels/gdn/cases/${rule}_${kind}_${i}.py`;

beforeAll(async () => {
  repo = makeRepo({ 'README.md': 'x\n' });
  const base: Record<string, string> = {
    'kernels/gdn/legacy.py':
      'import subprocess  # already here before the candidate\n\n\ndef f():\n    return 1\n',
    'kernels/gdn/naive.py': 'def oracle(x):\n    return x\n',
    'scripts/tool.py': 'print(1)\n',
    'kernels/gdn/gone.py': 'import threading\n',
  };
  for (const [rule, c] of Object.entries(CASES)) {
    c.hack.forEach((_, i) => {
      base[caseFile(rule, 'hack', i)] = BASE_KERNEL;
    });
    c.ok.forEach((_, i) => {
      base[caseFile(rule, 'ok', i)] = BASE_KERNEL;
    });
  }
  const before = commitFiles(repo.root, 'base', base);

  const head: Record<string, string> = {
    'kernels/gdn/legacy.py':
      'import subprocess  # already here before the candidate\n\n\ndef f():\n    return 2\n',
    'kernels/gdn/naive.py': 'import subprocess\n', // protected: the guard's business, not the scan's
    'scripts/tool.py': 'import subprocess\n', // outside editable: likewise
    'kernels/gdn/comments.py': '# import subprocess\n# time.sleep(1)\nx = 1  # os.system("rm")\n',
    'kernels/gdn/interp.py': 'def k():\n    return pl.pallas_call(body, interpret=True)\n',
    'kernels/gdn/notes.md': 'we call pl.pallas_call(body, interpret=True) here\n',
  };
  for (const [rule, c] of Object.entries(CASES)) {
    c.hack.forEach((line, i) => {
      head[caseFile(rule, 'hack', i)] = `${BASE_KERNEL}${line}\n`;
    });
    c.ok.forEach((line, i) => {
      head[caseFile(rule, 'ok', i)] = `${BASE_KERNEL}${line}\n`;
    });
  }
  writeFiles(repo.root, head);
  for (const [path, [, content]] of Object.entries(PATH_CASES.hack))
    writeFileSync(join(repo.root, path), content);
  for (const [path, content] of Object.entries(PATH_CASES.ok)) writeFileSync(join(repo.root, path), content);
  git(repo.root, 'rm', '--quiet', 'kernels/gdn/gone.py');
  const after = commitFiles(repo.root, 'candidate', {});

  const g = await Git.create(repo.root);
  result = await scanCommits(g, before, after, { editable: EDITABLE, protected: PROTECTED });
  configured = await scanCommits(g, before, after, {
    editable: EDITABLE,
    protected: PROTECTED,
    staticChecks: [
      {
        pattern: 'interpret\\s*=\\s*True',
        reason: 'interpret mode is for CPU tests only',
        paths: ['kernels/gdn/**/*.py'],
      },
      { pattern: 'pallas_call', reason: 'any file, any line' },
    ],
  });
});
afterAll(() => repo.cleanup());

const findingsFor = (r: ScanResult, file: string) => r.findings.filter((f) => f.file === file);

describe('built-in line rules on real diffs', () => {
  it('has hack and innocent cases for every built-in rule', () => {
    expect(Object.keys(CASES).sort()).toEqual(LINE_RULES.map((r) => r.id).sort());
    const pathRuleIds = new Set(Object.values(PATH_CASES.hack).map(([id]) => id));
    expect([...pathRuleIds].sort()).toEqual(PATH_RULES.map((r) => r.id).sort());
  });

  for (const [rule, c] of Object.entries(CASES)) {
    c.hack.forEach((line, i) => {
      it(`${rule}: catches ${JSON.stringify(line.trim())}`, () => {
        const found = findingsFor(result, caseFile(rule, 'hack', i));
        const hit = found.find((f) => f.ruleId === rule);
        expect(hit, `findings: ${found.map(formatFinding).join('\n')}`).toBeDefined();
        expect(hit!.line).toBe(BASE_KERNEL.split('\n').length);
        expect(hit!.excerpt).toBe(line.trim());
        expect(hit!.reason.length).toBeGreaterThan(20);
      });
    });
    c.ok.forEach((line, i) => {
      it(`${rule}: lets ${JSON.stringify(line.trim())} pass`, () => {
        // An innocent look-alike trips nothing; of another rule's, a signal may still be listed (an
        // environment read that writes nothing is innocent of env-write, and a reader's business).
        const found = findingsFor(result, caseFile(rule, 'ok', i)).filter(
          (f) => rule.startsWith(OBSERVES_RULE_PREFIX) || !f.ruleId.startsWith(OBSERVES_RULE_PREFIX),
        );
        expect(found.map(formatFinding)).toEqual([]);
      });
    });
  }
});

describe('scope of the scan', () => {
  it('flags files the interpreter or test runner loads, native and binary files', () => {
    for (const [path, [rule]] of Object.entries(PATH_CASES.hack)) {
      expect(
        findingsFor(result, path).map((f) => f.ruleId),
        path,
      ).toContain(rule);
      expect(findingsFor(result, path).find((f) => f.ruleId === rule)!.line).toBeUndefined();
    }
    for (const path of Object.keys(PATH_CASES.ok)) expect(findingsFor(result, path)).toEqual([]);
  });

  it('looks only at added lines, in editable and unprotected files, outside comments', () => {
    expect(findingsFor(result, 'kernels/gdn/legacy.py')).toEqual([]);
    expect(findingsFor(result, 'kernels/gdn/comments.py')).toEqual([]);
    expect(findingsFor(result, 'kernels/gdn/gone.py')).toEqual([]);
    expect(result.scannedFiles).not.toContain('kernels/gdn/naive.py');
    expect(result.scannedFiles).not.toContain('scripts/tool.py');
    expect(result.scannedFiles).toContain('kernels/gdn/legacy.py');
  });

  it('blocks on block-severity findings only', () => {
    expect(result.blocking).toBe(true);
    const warnOnly = result.findings.filter((f) => f.file.includes('/memoize_hack_'));
    expect(warnOnly.length).toBeGreaterThan(0);
    expect(warnOnly.every((f) => f.severity === 'warn')).toBe(true);
  });

  it('applies configured static_checks to every editable file, or to their own paths', () => {
    const interp = findingsFor(configured, 'kernels/gdn/interp.py')
      .map((f) => f.ruleId)
      .sort();
    expect(interp).toEqual(['static_checks[0]', 'static_checks[1]']);
    const notes = findingsFor(configured, 'kernels/gdn/notes.md');
    expect(notes.map((f) => f.ruleId)).toEqual(['static_checks[1]']);
    expect(notes[0]).toMatchObject({ line: 1, severity: 'block', reason: 'any file, any line' });
    expect(findingsFor(result, 'kernels/gdn/interp.py')).toEqual([]);
  });
});

describe('stripPythonComment', () => {
  it('drops a trailing comment but keeps # inside strings', () => {
    expect(stripPythonComment('x = 1  # note')).toBe('x = 1  ');
    expect(stripPythonComment("s = '#not a comment'  # real")).toBe("s = '#not a comment'  ");
    expect(stripPythonComment('s = "a\\"#b"')).toBe('s = "a\\"#b"');
  });
});
