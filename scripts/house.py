"""The structure drawing of `harness/`: rooms are packages, arrows are imports.

    python scripts/house.py            # rooms, arrows, back-arrows and circles, as text
    python scripts/house.py --dot F    # also the drawing, as Graphviz DOT
    python scripts/house.py --rooms    # also the circles among rooms (same-floor arrows)

A room is a folder under harness/ (`stats/`, `suites/`); the modules at the top of `harness/` are
the room `harness`. An arrow is any import between two rooms, at module level or inside a
function; imports under `if TYPE_CHECKING:` are left out (they never run). `FLOORS` is the
layering of docs/layout.md: a back-arrow runs from a lower floor to a higher one. A circle is a
set of modules that import each other, directly or round a loop. `tests/test_layout.py` holds
both at zero.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "harness"
# bottom to top; the floor of a room is that of its first folder under harness/
FLOORS: tuple[frozenset[str], ...] = (
    frozenset({"harness", "stats"}),
    frozenset({"compare", "models", "scorers", "kernels", "sandbox", "sage", "suco"}),
    frozenset({"suites"}),
    frozenset({"eval", "report", "board", "leaderboard", "testing"}),
    frozenset({"cli", "validation", "plugin"}),
)


@dataclass(frozen=True)
class Arrow:
    """An import of one room's module by another room's, at `where` (file:line)."""

    source: str
    target: str
    where: str


def module_name(path: Path) -> str:
    """`harness.stats._intervals` for harness/stats/_intervals.py (a package: its folder)."""
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def room_of(module: str) -> str:
    """The room that holds `module`: its first folder under harness/ (`harness` for the top)."""
    parts = module.split(".")
    if len(parts) > 1 and (PACKAGE / parts[1]).is_dir():
        return parts[1]
    return "plugin" if parts[1:2] == ["plugin"] else "harness"


def floor_of(room: str) -> int:
    """The floor of `room` (its first folder's)."""
    first = room.split("/")[0]
    for level, rooms in enumerate(FLOORS):
        if first in rooms:
            return level
    raise KeyError(f"room {room!r} is on no floor: add it to FLOORS and docs/layout.md")


def _type_only_nodes(tree: ast.AST) -> set[int]:
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for inner in node.body:
                found.update(id(n) for n in ast.walk(inner))
    return found


def _imported(node: ast.Import | ast.ImportFrom, module: str, is_package: bool) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        stem = ".".join([*base, node.module] if node.module else base)
    else:
        stem = node.module or ""
    # `from harness.stats import paired` imports the module harness.stats._paired
    out = []
    for alias in node.names:
        full = f"{stem}.{alias.name}"
        out.append(full if (PACKAGE.parent / (full.replace(".", "/") + ".py")).exists() else stem)
    return list(dict.fromkeys(out))


def imports(package: Path = PACKAGE) -> list[Arrow]:
    """Every import of one harness module by another (`source`/`target` are module names)."""
    out = []
    for path in sorted(package.rglob("*.py")):
        module = module_name(path)
        tree = ast.parse(path.read_text(), filename=str(path))
        skip = _type_only_nodes(tree)
        for node in ast.walk(tree):
            if id(node) in skip or not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            for target in _imported(node, module, path.name == "__init__.py"):
                if target.startswith("harness.") and target != module:
                    out.append(Arrow(module, target, f"{path.relative_to(ROOT)}:{node.lineno}"))
    return out


def arrows(found: list[Arrow]) -> list[Arrow]:
    """The imports of `found` that cross from one room to another, as arrows between rooms."""
    out = []
    for imp in found:
        source, target = room_of(imp.source), room_of(imp.target)
        if source != target:
            out.append(Arrow(source, target, imp.where))
    return out


def back_arrows(found: list[Arrow]) -> list[Arrow]:
    """The arrows that run from a lower floor to a higher one."""
    return [a for a in found if floor_of(a.source) < floor_of(a.target)]


def circles(found: list[Arrow]) -> list[list[str]]:
    """Each set of two or more modules (or rooms) that import each other, round a loop."""
    graph: dict[str, set[str]] = defaultdict(set)
    for arrow in found:
        graph[arrow.source].add(arrow.target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(room: str) -> None:  # Tarjan's strongly connected components
        index[room] = low[room] = len(index)
        stack.append(room)
        on_stack.add(room)
        for nxt in sorted(graph[room]):
            if nxt not in index:
                visit(nxt)
                low[room] = min(low[room], low[nxt])
            elif nxt in on_stack:
                low[room] = min(low[room], index[nxt])
        if low[room] == index[room]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == room:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for room in sorted(graph):
        if room not in index:
            visit(room)
    return out


def dot(found: list[Arrow]) -> str:
    """The drawing as Graphviz DOT: one rank per floor, back-arrows in red."""
    pairs = sorted({(a.source, a.target) for a in found})
    rooms = sorted({r for pair in pairs for r in pair})
    lines = ["digraph house {", "  rankdir=BT; node [shape=box];"]
    for level in range(len(FLOORS)):
        names = " ".join(f'"{r}"' for r in rooms if floor_of(r) == level)
        lines.append(f"  {{ rank=same; {names} }}")
    for source, target in pairs:
        colour = ' [color="red"]' if floor_of(source) < floor_of(target) else ""
        lines.append(f'  "{source}" -> "{target}"{colour};')
    lines.append("}")
    return "\n".join(lines) + "\n"


def main() -> None:
    """Print the measures; with --dot, write the drawing too."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dot", type=Path, help="write the drawing (Graphviz DOT) here")
    parser.add_argument(
        "--rooms", action="store_true", help="also print the circles among rooms, with file:line"
    )
    args = parser.parse_args()
    modules = imports()
    found = arrows(modules)
    pairs = {(a.source, a.target) for a in found}
    rooms = {r for pair in pairs for r in pair}
    back = back_arrows(found)
    loops = circles(modules)
    back_pairs = {(a.source, a.target) for a in back}
    print(
        f"rooms {len(rooms)}  arrows {len(pairs)}  back-arrows {len(back_pairs)} "
        f"({len(back)} imports)  circles {len(loops)}"
    )
    for arrow in back:
        print(f"  back: {arrow.source} -> {arrow.target}  {arrow.where}")
    for loop in loops:
        print(f"  circle: {' <-> '.join(loop)}")
    if args.rooms:
        room_loops = circles(found)
        print(f"room circles {len(room_loops)}")
        for loop in room_loops:
            print(f"  room circle: {' <-> '.join(loop)}")
            for arrow in found:
                if arrow.source in loop and arrow.target in loop:
                    print(f"    {arrow.source} -> {arrow.target}  {arrow.where}")
    if args.dot:
        if args.dot.exists() and not args.dot.read_text().startswith("digraph house"):
            sys.exit(f"house: {args.dot} exists and is not a drawing this script wrote")
        args.dot.write_text(dot(found))


if __name__ == "__main__":
    main()
