"""Side-by-side tests against the reference implementations (Stable-Baselines3 / sb3-contrib 2.9.2)."""
