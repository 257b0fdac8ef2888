"""The library behind `harness eval`: the request, its checks, model and task building, the run.

`harness.eval.run(EvalRequest(...))` makes the one inspect `eval_set` call and returns an
`EvalResult` (whether every task finished, the summary rows, the logs read). Names load on
first use, so importing this package (as the CLI does) stays cheap.

The public face (docs/layout.md): `__all__` names what other packages use, from private modules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.registry import lazy_face

if TYPE_CHECKING:
    from harness.eval._build import build_models, build_tasks
    from harness.eval._data_content import (
        IDENTITY_DIGITS,
        SAMPLE_DIGITS,
        SCHEME,
        sample_digests,
        whole_hash,
    )
    from harness.eval._manifest import manifest_of
    from harness.eval._reproduce import MAX_WAIT, Consent, load, prepare, refuse, reproduce
    from harness.eval._request import EvalRequest
    from harness.eval._roles import run_roles
    from harness.eval._runner import run
    from harness.eval._summary import headless, short_labels, split_columns

# each public name and the private module that defines it
_HOME = {
    "Consent": "_reproduce",
    "EvalRequest": "_request",
    "IDENTITY_DIGITS": "_data_content",
    "MAX_WAIT": "_reproduce",
    "SAMPLE_DIGITS": "_data_content",
    "SCHEME": "_data_content",
    "build_models": "_build",
    "build_tasks": "_build",
    "headless": "_summary",
    "load": "_reproduce",
    "manifest_of": "_manifest",
    "prepare": "_reproduce",
    "refuse": "_reproduce",
    "reproduce": "_reproduce",
    "run": "_runner",
    "run_roles": "_roles",
    "sample_digests": "_data_content",
    "short_labels": "_summary",
    "split_columns": "_summary",
    "whole_hash": "_data_content",
}

__all__ = [
    "Consent",
    "EvalRequest",
    "IDENTITY_DIGITS",
    "MAX_WAIT",
    "SAMPLE_DIGITS",
    "SCHEME",
    "build_models",
    "build_tasks",
    "headless",
    "load",
    "manifest_of",
    "prepare",
    "refuse",
    "reproduce",
    "run",
    "run_roles",
    "sample_digests",
    "short_labels",
    "split_columns",
    "whole_hash",
]


__getattr__, __dir__ = lazy_face(__name__, _HOME)
