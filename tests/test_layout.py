"""The house: each suite's files in one folder, sections through the catalog, no suite named
outside its folder and the catalog."""

import re
from pathlib import Path

import harness
from harness.sections import ReportSection, load_section
from harness.suites.catalog import all_suites

ROOT = Path(harness.__file__).parent
TOP_LEVEL = {"__init__.py", "errors.py", "paths.py", "data.py", "logs.py", "plugin.py",
             "bounded_json.py", "output_paths.py",  # every reader; every command's -o
             # what every reader of outside input uses (issue 42): bounded zip members, the
             # manifest's shape, a log's own digests, numbers from outside, inert names
             "bounded_zip.py", "manifest_shape.py", "log_integrity.py", "outside_numbers.py",
             "spreadsheet.py", "terminal.py",
             # the one registry: suites, providers, subcommands (issue 43); how a suite declares
             # its report section, below both the suites and the report that renders it
             "registry.py", "sections.py",
             # -T/-M/ROLE.KEY=VALUE values, and a suite command's run spec, which suites (floor
             # 2) use without importing eval or cli (issue 43)
             "kv_args.py", "role_eval.py",
             # a final answer from a reply's text: models, scorers, suco and suites read it, so
             # it sits below them all (no models <-> scorers circle; issue 43)
             "answer_extraction.py"}  # fmt: skip


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


# --- the floors, the circles, the public faces and the one registry (issue 43) --------------

REPO = ROOT.parent
PUBLIC_FACES = ("stats", "compare", "report", "board", "eval")


def _house():
    """scripts/house.py, the structure drawing, as a module."""
    import importlib.util
    import sys

    if "house" not in sys.modules:
        spec = importlib.util.spec_from_file_location("house", REPO / "scripts" / "house.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules["house"] = module  # its dataclasses look their module up there
        spec.loader.exec_module(module)
    return sys.modules["house"]


def test_no_arrow_runs_back_up_the_floors_and_no_import_circle():
    house = _house()
    modules = house.imports()
    back = house.back_arrows(house.arrows(modules))
    assert not back, "\n".join(f"{a.source} -> {a.target} at {a.where}" for a in back)
    assert house.circles(modules) == []
    assert house.circles(house.arrows(modules)) == []  # nor among rooms (one floor's)


def test_the_structure_check_catches_a_back_arrow_a_circle_and_a_late_import(tmp_path):
    house = _house()
    package = tmp_path / "harness"
    for folder in ("stats", "suites", "models"):
        (package / folder).mkdir(parents=True)
        (package / folder / "__init__.py").write_text("")
    (package / "stats" / "a.py").write_text("def f():\n    from harness.suites import b\n")
    (package / "suites" / "b.py").write_text("from harness.suites import c\n")
    (package / "suites" / "c.py").write_text("import harness.suites.b\n")
    (package / "models" / "d.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from harness.suites import b\n"
    )
    saved = house.ROOT, house.PACKAGE
    house.ROOT, house.PACKAGE = tmp_path, package
    try:
        modules = house.imports(package)
        back = house.back_arrows(house.arrows(modules))
        assert [(a.source, a.target) for a in back] == [("stats", "suites")]  # not the type-only
        assert house.circles(modules) == [["harness.suites.b", "harness.suites.c"]]
    finally:
        house.ROOT, house.PACKAGE = saved


def _private_imports(path: Path) -> list[str]:
    """`file:line module` for each import, in `path`, of a package's `_private` module
    from outside that package."""
    import ast

    inside = path.relative_to(ROOT.parent).with_suffix("").parts
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            # a name imported from a module is a module only where a file or folder says so
            named = [f"{node.module}.{a.name}" for a in node.names]
            targets = [node.module] + [t for t in named if _is_module(t)]
        elif isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        else:
            continue
        for target in targets:
            if target.split(".")[0] != "harness":
                continue
            parts = target.split(".")
            for i, part in enumerate(parts):
                if part.startswith("_") and not part.startswith("__"):
                    owner = tuple(parts[:i])  # the package the private module belongs to
                    if inside[: len(owner)] != owner:
                        out.append(f"{path.relative_to(ROOT.parent)}:{node.lineno} {target}")
                    break
    return out


def _is_module(dotted: str) -> bool:
    path = ROOT.parent / dotted.replace(".", "/")
    return path.with_suffix(".py").is_file() or path.is_dir()


def test_nothing_outside_a_package_imports_its_private_modules():
    offences = [hit for path in sorted(ROOT.rglob("*.py")) for hit in _private_imports(path)]
    assert not offences, "\n".join(offences)


def test_each_public_face_names_what_it_exports_and_loads_it():
    import importlib

    for name in PUBLIC_FACES:
        package = importlib.import_module(f"harness.{name}")
        assert package.__all__ == sorted(set(package.__all__)), name
        for export in package.__all__:
            assert getattr(package, export) is not None, (name, export)
        modules = [p.stem for p in (ROOT / name).glob("*.py") if p.stem != "__init__"]
        assert modules and all(m.startswith("_") for m in modules), (name, modules)


def test_the_engine_alone_pairs_tests_and_corrects():
    """The paired tests and multiple-comparison corrections are not on stats' public face:
    every pair, test and Holm family comes from the comparison engine (`compare`), which the
    private-module boundary above holds."""
    import harness.stats

    engine_only = {"holm", "benjamini_hochberg", "adjust", "mcnemar", "paired_bootstrap_diff",
                   "paired_permutation", "sign_flip_interval"}  # fmt: skip
    assert not engine_only & set(harness.stats.__all__)


def test_the_private_boundary_check_catches_every_spelling(tmp_path):
    probe = ROOT / "suites" / "_probe_boundary.py"
    cases = {
        "from harness.stats._paired import mcnemar": True,
        "import harness.stats._multiple as m": True,
        "from harness.stats import _exact": True,
        "from harness.stats import wilson": False,
        "from harness.suites._probe_boundary import x": False,  # its own package
    }
    try:
        for source, caught in cases.items():
            probe.write_text(source + "\n")
            assert bool(_private_imports(probe)) is caught, source
    finally:
        probe.unlink()


def test_one_registry_and_the_suite_key_spelled_once():
    """No `"harness_suite"` literal outside logs.py, and no module but the registry turns a
    `module:NAME` string into an object."""
    literal = re.compile(r"[\"']harness_suite[\"']")
    resolver = re.compile(r"import_module\(\s*\w+\s*\)|\.partition\(\s*[\"']:[\"']\s*\)")
    offences = []
    for path in ROOT.rglob("*.py"):
        text = path.read_text()
        if path != ROOT / "logs.py" and literal.search(text):
            offences.append(f"{path.relative_to(ROOT)}: 'harness_suite'")
        if path != ROOT / "registry.py" and "import_module" in text and resolver.search(text):
            offences.append(f"{path.relative_to(ROOT)}: resolves a module:NAME itself")
    assert not offences, "\n".join(offences)


def test_readers_of_a_log_read_its_attached_design_and_never_reach_into_suites():
    """logs, stats, the engine, models, the report, the board and the site read the design
    (with its section and own_table) that the one lookup, passed in by the command or the eval
    library, attached to each record: none of them imports anything under `suites/`, even late."""
    house = _house()
    readers = {"harness", "stats", "compare", "models", "report", "board", "leaderboard"}
    found = house.imports()
    reaching = [a for a in found if house.room_of(a.source) in readers
                and house.room_of(a.target) == "suites"]  # fmt: skip
    assert not reaching, "\n".join(f"{a.source} -> {a.target} at {a.where}" for a in reaching)
