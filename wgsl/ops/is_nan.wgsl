// DML_OPERATOR_ELEMENT_WISE_IS_NAN: 1 for NaN, else 0 (UINT8 or UINT32 output).
fn op(x: InElem) -> OutElem {
    return select(0u, 1u, elem_is_nan(x));
}
