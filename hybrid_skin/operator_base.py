"""What every operator of the add-on shares: one error funnel, and the plumbing of long modal jobs.

:class:`GuardedOperator` is the one place where an operator's errors become a message. Its subclasses'
``execute``, ``invoke`` and ``modal`` are wrapped when the class is defined: a
:class:`..errors.HybridSkinError` (bad input, its text says what to do) or any other exception (a bug)
calls the operator's :meth:`~GuardedOperator.rollback` — which puts back whatever the operator had
changed so far — and becomes one ``ERROR`` report and ``{'CANCELLED'}``, never a traceback in the UI.
Bugs also print their traceback to the console, for a bug report.

:class:`ModalProgress` runs a long job in slices on a timer, with the progress bar and Esc.
"""

from __future__ import annotations

import traceback

from .errors import HybridSkinError

__all__ = ["GuardedOperator", "ModalProgress"]

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


class ModalProgress(GuardedOperator):
    """Mixin for an operator whose ``modal`` does a slice of work per timer tick.

    ``begin_modal`` starts the timer, the window manager's progress bar and the modal handler;
    ``show_progress`` updates the bar and the status text; ``_end`` removes all of them again (also
    after an error: :meth:`rollback`).
    """

    _timer = None

    def begin_modal(self, context) -> set[str]:
        wm = context.window_manager
        wm.progress_begin(0, 100)
        self._timer = wm.event_timer_add(0.0, window=context.window)
        wm.modal_handler_add(self)
        return {"RUNNING_MODAL"}

    def show_progress(self, context, fraction: float, text: str) -> None:
        context.window_manager.progress_update(int(fraction * 100))
        context.workspace.status_text_set(text)

    def _end(self, context) -> None:
        if self._timer is None:
            return
        wm = context.window_manager
        wm.event_timer_remove(self._timer)
        self._timer = None
        wm.progress_end()
        context.workspace.status_text_set(None)

    def rollback(self, context) -> None:
        self._end(context)
