"""The task table (bridge.core.tasks), with a clock of its own: a task read only by its owner in its room
until its time to live, its first outcome kept, its input requests, and the bounds on tasks and on the bytes
they keep. (Tasks through a real bridge: tests/interaction/test_mcp_tasks.py.)"""

from __future__ import annotations

import json

import pytest

from bridge.core.defaults import TaskLimits
from bridge.core.tasks import TaskTable, TooManyTasks


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def test_a_task_is_read_only_by_its_owner_in_its_room_until_its_ttl():
    clock = Clock()
    table = TaskTable(ttl=60, poll_interval=2, clock=clock)
    task = table.create(owner="a", room="r", tool="t")
    assert table.get(task.task_id, owner="a", room="r") is task
    assert table.get(task.task_id, owner="b", room="r") is None
    assert table.get(task.task_id, owner="a", room="other") is None
    shown = task.detailed()
    assert shown["status"] == "working" and shown["ttlMs"] == 60_000 and shown["pollIntervalMs"] == 2000
    assert shown["createdAt"].endswith("Z") and shown["createdAt"] == shown["lastUpdatedAt"]
    clock.now += 60
    assert table.get(task.task_id, owner="a", room="r") is None
    assert len(table) == 0


def test_a_task_taken_over_from_another_process_is_kept_in_expiry_order_and_counted_but_never_refused():
    clock = Clock()
    other = TaskTable(ttl=60, poll_interval=2, clock=clock)
    older = other.create(owner="a", room="r", tool="run_code")  # made by a process that then stopped
    clock.now += 30
    table = TaskTable(ttl=60, poll_interval=2, limits=TaskLimits(per_agent=1), clock=clock)
    newer = table.create(owner="a", room="r", tool="t")
    table.adopt(older)  # past the agent's bound: it runs already
    assert table.get(older.task_id, owner="a", room="r") is older and len(table) == 2
    with pytest.raises(TooManyTasks):
        table.create(owner="a", room="r", tool="t")
    clock.now += 30  # the older one's time to live is over, not the newer one's
    assert table.get(older.task_id, owner="a", room="r") is None
    assert table.get(newer.task_id, owner="a", room="r") is newer and len(table) == 1


def test_the_first_outcome_stays_and_each_status_shows_its_payload():
    clock = Clock()
    table = TaskTable(ttl=60, poll_interval=1, clock=clock)
    done, failed, cancelled = (table.create(owner="", room="r", tool="t") for _ in range(3))
    clock.now += 5
    table.completed(done, {"content": []})
    table.cancelled(done, "too late")
    assert done.detailed()["status"] == "completed" and done.detailed()["result"] == {"content": []}
    assert done.detailed()["lastUpdatedAt"] != done.detailed()["createdAt"]
    table.failed(failed, -32603, "The page did not answer within 1 s.")
    assert failed.detailed()["error"] == {"code": -32603, "message": "The page did not answer within 1 s."}
    table.cancelled(cancelled, "Cancelled by the agent.")
    assert "result" not in cancelled.detailed() and "error" not in cancelled.detailed()


def test_input_requests_wait_with_fresh_keys_only():
    table = TaskTable(ttl=60, poll_interval=1, clock=Clock())
    task = table.create(owner="", room="r", tool="t")
    assert table.ask(task, {"name": {"method": "elicitation/create", "params": {}}}) is None
    assert task.detailed()["status"] == "input_required" and list(task.detailed()["inputRequests"]) == ["name"]
    assert table.answered(task, ["unknown"]) == {}
    assert table.answered(task, ["name"]) == {"name": {"method": "elicitation/create", "params": {}}}
    assert task.status == "working"
    refused = table.ask(task, {"name": {"method": "roots/list", "params": {}}})  # a key is never reused
    assert refused == "The page asked again under a key it used before (name)."
    assert task.status == "working"


def test_the_table_is_bounded():
    table = TaskTable(ttl=60, poll_interval=1, limits=TaskLimits(total=2), clock=Clock())
    table.create(owner="", room="r", tool="t")
    table.create(owner="", room="r", tool="t")
    with pytest.raises(TooManyTasks, match="This bridge already has 2 tasks running"):
        table.create(owner="", room="r", tool="t")


def test_an_agent_past_its_bound_loses_its_own_oldest_ended_task_and_no_one_elses():
    clock = Clock()
    table = TaskTable(ttl=60, poll_interval=1, limits=TaskLimits(per_agent=2, per_room=10), clock=clock)
    bobs = table.create(owner="bob", room="r", tool="t")
    table.completed(bobs, {"content": []})
    first, second = (table.create(owner="alice", room="r", tool="t") for _ in range(2))
    with pytest.raises(TooManyTasks, match="This agent already has 2 tasks running"):  # both still run
        table.create(owner="alice", room="r", tool="t")
    table.completed(second, {"content": []})
    table.completed(first, {"content": []})
    third = table.create(owner="alice", room="r", tool="t")  # the one that ended first goes
    assert table.dropped() == [second.task_id] and table.dropped() == []
    assert table.get(second.task_id, owner="alice", room="r") is None
    assert table.get(first.task_id, owner="alice", room="r") is first and table.known(third.task_id) is third
    assert table.get(bobs.task_id, owner="bob", room="r") is bobs  # another agent's are not touched
    assert table.create(owner="bob", room="r", tool="t").owner == "bob"  # nor is its room to make tasks


