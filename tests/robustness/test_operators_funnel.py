"""The one error funnel itself (``hybrid_skin.operator_base.GuardedOperator``), on plain Python classes:
what the modal paths (Esc, timer ticks) rely on where the headless module has no event loop."""

from __future__ import annotations

import importlib
import types

import pytest


@pytest.fixture
def base(addon):
    return importlib.import_module(addon.__name__ + ".operator_base")


def probe_class(base, failure, rollback_failure=None):
    class Probe(base.GuardedOperator):
        bl_label = "Probe"

        def __init__(self):
            self.reports, self.rolled_back = [], 0

        def report(self, kind, text):
            self.reports.append((set(kind), text))

        def rollback(self, context):
            self.rolled_back += 1
            if rollback_failure is not None:
                raise rollback_failure

        def execute(self, context):
            raise failure

        def invoke(self, context, event):
            raise failure

        def modal(self, context, event):
            raise failure

    return Probe


@pytest.mark.parametrize("method", ["execute", "invoke", "modal"])
def test_a_user_error_is_its_own_sentence_after_rollback(base, addon, method):
    errors = importlib.import_module(addon.__name__ + ".errors")
    probe = probe_class(base, errors.HybridSkinError("Pick a group first"))()
    args = (None,) if method == "execute" else (None, types.SimpleNamespace(type="TIMER"))
    assert getattr(probe, method)(*args) == {"CANCELLED"}
    assert probe.reports == [({"ERROR"}, "Pick a group first")] and probe.rolled_back == 1


def test_a_bug_is_one_sentence_and_a_failing_rollback_does_not_hide_it(base, capsys):
    probe = probe_class(base, IndexError("list index out of range"), RuntimeError("second"))()
    assert probe.modal(None, types.SimpleNamespace(type="TIMER")) == {"CANCELLED"}
    (kind, text), = probe.reports
    assert kind == {"ERROR"} and text.startswith("Probe failed (IndexError: list index out of range)")
    assert "\n" not in text and probe.rolled_back == 1
    assert "Traceback" in capsys.readouterr().err  # the details go to the console, for a bug report


def test_wrapped_methods_keep_the_argument_count_blender_checks(base):
    probe = probe_class(base, ValueError("x"))
    assert probe.execute.__code__.co_argcount == 2
    assert probe.invoke.__code__.co_argcount == probe.modal.__code__.co_argcount == 3


def _context(removed: list):
    wm = types.SimpleNamespace(
        event_timer_remove=removed.append, progress_end=lambda: None, progress_begin=lambda a, b: None,
        progress_update=lambda value: None, event_timer_add=lambda step, window=None: "timer",
        modal_handler_add=lambda op: None,
    )
    return types.SimpleNamespace(
        window_manager=wm, window=None, workspace=types.SimpleNamespace(status_text_set=lambda text: None)
    )


def test_a_job_operator_ends_its_timer_once(base):
    """A rollback after the modal already ended (Esc, then an error) must not remove the timer twice."""
    removed = []
    context = _context(removed)
    job = base.JobOperator()
    job._timer = "timer"
    job.rollback(context)
    job.rollback(context)
    assert removed == ["timer"]


class _CountingJob:
    """Three steps; records whether it finished or was closed (taken back) before."""

    def __init__(self):
        self.finished = self.taken_back = False

    def steps(self):
        try:
            for i in range(3):
                yield i / 3
        except GeneratorExit:
            self.taken_back = True
            raise
        self.finished = True


def test_one_job_protocol_runs_to_the_end_or_is_taken_back_on_esc(base):
    class Probe(base.JobOperator):
        def make_job(self, context):
            self.made = _CountingJob()
            return self.made

        def report(self, kind, text):
            self.reports = getattr(self, "reports", []) + [(kind, text)]

    removed = []
    whole = Probe()
    assert whole.run_job(_context(removed)) == {"FINISHED"} and whole.made.finished
    modal = Probe()
    context = _context(removed)
    assert modal.start_job(context) == {"RUNNING_MODAL"}
    assert modal.modal(context, types.SimpleNamespace(type="MOUSEMOVE")) == {"RUNNING_MODAL"}
    assert not modal.made.finished, "other events wait: the job owns the scene until it is done"
    modal.SLICE_S = 0.0  # one step per tick
    modal.modal(context, types.SimpleNamespace(type="TIMER"))
    assert modal.modal(context, types.SimpleNamespace(type="ESC")) == {"CANCELLED"}
    assert modal.made.taken_back and not modal.made.finished and removed == ["timer"]
    assert modal.reports == [({"WARNING"}, "Cancelled: nothing was changed")]
