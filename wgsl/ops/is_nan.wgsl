// DML_OPERATOR_ELEMENT_WISE_IS_NAN: 1 for NaN, else 0 (UINT8 or UINT32 output), on every lane of x at once.
fn op(x: InElem) -> OutElem {
    return lanes_is_nan(x);
}
