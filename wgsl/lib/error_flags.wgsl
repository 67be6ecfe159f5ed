// NumPy's floating-point error flags, for kernels whose key has error_flags (the NumPy-level functions' calls
// whose results are read back: np.errstate decides what a flag does). An operator's files note each value where
// its error case may be hit (note_errors: non-zero where it is; the modulus's x % 0 for integers, a NaN from
// operands that are not NaN for floats), and an invocation that noted one ORs the type's flag (ERROR_FLAG, from the
// operator's type file: NumPy's bit, 1 divide by zero or 8 invalid) into the word error_flags[0] once, at its end.
// The common path pays one OR into a register per noted value (a compiler may fold the notes of one divisor used
// for several rows into one): only an invocation that saw an error touches memory, and it reads the word first, so
// that once the flag is set, later invocations leave it alone rather than queue atomics on one address.
var<private> errors_seen: u32;

fn note_errors(seen: u32) {
    errors_seen |= seen;
}

// The entry points' last step (common.wgsl, tiles.wgsl).
fn finish_invocation() {
    if (errors_seen != 0u && (atomicLoad(&error_flags[0]) & ERROR_FLAG) == 0u) {
        atomicOr(&error_flags[0], ERROR_FLAG);
    }
}
