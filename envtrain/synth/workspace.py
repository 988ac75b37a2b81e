"""Workspace scenarios from built-in templates: seeded data files, a request whose answer a shell
command computes, and a verifier that reads the files the command produced.

The expected file contents are computed here in Python from the generated data, never taken from
running the reference command, so admission condition (2) checks that the command really does
what the request asks. V− pins the input files (and a distractor) to their W0 content.

Where an answer has many right spellings (a JSON object in any key order or indentation), no
condition on the file's text can say it; that template's V+ is a checker script instead
(``Verifier.checks``, run by ``shell.check`` in the sandbox), holding the expected value.
"""

from __future__ import annotations

import json
import random
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from envtrain.core.app import App
from envtrain.core.condition import Assertion
from envtrain.core.env import Call, Check, Environment, Provenance, Verifier, WorldState
from envtrain.core.expr import Clause, Lit

CUSTOMERS = ("acme", "birch", "cobalt", "delta", "ember", "fjord", "granite", "harbor")
STATUSES = ("open", "shipped", "cancelled", "returned")
SHELL_SPEC = Path(__file__).with_name("data") / "shell.yaml"


@dataclass(frozen=True)
class Scenario:
    name: str
    files: dict[str, str]  # W0
    request: str
    command: str  # the reference command (run through run_command)
    expected: dict[str, str]  # output path -> exact content
    inputs: tuple[str, ...]  # files that must stay as they are
    checks: tuple[tuple[str, str], ...] = ()  # (name, checker script): V+ the condition form cannot say


def shell_app() -> App:
    import yaml

    from envtrain.apps import parse_app

    return parse_app(yaml.safe_load(SHELL_SPEC.read_text()), source=str(SHELL_SPEC))


@lru_cache(maxsize=1)
def _apps() -> tuple[App, App]:
    from envtrain.apps import load_app

    return load_app("workspace"), shell_app()  # workspace first: its file tools lead the admission search


def _orders(rng: random.Random, n: int) -> list[dict]:
    amounts = rng.sample(range(20, 2000), n)  # distinct, so "largest" has one answer
    return [{"id": f"O{1000 + i}", "customer": rng.choice(CUSTOMERS), "status": rng.choice(STATUSES), "amount": amounts[i]}
            for i in range(n)]


def _csv(rows: list[dict]) -> str:
    head = list(rows[0])
    return ",".join(head) + "\n" + "".join(",".join(str(r[h]) for h in head) + "\n" for r in rows)


def count_status(rng: random.Random) -> Scenario:
    rows = _orders(rng, rng.randrange(12, 30))
    status = rng.choice(STATUSES)
    n = sum(r["status"] == status for r in rows)
    return Scenario(
        "count_status", {"data/orders.csv": _csv(rows), "README.md": "Order exports live in data/. Reports go to reports/.\n"},
        f"How many orders in data/orders.csv have status '{status}'? Write just the number, on one line, to reports/{status}_count.txt.",
        f"mkdir -p reports && awk -F, 'NR>1 && $3==\"{status}\"' data/orders.csv | wc -l > reports/{status}_count.txt",
        {f"reports/{status}_count.txt": f"{n}\n"}, ("data/orders.csv", "README.md"))


def customer_totals(rng: random.Random) -> Scenario:
    rows = _orders(rng, rng.randrange(10, 25))
    skip = rng.choice(("cancelled", "returned"))
    totals: dict[str, int] = {}
    for r in rows:
        if r["status"] != skip:
            totals[r["customer"]] = totals.get(r["customer"], 0) + r["amount"]
    body = "customer,total\n" + "".join(f"{c},{t}\n" for c, t in sorted(totals.items()))
    return Scenario(
        "customer_totals", {"data/orders.csv": _csv(rows), "notes/finance.md": f"Totals never include {skip} orders.\n"},
        "Write reports/totals.csv with the header customer,total and one line per customer (sorted by customer name) giving"
        " the sum of the amounts of their orders in data/orders.csv. Follow the rule in notes/finance.md.",
        f"mkdir -p reports && (echo customer,total; awk -F, 'NR>1 && $3!=\"{skip}\" {{t[$2]+=$4}} END {{for (c in t) print c\",\"t[c]}}'"
        " data/orders.csv | sort) > reports/totals.csv",
        {"reports/totals.csv": body}, ("data/orders.csv", "notes/finance.md"))


def top_orders(rng: random.Random) -> Scenario:
    rows = _orders(rng, rng.randrange(8, 20))
    k = rng.choice((2, 3, 5))
    top = sorted(rows, key=lambda r: -r["amount"])[:k]
    return Scenario(
        "top_orders", {"data/orders.csv": _csv(rows)},
        f"List the ids of the {k} largest orders by amount in data/orders.csv, largest first, one id per line, in reports/top{k}.txt.",
        f"mkdir -p reports && tail -n +2 data/orders.csv | sort -t, -k4,4nr | head -n {k} | cut -d, -f1 > reports/top{k}.txt",
        {f"reports/top{k}.txt": "".join(f"{r['id']}\n" for r in top)}, ("data/orders.csv",))


def open_orders_json(rng: random.Random) -> Scenario:
    rows = _orders(rng, rng.randrange(8, 16))
    customer = rng.choice(sorted({r["customer"] for r in rows}))
    picked = [{"id": r["id"], "amount": r["amount"]} for r in rows if r["customer"] == customer]
    script = ("import csv, json; rows = [{'id': r['id'], 'amount': int(r['amount'])} for r in csv.DictReader(open('data/orders.csv'))"
              f" if r['customer'] == '{customer}']; open('exports/{customer}.json', 'w').write(json.dumps(rows, indent=2) + '\\n')")
    return Scenario(
        "orders_json", {"data/orders.csv": _csv(rows)},
        f"Export the orders of customer '{customer}' from data/orders.csv to exports/{customer}.json: a JSON list of objects with"
        " the keys id (string) and amount (number), in file order, indented by 2 spaces.",
        f"mkdir -p exports && python3 -c \"{script}\"",
        {f"exports/{customer}.json": json.dumps(picked, indent=2) + "\n"}, ("data/orders.csv",))


