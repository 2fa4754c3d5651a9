"""Sweep / master-config rule catalog (ids SW1xx files, SW2xx structure, SW3xx
semantics, SW4xx cross-file references, SW5xx runners.yaml)."""

from __future__ import annotations

from inferencex_tools.report.findings import Severity, rule

E, W, N = Severity.ERROR, Severity.WARNING, Severity.NOTE
A = "sweep"

# --- files -------------------------------------------------------------------------------
YAML = rule("SW101", E, "master config is not valid YAML (syntax, duplicate key, limits)",
            "fix the YAML at that position; duplicate keys silently lose data", area=A)
NOT_MAPPING = rule("SW102", E, "master config is not a mapping of config keys",
                   "the file must map config keys to config entries", area=A)
WILDCARD_KEY = rule("SW103", E, "config key contains '*'",
                    "'*' is reserved for changelog wildcards; rename the key", area=A)
DUP_ACROSS = rule("SW104", E, "config key defined in more than one master file",
                  "define each config key in exactly one master file", area=A)
GLOB_CHAR_KEY = rule("SW105", W, "config key contains '?' or '['",
                     "test-config treats '?' as a glob character; avoid it in keys", area=A)
UNSAFE_NAME = rule("SW106", E, "config key, model-prefix, precision or framework is not a "
                   "path-safe name ('/', '\\', control character, '.' or '..')",
                   "these become parts of file, script and job names; use letters, digits and "
                   "'.-+' only", area=A)

INVISIBLE_KEY = rule("SW107", E, "config key contains an invisible or bidirectional "
                     "character (zero-width, bidi control, other default-ignorable code point)",
                     "delete it: a key must read as what it is; the hint lists the code points",
                     area=A)
NON_ASCII_KEY = rule("SW109", E, "config key contains a character outside ASCII (a letter "
                     "of another script or a full-width form can look exactly like a Latin one)",
                     "spell the key in ASCII; the hint lists the code points", area=A)
INVISIBLE_TEXT = rule("SW108", W, "invisible or bidirectional character in a master config's "
                      "or runners.yaml's text (a value, a nested key, a comment)",
                      "delete it unless it is meant; the hint lists the code points", area=A)

# --- structure (schemas/master-config.schema.json) ------------------------------------------
SCHEMA = rule("SW201", E, "config entry fails the master-config schema",
              "see schemas/master-config.schema.json and docs/sweep.md", area=A)
UNKNOWN_KEY = rule("SW202", E, "unknown key", "remove it or fix its spelling", area=A)
REQUIRED = rule("SW203", E, "required field missing", "add the field", area=A)
TYPE = rule("SW204", E, "value has the wrong type (strings, floats or booleans where an "
            "integer is expected leak into jobs verbatim)",
            "write the value with its proper YAML type, e.g. 'tp: 8' not 'tp: \"8\"'", area=A)
RANGE = rule("SW205", E, "value out of range (must be positive)",
             "use a positive value", area=A)
ENUM = rule("SW206", E, "value is not one of the allowed literals",
            "use one of the documented values", area=A)
NO_SCENARIO = rule("SW207", E, "config has no non-empty scenario",
                   "add a fixed-seq-len or agentic-coding scenario", area=A)

# --- semantics ---------------------------------------------------------------------------------
CONC_FORM = rule("SW301", E, "concurrency must be either a non-empty conc-list or "
                 "conc-start + conc-end (start ≤ end, all > 0)",
                 "use exactly one of conc-list or conc-start/conc-end", area=A)
DCP = rule("SW302", E, "tp is not divisible by dcp-size", "make tp a multiple of dcp-size",
           area=A)
HARDWARE_PAIR = rule("SW303", E, "only one of prefill/decode sets hardware",
                     "set hardware on both workers or on neither", area=A)
TOPOLOGY = rule("SW304", E, "agentic entry must use either tp or prefill+decode",
                "write tp (single-node style) or both prefill and decode (disaggregated)",
                area=A)
