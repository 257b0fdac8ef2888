"""A text editor tool for agents in the bwrap sandbox, working through the sandbox's file API.

inspect-ai's own `text_editor()` runs a tool-support program inside the sandbox, which a bwrap
sandbox over the host's /usr does not have. This one reads and writes files with
`sandbox().read_file` / `write_file`, so it works in any sandbox, and is confined to what those
allow (bwrap: the work folder). Commands, as in inspect's editor: `view` (a file with line
numbers, or a folder's entries), `create`, `str_replace` (the old text must occur exactly once)
and `insert` (after a line number; 0 inserts at the top). Our construction.
"""

from __future__ import annotations

from typing import Literal

from inspect_ai.tool import Tool, ToolError, tool
from inspect_ai.util import sandbox


@tool(name="text_editor")
def sandbox_text_editor() -> Tool:
    """View and edit files in the sample's sandbox."""

    async def execute(
        command: Literal["view", "create", "str_replace", "insert"],
        path: str,
        file_text: str | None = None,
        old_str: str | None = None,
        new_str: str | None = None,
        insert_line: int | None = None,
    ) -> str:
        """Edit a file in the working folder.

        Args:
            command: view, create, str_replace or insert.
            path: The file (or, for view, a folder), relative to the working folder or absolute.
            file_text: The whole text, for create.
            old_str: The text to replace, for str_replace; it must occur exactly once.
            new_str: The replacement (str_replace) or the text to insert (insert).
            insert_line: Insert after this line (0: at the top), for insert.

        Returns:
            What the command did, or the file's text with line numbers for view.

        """
        box = sandbox()
        if command == "view":
            listing = await box.exec(["bash", "-c", 'test -d "$1" && ls -la "$1"', "_", path])
            if listing.success:
                return listing.stdout
            text = await _read(path)
            return "\n".join(f"{i:6}\t{line}" for i, line in enumerate(text.split("\n"), 1))
        if command == "create":
            if file_text is None:
                raise ToolError("create needs file_text")
            await box.write_file(path, file_text)
            return f"created {path}"
        if command == "str_replace":
            if old_str is None or new_str is None:
                raise ToolError("str_replace needs old_str and new_str")
            text = await _read(path)
            count = text.count(old_str)
            if count != 1:
                raise ToolError(f"old_str occurs {count} times in {path}; it must occur once")
            await box.write_file(path, text.replace(old_str, new_str))
            return f"replaced 1 occurrence in {path}"
        if command == "insert":
            if new_str is None or insert_line is None:
                raise ToolError("insert needs new_str and insert_line")
            lines = (await _read(path)).split("\n")
            if not 0 <= insert_line <= len(lines):
                raise ToolError(f"insert_line must be in 0..{len(lines)}, got {insert_line}")
            lines[insert_line:insert_line] = new_str.split("\n")
            await box.write_file(path, "\n".join(lines))
            return f"inserted {len(new_str.split(chr(10)))} line(s) after line {insert_line}"
        raise ToolError(f"unknown command {command!r}; use view, create, str_replace or insert")

    return execute


async def _read(path: str) -> str:
    try:
        return await sandbox().read_file(path)
    except FileNotFoundError:
        raise ToolError(f"no file {path}") from None
    except (PermissionError, IsADirectoryError, UnicodeDecodeError) as ex:
        raise ToolError(f"cannot read {path}: {ex}") from None
