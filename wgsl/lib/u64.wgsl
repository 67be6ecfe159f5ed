// 64-bit unsigned integers for core WGSL, which has no 64-bit integer type.
//
// A value is a vec2<u32> with .x the low word and .y the high word, which is how a little-endian
// uint64/int64 lies in a storage buffer read as array<u32>. All arithmetic wraps modulo 2^64.
// Signed (two's complement) values use the same representation; callers handle the sign.

fn u64_is_zero(a: vec2<u32>) -> bool {
    return (a.x | a.y) == 0u;
}

// a < b as unsigned 64-bit numbers.
fn u64_less(a: vec2<u32>, b: vec2<u32>) -> bool {
    return a.y < b.y || (a.y == b.y && a.x < b.x);
}

fn u64_add(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let lo = a.x + b.x;
    // The low word wrapped exactly when the sum came out smaller than an operand.
    let carry = select(0u, 1u, lo < a.x);
    return vec2<u32>(lo, a.y + b.y + carry);
}

fn u64_sub(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let borrow = select(0u, 1u, a.x < b.x);
    return vec2<u32>(a.x - b.x, a.y - b.y - borrow);
}

// Two's complement negation: 0 - a.
fn u64_negate(a: vec2<u32>) -> vec2<u32> {
    return u64_sub(vec2<u32>(0u, 0u), a);
}

// a << n for n in 0..63. (WGSL shifts by 32 or more are not allowed, hence the cases.)
fn u64_shl(a: vec2<u32>, n: u32) -> vec2<u32> {
    if (n == 0u) {
        return a;
    }
    if (n >= 32u) {
        return vec2<u32>(0u, a.x << (n - 32u));
    }
    return vec2<u32>(a.x << n, (a.y << n) | (a.x >> (32u - n)));
}

// a as a float32 value: f32(a.y) * 2^32 + f32(a.x). Each of the three roundings (two conversions, one addition,
// fused with the multiplication by 2^32 or not; that multiplication is exact) lands on a float32 neighbour of its
// exact result, so the value is within a factor (1 ± 2^-23)^2 of a.
fn u64_to_f32(a: vec2<u32>) -> f32 {
    return f32(a.y) * 4294967296.0 + f32(a.x);
}

// q * d for q < 2^16 and a product below 2^64 (exact). WGSL has no multiply-high, so d's low word is taken in
// 16-bit halves: q * 0xffff < 2^32 keeps both partial products exact.
fn u64_mul_small(d: vec2<u32>, q: u32) -> vec2<u32> {
    let low = q * (d.x & 0xffffu);
    let middle = q * (d.x >> 16u);  // times 2^16
    let x = low + (middle << 16u);
    let carry = select(0u, 1u, x < low);
    return vec2<u32>(x, q * d.y + (middle >> 16u) + carry);  // wraps in no bit the product has: it is below 2^64
}

// r - q * d moved into [0, d), for q < 2^16 equal to floor(r / d) or one less (see u64_rem): q * d <= r, and
// r - q * d < 2 d, so one subtraction of d is the whole correction.
fn u64_rem_step(r: vec2<u32>, d: vec2<u32>, q: u32) -> vec2<u32> {
    let rest = u64_sub(r, u64_mul_small(d, q));
    return select(u64_sub(rest, d), rest, u64_less(rest, d));
}

// 1 - 2^-17: the estimate's bias (see u64_rem).
const U64_ESTIMATE_BIAS: f32 = 0.99999237060546875;

// a % b, exact over the full 64-bit range. b == 0 gives 0. A few float32 operations estimate the quotient; the
// remainder is computed and corrected in integers, without branches for quotients below 2^16.
//
// Error bound. Let u = 2^-23 and f = u64_to_f32, so f(r) = r (1 ± u)^2 and f(b) = b (1 ± u)^2. WGSL computes
// 1 / y within 2.5 units in the last place (a factor 1 ± 2.5 u; f(b) >= 1 is in its range) and rounds each
// product to a float neighbour (1 ± u each; fusing or reordering the operations rounds no more often). So
// E = f(r) * inverse, with inverse = (1 / f(b)) * (1 - 64 u), has E / (r / b) = (1 ± 8.5 u) (1 - 64 u) to first
// order (second-order terms are below 0.01 u):
//     (r / b) (1 - 73 u) < E < (r / b) (1 - 55 u) < r / b    for r > 0 (r = 0 gives E = 0).
// Every value is 0 or normal (E >= 2^-64 when r > 0; nothing reaches 2^65), so flushing subnormals changes
// nothing.
//
// A step takes r to r - q * d for a divisor d = b * 2^s and q = floor(E * 2^-s), the power of two exact.
// With x = r / d, E * 2^-s has the same relative bounds against x, so q <= floor(x): q * d <= r, and nothing
// wraps. When E * 2^-s < 2^16, x < 2^16 / (1 - 73 u) < 2^16 + 1 and x - E * 2^-s < 73 u x < 0.6, so
// q >= floor(x) - 1: r - q * d < 2 d, and u64_rem_step's one subtraction of d leaves r in [0, d).
//
// Steps. Quotients below 2^16 (E < 2^16) take one step with s = 0: q = u32(E), truncated. Larger ones first
// take steps with s = (E's exponent) - 15 >= 1, where E * 2^-s lies in [2^15, 2^16) and q is E's top 16
// significand bits; q >= 2^15 keeps d = b << s below r / 2^15 < 2^49 (the shift loses nothing). A step leaves
// r < d, so the next estimate is below r / b < 2^s: its exponent is at least 16 lower. E < 2^64 (E < r / b), so
// from exponent 63 that is at most three such steps (63, 47, 31, then below 16) and the last on b itself: four
// in all. b >= 2^32 takes at most one before the last, b >= 2^48 none; with uniformly random operands nearly
// every quotient is below 2^16. The loop's limit of three is never what ends it.
fn u64_rem(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    // b = 0 divides 0 by 1 instead (giving 0), so the float arithmetic only ever sees a divisor of at least 1.
    let zero = u64_is_zero(b);
    let divisor = select(b, vec2<u32>(1u, 0u), zero);
    var r = select(a, vec2<u32>(0u, 0u), zero);
    let inverse = (1.0 / u64_to_f32(divisor)) * U64_ESTIMATE_BIAS;
    var estimate = u64_to_f32(r) * inverse;
    for (var i = 0u; i < 3u && estimate >= 65536.0; i++) {
        let bits = bitcast<u32>(estimate);
        let s = (bits >> 23u) - 142u;  // exponent - 15 (bias 127): estimate * 2^-s in [2^15, 2^16)
        let q = ((bits & 0x7fffffu) | 0x800000u) >> 8u;  // floor(estimate * 2^-s)
        r = u64_rem_step(r, u64_shl(divisor, s), q);
        estimate = u64_to_f32(r) * inverse;
    }
    return u64_rem_step(r, divisor, u32(estimate));  // u32() truncates: floor for E >= 0
}
