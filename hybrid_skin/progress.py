"""Shared plumbing for operators that run long jobs in steps: a timer, the progress bar, Esc."""

from __future__ import annotations


class ModalProgress:
    """Mixin for an operator whose ``modal`` does a slice of work per timer tick.

    ``begin_modal`` starts the timer, the window manager's progress bar and the modal handler;
    ``show_progress`` updates the bar and the status text; ``_end`` removes all of them again.
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
        wm = context.window_manager
        wm.event_timer_remove(self._timer)
        wm.progress_end()
        context.workspace.status_text_set(None)
