// DML_OPERATOR_ELEMENT_WISE_IS_INFINITY: 1 for an infinity of the chosen sign, else 0 (UINT8 output).
// INFINITY_MODE is DML_IS_INFINITY_MODE: 0 either sign, 1 positive, 2 negative. NaN gives 0.
fn op(x: InElem) -> OutElem {
    if (!elem_is_inf(x)) {
        return 0u;
    }
    switch INFINITY_MODE {
        case 1u: {
            return select(1u, 0u, elem_is_negative(x));
        }
        case 2u: {
            return select(0u, 1u, elem_is_negative(x));
        }
        default: {
            return 1u;
        }
    }
}
