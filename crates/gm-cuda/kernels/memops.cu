// Memory utilities of gm-cuda: filling buffers with a pattern (poisoning outputs in tests,
// padding batches) and an order-independent checksum of device bytes (comparing large outputs,
// such as two runs' batches, without copying them to the host).
//
// Compiled to memops.ptx by `cargo xtask ptx`; the CPU twins are in src/ops.rs.

extern "C" __global__ void gm_fill_u32(unsigned int* __restrict__ dst, unsigned long long n,
                                       unsigned int value) {
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += stride) {
        dst[i] = value;
    }
}

// sum over words i of w_i * (2i + 1) mod 2^64, where w_i is bytes 4i..4i+3 little-endian with
// zeros past the end. Position-weighted so that swapped words change the sum; a sum, so blocks
// can combine their partial results in any order and the result is deterministic.
extern "C" __global__ void gm_checksum_bytes(const unsigned char* __restrict__ src,
                                             unsigned long long len,
                                             unsigned long long* __restrict__ out) {
    unsigned long long words = (len + 3) / 4;
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long acc = 0;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
         i < words; i += stride) {
        unsigned long long base = i * 4;
        unsigned int w = 0;
        if (base + 4 <= len && (((unsigned long long)(src + base)) & 3) == 0) {
            w = *reinterpret_cast<const unsigned int*>(src + base);
        } else {
            for (int b = 0; b < 4; ++b) {
                if (base + b < len) w |= (unsigned int)src[base + b] << (8 * b);
            }
        }
        acc += (unsigned long long)w * (2 * i + 1);
    }
    for (int off = 16; off > 0; off >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, off);
    __shared__ unsigned long long partial[32];
    unsigned int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) partial[warp] = acc;
    __syncthreads();
    if (warp == 0) {
        acc = lane < (blockDim.x + 31) / 32 ? partial[lane] : 0ull;
        for (int off = 16; off > 0; off >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, off);
        if (lane == 0) atomicAdd(out, acc);
    }
}
