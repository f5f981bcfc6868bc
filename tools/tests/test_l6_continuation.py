"""The continuation's planner (tools.l6_continuation.order: the statement that could decide soonest first, the running
statements in turn) and the runner planning again after every unit (tools.l6_evidence.Runner: a unit no statement
still reads is stopped)."""

from __future__ import annotations

import sys
import time

import pytest

from tools import l6_chains as lc
from tools import l6_continuation as cont
from tools import l6_evidence
from tools.tests.test_l6_chains import _units


def _todo(done, units):
    """The scheduled units not among `units` that a statement still running reads (as `wanted` does on the store)."""
    running = [name for name, chain in done.items() if chain.end == lc.RUNNING]
    return [
        u for u in cont.schedule()
        if (u.method, u.lr, u.seed, u.steps) not in units
        and any(u in cont.units_of(n, range(u.seed, u.seed + 1)) for n in running)
    ]  # fmt: skip


@pytest.mark.smoke
def test_the_nearest_statement_goes_first_the_others_take_turns_and_a_decided_one_gets_none():
    units = _units([True] * 4, overflows_1e4=[0, 1, 0, 0])  # 5 more wins hold; 3 batches could; ERM 9 seeds
    done = lc.chains_of(units)
    todo = _todo(done, units)
    cost = lambda u: cont.COST[u.method, u.lr]  # noqa: E731
    planned = cont.order(done, todo, cost)
    assert len(planned) == len(set(planned)) == len(todo)
    # reaches: lower 5 x 2487 CPU-s, overflow 12 x 2028, ERM 9 x 2930; the nearest's first unit first, then in turn
    ids = [u.id for u in planned]
    assert ids[:3] == ["proposed-0.0001-1e5-seed14", "baseline-1e-05-1e5-seed14", "erm-0.001-1e6-seed10"]
    assert [u.seed for u in planned[:23] if u.method == "erm"] == list(range(10, 19)), "ERM waited for the others"
    assert [u.seed for u in planned[:23] if u.method == "proposed"] == list(range(14, 19))
    assert ids.index("baseline-0.0001-1e5-seed14") < ids.index("erm-0.001-1e6-seed14")

    units = _units([True] * 9, overflows_1e4=[0, 1, 0, 0])
    held = lc.chains_of(units)
    assert held[lc.LOWER].end == lc.HELD
    planned = cont.order(held, _todo(held, units), cost)
    assert not any(u.method == "proposed" for u in planned)
    # two statements left: one unit of each in turn, so two slots run one of each, whichever ends first
    assert [u.method for u in planned[:18]] == ["baseline", "erm"] * 9
    assert [u.seed for u in planned[:18] if u.method == "erm"] == list(range(10, 19))


@pytest.mark.smoke
def test_a_costly_reach_waits_behind_a_cheap_one():
    units = _units([True] * 4, overflows_1e4=[0, 1, 0, 0])
    done = lc.chains_of(units)
    dear_proposed = lambda u: 1e5 if u.method == "proposed" else cont.COST[u.method, u.lr]  # noqa: E731
    assert cont.order(done, _todo(done, units), dear_proposed)[0].id == "baseline-1e-05-1e5-seed14"
    dear_dro = lambda u: 1e5 if u.method != "erm" else cont.COST[u.method, u.lr]  # noqa: E731
    assert cont.order(done, _todo(done, units), dear_dro)[0].id == "erm-0.001-1e6-seed10"


class _Unit:
    def __init__(self, name: str) -> None:
        self.id = name


class _Family(l6_evidence.Family):
    """Units that are processes writing their entry after `seconds`."""

    label = "test units"

    def __init__(self, folder, seconds):
        self.folder, self.seconds = folder, seconds

    def command(self, unit, report_dir, arrangement):
        entry = str(self.entry_path(unit))
        code = f"import time, pathlib; time.sleep({self.seconds[unit.id]}); pathlib.Path({entry!r}).write_text('x')"
        return [sys.executable, "-c", code]

    def entry_path(self, unit):
        return self.folder / f"{unit.id}.entry"

    def provenance_path(self, unit):
        return self.folder / "units" / f"{unit.id}.json"

    def count(self):
        return "some"