def run_skill(rng: random.Random) -> Scenario:
    names = [f"{rng.choice(('  ', ''))}{n.upper() if rng.random() < 0.4 else n}{rng.choice((' ', ''))}"
             for n in rng.sample(("ana", "bo", "chen", "dita", "eli", "faro", "gus", "hana", "ivo"), 6)]
    names += [names[0].strip().lower()]  # a duplicate, once normalized
    clean = sorted({n.strip().lower() for n in names})
    skill = ("# normalize-names\nNormalizes a list of names: trims spaces, lowercases, sorts, drops duplicates.\n"
             "Usage: sh skills/normalize-names/run.sh INPUT > OUTPUT\n")
    script = "#!/bin/sh\n# see SKILL.md\nsed -e 's/^ *//' -e 's/ *$//' \"$1\" | tr 'A-Z' 'a-z' | sort -u\n"
    return Scenario(
        "run_skill", {"data/attendees.txt": "".join(n + "\n" for n in names), "skills/normalize-names/SKILL.md": skill,
                      "skills/normalize-names/run.sh": script},
        "Use the normalize-names skill in skills/ to clean data/attendees.txt and save the result as out/attendees.txt.",
        "mkdir -p out && sh skills/normalize-names/run.sh data/attendees.txt > out/attendees.txt",
        {"out/attendees.txt": "".join(n + "\n" for n in clean)}, ("data/attendees.txt", "skills/normalize-names/run.sh"))


def status_summary(rng: random.Random) -> Scenario:
    rows = _orders(rng, rng.randrange(10, 24))
    expected: dict[str, dict[str, int]] = {}
    for r in rows:
        entry = expected.setdefault(r["status"], {"orders": 0, "amount": 0})
        entry["orders"] += 1
        entry["amount"] += r["amount"]
    script = ("import csv, json\nwith open('data/orders.csv') as fh:\n    rows = list(csv.DictReader(fh))\nout = {}\n"
              "for r in rows:\n    e = out.setdefault(r['status'], {'orders': 0, 'amount': 0})\n"
              "    e['orders'] += 1\n    e['amount'] += int(r['amount'])\n"
              "with open('reports/by_status.json', 'w') as fh:\n    json.dump(out, fh)\n")
    return Scenario(
        "status_summary", {"data/orders.csv": _csv(rows), "README.md": "Order exports live in data/. Reports go to reports/.\n"},
        "Summarize data/orders.csv by status in reports/by_status.json: a JSON object mapping each status that occurs to"
        " an object with the number of orders (orders) and the sum of their amounts (amount), both numbers.",
        f"mkdir -p reports && python3 -c {shlex.quote(script)}",
        {}, ("data/orders.csv", "README.md"),
        checks=(("reports/by_status.json holds the summary", json_checker("reports/by_status.json", expected)),))


def json_checker(path: str, expected: object) -> str:
    """A checker: the file parses as JSON equal to ``expected``; the score is the share of top-level keys right."""
    return (f"import json\nexpected = json.loads({json.dumps(json.dumps(expected, sort_keys=True))})\n"
            f"try:\n    got = json.load(open({path!r}))\nexcept (OSError, ValueError) as exc:\n"
            f"    print(json.dumps({{'pass': False, 'detail': '{path}: %s' % exc}}))\n    raise SystemExit(0)\n"
            "right = sum(isinstance(got, dict) and got.get(k) == v for k, v in expected.items())\n"
            "print(json.dumps({'pass': got == expected, 'score': right / len(expected), 'detail': '%d of %d keys right' % (right, len(expected))}))\n")


TEMPLATES: dict[str, Callable[[random.Random], Scenario]] = {
    "count_status": count_status, "customer_totals": customer_totals, "top_orders": top_orders,
    "orders_json": open_orders_json, "run_skill": run_skill, "status_summary": status_summary,
}


def build(scenario: Scenario, *, base_time: str = "2026-03-02T08:00:00Z") -> Environment:
    first_input = scenario.inputs[0]
    positive = tuple(Assertion(name=f"{path} holds the answer", entity="files",
                               where=(Clause("path", "=", Lit(path)), Clause("content", "=", Lit(text))), count="= 1")
                     for path, text in scenario.expected.items())
    negative = tuple(Assertion(name=f"{path} unchanged", entity="files",
                               where=(Clause("path", "=", Lit(path)), Clause("content", "=", Lit(scenario.files[path]))), count="= 1")
                     for path in scenario.inputs)
    calls = (Call(tool="list_files"), Call(tool="read_file", arguments={"path": first_input}),
             Call(tool="run_command", arguments={"command": scenario.command}))
    checks = tuple(Check(name=name, handler="shell.check", script=script) for name, script in scenario.checks)
    return Environment(
        apps=_apps(), world=WorldState(base_time=base_time, files=dict(scenario.files)), request=scenario.request,
        persona={"name": "Sam Ortiz", "role": "operations analyst"},
        verifier=Verifier(positive=positive, negative=negative, checks=checks),
        reference_solution=calls, provenance=Provenance(source="synth", settings={"kind": "workspace", "template": scenario.name}),
    )
