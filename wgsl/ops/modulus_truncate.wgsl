// DML_OPERATOR_ELEMENT_WISE_MODULUS_TRUNCATE: C's remainder (sign of the dividend), exactly np.fmod.
fn op(a: InElem, b: InElem) -> OutElem {
    return elem_fmod(a, b);
}
