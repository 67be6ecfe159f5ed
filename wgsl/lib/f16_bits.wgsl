// Exact IEEE binary16 arithmetic on bit patterns held in the low 16 bits of a u32. Every float16 value is a normal
// float32 value (the least is 2^-24), so the arithmetic runs on those, where the float32 operations used give
// exact results (fmod) or the float32 result NumPy rounds from (MODULUS_FLOOR's addition); conversions between
// the two are done on the bits, where inf, NaN and subnormals are exact.
//
// NumPy computes float16 arithmetic in float32 and rounds once more to float16: a remainder is exactly
// representable in the operands' format, so fmod is never rounded; the one addition MODULUS_FLOOR needs is
// computed as NumPy computes it (f16_remainder_bits).

const F16_SIGN: u32 = 0x8000u;
const F16_ABS: u32 = 0x7fffu;
const F16_INF: u32 = 0x7c00u;
const F16_QNAN: u32 = 0x7e00u;
const F16_IMPLICIT: u32 = 0x0400u;

const F16_PAIR_SIGNS: u32 = 0x80008000u;
const F16_PAIR_ABS: u32 = 0x7fff7fffu;
const F16_PAIR_EXPONENTS: u32 = 0x7c007c00u;     // both lanes' exponent fields: 31 in each
const F16_PAIR_EXPONENT_ONES: u32 = 0x04000400u; // 1 in both lanes' exponent fields
const F32_LEAST_F16_NORMAL: u32 = 0x38800000u;  // 2^-14 as float32 bits
const F16_ESTIMATE_BELOW: f32 = 0.9998779296875;  // 1 - 2^-13 (f16_pair_rem)
const F16_ESTIMATE_UP: f32 = 1.220703125e-4;  // 2^-13 (f16_pair_rem, floored)

struct F16PairResult {
    bits: u32,            // each lane's result, where the lane is usual
    usual: vec2<bool>,    // per lane (low, high): its operands and result are the usual ones below; where not, the
                          // lane's bits are not used
}

