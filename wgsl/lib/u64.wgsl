// 64-bit unsigned integers for core WGSL, which has no 64-bit integer type.
//
// A value is a vec2<u32> with .x the low word and .y the high word, which is how a little-endian
// uint64/int64 lies in a storage buffer read as array<u32>. All arithmetic wraps modulo 2^64.
// Signed (two's complement) values use the same representation; callers handle the sign.

fn u64_is_zero(a: vec2<u32>) -> bool {
    return (a.x | a.y) == 0u;
}

fn u64_equal(a: vec2<u32>, b: vec2<u32>) -> bool {
    return a.x == b.x && a.y == b.y;
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

// Number of leading zero bits, 0..64.
fn u64_clz(a: vec2<u32>) -> u32 {
    if (a.y != 0u) {
        return countLeadingZeros(a.y);
    }
    return 32u + countLeadingZeros(a.x);
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

// a >> n (logical) for n in 0..63.
fn u64_shr(a: vec2<u32>, n: u32) -> vec2<u32> {
    if (n == 0u) {
        return a;
    }
    if (n >= 32u) {
        return vec2<u32>(a.y >> (n - 32u), 0u);
    }
    return vec2<u32>((a.x >> n) | (a.y << (32u - n)), a.y >> n);
}

// a % b, exact over the full 64-bit range. b == 0 gives 0.
fn u64_rem(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    if (u64_is_zero(b)) {
        return vec2<u32>(0u, 0u);
    }
    if (u64_less(a, b)) {
        return a;
    }
    if (b.y == 0u) {
        if (a.y == 0u) {
            return vec2<u32>(a.x % b.x, 0u);
        }
        // b fits in 32 bits with k free high bits, so any remainder r < b can be shifted left by
        // up to k bits without overflow: feed the dividend into r that many bits at a time.
        // For b < 2^16 this is three u32 `%` (a.y, then two 16-bit halves of a.x).
        let k = min(countLeadingZeros(b.x), 16u);
        if (k >= 4u) {
            var r = a.y % b.x;
            var left = 32u;  // bits of a.x not yet consumed
            // At most 8 iterations (k >= 4).
            while (left > 0u) {
                let take = min(k, left);
                left -= take;
                let chunk = (a.x >> left) & ((1u << take) - 1u);
                r = ((r << take) | chunk) % b.x;
            }
            return vec2<u32>(r, 0u);
        }
    }
    // General case: shift-subtract long division. Start with b's leading bit under a's leading
    // bit (a >= b, so n >= 0) and walk down one bit at a time: n + 1 <= 64 steps.
    // (In practice at most 36, as divisors below 2^28 were handled above.)
    let n = u64_clz(b) - u64_clz(a);
    var d = u64_shl(b, n);
    var r = a;
    for (var i = 0u; i <= n; i++) {
        if (!u64_less(r, d)) {
            r = u64_sub(r, d);
        }
        d = u64_shr(d, 1u);
    }
    return r;
}
