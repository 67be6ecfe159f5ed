"""gpuops-bench: operator microbenchmarks, sweeps and DxDispatch model files."""
