/**
 * Built-in static-scan rules for a Python / JAX / Pallas kernel (evaluation.md §4: the reward-hacking
 * catalogue). Each rule looks at one ADDED line of an editable Python file, with its `#` comment removed,
 * and says why the construct has no business in a kernel the harness times. Rules are scoped narrowly
 * to keep false positives low; `block` findings make the candidate invalid, `warn` findings are shown to
 * reviewers (they are legitimate in some kernels, e.g. memoizing a kernel builder on static shapes).
 * The scan is line-based and is the first, cheap gate, not the only one: the harness also defends at
 * run time (fresh inputs, separate processes, protected timing code).
 */

export type Severity = 'block' | 'warn';

export interface LineRule {
  id: string;
  reason: string;
  severity: Severity;
  /** Globs of files the rule applies to (within the editable paths). */
  paths: readonly string[];
  /** Any of these matching the (comment-stripped) added line is a finding. */
  patterns: ReadonlyArray<RegExp | ((code: string) => boolean)>;
  /** Match the line as written, comments included (configured checks: the user's patterns, verbatim). */
  rawLine?: boolean;
}

export interface PathRule {
  id: string;
  reason: string;
  severity: Severity;
  /** Whether a changed file (new path, binary flag) trips the rule. */
  test(path: string, binary: boolean): boolean;
}

const PY = ['**/*.py', '**/*.pyi'] as const;

/** Timers and sync points a benchmark relies on. */
const TIMERS =
  '(?:perf_counter|perf_counter_ns|time|time_ns|monotonic|monotonic_ns|process_time|process_time_ns|default_timer|block_until_ready)';

