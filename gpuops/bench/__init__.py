"""gpuops-bench: operator microbenchmarks, sweeps, the performance goals' tables and DxDispatch model files."""
