// UINT8, UINT16, UINT32: the bits in the low IN_BITS of a u32, upper bits zero (see README.md).
const ELEM_ZERO: u32 = 0u;
const ELEM_ONE: u32 = 1u;
const ELEM_MINUS_ONE: u32 = IN_MASK;  // never produced: no unsigned value is negative

fn lanes_is_zero(x: u32) -> u32 {
    return lanes_zero(x);
}

fn lanes_is_negative(x: u32) -> u32 {
    return 0u;
}

fn lanes_is_nan(x: u32) -> u32 {
    return 0u;
}

fn elem_is_nan(x: u32) -> bool {
    return false;
}

fn elem_is_zero(x: u32) -> bool {
    return x == 0u;
}

fn elem_is_negative(x: u32) -> bool {
    return false;
}
