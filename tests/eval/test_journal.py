"""An interrupted evaluation resumes per episode from OUT/journal.jsonl: what finished is not run
again, the result equals an uninterrupted run's, and a journal of other settings or a corrupted
one is refused with the line or setting named."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from envtrain.bench.envs import EnvsAdapter
from envtrain.eval.journal import JOURNAL, JournalError
from envtrain.eval.report import write_run
from envtrain.eval.run import EvalConfig, evaluate

ROOT = Path(__file__).resolve().parents[2]


class Interrupted(BaseException):
    """What a Ctrl-C or a killed worker looks like to the run: not an episode's own failure."""


class Counting(EnvsAdapter):
    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.ran: list[str] = []

    async def episode(self, task, policy, sampling, limits, attempt):
        self.ran.append(f"{task.id}/{attempt}")
        return await super().episode(task, policy, sampling, limits, attempt)


def run(adapter, cfg, **kw):
    return asyncio.run(evaluate(adapter, adapter.fixture_policy(), cfg, fixture=True, journal=True, **kw))


def interrupt(adapter, cfg, after: int) -> list[str]:
    """Run until ``after`` episodes have finished, then stop the run as a Ctrl-C would."""
    seen = []

    def stop(row) -> None:
        seen.append(row)
        if len(seen) == after:
            raise Interrupted

    with pytest.raises(Interrupted):
        run(adapter, cfg, on_episode=stop)
    return adapter.ran


def comparable(rows):
    return [r.model_dump(exclude={"seconds", "grade_seconds"}) for r in rows]


def test_an_interrupted_run_resumes_where_it_stopped(tmp_path) -> None:
    cfg = EvalConfig(benchmark="envs:examples", policy="oracle", out=tmp_path / "run", attempts=2, concurrency=1)
    whole = Counting(ROOT / "examples")
    want, want_t = asyncio.run(evaluate(whole, whole.fixture_policy(), cfg.model_copy(update={"out": tmp_path / "whole"}),
                                        fixture=True))
    first = Counting(ROOT / "examples")
    interrupt(first, cfg, after=5)
    lines = (tmp_path / "run" / JOURNAL).read_text().splitlines()
    assert len(lines) == 1 + 5 and "config" in json.loads(lines[0])

    again = Counting(ROOT / "examples")
    resumed: list[int] = []
    rows, trajectories = run(again, cfg, on_resume=resumed.append)
    assert resumed == [5]
    assert len(again.ran) == len(want) - 5 and not set(again.ran) & set(first.ran[:5])
    assert comparable(rows) == comparable(want)
    assert [t.id for t in trajectories] == [t.id for t in want_t]
    write_run(tmp_path / "run", rows, trajectories, benchmark="envs", policy="oracle", fixture=True)
    assert not (tmp_path / "run" / JOURNAL).exists()  # the run's files hold every episode now
    assert len((tmp_path / "run" / "episodes.jsonl").read_text().splitlines()) == len(want)


def test_a_torn_last_line_is_dropped_and_errored_episodes_run_again(tmp_path) -> None:
    cfg = EvalConfig(benchmark="envs:examples", policy="oracle", out=tmp_path, concurrency=1)
    interrupt(Counting(ROOT / "examples"), cfg, after=3)
    journal = tmp_path / JOURNAL
    lines = journal.read_text().splitlines()
    record = json.loads(lines[2])
    record["row"]["stop_reason"] = "error"  # say the endpoint had gone away for the second episode
    journal.write_text("\n".join([lines[0], lines[1], json.dumps(record), lines[3][: len(lines[3]) // 2]]))  # torn tail
    again = Counting(ROOT / "examples")
    resumed: list[int] = []
    rows, _ = run(again, cfg, on_resume=resumed.append)
    assert resumed == [1] and len(again.ran) == len(rows) - 1
    assert all(r.passed for r in rows)
    assert all(json.loads(line) for line in journal.read_text().splitlines())  # appends start on a fresh line


def test_another_runs_journal_or_a_corrupt_line_is_refused(tmp_path) -> None:
    cfg = EvalConfig(benchmark="envs:examples", policy="oracle", out=tmp_path, concurrency=1)
    interrupt(Counting(ROOT / "examples"), cfg, after=2)
    with pytest.raises(JournalError, match="other settings .*differs in attempts"):
        run(Counting(ROOT / "examples"), cfg.model_copy(update={"attempts": 3}))
    journal = tmp_path / JOURNAL
    lines = journal.read_text().splitlines()
    journal.write_text("\n".join([lines[0], "{not json", lines[2]]) + "\n")
    kept = journal.read_text()
    with pytest.raises(JournalError, match="line 2 is not JSON"):
        run(Counting(ROOT / "examples"), cfg)
    assert journal.read_text() == kept  # a refused journal is left as it was


def cli_app():
    import typer

    from envtrain.eval.cli import eval_cmd

    app = typer.Typer()
    app.command("eval")(eval_cmd)
    app.command("other")(lambda: None)  # two commands, so "eval" is named on the command line as in envtrain
    return app


def test_the_cli_names_a_journal_of_other_settings(tmp_path) -> None:
    app = cli_app()
    (tmp_path / JOURNAL).write_text(json.dumps({"config": {"benchmark": "something else"}}) + "\n")
    r = CliRunner().invoke(app, ["eval", "--policy", "oracle", "--benchmark", f"envs:{ROOT / 'examples'}", "--out", str(tmp_path)])
    assert r.exit_code == 2 and "an unfinished run with other settings" in r.output and "differs in" in r.output


def test_ctrl_c_in_the_cli_keeps_the_episodes_and_says_how_to_finish(tmp_path, monkeypatch) -> None:
    import envtrain.agent.registry as registry
    from envtrain.agent.baselines import OraclePolicy

    class ThenCtrlC(OraclePolicy):
        name = "oracle-then-ctrl-c"
        calls = 0

        async def generate(self, messages, tools, params, ctx):
            type(self).calls += 1
            if type(self).calls > 12:
                raise KeyboardInterrupt
            return await super().generate(messages, tools, params, ctx)

    monkeypatch.setattr(registry, "make_policy", lambda spec, **kw: ThenCtrlC())
    app = cli_app()
    args = ["eval", "--policy", "hf:somewhere", "--benchmark", f"envs:{ROOT / 'examples'}", "--out", str(tmp_path),
            "--concurrency", "1"]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 130 and "rerun the same command" in r.output
    kept = len((tmp_path / JOURNAL).read_text().splitlines()) - 1
    assert kept >= 1
    ThenCtrlC.calls = -10_000  # the rerun is not interrupted
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    assert f"resuming: {kept} episodes" in r.output and not (tmp_path / JOURNAL).exists()
