// What an operator's files note of the error cases NumPy reports (note_errors: a value non-zero where a lane hits
// one; the modulus's x % 0 for integers, a NaN from operands that are not NaN or a signalling NaN operand for
// floats), in every kernel of an operator whose row has error_flags. The notes are ORed into a register: one OR per
// noted value (a compiler may fold the notes of one divisor used for several rows into one). A kernel that reports
// them (its Operation's error_flags) reads the register once, at each invocation's end (lib/error_flags.wgsl); in
// the others nothing reads it, and the compiler drops the notes with the work that made them.
var<private> errors_seen: u32;

fn note_errors(seen: u32) {
    errors_seen |= seen;
}
