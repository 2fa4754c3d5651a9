"""The changelog rule catalog (ids CL1xx file, CL2xx schema, CL3xx style,
CL4xx change, CL5xx links, CL6xx config keys, CL7xx scaffolding)."""

from __future__ import annotations

from inferencex_tools.report.findings import Severity, rule

E, W = Severity.ERROR, Severity.WARNING
A = "changelog"

# --- file level (spec §1) ---------------------------------------------------
FINAL_NEWLINE = rule("CL101", E, "file does not end with a newline",
                     "add a single '\\n' after the last line", area=A)
CR = rule("CL102", E, "CR characters (CRLF or lone CR line endings)",
          "convert the file to LF line endings", area=A)
TAB = rule("CL103", E, "TAB character", "replace tabs with spaces", area=A)
NUL = rule("CL104", E, "NUL byte", "remove the NUL bytes; the file must be text", area=A)
UTF8 = rule("CL105", E, "not valid UTF-8", "save the file as UTF-8", area=A)
BOM = rule("CL106", E, "UTF-8 byte-order mark at the start of the file",
           "remove the BOM (the file must start with '- config-keys:')", area=A)
LINE_SEP = rule("CL108", E, "control character or Unicode line break (U+0085, U+2028, U+2029)",
                "remove it or use a space; YAML cannot hold control characters, and other "
                "tools (str.splitlines, YAML 1.1 loaders) split lines at Unicode line breaks",
                area=A)
CONFLICT = rule("CL107", E, "git conflict marker",
                "resolve the conflict (ixtool changelog resolve-conflict) and remove the markers",
                area=A)
YAML_SYNTAX = rule("CL110", E, "not valid YAML", "fix the YAML syntax at that position", area=A)
DUP_KEY = rule("CL111", E, "duplicate mapping key", "remove or rename the duplicated key",
               area=A)
LIMIT = rule("CL112", E, "over a resource limit (size, aliases, nesting)",
             "changelog entries need no aliases or deep nesting; simplify the file", area=A)
ROOT = rule("CL113", E, "root is not a YAML list",
            "the file must be a list of entries, each starting with '- config-keys:'", area=A)
HEADER = rule("CL114", E, "entry does not start with '- config-keys:' at column 0",
              "start every entry with the line '- config-keys:' (config-keys as first key)",
              area=A)
NOT_MAPPING = rule("CL115", E, "entry is not a mapping",
                   "each list item must be a mapping with config-keys, description, pr-link",
                   area=A)
BASE_INVALID = rule("CL120", W, "the base snapshot is not a valid changelog: its errors are "
                    "the base's, not the change's (judged against the base as read)",
                    "check --base; a change that repairs the base is welcome", area=A)

# --- schema (spec §2, tightened) --------------------------------------------
SCHEMA = rule("CL201", E, "entry fails the changelog schema",
              "see schemas/perf-changelog.schema.json", area=A)
UNKNOWN_KEY = rule("CL202", E, "unknown or misspelled entry key",
                   "allowed keys: config-keys, description, pr-link, evals-only, all-evals, "
                   "append-only, eval-min-prefill-ep, scenario-type", area=A)
APPEND_ONLY_MIX = rule("CL203", E, "append-only combined with evals-only/all-evals/"
                       "eval-min-prefill-ep", "drop append-only or the eval modifiers", area=A)

# --- style / history quirks (warnings) ------------------------------------------
TRAILING_WS = rule("CL301", W, "trailing whitespace or whitespace-only line",
                   "strip trailing whitespace (new entries only; history is immutable)", area=A)
SEPARATOR_STYLE = rule("CL302", W, "entries not separated by exactly one empty line",
                       "separate entries with one empty line", area=A)
HISTORY_LINK = rule("CL303", W, "non-canonical pr-link in history",
                    "history is immutable; a link-only correction PR can fix it", area=A)
INVISIBLE_TEXT = rule("CL304", W, "invisible or bidirectional character in a new entry's text "
                      "(description, …): it may read differently from what it is",
                      "delete it unless it is meant; the hint lists the code points", area=A)

# --- change rules (spec §3) ---------------------------------------------------
DELETED = rule("CL401", E, "historical entries were deleted",
               "restore the deleted entries; the changelog is append-only", area=A)
CHANGED = rule("CL402", E, "a historical entry was changed",
               "restore the entry exactly as on the base branch; describe the change in a new "
               "entry at the end", area=A)
