"""A tiny block-diffusion Mixture-of-Experts transformer and TEAM decoding (specs/team.md)."""
