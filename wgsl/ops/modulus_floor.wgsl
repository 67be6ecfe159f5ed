// DML_OPERATOR_ELEMENT_WISE_MODULUS_FLOOR: Python's modulus (sign of the divisor), exactly np.remainder, on every
// lane: NumPy's npy_divmod moves the exact truncated remainder into the divisor's sign with one rounded addition,
// and gives a zero remainder the divisor's sign. x % 0 is 0 for integers and NaN for floats; NaN stays NaN.
fn op(a: InElem, b: InElem) -> OutElem {
    var sum: InElem;
    let r = lanes_fmod_and_sum(a, b, &sum);  // sum: r + b, rounded as NumPy does, where r and b differ in sign
    let zero = lanes_is_zero(r);
    let kept = zero | lanes_is_zero(b) | lanes_is_nan(r);
    let moved = lanes_fill((lanes_is_negative(r) ^ lanes_is_negative(b)) & ~kept & LANE_ONES);
    let s = (sum & moved) | (r & ~moved);
    return s ^ ((s ^ b) & lanes_put(zero, ZERO_SIGN));  // zero lanes take b's sign (ZERO_SIGN: none for integers)
}