// f16_remainder_bits on both lanes of a word at once, for the usual operands and results: divisors normal,
// dividends zero or normal, quotients below 2^12, results zero or at least 2^-14 (float16's least normal).
// `usual` says which lanes are such; the caller takes the others (inf, NaN, zero divisors, subnormals, large
// quotients) lane by lane. No sum or result of one lane reaches the other's bits, so a usual lane's result holds
// whatever its neighbour is.
// - unpack2x16float converts normal float16 values and zero exactly. WGSL leaves subnormals, inf and NaN to the
//   implementation, so nothing relies on it there: whether a lane counts is decided from its bits alone
//   (usual_operands); a lane that does not count may hold any value, and its float results are never used (its
//   `usual` is false, and the caller takes that lane on the bits). The bits moved up 13 (a float32 whose exponent
//   is biased by 15, the value times 2^-112) and scaled by 2^112 are not a way round it: GPUs need not compute
//   exactly on values in float32's bottom range (NVIDIA's do not), so float arithmetic never sees such values.
// - C's remainder: the remainder step is f16_rem_step's on both lanes at once, its estimate moved down so that one
//   correction suffices (below); one step of f16_rem_f32 (estimate below 2^12) gives the remainder exactly (the
//   proof is at f16_rem_f32). rest is then >= 0 and never -0 (x >= 0, and each step gives +0 for an exact zero),
//   so its bits need no sign cleared; the result takes the dividend's sign.
// - Python's modulus: the same step on the dividend given the sign of a * b, its estimate moved up (below), gives
//   the divisor's-sign remainder's magnitude directly: exact, or (a dividend below the divisor of the other sign)
//   the float32 sum NumPy rounds from, rounded once by the GPU's correctly rounded float32 arithmetic. WGSL leaves
//   the rounding of an inexact float32 value to float16 to the implementation: pack2x16float rounds it where the
//   device was found to round to nearest, ties to even, and the value is rounded on its bits first elsewhere
//   (below). Every result takes the divisor's sign.
// - pack2x16float is given the usual lanes' exact results only (zero for other lanes, which may hold inf or NaN
//   from operands that do not count, and whose bits are never used), so it never sees a value WGSL leaves
//   indeterminate.
// Every instruction here counts (the kernel is compute-bound), hence: both lanes' checks at once on the word's
// bits, not on a vector of lanes; pack2x16float, not the bits moved down; a usual lane's result kept beside an
// unusual one, which alone goes lane by lane (a warp runs that path for a lane position where one of its
// invocations needs it, not for every word that holds one); the estimate moved so that one correction suffices;
// MODULUS_FLOOR on the dividend given the sign of a * b, with no move afterwards. Inf and NaN operands are left to
// the lane-by-lane path, which sets them by rule: handling them here would add work to every word to spare a few.
fn f16_pair_rem(a: u32, b: u32, floored: bool) -> F16PairResult {
    let ma = a & F16_PAIR_ABS;
    let mb = b & F16_PAIR_ABS;
    // Both lanes at once, in each lane's top bit: an exponent field plus 31 sets it where the field is not zero,
    // plus 1 where it is all ones; a magnitude plus 0x7fff sets it where the magnitude is not zero. No sum leaves
    // its lane.
    let ea = ma & F16_PAIR_EXPONENTS;
    let eb = mb & F16_PAIR_EXPONENTS;
    let normal_a = (ea + F16_PAIR_EXPONENTS) & ~(ea + F16_PAIR_EXPONENT_ONES);
    let normal_b = (eb + F16_PAIR_EXPONENTS) & ~(eb + F16_PAIR_EXPONENT_ONES);
    let zero_a = ~(ma + F16_PAIR_ABS);
    let usual_operands = ((vec2<u32>(normal_b & (normal_a | zero_a)) >> vec2<u32>(15u, 31u)) & vec2<u32>(1u))
                         == vec2<u32>(1u);
    let y = unpack2x16float(mb);
    var estimate: vec2<f32>;
    var rest: vec2<f32>;
    if (floored) {
        // Python's modulus of magnitudes is that of x, the dividend's magnitude with the sign of a * b, by y:
        // x - floor(x / y) * y, in [0, y) and then given b's sign. x takes that sign on its bits (one instruction
        // a word), so no lane needs moving afterwards. The estimate is moved up by 2^-13 of its magnitude, more
        // than its error, so floor(estimate) is floor(x / y) or one more (below 2^12 the move is at most 0.5):
        // rest is in (-y, y), and one correction brings it into [0, y). Where |x| >= y, rest is a multiple of y's
        // unit in the last place below y, exact. Where |x| < y the quotient is 0 for x >= 0 (rest is x) and -1
        // for x < 0 (the estimate is in (-1, 0)): rest is x + y, the one rounded result, rounded once as NumPy
        // rounds r + b, in (0, y] (y where the sum rounds up to it, as NumPy's does), and left as it is.
        let x = unpack2x16float(ma | ((a ^ b) & F16_PAIR_SIGNS));
        let ratio = x * (1.0 / y);
        estimate = ratio + abs(ratio) * F16_ESTIMATE_UP;
        rest = x - floor(estimate) * y;
        rest = select(rest, rest + y, rest < vec2<f32>(0.0));
    } else {
        // The quotient's estimate moved down by 2^-13 of itself, more than its error (at most 3.6e-7 of it, see
        // f16_rem_f32), so floor(estimate) is floor(x / y) or one less (below 2^12 the move is at most 0.5): rest
        // is in [0, 2y), and one correction brings it into [0, y).
        let x = unpack2x16float(ma);
        estimate = x * ((1.0 / y) * F16_ESTIMATE_BELOW);
        rest = x - floor(estimate) * y;
        rest = select(rest, rest - y, rest >= y);
    }
    let bits = bitcast<vec2<u32>>(rest);  // rest >= 0, or -0 from x = -0 (floored)
    // zero, or at least float16's least normal: bits - 1 wraps for +0, and -0's are 0x7fffffff
    let usual_results = bits - vec2<u32>(1u) >= vec2<u32>(F32_LEAST_F16_NORMAL - 1u);
    let usual = usual_operands & (abs(estimate) < vec2<f32>(4096.0)) & usual_results;
    var exact = rest;  // a float16 value where the lane is usual
    var sign = a & F16_PAIR_SIGNS;
    if (floored) {
        // rest to the nearest float16 value, ties to even, as NumPy rounds it. WGSL lets pack2x16float round an
        // inexact value either way, so where the device's probe did not find it rounding to nearest, ties to even
        // (F16_PACK_ROUNDS_TO_NEAREST, the Operation's constant), the value is rounded on its bits first:
        // float32's significand cut to float16's 10 bits after adding half float16's unit less one and the kept
        // part's lowest bit (a carry into the exponent is the right rounding). rest is zero (which stays zero;
        // abs: x = -0 leaves rest = -0, whose result is +0, b's sign added) or, in a usual lane, at least 2^-14,
        // where float16's unit is float32's times 2^13, and below y, so the rounded value is at most y. That costs
        // float16 MODULUS_FLOOR about a tenth of its speed, hence the probe. Rounding in float32 arithmetic, as
        // (rest + c) - c, is no way out: NVIDIA's and Mesa's shader compilers fold the sum back to rest.
        exact = abs(rest);
        if (!F16_PACK_ROUNDS_TO_NEAREST) {
            let magnitude = bitcast<vec2<u32>>(exact);
            let lowest_kept = (magnitude >> vec2<u32>(13u)) & vec2<u32>(1u);
            exact = bitcast<vec2<f32>>((magnitude + vec2<u32>(0x0fffu) + lowest_kept) & vec2<u32>(0xffffe000u));
        }
        sign = b & F16_PAIR_SIGNS;
    }
    // Only a usual lane's exact result reaches pack2x16float; other lanes give it zero (their bits are not used), so
    // it never sees inf, NaN or a value outside float16's range.
    return F16PairResult(pack2x16float(select(vec2<f32>(0.0), exact, usual)) | sign, usual);
}

