"""SWE-rebench V2: executable repository-level software-engineering tasks."""
