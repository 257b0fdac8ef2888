"""Suite `iwg`: Inverse Workflow Generation and orchestrator entropy dynamics (arXiv 2606.01351).

Reimplemented from the spec (`specs/iwg.md`); the authors' code was read, not copied. One folder:

- `schema.py`: the instance schema (spec §2.1), JSON round-trip, checks with file and field;
- `generator.py`: the seeded procedural instances (spec §5.1);
- `synthesis.py`, `prompts.py`: Scout, Wrapper and committee as one inspect eval;
- `plan.py`, `orchestrator.py`, `trajectory.py`: the Plan/Reflexion loop over executor agents;
- `scripted.py`: the scripted orchestrators `iwg/perfect|skipper|misrouter|diffuser`;
- `metrics.py`, `scorers.py`: LCS-F1, task success, Step-SR, EH-F1, faithfulness,
  consistency, scheduling entropy;
- `dynamics.py`: the entropy-dynamics fit, a placeholder model (ours), not the paper's equation;
- `results.py`, `section.py`: the report section; `cli.py`: `harness iwg generate|synthesize`.
"""