TOPOLOGY_MULTINODE = rule("SW305", E, "topology does not match the config's multinode flag",
                          "single-node configs use tp entries; multinode configs use "
                          "prefill/decode workers", area=A)
KV_OFFLOAD = rule("SW306", E, "kv-offloading / kv-offload-backend combination invalid",
                  "dram needs a backend; none or absent must not have one; tp-style agentic "
                  "entries must set kv-offloading", area=A)
DRAM_UTIL = rule("SW307", E, "kv-offloading dram without dram-utilization",
                 "set dram-utilization (0 < x ≤ 1) on the agentic item", area=A)
AGENTIC_RUNNER = rule("SW308", E, "agentic scenario on a runner label not starting with "
                      "'cluster:'", "use a cluster:<name> runner label", area=A)
SCOPE = rule("SW309", E, "router / kv-p2p-transfer set both at top level and in entries",
             "declare it at one level only", area=A)
P2P_SINGLE = rule("SW310", E, "kv-p2p-transfer on a single-node config",
                  "kv-p2p-transfer belongs to multinode configs", area=A)
DISAGG_P2P = rule("SW311", E, "disagg: true without kv-p2p-transfer",
                  "set kv-p2p-transfer at top level or in every search-space entry", area=A)
IMAGE_VERSION = rule("SW312", E, "component version is an image reference",
                     "version must be a version string, not 'image:…' or a docker reference",
                     area=A)
WORKER_FIELDS = rule("SW313", E, "prefill/decode agentic entry sets pp/dcp-size/pcp-size",
                     "move pp/dcp-size/pcp-size into the prefill/decode workers", area=A)
DRAM_BUDGET = rule("SW314", E, "DRAM offload budget cannot be computed for this runner",
                   "add the runner's hardware entry in runners.yaml or fix the footprint",
                   area=A)

# --- cross-file references -----------------------------------------------------------------------
RUNNER_LABEL = rule("SW401", E, "runner label not defined in runners.yaml",
                    "add the label to configs/runners.yaml labels (or fix the spelling); "
                    "unknown labels cannot be selected and are skipped by node filters",
                    area=A)
RUNNER_HARDWARE = rule("SW402", W, "runner label has no hardware entry in runners.yaml",
                       "add hardware: {available-cpu-dram-mib, gpus-per-node}", area=A)
SCRIPT = rule("SW403", E, "benchmark script the rows will launch does not exist",
              "add the script under benchmarks/single_node/ or fix model-prefix/precision/"
              "framework", area=A)
RECIPE = rule("SW404", E, "multinode CONFIG_FILE recipe does not exist where the launchers "
              "look for it (the vendored copy they overlay where no checkout of a clone for "
              "the row is, or a vendored recipe folder)",
              "add the recipe to the vendored recipe folder the launcher copies from, or fix "
              "the CONFIG_FILE path", area=A)
RECIPE_EXTERNAL = rule("SW407", N, "multinode recipe read from an external repository the "
                       "launcher clones at run time (named with its ref), also one the vendored "
                       "copy overlaid onto that checkout lacks; not checked",
                       "vendor the recipe in the repository to have it checked", area=A)
LAUNCHER = rule("SW406", W, "runner node family has no runners/launch_<family>.sh",
                "add the launcher or remove the nodes from runners.yaml", area=A)
NO_SCRIPTS_DIR = rule("SW405", W, "benchmark scripts directory not present; scripts not checked",
                      "run from a full checkout or pass --scripts-dir", area=A)

# --- runners.yaml ------------------------------------------------------------------------------
RUNNERS = rule("SW501", E, "runners.yaml fails the runners schema",
               "see schemas/runners.schema.json", area=A)
RUNNERS_YAML = rule("SW502", E, "runners.yaml is not valid YAML", "fix the YAML", area=A)
