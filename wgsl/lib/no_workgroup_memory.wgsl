// Kernels that keep nothing in workgroup memory: the entry point's preparation of it does nothing.
fn prepare_workgroup(lane: u32) {}
