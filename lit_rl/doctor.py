"""``python -m lit_rl.doctor``: what this machine offers lit_rl (:mod:`lit_rl.launcher.doctor`)."""

from lit_rl.launcher.doctor import main as main

if __name__ == "__main__":
    main()
