// Kernels that report no floating-point errors (their key's error_flags is false: every DirectML-level kernel, and
// every operator without errors to report): what the operator's files note is dropped, and the compiler removes
// the work that made it.
fn note_errors(seen: u32) {}

fn finish_invocation() {}
