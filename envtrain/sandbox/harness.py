"""Calls one tool of a generated app inside the sandbox; run as ``python3 -I -c <this file> CALL``.

CALL is JSON: {"tool", "args", "base_time", "action_index", "now"}. The tool is the function of
that name in app/tools.py (the generated code), called as ``tool(ctx, args)`` with the workspace
as the working directory. One JSON line comes back on stdout:

    {"result": {...}}                    the tool's dict (an {"error": {...}} dict included)
    {"violation": [rule, "message"]}     the tool broke Table 15 rule 1: it raised, or returned no dict

Standard library only: it runs under the sandbox's python3, not envtrain's.
"""

import importlib.util
import json
import sys

TOOLS_PATH = "app/tools.py"


def emit(obj):
    sys.stdout.write("\n" + json.dumps(obj, sort_keys=True, default=str) + "\n")


def main():
    call = json.loads(sys.argv[1])
    ctx = {
        "base_time": call["base_time"], "action_index": call["action_index"], "now": call["now"],
        "data_dir": "data", "state_path": "state/session.json", "lock_path": "state/session.lock",
    }
    spec = importlib.util.spec_from_file_location("tools", TOOLS_PATH)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except BaseException as exc:
        emit({"violation": [0, f"app/tools.py does not import: {type(exc).__name__}: {exc}"]})
        return
    fn = getattr(module, call["tool"], None)
    if not callable(fn):
        emit({"violation": [0, f"app/tools.py defines no function {call['tool']!r}"]})
        return
    try:
        out = fn(ctx, dict(call["args"]))
    except BaseException as exc:
        emit({"violation": [1, f"{call['tool']} raised {type(exc).__name__}: {exc} instead of returning a structured error"]})
        return
    if not isinstance(out, dict):
        emit({"violation": [1, f"{call['tool']} returned {type(out).__name__}, not a dict"]})
        return
    emit({"result": out})


if __name__ == "__main__":
    main()
