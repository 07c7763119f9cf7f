"""The model-call budget shared by a turn and its subagents."""

from hermes_core.loop.turn import IterationBudget


def test_a_child_spends_its_parents_budget_and_stops_at_its_own_cap() -> None:
    turn = IterationBudget(cap=5)
    assert turn.take()
    child = turn.child(cap=2)
    assert child.take() and child.take()
    assert not child.take()  # its own cap
    assert turn.used == 3
    sibling = turn.child(cap=10)
    assert sibling.take() and sibling.take()
    assert not sibling.take() and not turn.take()  # the turn's 5 are spent, whoever spent them
    assert (turn.used, sibling.used) == (5, 2)
