// NumPy's floating-point error flags, for kernels whose Operation has error_flags (the NumPy-level functions' calls
// whose results are read back: np.errstate decides what a flag does). An invocation that noted an error case
// (lib/error_notes.wgsl) ORs its type's flag (ERROR_FLAG, from the operator's type file: NumPy's bit, 1 divide by
// zero or 8 invalid) into the word error_flags[0] once, at its end (the entry point, loop/main_*reporting.wgsl).
// Only an invocation that saw an error touches memory, and it reads the word first, so that once the flag is set,
// later invocations leave it alone rather than queue atomics on one address.
fn finish_invocation() {
    if (errors_seen != 0u && (atomicLoad(&error_flags[0]) & ERROR_FLAG) == 0u) {
        atomicOr(&error_flags[0], ERROR_FLAG);
    }
}
