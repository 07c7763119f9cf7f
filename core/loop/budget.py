"""The model-call budget of a turn, shared by the subagents it starts."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class IterationBudget:
    """The model-call budget of one turn, shared by the whole tree of agents it starts.

    A subagent's calls count against its own cap and against every budget above it, so a
    turn that delegates cannot spend more than `max_iterations` calls however it splits them.
    """

    cap: int
    parent: IterationBudget | None = None
    used: int = 0

    def take(self) -> bool:
        """Count one model call; False (and nothing counted) when this budget or one above
        it is spent."""
        if not self.available():
            return False
        budget: IterationBudget | None = self
        while budget is not None:
            budget.used += 1
            budget = budget.parent
        return True

    def available(self) -> bool:
        budget: IterationBudget | None = self
        while budget is not None:
            if budget.used >= budget.cap:
                return False
            budget = budget.parent
        return True

    def child(self, cap: int) -> IterationBudget:
        return IterationBudget(cap=cap, parent=self)
