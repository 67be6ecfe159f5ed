// DML_OPERATOR_ELEMENT_WISE_IS_INFINITY: 1 for an infinity of the chosen sign, else 0 (UINT8 output), on every
// lane of x at once. INFINITY_MODE is DML_IS_INFINITY_MODE: 0 either sign, 1 positive, 2 negative. NaN gives 0.
fn op(x: InElem) -> OutElem {
    let infinite = lanes_is_inf(x);
    switch INFINITY_MODE {
        case 1u: {
            return infinite & ~lanes_is_negative(x);
        }
        case 2u: {
            return infinite & lanes_is_negative(x);
        }
        default: {
            return infinite;
        }
    }
}