// The remainder of a / b for binary16 bits (low 16 bits of a and b), exact:
// - floor false: C's fmodf (np.fmod), the remainder r truncated towards zero, with the sign of a;
// - floor true: Python's modulus (np.remainder): where r is non-zero and a and b have opposite signs, r + b as
//   NumPy computes it (b's sign on |b| - |r|, computed in float32 and rounded to float16; |r| < |b|, so no
//   overflow), and a zero remainder takes b's sign.
// floor is a constant at every call, so each caller's code keeps one of the two.
// Special operands (inf, NaN, a zero divisor: most unusual lanes in real data) take their result by rule, without
// the division; the others are float32 values, where f16_rem_f32 divides exactly (branch-free but for large
// quotients).
fn f16_remainder_bits(a: u32, b: u32, floor: bool) -> u32 {
    if (f16_special_operands(a, b)) {
        return f16_special_rem(a, b, floor);
    }
    let x = f16_magnitude_to_f32(a & F16_ABS);
    let y = f16_magnitude_to_f32(b & F16_ABS);
    let rest = f16_rem_f32(x, y);
    let opposite = ((a ^ b) & F16_SIGN) != 0u;
    if (floor) {
        let moved = opposite && rest != 0.0;
        // y - rest (y, rest float16 values, so normal float32 values, and y - rest > 0 a multiple of 2^-24, normal
        // too): the GPU's float32 subtraction (WGSL requires `x - y` correctly rounded; only subnormals may be
        // flushed) gives the bits NumPy's does, and the rounding to float16 is done on the bits. Rounding rest,
        // a float16 value, changes nothing.
        let magnitude = f16_round_from_f32(select(rest, y - rest, moved));
        return (select(a, b, moved || rest == 0.0) & F16_SIGN) | magnitude;
    }
    return (a & F16_SIGN) | f16_from_f32_exact(rest);  // ±0 keeps a's sign
}

// An operand is inf or NaN, or the divisor is zero: the remainder follows from the rule, with no division.
fn f16_special_operands(a: u32, b: u32) -> bool {
    let ub = b & F16_ABS;
    return (a & F16_ABS) >= F16_INF || ub >= F16_INF || ub == 0u;
}

// f16_remainder_bits for special operands (f16_special_operands): NaN for a NaN operand, a = ±inf or b = ±0 (invalid,
// noted (lib/error_notes.wgsl) where no operand is NaN or one is a signalling NaN, its quiet bit clear, as NumPy's
// float32 fmodf raises it); for b = ±inf and a finite, C's remainder is a, and Python's modulus a + ±inf as NumPy
// computes it: ±inf where a is non-zero of the other sign, a otherwise, and a zero takes b's sign.
fn f16_special_rem(a: u32, b: u32, floor: bool) -> u32 {
    let ua = a & F16_ABS;
    var infinite_divisor = a;
    if (floor) {
        infinite_divisor = select(select(a, b, ((a ^ b) & F16_SIGN) != 0u), b & F16_SIGN, ua == 0u);
    }
    note_errors(f16_invalid_note(a, b));
    return select(infinite_divisor, F16_QNAN, ua >= F16_INF || (b & F16_ABS) != F16_INF);
}

// f16_special_rem's note: one where its NaN comes from operands that are not NaN, or an operand is a signalling NaN.
// A function of the operands alone, its bools joined with & and | (no branches), beside a remainder left as it is
// without the note: a kernel whose notes nothing reads then drops all of it (Dawn's compiled float16 kernels keep
// part of the work where the note shares the remainder's values or branches).
fn f16_invalid_note(a: u32, b: u32) -> u32 {
    let ua = a & F16_ABS;
    let ub = b & F16_ABS;
    let nan = (ua >= F16_INF) | (ub != F16_INF);
    let signalling = ((ua > F16_INF) & ((ua & 0x0200u) == 0u)) | ((ub > F16_INF) & ((ub & 0x0200u) == 0u));
    return select(0u, 1u, (nan & (ua <= F16_INF) & (ub <= F16_INF)) | signalling);
}

