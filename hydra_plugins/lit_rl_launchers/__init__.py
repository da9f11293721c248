"""lit_rl's Hydra launchers."""