INSERTED = rule("CL403", W, "new entry inserted before existing entries",
                "move the entry to the end of the file (ixtool changelog validate --fix)",
                area=A)
HISTORY_BYTES = rule("CL404", E, "a historical line that is not blank was removed or rewritten "
                     "(re-quoted, trailing whitespace stripped, a BOM or CRLF added)",
                     "restore the base bytes exactly (git checkout BASE -- perf-changelog.yaml) "
                     "and append your entry at the end", area=A)
CORRECTION_LINK = rule("CL405", E, "pr-link correction is not canonical",
                       "a corrected link must be https://github.com/OWNER/REPO/pull/N", area=A)
MIXED = rule("CL406", E, "pr-link corrections mixed with new entries",
             "split link corrections and new entries into separate PRs", area=A)
SEPARATOR_BEFORE = rule("CL407", W, "the lines a change adds before its first entry are not "
                        "one empty line", "leave exactly one empty line between the last "
                        "existing entry and your entry (ixtool changelog validate --fix)", area=A)
SEPARATOR_BETWEEN = rule("CL408", W, "appended entries not separated by exactly one empty line",
                         "leave exactly one empty line between your entries (ixtool changelog "
                         "validate --fix)", area=A)
TRAILING_BLANK = rule("CL409", W, "file ends with a blank line",
                      "end the file with exactly one newline after the last entry (ixtool "
                      "changelog validate --fix)", area=A)
HISTORY_BLANKS = rule("CL411", W, "history's layout changed, none of its lines removed: a "
                      "whitespace-only line emptied, a blank line added or removed, a line "
                      "added between historical entries",
                      "restore them (ixtool changelog validate --fix rebuilds the file from the "
                      "base bytes and your entries)", area=A)
CORRECTION_BYTES = rule("CL410", E, "a link correction changed more than pr-link lines",
                        "change only the '  pr-link:' lines in a correction", area=A)

# --- links (spec §3.1.4) ---------------------------------------------------------
LINK_MAIN = rule("CL501", E, "new entry's pr-link is not a canonical PR URL of this repository "
                 "(another repository, a suffix, a spelling, not a URL), in every mode",
                 "use the PR URL https://github.com/OWNER/REPO/pull/N", area=A)
LINK_PR = rule("CL502", E, "new entry's pr-link is not the link of this change: a placeholder "
               "(TBD, XXXX, empty …; on main also XXX), or in PR mode another PR's URL",
               "write 'pr-link: XXX' (replaced by the PR URL at merge) or this PR's URL",
               area=A)
LINK_FOLDED = rule("CL503", E, "pr-link value on a continuation line",
                   "write the link on the same line: '  pr-link: <url>'", area=A)

# --- config keys (spec §4.3) ------------------------------------------------------------
KEY_UNKNOWN = rule("CL601", E, "config key not found in the master configs",
                   "use a key defined in configs/*-master.yaml", area=A)
GLOB_EMPTY = rule("CL602", E, "config-key glob matches no master config key",
                  "fix the pattern ('*' is the only wildcard)", area=A)
NO_CONFIGS = rule("CL603", W, "no master configs found; config keys not checked",
                  "pass --configs or run from the repository root", area=A)
KEY_INVISIBLE = rule("CL604", E, "config-key reference contains an invisible or bidirectional "
                     "character: it does not name the key it looks like",
                     "delete it; the hint lists the code points", area=A)

# --- scaffolding ------------------------------------------------------------------------
SCAFFOLD = rule("CL701", E, "scaffold marker (TEMP / DO NOT MERGE) in a new entry",
                "remove the marker before asking for review", area=A)
FIX_REFUSED = rule("CL702", Severity.NOTE, "--fix made no change: history itself changed",
                   "restore the base bytes (git checkout BASE -- perf-changelog.yaml), append "
                   "your entry at the end and re-run --fix", area=A)

# --- merge operations (canonicalize / resolve-conflict / merge-driver) ------------------
MERGE_TWIN = rule("CL801", W, "a PR entry has the same content as an entry already on main",
                  "nothing to do if both PRs really made the same change; otherwise make the "
                  "description say what this PR did", area=A)
MERGE_DROPPED = rule("CL802", W, "a PR entry is already on main and was not appended again",
                     "check main's copy of the entry; the resolution keeps main's bytes", area=A)