def test_a_room_and_the_table_past_their_bounds_lose_the_oldest_ended_task_of_anyone():
    table = TaskTable(ttl=60, poll_interval=1, limits=TaskLimits(per_agent=5, per_room=2, total=3), clock=Clock())
    a = table.create(owner="a", room="r", tool="t")
    table.create(owner="b", room="r", tool="t")
    with pytest.raises(TooManyTasks, match="Room 'r' already has 2 tasks running"):
        table.create(owner="c", room="r", tool="t")
    table.create(owner="c", room="other", tool="t")  # another room is not held up
    table.cancelled(a, "Cancelled by the agent.")
    table.create(owner="c", room="r", tool="t")
    assert table.dropped() == [a.task_id] and len(table) == 3


def test_kept_bytes_are_bounded_for_an_agent_and_in_all():
    limits = TaskLimits(bytes_per_agent=2500, bytes_total=4000)
    table = TaskTable(ttl=60, poll_interval=1, limits=limits, clock=Clock())
    answer = {"content": [{"type": "text", "text": "x" * 1000}]}
    size = len(json.dumps(answer))  # 1,043 bytes: two fit an agent's bound, three all tasks'
    alices = [table.create(owner="alice", room="r", tool="t") for _ in range(3)]
    for task in alices:
        table.completed(task, answer)
    assert [t.status for t in alices] == ["completed"] * 3
    assert table.dropped() == [alices[0].task_id]  # her own oldest made room for her third
    assert table.kept_bytes("alice") == 2 * size and table.kept_bytes() == 2 * size
    bobs = [table.create(owner="bob", room="r", tool="t") for _ in range(3)]
    for task in bobs:
        table.completed(task, answer)
    # Past the bound of all tasks, the oldest ended one of anyone goes (alice's second); past bob's own,
    # his oldest.
    assert table.dropped() == [alices[1].task_id, bobs[0].task_id]
    assert table.kept_bytes("alice") == size and table.kept_bytes("bob") == 2 * size
    assert table.kept_bytes() == 3 * size

    too_large = table.create(owner="carol", room="r", tool="t")
    table.completed(too_large, {"content": [{"type": "text", "text": "x" * 3000}]})
    shown = too_large.detailed()
    assert shown["status"] == "failed" and shown["error"]["code"] == -32603
    assert shown["error"]["message"] == ("The page's result (3043 bytes as JSON) is larger than this bridge keeps "
                                         "for an agent's tasks (2500 bytes), so it was not kept.")
    assert table.kept_bytes("carol") == 0

    waiting = table.create(owner="dave", room="r", tool="t")
    ask = {"k": {"method": "elicitation/create", "params": {"message": "y" * 3000}}}
    assert "input requests" in table.ask(waiting, ask) and waiting.status == "working"
    assert table.ask(waiting, {"k": {"method": "roots/list", "params": {}}}) is None
    assert table.kept_bytes("dave") == len(json.dumps({"k": {"method": "roots/list", "params": {}}}))
    table.answered(waiting, ["k"])
    assert table.kept_bytes("dave") == 0


def test_a_result_that_cannot_be_kept_while_others_run_fails_saying_so():
    table = TaskTable(ttl=60, poll_interval=1, limits=TaskLimits(bytes_per_agent=1000), clock=Clock())
    asking, answering = (table.create(owner="a", room="r", tool="t") for _ in range(2))
    assert table.ask(asking, {"k": {"method": "elicitation/create", "params": {"message": "y" * 600}}}) is None
    table.completed(answering, {"content": [{"type": "text", "text": "x" * 600}]})
    assert answering.status == "failed" and "tasks still running hold the rest" in answering.error["message"]


def test_a_structured_result_is_kept_once_and_read_as_it_was_given():
    table = TaskTable(ttl=60, poll_interval=1, clock=Clock())
    value = {"rows": [{"name": "Zoë 北京", "n": 1.5, "ok": True, "none": None}] * 3, "blob": "x" * 100_000}
    result = {"content": [{"type": "text", "text": json.dumps(value, ensure_ascii=False)}],
              "structuredContent": value, "isError": False}
    task = table.create(owner="", room="r", tool="t")
    table.completed(task, result)
    assert task.detailed()["result"] == result
    assert len(task.kept_result) < 101_000 and table.kept_bytes() == len(task.kept_result.encode())
    for other in ({"content": [{"type": "text", "text": "not the JSON"}], "structuredContent": value},
                  {"content": [{"type": "text", "text": "plain"}], "isError": True}):
        kept = table.create(owner="", room="r", tool="t")
        table.completed(kept, other)
        assert kept.detailed()["result"] == other
