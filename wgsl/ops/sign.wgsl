// DML_OPERATOR_ELEMENT_WISE_SIGN: -1, 0 or 1 in the input's type, on every lane of x at once (see unary.wgsl).
// NaN and -0 give +0 (gpuops decision, docs/semantics.md); unsigned types give 0 or 1.
fn op(x: InElem) -> OutElem {
    if (LANES == 1u) {
        // One element per word (32/64-bit types): tests and selects cost fewer instructions than lane arithmetic,
        // which counts where a broadcast input leaves the kernel bound by instructions.
        if (elem_is_zero(x) || elem_is_nan(x)) {
            return ELEM_ZERO;
        }
        if (elem_is_negative(x)) {
            return ELEM_MINUS_ONE;
        }
        return ELEM_ONE;
    }
    let nonzero = ~(lanes_is_zero(x) | lanes_is_nan(x)) & LANE_ONES;
    let negative = lanes_is_negative(x) & nonzero;
    return lanes_put(nonzero ^ negative, ELEM_ONE) | lanes_put(negative, ELEM_MINUS_ONE);
}
