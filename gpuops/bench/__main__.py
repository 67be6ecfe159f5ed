"""python -m gpuops.bench: the same as the gpuops-bench console script."""

from .cli import main

raise SystemExit(main())
