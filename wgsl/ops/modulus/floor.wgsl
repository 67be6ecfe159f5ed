// DML_OPERATOR_ELEMENT_WISE_MODULUS_FLOOR: Python's modulus (sign of the divisor), exactly np.remainder, on every
// lane: NumPy's npy_divmod moves the exact truncated remainder r into the divisor's sign with one rounded addition
// (r + b where r is non-zero and its sign differs from b's), and gives a zero remainder the divisor's sign.
// x % 0 is 0 for integers and NaN for floats; NaN stays NaN.
//
// Each type family computes it (dtype/README.md: lanes_mod_floor) next to its truncated remainder, from the
// remainder's intermediate values: written here on top of lanes_fmod's bits (lane predicates, then an addition
// converting r back), float MODULUS_FLOOR would repeat much of the remainder's work.
fn op(a: InElem, b: InElem) -> OutElem {
    return lanes_mod_floor(a, b);
}
