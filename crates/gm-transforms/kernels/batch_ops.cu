// Operations on a finished batch tensor (after the fused kernel wrote it): RandomErasing of
// each image's drawn rectangle, and MixUp/CutMix of every image with its partner (the batch
// rolled by one). Elements are u8/f16/bf16/f32 in CHW or HWC, as the fused kernel stores them.
// The CPU twins are gm-transforms' erase.rs and mix.rs.

// `format` packs layout (bits 0-3: 0 CHW, 1 HWC), dtype (bits 4-7: 0 u8, 1 f16, 2 bf16,
// 3 f32) and channels (bits 8-15).

// One image's erasure; the layout of `GmErase` in batch_ops.rs.
struct GmErase {
    unsigned long long dst;        // the image's first byte
    unsigned long long noise_key;  // noise key (noise != 0)
    int top, left, height, width;
    int noise;                     // 1: normal noise, 0: value[c]
    float value[3];
};

__device__ __forceinline__ unsigned short bo_to_f16(float f) {
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
}

__device__ __forceinline__ float bo_from_f16(unsigned short h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}

__device__ __forceinline__ unsigned short bo_to_bf16(float f) {
    unsigned int u = __float_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40);  // NaN stays NaN
    u += 0x7fffu + ((u >> 16) & 1u);
    return (unsigned short)(u >> 16);
}

__device__ __forceinline__ float bo_load(const void* base, long long i, int dtype) {
    switch (dtype) {
        case 0: return (float)((const unsigned char*)base)[i];
        case 1: return bo_from_f16(((const unsigned short*)base)[i]);
        case 2: return __uint_as_float(((unsigned int)((const unsigned short*)base)[i]) << 16);
        default: return ((const float*)base)[i];
    }
}

// u8: `truncate` as torch's float-to-uint8 cast (erasing), else round half to even (mixing);
// both clamp to 0..255.
__device__ __forceinline__ void bo_store(void* base, long long i, int dtype, float v, int truncate) {
    switch (dtype) {
        case 0: {
            float r = truncate ? truncf(v) : rintf(v);
            ((unsigned char*)base)[i] = (unsigned char)fminf(fmaxf(r, 0.0f), 255.0f);
            break;
        }
        case 1: ((unsigned short*)base)[i] = bo_to_f16(v); break;
        case 2: ((unsigned short*)base)[i] = bo_to_bf16(v); break;
        default: ((float*)base)[i] = v; break;
    }
}

__device__ __forceinline__ long long bo_index(int layout, int channels, int w, int h, int c, int x, int y) {
    return layout == 0 ? ((long long)c * h + y) * w + x : ((long long)y * w + x) * channels + c;
}

// erase.rs's erase_noise: Box-Muller on two 24-bit uniforms of a SplitMix64 hash.
__device__ __forceinline__ float bo_noise(unsigned long long key, unsigned long long i) {
    unsigned long long z = key ^ (i * 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    const float scale = 1.0f / 16777216.0f;
    float u1 = ((float)(unsigned int)(z >> 40) + 1.0f) * scale;
    float u2 = (float)(unsigned int)((z >> 8) & 0xffffffull) * scale;
    return sqrtf(-2.0f * logf(u1)) * cosf(6.28318530717958647692f * u2);
}

// Grid: (x tiles, y tiles of the largest rectangle, one z per erased image); 16x16 blocks.
extern "C" __global__ void gm_erase_batch(const GmErase* __restrict__ ops, int n, int out_w, int out_h, int format) {
    if ((int)blockIdx.z >= n) return;
    const GmErase e = ops[blockIdx.z];
    int rx = blockIdx.x * blockDim.x + threadIdx.x;
    int ry = blockIdx.y * blockDim.y + threadIdx.y;
    if (rx >= e.width || ry >= e.height) return;
    int x = e.left + rx, y = e.top + ry;
    if (x >= out_w || y >= out_h) return;
    int layout = format & 15, dtype = (format >> 4) & 15, channels = (format >> 8) & 255;
    for (int c = 0; c < channels; ++c) {
        float v = e.noise ? bo_noise(e.noise_key, ((unsigned long long)c * e.height + ry) * e.width + rx)
                          : e.value[c];
        bo_store((void*)e.dst, bo_index(layout, channels, out_w, out_h, c, x, y), dtype, v, 1);
    }
}

// One thread per element position inside the box ((x1, y1)..(x2, y2), the whole image for
// MixUp), walking the batch in order so the mix is in place: it keeps the previous image's
// original value as it overwrites each. Grid: x over box columns * channels, y over box rows.
extern "C" __global__ void gm_mix_batch(unsigned long long data, int n, int out_w, int out_h, int format,
                                        int cutmix, float lam, int x1, int y1, int x2, int y2) {
    int layout = format & 15, dtype = (format >> 4) & 15, channels = (format >> 8) & 255;
    int bw = x2 - x1;
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int ry = blockIdx.y * blockDim.y + threadIdx.y;
    if (t >= bw * channels || y1 + ry >= y2) return;
    // HWC: consecutive threads take consecutive channels of a pixel (consecutive bytes).
    int c = layout == 0 ? t / bw : t % channels;
    int x = x1 + (layout == 0 ? t % bw : t / channels);
    int y = y1 + ry;
    long long e = bo_index(layout, channels, out_w, out_h, c, x, y);
    long long stride = (long long)out_w * out_h * channels;
    void* base = (void*)data;
    float prev = bo_load(base, (long long)(n - 1) * stride + e, dtype);
    for (int i = 0; i < n; ++i) {
        long long at = (long long)i * stride + e;
        float cur = bo_load(base, at, dtype);
        // Rounded steps as the twin computes them: a contraction would move a u8 value across
        // a rounding boundary.
        float v = cutmix ? prev : __fadd_rn(__fmul_rn(prev, __fsub_rn(1.0f, lam)), __fmul_rn(cur, lam));
        bo_store(base, at, dtype, v, 0);
        prev = cur;
    }
}
