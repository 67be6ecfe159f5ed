// Output stores staged in workgroup memory (with entry_staged.wgsl), for a strided 8/16-bit output of one
// dimension whose stride, STAGE_STRIDE elements (a prelude constant), is small and whose first element starts
// a word. A unit's elements then fill words no other unit touches, so an invocation stages them with plain reads
// and writes; after the round's barrier, adjacent invocations write adjacent words, each once. (Written straight
// from the units, a warp's stores were 32 bytes apart and touched 32 memory sectors each; PyTorch's byte stores,
// adjacent, ran 1.3-3 times faster on an H200.) A word some of whose lanes are no element keeps those lanes: its
// other bytes are read and written back, and no other workgroup writes the word (rounds cover whole words).
const STAGE_WORDS: u32 = WORKGROUP_SIZE * (UNIT / OUT_PER_WORD) * STAGE_STRIDE;  // a round's output span

var<workgroup> stage_bits: array<u32, STAGE_WORDS>;
var<workgroup> stage_mask: array<u32, STAGE_WORDS>;  // the lanes of each word that are elements of the round
var<private> stage_origin: u32;  // the output word staged at index 0: the one of the round's first element

fn out_store_lanes(index: u32, bits: u32, mask: u32) {
    let j = index - stage_origin;
    stage_bits[j] |= bits;
    stage_mask[j] |= mask;
}

fn out_store_word(index: u32, bits: u32) {
    out_store_lanes(index, bits, 0xffffffffu);
}

fn out_store_chunk(chunk: u32, bits: vec4<u32>) {
    out_store_word(4u * chunk, bits.x);
    out_store_word(4u * chunk + 1u, bits.y);
    out_store_word(4u * chunk + 2u, bits.z);
    out_store_word(4u * chunk + 3u, bits.w);
}

// The stage cleared before the first round (entry_staged.wgsl then waits at a barrier). WebGPU zero-initialises workgroup memory, but an
// implementation may skip that for speed (wgpu-native on lavapipe left a previous dispatch's values there).
fn clear_stage(lane: u32) {
    for (var j = lane; j < STAGE_WORDS; j += WORKGROUP_SIZE) {
        stage_bits[j] = 0u;
        stage_mask[j] = 0u;
    }
}

// The round's staged words to the output, and the stage cleared for the next round.
fn flush_stage(lane: u32) {
    for (var j = lane; j < STAGE_WORDS; j += WORKGROUP_SIZE) {
        let mask = stage_mask[j];
        if (mask != 0u) {
            let index = stage_origin + j;
            if (mask == 0xffffffffu) {
                out_words[index] = stage_bits[j];
            } else {
                out_words[index] = (out_words[index] & ~mask) | stage_bits[j];
            }
            stage_bits[j] = 0u;
            stage_mask[j] = 0u;
        }
    }
}
