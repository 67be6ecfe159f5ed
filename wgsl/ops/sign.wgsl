// DML_OPERATOR_ELEMENT_WISE_SIGN: -1, 0 or 1 in the input's type.
// NaN and -0 give +0 (gpuops decision, see directml.md); unsigned types give 0 or 1.
fn op(x: InElem) -> OutElem {
    if (elem_is_zero(x) || elem_is_nan(x)) {
        return ELEM_ZERO;
    }
    if (elem_is_negative(x)) {
        return ELEM_MINUS_ONE;
    }
    return ELEM_ONE;
}
