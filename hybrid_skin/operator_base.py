"""What every operator of the add-on shares: one error funnel, and one way to run a long job.

:class:`GuardedOperator` is the one place where an operator's errors become a message. Its subclasses'
``execute``, ``invoke`` and ``modal`` are wrapped when the class is defined: a
:class:`..errors.HybridSkinError` (bad input, its text says what to do) or any other exception (a bug)
calls the operator's :meth:`~GuardedOperator.rollback` — which puts back whatever the operator had
changed so far — and becomes one ``ERROR`` report and ``{'CANCELLED'}``, never a traceback in the UI.
Bugs also print their traceback to the console, for a bug report.

:class:`JobOperator` runs a :class:`Job` (both bakes are jobs): to the end at once from ``execute``
(scripts, the command line), or from ``invoke`` in slices on a timer with the progress bar, the status text
and Esc; other events wait until the job is done (the scene must not change under it). Esc or an error
closes the job, which takes back everything it did.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Iterator
from typing import Protocol

from .errors import HybridSkinError

__all__ = ["GuardedOperator", "Job", "JobOperator", "in_modes", "refuse"]

_WRAPPED = ("execute", "invoke", "modal")


def _message(operator, err: BaseException) -> str:
    if isinstance(err, HybridSkinError):
        return str(err)
    traceback.print_exception(err)  # a bug: keep the details for a bug report, show one sentence
    label = getattr(operator, "bl_label", type(operator).__name__)
    return f"{label} failed ({type(err).__name__}: {err}); nothing was changed, please report this"


def _fail(operator, context, err: BaseException) -> set[str]:
    try:
        operator.rollback(context)
    except Exception as rollback_error:  # never hide the first error behind a second one
        traceback.print_exception(rollback_error)
    operator.report({"ERROR"}, _message(operator, err))
    return {"CANCELLED"}


# Blender checks the argument count of an operator's methods, so each wrapper keeps the signature.
def _guard_execute(method):
    def execute(self, context):
        try:
            return method(self, context)
        except Exception as err:
            return _fail(self, context, err)

    return execute


def _guard_with_event(method, name: str):
    def guarded(self, context, event):
        try:
            return method(self, context, event)
        except Exception as err:
            return _fail(self, context, err)

    guarded.__name__ = name
    return guarded


def refuse(cls, why: str) -> bool:
    """A ``poll`` that says no, and why: Blender shows ``why`` in the greyed button's tooltip (and F3)."""
    cls.poll_message_set(why)
    return False


#: How a poll message names the modes an operator runs in (``context.mode`` values).
_MODE_NAMES = {"OBJECT": "Object Mode", "POSE": "Pose Mode"}


def in_modes(cls, context, doing: str, modes: tuple[str, ...] = ("OBJECT",)) -> bool:
    """A ``poll`` check: the context is in one of ``modes``, else "Switch to Object Mode to <doing>"."""
    if context.mode in modes:
        return True
    return refuse(cls, f"Switch to {' or '.join(_MODE_NAMES[m] for m in modes)} to {doing}")


class GuardedOperator:
    """Mixin for every operator: errors in ``execute``/``invoke``/``modal`` → rollback + one report."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for name in _WRAPPED:
            method = cls.__dict__.get(name)
            if method is None or getattr(method, "_hybrid_skin_guarded", False):
                continue
            wrapped = _guard_execute(method) if name == "execute" else _guard_with_event(method, name)
            wrapped._hybrid_skin_guarded = True
            wrapped.__doc__ = method.__doc__
            setattr(cls, name, wrapped)

    def rollback(self, context) -> None:
        """Put back what this operator changed before it failed (override; the default has nothing)."""


class Job(Protocol):
    """A long job. :meth:`steps` does the work in slices, yielding the progress in [0, 1], and finishes it
    when exhausted; closing the generator before (Esc, an error) takes back everything it did."""

    def steps(self) -> Iterator[float]: ...


class JobOperator(GuardedOperator):
    """Mixin for an operator that runs a :class:`Job` (see the module docstring). Subclasses give
    :meth:`make_job`, :meth:`job_done` (reports, ``{'FINISHED'}``), :attr:`job_label` (status text) and
    :attr:`cancelled` (the sentence for Esc)."""

    job_label = "working"
    cancelled = "Cancelled: nothing was changed"
    #: Seconds of work per timer tick: the UI stays responsive.
    SLICE_S = 0.1

    _job = None
    _steps = None
    _timer = None

    def make_job(self, context) -> Job:
        raise NotImplementedError

    def job_done(self, context, job) -> set[str]:
        return {"FINISHED"}

    def run_job(self, context) -> set[str]:
        """The whole job now, with the window manager's progress bar (execute)."""
        self._job = self.make_job(context)
        self._steps = self._job.steps()
        wm = context.window_manager
        wm.progress_begin(0, 100)
        try:
            for progress in self._steps:
                wm.progress_update(int(progress * 100))
        finally:
            wm.progress_end()
        self._steps = None
        return self.job_done(context, self._job)

    def start_job(self, context) -> set[str]:
        """The job in slices on a timer (invoke): progress bar, status text, Esc."""
        self._job = self.make_job(context)
        self._steps = self._job.steps()
        wm = context.window_manager
        wm.progress_begin(0, 100)
        self._timer = wm.event_timer_add(0.0, window=context.window)
        wm.modal_handler_add(self)
        return {"RUNNING_MODAL"}

    def modal(self, context, event):
        if event.type == "ESC":
            self.rollback(context)
            self.report({"WARNING"}, self.cancelled)
            return {"CANCELLED"}
        if event.type != "TIMER":
            return {"RUNNING_MODAL"}  # nothing else until the job is done: it owns the scene's frame
        deadline = time.perf_counter() + self.SLICE_S
        progress = 0.0
        try:  # an error: the funnel rolls back (closes the job, removes the timer) and reports
            while True:  # at least one step per tick
                progress = next(self._steps)
                if time.perf_counter() >= deadline:
                    break
        except StopIteration:
            self._steps = None
            self._end(context)
            return self.job_done(context, self._job)
        context.window_manager.progress_update(int(progress * 100))
        context.workspace.status_text_set(f"Hybrid Skin: {self.job_label} {progress:.0%} (Esc to cancel)")
        return {"RUNNING_MODAL"}

    def _end(self, context) -> None:
        if self._timer is None:
            return
        wm = context.window_manager
        wm.event_timer_remove(self._timer)
        self._timer = None
        wm.progress_end()
        context.workspace.status_text_set(None)

    def rollback(self, context) -> None:
        """Close the job (it takes back what it did), then the timer and progress bar."""
        if self._steps is not None:
            self._steps.close()
            self._steps = None
        self._end(context)