/** Content of every string literal on a line (no triple-quote or f-string awareness; good enough per line). */
function stringLiterals(code: string): string[] {
  return [...code.matchAll(/(['"])((?:\\.|(?!\1)[^\\])*)\1/g)].map((m) => m[2]!);
}

const PROTECTED_PATH_IN_STRING =
  /(?:^|[/\\.])harness(?:$|[/\\.])|(?:^|[/\\])tests(?:$|[/\\])|conftest\.py|toleranc[\w-]*\.(?:json|ya?ml|toml|py|txt|csv)|(?:^|[/\\_-])specs?\.(?:json|ya?ml|toml)|shapes?\.(?:json|ya?ml|toml)/i;

const RUNTIME_FLAG_IN_STRING =
  /^(?:XLA_FLAGS|LIBTPU_INIT_ARGS|TPU_[A-Z0-9_]+|JAX_[A-Z0-9_]+|XLA_[A-Z0-9_]+|TF_[A-Z0-9_]+|CUDA_VISIBLE_DEVICES)$|--(?:xla|jax)_\w/;

export const LINE_RULES: readonly LineRule[] = [
  {
    id: 'import-harness',
    severity: 'block',
    reason:
      'imports the protected harness (oracle, tolerances, shapes, bench, or hillclimb_bench that times it): the kernel must not read or depend on what grades it',
    paths: PY,
    // `\w*harness` also matches a target's own harness package (kernels/matmul_harness).
    patterns: [
      /^\s*(?:from|import)\s+(?:[\w.]*\.)?(?:\w*harness|hillclimb_bench)\b/,
      /^\s*from\s+[\w.]+\s+import\s+(?:.*,\s*)?\(?\s*\w*harness\b/,
      /\b(?:importlib\.import_module|__import__)\s*\(\s*['"][^'"]*(?:harness|hillclimb_bench)\b/,
    ],
  },
  {
    id: 'import-tests',
    severity: 'block',
    reason: 'imports test code or conftest: the kernel must not see (or detect) the tests that check it',
    paths: PY,
    patterns: [
      /^\s*(?:from|import)\s+(?:[\w.]*\.)?(?:tests|conftest|test_\w+)\b/,
      /\b(?:importlib\.import_module|__import__)\s*\(\s*['"][^'"]*\b(?:tests|conftest)\b/,
    ],
  },
  {
    id: 'import-test-runner',
    severity: 'block',
    reason: 'imports pytest or unittest machinery (mocking, fixtures): used to detect or patch the test run',
    paths: PY,
    patterns: [
      /^\s*(?:from|import)\s+_?pytest\b/,
      /^\s*(?:from|import)\s+unittest\b/,
      /^\s*import\s+mock\b|^\s*from\s+mock\s+import\b/,
      /\b__import__\s*\(\s*['"]_?pytest/,
    ],
  },
  {
    id: 'protected-path',
    severity: 'block',
    reason:
      'names a path into the harness, the tests or the tolerance/shape specs: reading what grades the kernel is a hack',
    paths: PY,
    patterns: [(code) => stringLiterals(code).some((s) => PROTECTED_PATH_IN_STRING.test(s))],
  },
  {
    id: 'timer-patch',
    severity: 'block',
    reason: 'replaces a timer or block_until_ready: the measurement would time a forgery',
    paths: PY,
    patterns: [
      new RegExp(`\\b(?:time|timeit|jax|jnp|jax\\.Array)\\.${TIMERS}\\s*=(?!=)`),
      new RegExp(`\\bsetattr\\s*\\(\\s*(?:time|timeit|jax|jax\\.Array)\\s*,\\s*['"]${TIMERS}['"]`),
      /\bpatch(?:\.object)?\s*\(\s*['"]?(?:time|timeit|jax)\b/,
      /\bmonkeypatch\b/,
    ],
  },
  {
    id: 'identity-cache',
    severity: 'block',
    reason:
      'keys state on object identity or raw bytes (id(), tobytes(), weak dicts): the classic cache that returns a previous output for a "new" input',
    paths: PY,
    patterns: [
      /(?<!\bdef\s+)(?<![\w.])id\s*\(/,
      /\.tobytes\s*\(\s*\)/,
      /\bweakref\.Weak(?:Key|Value)Dictionary\b|\bWeak(?:Key|Value)Dictionary\s*\(/,
    ],
  },
  {
    id: 'native-pointer',
    severity: 'block',
    reason: 'reaches for raw buffer pointers or ctypes: pointer-keyed caches and memory tricks, unreviewable',
    paths: PY,
    patterns: [
      /\bunsafe_buffer_pointer\b/,
      /__(?:cuda_)?array_interface__/,
      /^\s*(?:from|import)\s+ctypes\b|\bctypes\./,
    ],
  },
  {
    id: 'memoize',
    severity: 'warn',
    reason:
      'memoizes across calls (functools.cache / lru_cache): fine for a kernel builder keyed on static shapes, a hack if it returns cached outputs',
    paths: PY,
    patterns: [
      /^\s*@\s*(?:functools\.)?(?:lru_cache|cache|cached_property)\b/,
      /\bfunctools\.(?:lru_cache|cache)\s*\(/,
    ],
  },
  {
    id: 'module-state',
    severity: 'warn',
    reason:
      'mutable state that outlives a call (module-level empty container, `global`): a possible cross-call cache',
    paths: PY,
    patterns: [
      /^[A-Za-z_]\w*\s*(?::[^=]+)?=\s*(?:\{\s*\}|dict\(\s*\)|\[\s*\]|list\(\s*\)|set\(\s*\)|(?:collections\.)?(?:OrderedDict|defaultdict)\()/,
      /^\s+global\s+\w/,
    ],
  },
  {
    id: 'env-write',
    severity: 'block',
    reason:
      'changes environment variables: they steer XLA, JAX and the harness, which the kernel must not touch',
    paths: PY,
    patterns: [
      /\bos\.environ\s*\[[^\]]*\]\s*=(?!=)/,
      /\bos\.environ\.(?:update|setdefault|pop|popitem|clear)\s*\(/,
      /\bos\.(?:putenv|unsetenv)\s*\(/,
      /\bdel\s+os\.environ\b/,
    ],
  },
  {
    id: 'jax-config',
    severity: 'block',
    reason:
      'changes global JAX configuration (precision, x64, debug flags, jit): it alters every computation in the process, the oracle included',
    paths: PY,
    patterns: [
      /\bjax\.config\.update\s*\(/,
      /\bjax\.config\.\w+\s*=(?!=)/,
      /\bconfig\.update\s*\(\s*['"]jax_/,
      /\bjax\.(?:experimental\.)?(?:enable_x64|disable_x64)\b/,
      /\bjax\.(?:disable_jit|debug_nans|debug_infs|log_compiles|checking_leaks)\s*\(/,
    ],
  },
  {
    id: 'runtime-flags',
    severity: 'block',
    reason: 'names XLA / libtpu / JAX runtime flags or their environment variables: compiler-wide tampering',
    paths: PY,
    patterns: [(code) => stringLiterals(code).some((s) => RUNTIME_FLAG_IN_STRING.test(s))],
  },
  {
    id: 'subprocess',
    severity: 'block',
    reason: 'starts processes: work outside the timed process, or a way around the sandbox',
    paths: PY,
    patterns: [
      /^\s*(?:from|import)\s+(?:subprocess|pty|pexpect)\b/,
      /\bsubprocess\.\w/,
      /\bos\.(?:system|popen|spawn\w*|exec[lv]\w*|fork\w*|posix_spawn\w*|kill\w*)\s*\(/,
    ],
  },
  {
    id: 'threads',
    severity: 'block',
    reason: 'threads, processes or async tasks: work moved outside the timed window',
    paths: PY,
    patterns: [
      /^\s*(?:from|import)\s+(?:threading|_thread|multiprocessing|concurrent|asyncio)\b/,
      /\b(?:threading|multiprocessing|asyncio)\.\w/,
      /\bconcurrent\.futures\b/,
    ],
  },
  {
    id: 'network',
    severity: 'block',
    reason: 'network access: a kernel has nothing to fetch or send',
    paths: PY,
    patterns: [
      /^\s*(?:from|import)\s+(?:socket|ssl|urllib\d?|http|requests|httpx|aiohttp|ftplib|smtplib|telnetlib|websockets?|paramiko|grpc)\b/,
      /\b(?:socket|urllib\d?|requests|httpx|aiohttp)\.\w+\s*\(/,
    ],
  },
  {
    id: 'file-write',
    severity: 'block',
    reason: 'writes, moves or deletes files: a kernel has no output besides its return value',
    paths: PY,
    patterns: [
      /\bopen\s*\([^,()]+,\s*(?:mode\s*=\s*)?[rf]?['"][rbt]*[wax+][rbt+]*['"]/,
      /\bopen\s*\([^)]*\bmode\s*=\s*['"][rbt]*[wax+]/,
      /\.(?:write_text|write_bytes|symlink_to|hardlink_to|unlink|rmdir|touch|tofile)\s*\(/,
      /\bos\.(?:remove|unlink|rename|replace|renames|makedirs|mkdir|rmdir|removedirs|symlink|link|truncate|chmod|chown|write|open)\s*\(/,
      /\b(?:shutil|tempfile)\.\w+\s*\(/,
      /\b(?:np|numpy|jnp|pickle|json|joblib|marshal|torch)\.(?:save|savez|savez_compressed|savetxt|dump)\s*\(/,
    ],
  },
  {
    id: 'profiler-control',
    severity: 'block',
    reason:
      'starts or stops the profiler: the harness owns tracing (annotations such as named_scope are fine)',
    paths: PY,
    patterns: [/\bjax\.profiler\.(?:start_trace|stop_trace|trace|start_server|save_device_memory_profile)\b/],
  },
  {
    id: 'import-machinery',
    severity: 'block',
    reason:
      'edits sys.modules, sys.path, import hooks or builtins: swaps code under the harness and the tests',
    paths: PY,
    patterns: [
      /\bsys\.(?:modules|meta_path|path_hooks|path_importer_cache)\b/,
      /\bsys\.path\s*(?:\.\s*(?:insert|append|extend)\s*\(|\[[^\]]*\]\s*=|[+]?=)/,
      /\bimportlib\.(?:reload|invalidate_caches)\b/,
      /\bbuiltins\.\w+\s*=(?!=)|\b__builtins__\b/,
    ],
  },
  {
    id: 'caller-introspection',
    severity: 'block',
    reason:
      'inspects the caller or the heap (frames, tracing hooks, gc objects): how a kernel detects it is being tested or timed',
    paths: PY,
    patterns: [
      /\bsys\.(?:_getframe|settrace|setprofile|gettrace|getprofile)\b/,
      /\binspect\.(?:stack|currentframe|getouterframes|getframeinfo)\b/,
      /\bgc\.get_(?:objects|referrers|referents)\b/,
    ],
  },
  {
    id: 'sleep',
    severity: 'block',
    reason: 'sleeps: there is no legitimate reason in a kernel, and it shifts timings and noise',
    paths: PY,
    patterns: [/\btime\.sleep\s*\(/, /^\s*from\s+time\s+import\s+.*\bsleep\b/, /\basyncio\.sleep\b/],
  },
  {
    id: 'dynamic-code',
    severity: 'block',
    reason: 'eval/exec or dynamic imports: hides what runs from review and from this scan',
    paths: PY,
    patterns: [
      /(?<![\w.])(?:eval|exec)\s*\(/,
      /(?<![\w.])__import__\s*\(/,
      /\bimportlib\.import_module\s*\(/,
      /(?<![\w.])compile\s*\([^)]*['"](?:exec|eval|single)['"]/,
    ],
  },
  // Signals, not verdicts: code that can tell how it is being run. A kernel's program must be the same
  // wherever it is built (its suite, the export, either arm): the harness checks that on the programs
  // themselves, and lists these lines in the PR comment for the reviewer (OBSERVES_RULE_PREFIX).
  {
    id: 'observes-argv',
    severity: 'warn',
    reason:
      'reads the command line: a kernel that knows how its process was started can tell an export from a test',
    paths: PY,
    patterns: [/\bsys\.(?:argv|orig_argv)\b/, /\bargparse\b/],
  },
  {
    id: 'observes-paths',
    severity: 'warn',
    reason:
      'reads where its files or its process are (module paths, the working directory): the folders of a run name what it is doing',
    paths: PY,
    patterns: [/\b__file__\b/, /\b__spec__\b/, /\bos\.getcwd\b/, /\bPath\.cwd\b/, /\/proc\//],
  },
  {
    id: 'observes-environment',
    severity: 'warn',
    reason: 'reads environment variables: the environment of a job says which job it is',
    paths: PY,
    patterns: [/\bos\.(?:environ|environb|getenv|getenvb)\b/],
  },
  {
    id: 'observes-jax-config',
    severity: 'warn',
    reason: 'reads global JAX options: a program that depends on them is not the same program everywhere',
    paths: PY,
    patterns: [
      /\bjax\.config\.(?!update\b)\w+/,
      /\bjax\.config\b\s*(?:[,)]|$)/,
      /\bconfig\.jax_\w+/,
      (code) => stringLiterals(code).some((s) => /^jax_[a-z0-9_]+$/.test(s)),
    ],
  },
  {
    id: 'observes-caller',
    severity: 'warn',
    reason:
      'inspects the interpreter (the stack, loaded modules, builtins by name): how code tells who calls it',
    paths: PY,
    patterns: [
      /\binspect\.\w+/,
      /\btraceback\.(?:extract_stack|format_stack|walk_stack|print_stack)\b/,
      /\b__self__\b/,
      /\bvars\s*\(\s*(?:len|print|sys|builtins)\b/,
      /\bglobals\s*\(\s*\)/,
    ],
  },
  {
    id: 'observes-clock',
    severity: 'warn',
    reason: 'reads the clock or the date: a program built differently at another time is another program',
    paths: PY,
    patterns: [
      /\b(?:datetime|date)\.(?:now|today|utcnow)\s*\(/,
      /\btime\.(?:time|time_ns|localtime|gmtime|ctime)\s*\(/,
    ],
  },
];

/** Rule ids of the signals the PR comment lists for the reviewer (code that can tell how it runs). */
export const OBSERVES_RULE_PREFIX = 'observes-';

const STARTUP_FILES = new Set([
  'conftest.py',
  'sitecustomize.py',
  'usercustomize.py',
  'pytest.ini',
  'tox.ini',
  'setup.cfg',
  'pyproject.toml',
  'noxfile.py',
]);

export const PATH_RULES: readonly PathRule[] = [
  {
    id: 'startup-file',
    severity: 'block',
    reason:
      'a file the interpreter or the test runner loads on its own (conftest.py, sitecustomize.py, *.pth, pytest config): it can patch tests, timers or imports before the harness runs',
    test: (path) => STARTUP_FILES.has(basename(path)) || path.endsWith('.pth'),
  },
  {
    id: 'native-or-binary',
    severity: 'block',
    reason:
      'compiled or binary content (extension modules, bytecode, binary blobs): cannot be reviewed or scanned, and an extension module shadows the .py of the same name',
    test: (path, binary) => binary || /\.(?:so|pyd|dylib|dll|pyc|pyo|o|a)$/.test(path),
  },
  {
    id: 'git-attributes',
    severity: 'warn',
    reason: '.gitattributes can attach filters and diff drivers that change what git (and this scan) sees',
    test: (path) => basename(path) === '.gitattributes',
  },
];

function basename(path: string): string {
  return path.slice(path.lastIndexOf('/') + 1);
}
