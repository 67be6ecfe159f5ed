// DML_OPERATOR_ELEMENT_WISE_MODULUS_TRUNCATE: C's remainder (sign of the dividend), exactly np.fmod, on every lane.
fn op(a: InElem, b: InElem) -> OutElem {
    return lanes_fmod(a, b);
}
