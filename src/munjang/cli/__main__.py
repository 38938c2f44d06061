"""`python -m munjang.cli`."""

from .main import main

main()
