"""SAGE verification, reconstructed: semantic-neighbour-anchored judging for error detection."""
