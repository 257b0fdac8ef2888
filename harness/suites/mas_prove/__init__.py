"""Suite `mas-prove`: process verification inside multi-agent systems (arXiv 2602.03053).

A reimplementation from `../shared/specs/mas-prove.md` (the spec was written from the paper's
abstract and the authors' code; their code is not copied). What is reconstructed, and where,
is said in each module's docstring and in the logs' metadata (`reconstructed`).
"""
