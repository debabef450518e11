"""Forget the widgets a session no longer has, so that a long session does not keep every pair
it ever showed.

Streamlit 1.67 drops a widget's value once a run no longer draws it, but keeps its metadata
(and the user key that named it) for the whole session. The metadata holds the widget's
callbacks, and through their closures whatever they reach: for the labelling form, mounted
under a key of its own for every pair (views/label.py), the pair, the study, the account and
that run's page module. Measured in a 10-minute crowd run (benchmarks/bench_crowd.py, issue
22) that was about 0.15 MB per annotator, and a replica's RSS grew 13-14 % after warm-up.

`forget_gone_widgets` drops the metadata and user keys of widgets that Streamlit itself has let
go of: no value in the session's current or previous widget state, and not drawn in this run.
A widget a fragment still shows keeps its value, so it keeps its metadata too; an event that
arrives for a widget that is gone would have had no value to change anyway.

It reads Streamlit's private session state: `check_session_state` fails loudly (the server
refuses to start, tests/test_session_memory_app.py fails) when an upgrade moves it.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

if TYPE_CHECKING:
    from streamlit.runtime.state import SafeSessionState


def _parts(
    session_state: SafeSessionState,
) -> tuple[AbstractContextManager[Any], dict[str, Any], dict[str, Any], dict[str, Any], Any]:
    """(lock, widget values, their metadata, previous values, user key -> widget id) of a
    SafeSessionState, or a RuntimeError naming what moved."""
    try:
        state = session_state._state
        widgets = state._new_widget_state
        return (
            session_state._lock,
            widgets.states,
            widgets.widget_metadata,
            state._old_state,
            state._key_id_mapper,
        )
    except AttributeError as moved:
        raise RuntimeError(
            f"Streamlit's session state changed ({moved}): widgets that are gone can no longer "
            "be forgotten, and every session would keep all it ever showed "
            "(annotate/web/widget_state.py)"
        ) from None


def forget_gone_widgets() -> int:
    """Drop the metadata and user keys of the current session's widgets that are gone (see the
    module docstring); how many widgets were forgotten. Call it from a script run."""
    ctx = get_script_run_ctx()
    if ctx is None:
        return 0
    lock, values, metadata, previous, keys = _parts(ctx.session_state)
    drawn = ctx.shared.widget_ids_this_run
    with lock:
        gone = [
            widget_id
            for widget_id in metadata
            if widget_id not in values and widget_id not in previous and widget_id not in drawn
        ]
        for widget_id in gone:
            del metadata[widget_id]
        if gone:
            forgotten = set(gone)
            for user_key in [k for k, w in keys._key_id_mapping.items() if w in forgotten]:
                keys.delete(user_key)
    return len(gone)


def check_session_state() -> None:
    """Fail at start-up, loudly, unless a session's widget state is where this module reads it."""
    from streamlit.runtime.state import SafeSessionState, SessionState

    _, values, metadata, previous, keys = _parts(SafeSessionState(SessionState(), lambda: None))
    if not (
        isinstance(values, dict)
        and isinstance(metadata, dict)
        and isinstance(previous, dict)
        and isinstance(getattr(keys, "_key_id_mapping", None), dict)
        and callable(getattr(keys, "delete", None))
    ):
        raise RuntimeError(
            "Streamlit's session state changed: widgets that are gone can no longer be "
            "forgotten (annotate/web/widget_state.py, check_session_state)"
        )