@pytest.mark.smoke
def test_the_runner_plans_again_after_each_unit_and_stops_what_is_no_longer_wanted(tmp_path, monkeypatch):
    monkeypatch.setattr(l6_evidence, "_trainer_seconds", lambda entry: None)
    monkeypatch.setattr(l6_evidence, "POLL_SECONDS", 0.05)
    (tmp_path / "units").mkdir()
    quick, slow, later = _Unit("quick"), _Unit("slow"), _Unit("later")
    family = _Family(tmp_path, {"quick": 0.2, "slow": 60, "later": 0.2})
    lines, plans = [], []

    def replan():  # after `quick`, only `later` is wanted: `slow`'s statement has decided
        plans.append(time.time())
        return [later]

    started = time.time()
    l6_evidence.Runner(family, 2, "inline", 0, False, lines.append).run([quick, slow], replan=replan)
    assert time.time() - started < 30, "the unit no statement reads ran on"
    assert any("stopping slow: no statement still running reads it" in line for line in lines)
    assert family.entry_path(quick).is_file() and family.entry_path(later).is_file()
    assert not family.entry_path(slow).is_file()
    stopped = [line for line in lines if line.split(" ", 2)[1:2] == ["stopped"]]
    assert len(stopped) == 1 and "slow" in stopped[0]


@pytest.mark.smoke
def test_the_runner_starts_at_most_most_units(tmp_path, monkeypatch):
    monkeypatch.setattr(l6_evidence, "_trainer_seconds", lambda entry: None)
    monkeypatch.setattr(l6_evidence, "POLL_SECONDS", 0.05)
    (tmp_path / "units").mkdir()
    units = [_Unit(f"u{i}") for i in range(3)]
    family = _Family(tmp_path, {u.id: 0.1 for u in units})
    l6_evidence.Runner(family, 1, "inline", 0, False, lambda line: None).run(units, replan=lambda: units, most=2)
    assert [family.entry_path(u).is_file() for u in units] == [True, True, False]


@pytest.mark.smoke
def test_a_sitting_is_recorded_open_as_it_starts_and_closed_when_it_ends(tmp_path, monkeypatch):
    """A runner stopped outright (a machine taken back) never closes its sittings: the record shows each one from
    its start (the code it ran, the step it resumed from), and a finished unit whose trainer clock counts more than
    its closed sittings is named with the seconds no sitting records."""
    import json

    monkeypatch.setattr(l6_evidence, "_trainer_seconds", lambda entry: None)
    monkeypatch.setattr(l6_evidence, "POLL_SECONDS", 0.05)
    (tmp_path / "units").mkdir()
    unit = _Unit("u")
    family = _Family(tmp_path, {"u": 0.5})
    seen = []  # the record as the runner says the unit started

    def log(line: str) -> None:
        if line.split(" ", 2)[1:2] == ["started"]:
            seen.append(json.loads(family.provenance_path(unit).read_text())["sittings"])

    l6_evidence.Runner(family, 1, "inline", 0, False, log).run([unit])
    (opened,) = seen
    assert len(opened) == 1 and opened[0]["ended"] is None and opened[0]["from_step"] == 0
    assert opened[0]["commit"] == l6_evidence.git_head()
    record = json.loads(family.provenance_path(unit).read_text())
    (closed,) = record["sittings"]
    assert closed["ended"] and closed["exit"] == 0 and closed["to_step"] == l6_evidence.PAPER_STEPS_OF_A_UNIT
    assert record["cpu_seconds"] == closed["cpu_seconds"] and closed["commit"] == opened[0]["commit"]

    # seed 23's record: 944 s on its trainer's clock against 250 s of closed sittings (its first sitting unclosed)
    sittings = [{"wall_seconds": 145.0, "cpu_seconds": 131.8}, {"wall_seconds": 105.0, "cpu_seconds": 91.9}]
    seed23 = {"trainer_seconds": {"train": 851.7, "evaluate": 92.3}, "sittings": sittings}
    assert l6_evidence.unclosed_seconds(seed23) == pytest.approx(694.0)
    whole = {"trainer_seconds": {"train": 900.0, "evaluate": 40.0}, "sittings": [{"wall_seconds": 950.0}]}
    assert l6_evidence.unclosed_seconds(whole) == 0.0
    assert l6_evidence.unclosed_seconds({"trainer_seconds": None, "sittings": "x"}) == 0.0


