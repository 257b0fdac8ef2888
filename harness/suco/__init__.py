"""SuCo (reconstructed): minimal sufficient CoT, MFT data and the SAPO reward.

Modules: `segment` (sentence cuts), `sufficiency` (S and the scoring template), `calibrator`
(the log-prob models), `threshold` (δ(x) and the complexity pool), `msc` (t*), `trajectories`
and `msc_log` (a log's MSCs), `mft` (Stage I data), `sapo` and `sapo_scorer` (Stage II reward),
`early_exit` and `provider` (the `suco/INNER` model wrapper, at inference).
See specs/suco.md; what is ours rather than the paper's is said in each module.
"""
