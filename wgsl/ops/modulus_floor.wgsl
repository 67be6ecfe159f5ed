// DML_OPERATOR_ELEMENT_WISE_MODULUS_FLOOR: Python's modulus (sign of the divisor), exactly np.remainder:
// NumPy's npy_divmod moves the exact truncated remainder into the divisor's sign with one rounded addition.
fn op(a: InElem, b: InElem) -> OutElem {
    let r = elem_fmod(a, b);
    if (elem_is_zero(b) || elem_is_nan(r)) {
        return r;  // x % 0: 0 for integers, NaN for floats; NaN stays NaN
    }
    if (elem_is_zero(r)) {
        return elem_zero_with_sign_of(b);
    }
    if (elem_is_negative(r) != elem_is_negative(b)) {
        return elem_add_opposite(r, b);
    }
    return r;
}
