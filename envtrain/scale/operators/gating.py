"""Tool gating: envtrain's addition beyond the 17 operators of RES App. D.1.

RES moves the records that read tools reveal behind new access paths (§3.2, App. D). Some tools
reveal no records it can move: BFCL's API methods are Python handlers over opaque state, and its
verifier pins the result text of every gold call, so no tool may go or answer differently. What
can still change is *when actions become available* (RES §3.2): a gated tool keeps its arguments,
effects and results, but refuses (``invalid_transition``, naming the missing preparation) until
a public preparation has opened it in the session.

Three operators, one gate kind each, at most one gate of each kind per tool:

- ``tool gating``: ``enable_<tool>`` opens it (one call);
- ``tool manifests``: ``load_<tool>_manifest`` with the manifest id stated in the access doc;
- ``staged tool activation``: ``advance_<tool>_setup``, called once per setup step.

Gates compose through the same token bindings as view layers: a gate's preparation may require
the token another gate (``G4:gate``) or a view's preparation (``L2:export``) publishes, and view
preparations may require a gate's token. They apply to original tools that the reference solution
calls and that no record operator owns: write tools, and handler tools other than the workspace's
file reads (declarative read tools are moved by the record operators instead, and a moved tool is
removed, so a gate on it would outlive its tool).
"""

from __future__ import annotations

import random
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from envtrain.scale.model import Binding, Gate
from envtrain.scale.operators.base import Operator, PlanError, ToolTarget, Work

ORIGIN = "envtrain (beyond RES's 17)"


class _GateParams(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class StageGateParams(_GateParams):
    stages: int = Field(ge=2, le=4)


class _Gating(Operator):
    acts_on = "tool"
    origin = ORIGIN
    kind: str
    binding = "its preparation may require the token another gate or a view's preparation publishes (one binding)"
    release = "the token requirement is dropped; the gate stays"
    max_binds = 1

    def applies(self, work: Work, target: ToolTarget) -> str | None:
        if not target.gold:
            return "the reference solution does not call it (a gate is opened where the solution needs the tool)"
        if target.records:
            return "a record operator owns it (a declarative read tool, or a workspace file read)"
        if any(g.tool == target.name and g.kind == self.kind for g in work.gates.values()):
            return f"the tool already has its {self.kind} gate"
        return None

    def fields(self, work: Work, params: Any) -> dict[str, Any]:
        """What this kind of gate holds beyond the common fields (drawn after its token)."""
        return {}

    def make(self, work: Work, target: ToolTarget, params: Any, binds: list[Binding]) -> Gate:
        return Gate(
            id=f"G{work.next()}", tool=target.name, app=target.app, kind=self.kind, token=work.token("tk"),
            **self.fields(work, params), requires=tuple(binds), depth=work.depth,
        )

    def apply(self, work: Work, target: ToolTarget, params: Any, binds: list[Binding]) -> None:
        gate = self.make(work, target, params, binds)
        taken = set(work.tools) | {g.prep for g in work.gates.values()}
        if gate.prep in taken:
            raise PlanError(f"the preparation {gate.prep} would take the name of an existing tool")
        work.gates[gate.id] = gate


class ToolGating(_Gating):
    name = "tool gating"
    kind = "enable"
    summary = (
        "[envtrain, beyond RES's 17] an original tool refuses, naming its preparation, until enable_<tool> has run; "
        "its arguments, effects and results are unchanged"
    )
    procedure = "call enable_<tool> (with any token it binds) before the tool's first use"


class ToolManifests(_Gating):
    name = "tool manifests"
    kind = "manifest"
    summary = (
        "[envtrain, beyond RES's 17] an original tool refuses until load_<tool>_manifest is called with the manifest "
        "id stated in the access doc"
    )
    procedure = "call load_<tool>_manifest with the manifest from the access doc (and any bound token), then use the tool"

    def fields(self, work: Work, params: Any) -> dict[str, Any]:
        return {"manifest": work.token("mf")}


class StagedToolActivation(_Gating):
    name = "staged tool activation"
    kind = "stage"
    summary = (
        "[envtrain, beyond RES's 17] an original tool refuses until every step of its setup has run: "
        "advance_<tool>_setup, once per step"
    )
    procedure = "call advance_<tool>_setup (with any bound token) until its current step equals its last, then use the tool"
    Params = StageGateParams

    def sample(self, work: Work, target: ToolTarget, rng: random.Random) -> dict[str, Any]:
        return {"stages": rng.randint(2, 4)}

    def fields(self, work: Work, params: Any) -> dict[str, Any]:
        return {"stages": params.stages}


OPERATORS = (ToolGating(), ToolManifests(), StagedToolActivation())
