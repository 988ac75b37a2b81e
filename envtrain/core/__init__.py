"""The environment core: condition form, world, app runtime, sessions, verifier and admission."""

from envtrain.core.app import App, Column, Effect, Entity, Guard, Tool
from envtrain.core.condition import Assertion, Cardinality, Condition, Site
from envtrain.core.env import Call, Environment, Provenance, PublicDoc, Verifier, WorldState
from envtrain.core.errors import ErrorKind, SpecError, ToolError
from envtrain.core.session import ResetResult, Runtime, Session, StepResult
from envtrain.core.verifier import AssertionResult, VerifyResult
from envtrain.core.world import World

__all__ = [
    "App", "Assertion", "AssertionResult", "Call", "Cardinality", "Column", "Condition", "Effect", "Entity",
    "Environment", "ErrorKind", "Guard", "Provenance", "PublicDoc", "ResetResult", "Runtime", "Session", "Site",
    "SpecError", "StepResult", "Tool", "ToolError", "Verifier", "VerifyResult", "World", "WorldState",
]
