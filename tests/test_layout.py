"""The house: each suite's files in one folder, sections through the catalog, no suite named
outside its folder and the catalog."""

import re
from pathlib import Path

import harness
from harness.suites.catalog import all_suites
from harness.suites.sections import ReportSection, load_section

ROOT = Path(harness.__file__).parent
TOP_LEVEL = {"__init__.py", "errors.py", "paths.py", "data.py", "logs.py", "plugin.py",
             "bounded_json.py", "output_paths.py",  # every reader; every command's -o
             # what every reader of outside input uses (issue 42): bounded zip members, the
             # manifest's shape, a log's own digests, numbers from outside, inert names
             "bounded_zip.py", "manifest_shape.py", "log_integrity.py", "outside_numbers.py",
             "spreadsheet.py", "terminal.py",
             # the one registry: suites, providers, subcommands (issue 43)
             "registry.py",
             # -T/-M/ROLE.KEY=VALUE values, and a suite command's run spec, which suites (floor
             # 2) use without importing eval or cli (issue 43)
             "kv_args.py", "role_eval.py"}  # fmt: skip


def _suite_home(suite) -> Path:
    """The folder (or the single module) that holds a suite's tasks."""
    module = Path(__import__(suite.tasks[0].__module__, fromlist=["_"]).__file__)
    return module.parent if module.parent != ROOT / "suites" else module


def test_top_of_the_package_keeps_only_what_everything_uses():
    assert {p.name for p in ROOT.glob("*.py")} == TOP_LEVEL


def test_every_suite_with_several_files_is_one_folder():
    for suite in all_suites().values():
        home = _suite_home(suite)
        for task in suite.tasks:
            assert Path(__import__(task.__module__, fromlist=["_"]).__file__).is_relative_to(home)
        if home.is_file():  # a one-module suite: no other module of the suites folder is its
            stem = home.stem
            assert not [p for p in (ROOT / "suites").glob(f"{stem}_*.py")], stem


def test_every_section_loads_through_the_catalog():
    sectioned = [s for s in all_suites().values() if s.section]
    assert len(sectioned) >= 4
    for suite in sectioned:
        section = load_section(suite.section)
        assert isinstance(section, ReportSection)
        module = Path(__import__(suite.section.split(":")[0], fromlist=["_"]).__file__)
        assert module.is_relative_to(_suite_home(suite)), (suite.name, module)
        assert section.build([]) == []  # no logs, no results


def test_no_code_outside_a_suite_names_it():
    """A suite's name (or its folder's) appears as a string only in its folder, the catalog,
    and the model code named after it (`harness/models/`)."""
    offences = []
    for suite in all_suites().values():
        home = _suite_home(suite)
        names = {suite.name, home.stem}
        pattern = re.compile("|".join(rf"[\"']{re.escape(n)}[\"']" for n in names))
        for path in ROOT.rglob("*.py"):
            if (
                path.is_relative_to(home)
                or path == ROOT / "suites" / "catalog.py"
                or path.is_relative_to(ROOT / "models")
            ):
                continue
            for number, line in enumerate(path.read_text().splitlines(), 1):
                if pattern.search(line):
                    offences.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not offences, "\n".join(offences)


def test_no_branch_on_a_suite_name_outside_the_catalog():
    branch = re.compile(r"suite\S*\s*(==|!=|\bin\b)\s*[\"'(]")
    offences = [
        f"{p.relative_to(ROOT)}:{i}"
        for p in ROOT.rglob("*.py")
        if p != ROOT / "suites" / "catalog.py"
        for i, line in enumerate(p.read_text().splitlines(), 1)
        if branch.search(line)
    ]
    assert not offences, offences