@pytest.mark.smoke
def test_status_tells_a_unit_being_computed_from_a_sitting_stopped_outright(tmp_path, capsys):
    """An open sitting (`ended` null) of a unit not yet in is either running now or was stopped outright: status
    says which from the store's lock record beside the entry, which its holder touches every 2 s while computing
    (pytest_claims.store.key_lock). It had called the two units the background runner was computing 'stopped'."""
    import json
    import os

    running, stopped = cont.Unit("erm", 1e-3, 10, cont.TEXT_STEPS), cont.Unit("baseline", 1e-5, 25, cont.RELEASED_STEPS)
    store = tmp_path / "store"
    (tmp_path / "units").mkdir()
    for unit in (running, stopped):
        lock = cont.entry_path(unit, store).with_suffix(".lock.json")
        lock.parent.mkdir(parents=True, exist_ok=True)
        lock.write_text(json.dumps({"pid": 1, "host": "vm", "test": "", "since": time.time()}))
        sitting = {"started": "2026-12-07T12:10:39Z", "ended": None, "commit": "x", "from_step": 0}
        (tmp_path / "units" / f"{unit.id}.json").write_text(json.dumps({"sittings": [sitting]}))
    old = time.time() - 3600  # no heartbeat for an hour: its holder was stopped
    os.utime(cont.entry_path(stopped, store).with_suffix(".lock.json"), (old, old))
    assert cont.being_computed(running, store) and not cont.being_computed(stopped, store)
    assert not cont.being_computed(cont.Unit("proposed", 1e-4, 30, cont.RELEASED_STEPS), store)  # no lock at all

    cont.status(tmp_path)
    out = capsys.readouterr().out
    assert f"being computed now: {running.id}" in out
    (line,) = [x for x in out.splitlines() if "stopped outright" in x]
    assert stopped.id in line and running.id not in line and "resumed" not in out

    # the running unit resumed after an earlier runner was stopped outright: two open sittings, the earlier one named
    sitting = {"started": "2026-12-07T11:00:00Z", "ended": None, "commit": "w", "from_step": 0}
    later = json.loads((tmp_path / "units" / f"{running.id}.json").read_text())["sittings"]
    (tmp_path / "units" / f"{running.id}.json").write_text(json.dumps({"sittings": [sitting, *later]}))
    cont.status(tmp_path)
    (line,) = [x for x in capsys.readouterr().out.splitlines() if "being computed now" in x]
    assert line.endswith(f"resumed: {running.id} (1 earlier sitting(s) stopped outright)"), line


@pytest.mark.smoke
def test_an_entry_its_runner_never_recorded_is_recorded_by_the_next_run(tmp_path, monkeypatch):
    """A runner stopped outright after a unit's process wrote its entry and before it recorded it left the entry
    with an open sitting and no entry_sha256: `check` refuses the folder, and no later run computes (or records) a
    unit whose entry is in, so it stayed so for good. The next run records it first; an entry its record describes
    otherwise (another sha256: a replaced unit) is left for `check` to refuse."""
    import hashlib
    import json

    monkeypatch.setattr(l6_evidence, "_trainer_seconds", lambda entry: {"train": 9.0})
    (tmp_path / "units").mkdir()
    orphan, replaced = _Unit("orphan"), _Unit("replaced")
    family = _Family(tmp_path, {})
    family.all_units = lambda: [orphan, replaced]
    opened = {"started": "2026-12-07T12:10:39Z", "ended": None, "commit": "x", "from_step": 0}
    for unit in (orphan, replaced):
        family.entry_path(unit).write_text(unit.id)
    family.provenance_path(orphan).write_text(json.dumps({"sittings": [opened]}))
    family.provenance_path(replaced).write_text(json.dumps({"sittings": [opened], "entry_sha256": "0" * 64}))
    lines = []
    l6_evidence.Runner(family, 1, "inline", 0, False, lines.append).run([])
    record = json.loads(family.provenance_path(orphan).read_text())
    assert record["entry_sha256"] == hashlib.sha256(b"orphan").hexdigest()
    assert (
        record["sittings"] == [opened] and record["cpu_seconds"] == 0.0 and record["trainer_seconds"] == {"train": 9.0}
    )
    assert record["unit"] == "orphan" and "recorded_late" in record
    assert json.loads(family.provenance_path(replaced).read_text())["entry_sha256"] == "0" * 64
    assert [line for line in lines if "recorded orphan" in line] and not [line for line in lines if "replaced" in line]