// x mod y for float16 values x >= 0, y > 0 held in float32, exactly.
//
// x and y are multiples of u, y's unit in the last place (u >= 2^-24; a larger x has a coarser unit, a multiple of
// u), and y = my * u with my < 2^11. A step takes r to r - q * Y for a divisor Y = y * 2^s and an integer
// q < 2^12 within one of floor(r / Y), then moves the result into [0, Y) by adding or subtracting Y once. By
// induction r is a multiple of 2^s * u (s only falls from step to step, and x is a multiple of 2^s * u because
// s <= log2(x / y) <= x's exponent - y's), so every value a step makes has at most 24 significant bits: q * Y has
// at most 12 + 11, and r - q * Y, of magnitude below 2 * Y, at most 12 beyond 2^s * u. Float32 holds each exactly,
// so WGSL's correctly rounded `*` and `-` (contracted into a fused multiply-add or not) give them exactly, and
// every value is 0 or at least 2^-24, normal in float32, so flushing subnormals changes nothing.
//
// The quotient comes from r * (1 / y): WGSL computes 1 / y within 2.5 units in the last place and rounds the
// product, so the estimate is within 3.6e-7 of the ratio relatively, under 1.5e-3 absolutely for quotients up
// to 2^12, and floor() of it is floor(r / Y) or one off either way. Each step shifts the estimate below 2^12
// (s from its exponent), so a quotient of 2^40 (the most float16 allows) takes four steps and one below 2^12
// (|x| < 4096 |y|, ordinary data) one.
fn f16_rem_f32(x: f32, y: f32) -> f32 {
    let inverse = 1.0 / y;
    var r = x;
    var estimate = r * inverse;
    while (estimate >= 4096.0) {
        let s = (bitcast<u32>(estimate) >> 23u) - 138u;  // estimate / 2^s in [2^11, 2^12): s >= 1
        r = f16_rem_step(r, y * bitcast<f32>((127u + s) << 23u), estimate * bitcast<f32>((127u - s) << 23u));
        estimate = r * inverse;
    }
    return f16_rem_step(r, y, estimate);
}

// r - q * y moved into [0, y), for q = floor(estimate) within one of floor(r / y) (see f16_rem_f32).
fn f16_rem_step(r: f32, y: f32, estimate: f32) -> f32 {
    var rest = r - floor(estimate) * y;
    rest = select(rest, rest + y, rest < 0.0);
    return select(rest, rest - y, rest >= y);
}

// A finite float16 magnitude as a float32 value: exact, and normal even for float16's subnormals.
fn f16_magnitude_to_f32(mag: u32) -> f32 {
    let subnormal = (bitcast<f32>(0x4b000000u | mag) - 8388608.0) * 5.9604644775390625e-8;  // mag * 2^-24, exact
    return select(subnormal, bitcast<f32>((mag << 13u) + 0x38000000u), mag >= F16_IMPLICIT);  // rebias 15 -> 127
}

// A float32 x >= 0 below 2^16 as (float16 bits with the rest cut off, the float32 significand bits cut off). Below
// 2^-14 (float16's subnormals) x is a multiple of 2^-24 here (f16_rem_f32's remainders, and differences of float16
// values below 2^-14, which have at most 10 significant bits); adding 2^-14 is then exact and puts those multiples
// in the float32 significand's bits 13 up, the same shift as for normals, from float16 exponent field 1 down to 0.
fn f16_split_f32(x: f32) -> vec2<u32> {
    let subnormal = x < 6.103515625e-5;  // 2^-14
    let bits = bitcast<u32>(select(x, x + 6.103515625e-5, subnormal));
    return vec2<u32>((bits >> 13u) - select(0x1c000u, 0x1c400u, subnormal), bits & 0x1fffu);  // rebias 127 -> 15
}

// x (see f16_split_f32) when it is a float16 value: 0 or a float16 magnitude.
fn f16_from_f32_exact(x: f32) -> u32 {
    return f16_split_f32(x).x;
}

// x (see f16_split_f32) rounded to the nearest float16 magnitude, ties to even. A carry out of the significand
// moves into the exponent, which is the right rounding.
fn f16_round_from_f32(x: f32) -> u32 {
    let split = f16_split_f32(x);
    return split.x + select(0u, 1u, split.y > 0x1000u || (split.y == 0x1000u && (split.x & 1u) == 1u));
}
