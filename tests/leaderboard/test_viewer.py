"""Bundling inspect's viewer with chosen logs, and the URL that opens each one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.model import ChatMessage, GenerateConfig, ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import includes
from inspect_ai.tool import ToolChoice, ToolInfo

from harness.errors import HarnessUsageError
from harness.leaderboard.viewer import ViewerBundleError, bundle_viewer, viewer_log_url

# a distinctive input per sample, so a browser test can find one on the page
PROMPTS = {
    "alpha": ["Name the quokka's island", "Spell ZIRCONIA backwards", "Count the legs of a newt"],
    "beta": ["Which ocean is the Sargasso in", "Square root of 1764", "Capital of Tuvalu"],
}


def _reply(
    input: list[ChatMessage], tools: list[ToolInfo], tool_choice: ToolChoice, config: GenerateConfig
) -> ModelOutput:
    # usage given, else mockllm counts tokens with tiktoken, which downloads its vocabulary
    output = ModelOutput.from_content(model="mockllm", content=f"Reply to: {input[-1].text}")
    output.usage = ModelUsage(input_tokens=5, output_tokens=5, total_tokens=10)
    return output


def small_logs(log_dir: Path) -> list[str]:
    """Two real 3-sample logs from mockllm, one per task, each in its own folder."""
    model = get_model("mockllm/model", custom_outputs=_reply)
    paths = []
    for name, prompts in PROMPTS.items():
        task = Task(
            dataset=[Sample(input=p, target="Reply", id=i + 1) for i, p in enumerate(prompts)],
            scorer=includes(),
            name=f"probe_{name}",
        )
        [log] = eval(
            task,
            model=model,
            log_dir=str(log_dir / name),
            display="none",
            log_format="eval",
        )
        assert log.status == "success"
        paths.append(log.location)
    return paths


def test_bundle_viewer(tmp_path: Path) -> None:
    logs = small_logs(tmp_path / "logs")
    site = tmp_path / "site"

    urls = bundle_viewer(logs, site)

    viewer = site / "viewer"
    assert (viewer / "index.html").is_file()
    bundled = sorted(p.name for p in (viewer / "logs").glob("*.eval"))
    assert bundled == sorted(Path(p).name for p in logs)
    assert "harness-viewer-logs-" not in (viewer / "index.html").read_text()  # no temp path
    listing = json.loads((viewer / "logs" / "listing.json").read_text())
    assert sorted(listing) == bundled
    assert set(urls) == set(logs)
    for path, url in urls.items():
        assert url == f"viewer/index.html#/logs/{Path(path).name}"


def test_same_file_name_from_two_folders(tmp_path: Path) -> None:
    [log] = small_logs(tmp_path / "logs")[:1]
    copy = tmp_path / "elsewhere" / Path(log).name
    copy.parent.mkdir()
    copy.write_bytes(Path(log).read_bytes())

    urls = bundle_viewer([log, str(copy), log], tmp_path / "site")

    name = Path(log).name
    assert urls == {
        log: f"viewer/index.html#/logs/{name}",
        str(copy): f"viewer/index.html#/logs/2/{name}",
    }
    assert (tmp_path / "site" / "viewer" / "logs" / "2" / name).is_file()


def test_url_encodes_like_encode_uri_component() -> None:
    assert viewer_log_url("a b+c.eval") == "viewer/index.html#/logs/a%20b%2Bc.eval"
    assert viewer_log_url("2/x(1)!.eval") == "viewer/index.html#/logs/2/x(1)!.eval"


def test_bad_input(tmp_path: Path) -> None:
    with pytest.raises(HarnessUsageError, match="no logs"):
        bundle_viewer([], tmp_path / "site")
    with pytest.raises(HarnessUsageError, match="log file not found"):
        bundle_viewer([str(tmp_path / "missing.eval")], tmp_path / "site")
    (tmp_path / "notes.txt").write_text("hi")
    with pytest.raises(HarnessUsageError, match="not an inspect log"):
        bundle_viewer([str(tmp_path / "notes.txt")], tmp_path / "site")


def test_unreadable_log_is_a_bundle_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.eval"
    bad.write_bytes(b"not a zip archive")
    with pytest.raises(ViewerBundleError, match=r"bundle into .* failed .*bad\.eval"):
        bundle_viewer([str(bad)], tmp_path / "site")