@pytest.mark.smoke
def test_check_names_an_entry_without_a_record_and_the_command_that_records_it(tmp_path):
    unit = cont.schedule()[0]
    entry = cont.entry_path(unit, tmp_path / "store")
    entry.parent.mkdir(parents=True)
    entry.write_bytes(b"not checked before its record")
    with pytest.raises(l6_evidence.Stale, match="has no record of it yet .*tools.l6_continuation run"):
        cont.check(tmp_path)


def _one_committed_unit(tmp_path):
    """A copy of one committed unit (its entry and record) in a folder of its own: (the unit, its entry, its
    record's path)."""
    import shutil

    unit = next(u for u in cont.schedule() if cont.entry_path(u).is_file())
    entry = cont.entry_path(unit, tmp_path / "store")
    entry.parent.mkdir(parents=True)
    shutil.copyfile(cont.entry_path(unit), entry)
    (tmp_path / "units").mkdir()
    record = tmp_path / "units" / f"{unit.id}.json"
    shutil.copyfile(cont.UNITS / f"{unit.id}.json", record)
    return unit, entry, record


@pytest.mark.smoke
def test_check_refuses_a_faulty_folder_in_one_line_naming_the_file(tmp_path):
    """What an outside review injected into a copy of the evidence: a deleted entry whose record says it is in (check
    passed, and the chain was read short: the lower objective fell back from held to running), a truncated entry
    (blamed on its record), an unreadable record (called 'no record yet'), malformed sittings and totals (passed,
    and status left their CPU out of its total), and a record of no registered unit. Each is now one line naming the
    file and, for a record, the key."""
    import json

    unit, entry, record = _one_committed_unit(tmp_path)
    assert "1 units" in cont.check(tmp_path)
    honest_entry, honest_record = entry.read_bytes(), record.read_text()

    def refused(match: str) -> None:
        with pytest.raises(l6_evidence.Stale, match=match):
            cont.check(tmp_path)
        entry.write_bytes(honest_entry)
        record.write_text(honest_record)

    entry.unlink()
    refused(rf"{unit.id}.json records {unit.id}'s entry as in, but .*{entry.name} is missing")
    entry.write_bytes(honest_entry[: len(honest_entry) // 2])
    refused(rf"{entry.name} \({unit.id}\) does not match the sha256 its record .* changed, truncated or replaced")
    record.write_text(honest_record[:40])
    refused(rf"{unit.id}.json cannot be read as a unit's record")
    for key, value, says in [
        ("sittings", "not-a-list", "key 'sittings' is not a list of objects"),
        ("cpu_seconds", "lots", "key cpu_seconds is not a number"),
        ("unit", "proposed-0.0001-1e5-seed11", "key 'unit' names"),
        ("entry_sha256", "beef", "key 'entry_sha256' is not a sha256"),
    ]:
        record.write_text(json.dumps(dict(json.loads(honest_record), **{key: value})))
        refused(rf"{unit.id}.json: {says}")
    sittings = json.loads(honest_record)["sittings"]
    for key, value, says in [("cpu_seconds", "lots", "is not a number"), ("exit", 0.5, "is not a whole number"),
                             ("started", None, "is not text"), ("ended", 7, "is neither a time nor null")]:  # fmt: skip
        record.write_text(json.dumps(dict(json.loads(honest_record), sittings=[dict(sittings[0], **{key: value})])))
        refused(rf"{unit.id}.json: key sittings\[0\]\.{key} {says}")
    (tmp_path / "units" / "proposed-0.0001-1e5-seed70.json").write_text(honest_record)
    with pytest.raises(l6_evidence.Stale, match="seed70.json is not the record of a registered continuation unit"):
        cont.check(tmp_path)
