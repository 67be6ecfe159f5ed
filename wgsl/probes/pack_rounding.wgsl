// The device's probe of pack2x16float (gpuops/device.py: Device.probe_pack_rounding): each pair of float32 values,
// read from a buffer so that no compiler can fold the conversion, packed to float16 as the device rounds them.
@group(0) @binding(0) var<storage, read> values: array<vec2<f32>>;
@group(0) @binding(1) var<storage, read_write> packed: array<u32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    if (id.x < arrayLength(&packed)) {
        packed[id.x] = pack2x16float(values[id.x]);
    }
}
