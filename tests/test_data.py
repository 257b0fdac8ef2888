import json
from pathlib import Path

import pytest

from harness.data import DatasetSpec, int_in_range, load_rows, nonempty_str, resolve_data_dir
from harness.errors import HarnessUsageError
from harness.suites.aime import AIME_DATA, aime_samples

SPEC = DatasetSpec(
    name="toy",
    hub_id="someone/toy",
    local_path="toy/rows.jsonl",
    fields={"problem": nonempty_str, "answer": int_in_range(0, 999)},
    hub_columns={"Problem": "problem", "Answer": "answer"},
)


def write_rows(root: Path, lines: list[str]) -> Path:
    path = root / "toy" / "rows.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("\n".join(lines) + "\n")
    return root


def test_aime_local_copies_load_with_checksums(data_dir):
    for year, total in ((2024, 8762), (2025, 8344)):
        loaded = load_rows(AIME_DATA[year], data_dir)
        assert loaded.errors == ()
        assert len(loaded.rows) == 30
        assert sum(row["answer"] for _, row in loaded.rows) == total
        assert all(0 <= row["answer"] <= 999 for _, row in loaded.rows)


def test_aime_sample_ids_are_year_and_row(data_dir):
    samples = aime_samples(2025, str(data_dir))
    assert [s.id for s in samples[:3]] == ["2025-1", "2025-2", "2025-3"]
    assert samples[0].target == "70"  # specs/aime.md: first 2025 answer in row order
    assert aime_samples(2024, str(data_dir))[7].target == "25"  # "025" normalised


def test_bad_row_names_file_row_and_field_and_costs_only_itself(tmp_path):
    root = write_rows(
        tmp_path,
        [
            json.dumps({"problem": "a", "answer": "1"}),
            json.dumps({"problem": "b"}),
            "{not json",
            json.dumps({"problem": "c", "answer": "1234"}),
            json.dumps({"problem": "d", "answer": 7}),
        ],
    )
    loaded = load_rows(SPEC, root)
    assert [n for n, _ in loaded.rows] == [1, 5]
    assert [(e.row, e.field) for e in loaded.errors] == [(2, "answer"), (3, "*"), (4, "answer")]
    assert "rows.jsonl row 2: field 'answer' is missing" in str(loaded.errors[0])
    with pytest.raises(HarnessUsageError, match=r"row 2: field 'answer' is missing.*2 more"):
        loaded.raise_for_errors()


def test_data_dir_from_environment(tmp_path, monkeypatch):
    root = write_rows(tmp_path, [json.dumps({"problem": "a", "answer": 3})])
    monkeypatch.setenv("HARNESS_DATA_DIR", str(root))
    assert resolve_data_dir(None) == root
    assert len(load_rows(SPEC).rows) == 1


def test_missing_data_folder_and_file_are_usage_errors(tmp_path, monkeypatch):
    monkeypatch.delenv("HARNESS_DATA_DIR", raising=False)
    with pytest.raises(HarnessUsageError, match="does not exist"):
        resolve_data_dir(tmp_path / "nope")
    with pytest.raises(HarnessUsageError, match="expected the local copy"):
        load_rows(SPEC, tmp_path)


def test_hub_loading_renames_columns_and_validates(monkeypatch):
    import datasets

    calls = {}

    def fake_load(hub_id, config, split):
        calls.update(hub_id=hub_id, split=split)
        return datasets.Dataset.from_list(
            [{"Problem": "p1", "Answer": "12"}, {"Problem": "", "Answer": "5"}]
        )

    monkeypatch.delenv("HARNESS_DATA_DIR", raising=False)
    monkeypatch.setattr(datasets, "load_dataset", fake_load)
    loaded = load_rows(SPEC)
    assert calls == {"hub_id": "someone/toy", "split": "train"}
    assert loaded.rows == ((1, {"problem": "p1", "answer": 12}),)
    assert (loaded.errors[0].row, loaded.errors[0].field) == (2, "problem")


def test_hub_failure_is_a_usage_error(monkeypatch):
    import datasets

    def offline(*args, **kwargs):
        raise ConnectionError("no network")

    monkeypatch.delenv("HARNESS_DATA_DIR", raising=False)
    monkeypatch.setattr(datasets, "load_dataset", offline)
    with pytest.raises(HarnessUsageError, match="--data-dir"):
        load_rows(SPEC)
